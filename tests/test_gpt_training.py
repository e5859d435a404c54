"""What a GPT training script needs beyond layers: gradient clipping, weight tying,
buffers, train/eval under arraykit.jit, sampling (multinomial, topk); against PyTorch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn

SHAPES = [(3, 4), (5,), ()]


def _params_with_grads(scale=3.0, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    values = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [scale * rng.standard_normal(s).astype(dtype) for s in SHAPES]
    ours = [nn.Parameter(ak.asarray(v, device="cpu")) for v in values]
    theirs = [torch.nn.Parameter(torch.tensor(v)) for v in values]
    for p, t, g in zip(ours, theirs, grads):
        p.grad = ak.asarray(g, device="cpu")
        t.grad = torch.tensor(g)
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0, 0.0])
@pytest.mark.parametrize("max_norm", [1.5, 1e6])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    ours, theirs = _params_with_grads()
    grads = [p.grad for p in ours]
    versions = [g._storage.version for g in grads]
    total = nn.utils.clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    assert isinstance(total, ak.Tensor) and total.shape == () and total.dtype == ak.float32
    np.testing.assert_allclose(total.item(), expected.item(), rtol=1e-6)
    for p, t, g, v in zip(ours, theirs, grads, versions):
        assert p.grad is g and g._storage.version == v + 1  # written in place
        np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_clip_grad_norm_is_one_kernel_for_all_gradients():
    ours, _ = _params_with_grads()
    nn.utils.clip_grad_norm_(ours, 1.0)  # compiles
    ours, _ = _params_with_grads(seed=1)
    before = ak.cache_info()
    nn.utils.clip_grad_norm_(ours, 2.0)  # another max_norm: the same program
    after = ak.cache_info()
    # no per-gradient kernels went through the launcher (hits or misses)
    assert (after["hits"], after["misses"]) == (before["hits"], before["misses"])


def test_clip_grad_norm_edge_cases():
    p = nn.Parameter(ak.ones(3, device="cpu"))
    assert nn.utils.clip_grad_norm_([p], 1.0).item() == 0.0  # no gradients
    p.grad = ak.asarray(np.array([np.inf, 1.0, 0.0], np.float32), device="cpu")
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    q = nn.Parameter(ak.ones(2, device="cpu"))
    q.grad = ak.asarray(np.array([3.0, 4.0], np.float32), device="cpu")
    assert nn.utils.clip_grad_norm_(q, 1.0).item() == pytest.approx(5.0)  # a single tensor
    np.testing.assert_allclose(q.grad.numpy(), [0.6, 0.8], rtol=1e-5)


def test_clip_grad_value_matches_torch():
    ours, theirs = _params_with_grads()
    assert nn.utils.clip_grad_value_(ours, 0.7) is None
    torch.nn.utils.clip_grad_value_(theirs, 0.7)
    for p, t in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), t.grad.numpy())


def _build_tied(m, lib, vocab=7, dim=4, context=5):
    """Embedding and output head sharing one weight, a causal-mask buffer, dropout."""
    m.wte = lib.nn.Embedding(vocab, dim)
    m.ln = lib.nn.LayerNorm(dim, bias=False)
    m.drop = lib.nn.Dropout(0.0)
    m.head = lib.nn.Linear(dim, vocab, bias=False)
    m.head.weight = m.wte.weight
    m.register_buffer("mask", lib.tril(lib.ones((context, context), dtype=lib.bool)))
    m.register_buffer("scratch", lib.zeros(2), persistent=False)


class _Tied(nn.Module):
    def __init__(self):
        super().__init__()
        _build_tied(self, ak)

    def forward(self, x):
        return self.head(self.drop(self.ln(self.wte(x))))


class _TorchTied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        _build_tied(self, torch)

    forward = _Tied.forward


def _tied_pair():
    torch.manual_seed(0)
    theirs = _TorchTied()
    ours = _Tied()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def test_weight_tying_one_storage_both_gradients():
    ours, theirs = _tied_pair()
    assert ours.head.weight is ours.wte.weight
    names = [n for n, _ in ours.named_parameters()]
    assert names == [n for n, _ in theirs.named_parameters()] == ["wte.weight", "ln.weight"]
    assert len(list(ours.parameters())) == 2
    assert list(ours.state_dict()) == list(theirs.state_dict())  # both keys, as PyTorch
    x = np.array([[1, 2, 3], [0, 6, 1]])
    target = np.array([[2, 3, 4], [6, 1, 0]])
    loss = ak.nn.functional.cross_entropy(ours(ak.asarray(x)).reshape(-1, 7), ak.asarray(target).reshape(-1))
    tloss = torch.nn.functional.cross_entropy(theirs(torch.tensor(x)).reshape(-1, 7), torch.tensor(target).reshape(-1))
    loss.backward()
    tloss.backward()
    # the shared weight's gradient sums the embedding's and the head's contributions
    np.testing.assert_allclose(ours.wte.weight.grad.numpy(), theirs.wte.weight.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert ours.head.weight.grad is ours.wte.weight.grad


def test_tied_checkpoint_saves_one_storage_and_loads_back_tied(tmp_path):
    ours, _ = _tied_pair()
    path = tmp_path / "tied.ak"
    ak.save(ours.state_dict(), path)
    loaded = ak.load(path)
    assert loaded["wte.weight"]._storage is loaded["head.weight"]._storage  # saved once
    fresh = _Tied()
    fresh.load_state_dict(loaded)
    assert fresh.head.weight is fresh.wte.weight
    np.testing.assert_array_equal(fresh.head.weight.numpy(), ours.wte.weight.numpy())
    with ak.no_grad():
        fresh.wte.weight.add_(1.0)  # still one tensor
    np.testing.assert_array_equal(fresh.head.weight.numpy(), ours.wte.weight.numpy() + 1)


def test_buffers_are_saved_moved_and_not_trained():
    ours, theirs = _tied_pair()
    assert [n for n, _ in ours.named_buffers()] == ["mask", "scratch"]
    assert "mask" in ours.state_dict() and "scratch" not in ours.state_dict()
    assert set(ours.state_dict()) == set(theirs.state_dict())
    assert all(b is not p for b in ours.buffers() for p in ours.parameters())
    opt = ak.optim.AdamW(ours.parameters(), lr=0.1)
    mask_before = ours.mask.numpy().copy()

    @ak.jit
    def step(x):
        opt.zero_grad()
        logits = ours(x)
        masked = ak.where(ours.mask[:3, :3], logits[..., :3], -1e9)
        loss = masked.sum()
        loss.backward()
        opt.step()
        return loss

    for _ in range(2):
        step(ak.asarray(np.array([1, 2, 3])))
    np.testing.assert_array_equal(ours.mask.numpy(), mask_before)
    assert ours.mask.grad is None
    ours.double()
    assert ours.scratch.dtype == ak.float64 and ours.mask.dtype == ak.bool
    assert ours.wte.weight.dtype == ak.float64 and ours.head.weight is ours.wte.weight


def test_train_eval_switches_dropout_under_jit():
    model = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.5))
    f = ak.jit(lambda x: model(x))
    x = ak.ones((4, 16))
    with ak.no_grad():
        expected = model[0](x).numpy()
        trained = [f(x).numpy() for _ in range(3)]
        assert any((t == 0).any() for t in trained)  # dropout active
        model.eval()
        np.testing.assert_allclose(f(x).numpy(), expected, rtol=1e-6)  # identity now
        compiles = f.compile_count
        model.train()
        assert (f(x).numpy() == 0).any()
        model.eval()
        np.testing.assert_allclose(f(x).numpy(), expected, rtol=1e-6)
    assert f.compile_count == compiles  # both modes' programs were kept
    assert "training mode" in f.last_compile_reason


@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_torch(largest):
    rng = np.random.default_rng(0)
    x = rng.permutation(60).reshape(3, 4, 5).astype(np.float32)  # no ties: indices agree
    for dim in (0, 1, -1):
        v, i = ak.topk(ak.asarray(x), 3, dim=dim, largest=largest)
        tv, ti = torch.topk(torch.tensor(x), 3, dim=dim, largest=largest)
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
        assert i.dtype == ak.int64
    t = ak.asarray(x).requires_grad_()
    tt = torch.tensor(x, requires_grad=True)
    (t.topk(2, dim=1, largest=largest).values * 3).sum().backward()
    (tt.topk(2, dim=1, largest=largest).values * 3).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), tt.grad.numpy())


def test_topk_nan_ties_and_errors():
    x = np.array([1.0, np.nan, 3.0, 3.0, -np.inf], np.float32)
    v, i = ak.topk(ak.asarray(x), 3)
    np.testing.assert_array_equal(v.numpy(), [np.nan, 3.0, 3.0])  # NaN is the largest (PyTorch)
    np.testing.assert_array_equal(i.numpy(), [1, 2, 3])  # ties: lower index first
    v, i = ak.topk(ak.asarray(np.array([5, -2, 7], np.int32)), 2, largest=False)
    np.testing.assert_array_equal(v.numpy(), [-2, 5])
    with pytest.raises(IndexError, match="k=4 is out of range"):
        ak.topk(ak.ones(3), 4)


def test_multinomial_with_replacement_follows_the_weights():
    ak.manual_seed(0)
    weights = np.array([[1.0, 0.0, 6.0, 3.0], [1.0, 1.0, 1.0, 1.0]], np.float32)  # unnormalised
    s = ak.multinomial(ak.asarray(weights, device="cpu"), 20000, replacement=True)
    assert s.shape == (2, 20000) and s.dtype == ak.int64
    for row, w in zip(s.numpy(), weights):
        freq = np.bincount(row, minlength=4) / row.size
        np.testing.assert_allclose(freq, w / w.sum(), atol=0.015)
    assert ak.multinomial(ak.asarray(weights[0]), 5, replacement=True).shape == (5,)


def test_multinomial_without_replacement():
    ak.manual_seed(1)
    weights = ak.asarray(np.array([0.1, 0.0, 0.6, 0.3], np.float32), device="cpu")
    firsts = []
    for _ in range(300):
        s = weights.multinomial(3).numpy()
        assert sorted(s) == [0, 2, 3]  # each non-zero category once, never the zero one
        firsts.append(s[0])
    freq = np.bincount(firsts, minlength=4) / len(firsts)
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.08)


def test_multinomial_draws_from_the_generator_and_under_jit():
    weights = ak.asarray(np.full((2, 50), 1.0, np.float32))
    g = ak.Generator().manual_seed(5)
    a = ak.multinomial(weights, 4, generator=g).numpy()
    b = ak.multinomial(weights, 4, generator=g).numpy()
    g.manual_seed(5)
    np.testing.assert_array_equal(ak.multinomial(weights, 4, generator=g).numpy(), a)
    assert not np.array_equal(a, b)
    sample = ak.jit(lambda w: ak.multinomial(w, 4, generator=g))
    g.manual_seed(5)
    np.testing.assert_array_equal(sample(weights).numpy(), a)  # same numbers traced
    np.testing.assert_array_equal(sample(weights).numpy(), b)


@pytest.mark.parametrize("weights, kwargs, message", [
    ([0.5, -0.1], {}, "element < 0"),
    ([0.5, np.nan], {}, "element < 0"),
    ([0.0, 0.0], {"replacement": True}, "sum of probabilities <= 0"),
    ([0.5, 0.0, 0.0], {"num_samples": 2}, "fewer than num_samples=2"),
    ([0.5, 0.5], {"num_samples": 3}, "samples without replacement"),
    ([0.5, 0.5], {"num_samples": 0}, "n_sample <= 0"),
])
def test_multinomial_errors(weights, kwargs, message):
    kwargs = {"num_samples": 1, **kwargs}
    with pytest.raises(RuntimeError, match=message):
        ak.multinomial(ak.asarray(np.array(weights, np.float32), device="cpu"), **kwargs)


@pytest.mark.parametrize("method, args", [
    ("split", (2,)), ("split", (3, 1)), ("split", ([1, 4, 0],)), ("split", (5, -1)),
    ("chunk", (2,)), ("chunk", (3, 1)), ("chunk", (4, -1)), ("unbind", ()), ("unbind", (1,)),
])
def test_split_chunk_unbind_are_views_as_in_torch(method, args):
    x = np.arange(5 * 4, dtype=np.float32).reshape(5, 4)
    base = ak.asarray(x)
    ours = getattr(base, method)(*args)
    theirs = getattr(torch.tensor(x), method)(*args)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert a._storage is base._storage  # a view


def test_split_errors():
    with pytest.raises(RuntimeError, match="sum exactly to 5"):
        ak.ones((5, 2)).split([2, 2])
    with pytest.raises(RuntimeError, match="greater than 0"):
        ak.ones(3).chunk(0)
