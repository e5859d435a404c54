"""scaled_dot_product_attention against PyTorch (a test-only oracle): values and
gradients of query, key, value (and of a float mask) for masks, causal, grouped heads,
scale and broadcasting, on both lowerings (JAX's fused attention for float32 and
bfloat16, plain XLA for float64 and for shapes the fused form rejects); dropout
checked structurally, statistically and under seeds, eagerly and under arraykit.jit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arraykit as ak
import arraykit.nn.functional as F
from training import check_grad_and_jit_match_eager

TF = torch.nn.functional
TOL = {np.float64: dict(rtol=1e-10, atol=1e-12), np.float32: dict(rtol=2e-5, atol=2e-6)}


def _mask(kind, shape, rng):
    """A mask of ``shape``: boolean (one fully masked row when it has >= 2 rows) or float
    (normal values, -inf where the boolean one is False)."""
    keep = rng.random(shape) > 0.4
    if len(shape) >= 2 and shape[-2] > 1:
        keep[..., 1, :] = False
    if kind == "bool":
        return keep
    return np.where(keep, rng.normal(size=shape), -np.inf)


# (query shape, key shape, value shape, mask kind, mask shape, keyword arguments)
CASES = [
    ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4), None, None, {}),
    ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4), None, None, dict(is_causal=True)),
    ((2, 3, 7, 4), (2, 3, 4, 4), (2, 3, 4, 4), None, None, dict(is_causal=True, scale=0.7)),
    ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4), "bool", (5, 6), {}),
    ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4), "float", (5, 6), {}),
    ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4), "bool", (2, 1, 1, 6), {}),
    ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4), "float", (3, 5, 6), dict(scale=0.25)),
    ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4), "bool", (2, 3, 5, 6), {}),
    ((2, 6, 5, 4), (2, 2, 6, 4), (2, 2, 6, 4), None, None, dict(enable_gqa=True)),
    ((2, 6, 5, 4), (2, 2, 6, 4), (2, 2, 6, 4), None, None, dict(enable_gqa=True, is_causal=True)),
    ((2, 6, 5, 4), (2, 2, 6, 4), (2, 2, 6, 4), "bool", (2, 6, 5, 6), dict(enable_gqa=True)),
    ((2, 6, 5, 4), (2, 2, 6, 4), (2, 2, 6, 4), "float", (6, 1, 6), dict(enable_gqa=True)),
    ((2, 6, 5, 4), (2, 1, 6, 4), (2, 1, 6, 4), "bool", (5, 6), {}),  # one key head, broadcast
    ((2, 6, 5, 4), (2, 2, 6, 4), (2, 2, 6, 3), None, None, dict(enable_gqa=True)),  # Ev != E
    ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 2), "bool", (5, 6), {}),
    ((5, 4), (6, 4), (6, 3), "float", (5, 6), {}),
    ((3, 5, 4), (3, 6, 4), (3, 6, 4), None, None, dict(is_causal=True)),
    ((2, 5, 4), (1, 6, 4), (6, 4), "bool", (5, 6), {}),  # batch dims broadcast
    ((2, 2, 3, 5, 4), (2, 2, 3, 6, 4), (2, 2, 3, 6, 4), "bool", (3, 1, 6), {}),
]


def _run(case, dtype, rng, mask_grad=False):
    qs, ks, vs, kind, mask_shape, kwargs = case
    values = [rng.normal(size=s).astype(dtype) for s in (qs, ks, vs)]
    mine = [ak.asarray(a).requires_grad_() for a in values]
    theirs = [torch.tensor(a, requires_grad=True) for a in values]
    mask = None if kind is None else _mask(kind, mask_shape, rng)
    if kind == "float":
        mask = mask.astype(dtype)
    a_mask = None if mask is None else ak.asarray(mask)
    t_mask = None if mask is None else torch.tensor(mask)
    if mask_grad:
        a_mask.requires_grad_()
        t_mask.requires_grad_()
        mine.append(a_mask)
        theirs.append(t_mask)
    a_out = F.scaled_dot_product_attention(*mine[:3], a_mask, **kwargs)
    t_out = TF.scaled_dot_product_attention(*theirs[:3], t_mask, **kwargs)
    g = rng.normal(size=tuple(t_out.shape)).astype(dtype)
    a_out.backward(ak.asarray(g))
    t_out.backward(torch.tensor(g))
    return a_out, t_out, mine, theirs


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_matches_torch(case, dtype):
    rng = np.random.default_rng(hash(str(case)) % 2**32)
    a_out, t_out, mine, theirs = _run(case, dtype, rng)
    assert a_out.shape == tuple(t_out.shape) and a_out.dtype == ak.asarray(np.zeros(1, dtype)).dtype
    np.testing.assert_allclose(a_out.detach().numpy(), t_out.detach().numpy(), **TOL[dtype])
    for a, t in zip(mine, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), **TOL[dtype])


def test_fully_masked_rows_are_zero_with_zero_gradients():
    rng = np.random.default_rng(1)
    for kind in ("bool", "float"):
        for dtype in (np.float32, np.float64):  # fused and plain lowerings
            case = ((1, 2, 4, 3), (1, 2, 5, 3), (1, 2, 5, 3), kind, (4, 5), {})
            a_out, _, mine, _ = _run(case, dtype, rng)
            np.testing.assert_array_equal(a_out.detach().numpy()[:, :, 1], 0)
            assert np.isfinite(mine[0].grad.numpy()).all()
            np.testing.assert_array_equal(mine[0].grad.numpy()[:, :, 1], 0)


def test_float_mask_gradient_matches_torch():
    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        case = ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4), "float", (3, 5, 6), {})
        _, _, mine, theirs = _run(case, dtype, rng, mask_grad=True)
        np.testing.assert_allclose(mine[3].grad.numpy(), theirs[3].grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("case", [CASES[1], CASES[3], CASES[9], CASES[13]], ids=str)
def test_bfloat16_within_bfloat16_error_of_torch(case):
    """bfloat16 values: the error against a float64 reference stays within a small
    multiple of PyTorch's own bfloat16 error (plus one bfloat16 unit)."""
    rng = np.random.default_rng(3)
    qs, ks, vs, kind, mask_shape, kwargs = case
    values = [rng.normal(size=s) for s in (qs, ks, vs)]
    mask = None if kind is None else _mask(kind, mask_shape, rng)
    ref = TF.scaled_dot_product_attention(
        *(torch.tensor(a) for a in values), None if mask is None else torch.tensor(mask), **kwargs
    ).numpy()
    t16 = [torch.tensor(a).to(torch.bfloat16) for a in values]
    t_out = TF.scaled_dot_product_attention(*t16, None if mask is None else torch.tensor(mask), **kwargs)
    a16 = [ak.asarray(a).to(ak.bfloat16) for a in values]
    a_out = F.scaled_dot_product_attention(*a16, None if mask is None else ak.asarray(mask), **kwargs)
    assert a_out.dtype == ak.bfloat16
    mine = np.abs(a_out.to(ak.float64).numpy() - ref).max()
    theirs = np.abs(t_out.double().numpy() - ref).max()
    assert mine <= 2 * theirs + 2.0**-8 * np.abs(ref).max()


def test_under_autograd_functional_grad_and_jit():
    rng = np.random.default_rng(4)
    q, k, v = (ak.asarray(rng.normal(size=(2, 4, 6, 8)).astype(np.float32)) for _ in range(3))
    k2, v2 = k[:, :2], v[:, :2]

    def loss(q, k, v):
        return (F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True) ** 2).sum()

    check_grad_and_jit_match_eager(loss, (q, k2, v2), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------- dropout


def _dropout_setup(p, seed, device="cpu"):
    """Attention whose value is the identity: the output is the attention weights
    after dropout, so the drawn mask can be read off it."""
    rng = np.random.default_rng(5)
    q = ak.asarray(rng.normal(size=(4, 3, 32, 8)), device=device).requires_grad_()
    k = ak.asarray(rng.normal(size=(4, 3, 48, 8)), device=device)
    v = ak.asarray(np.broadcast_to(np.eye(48), (4, 3, 48, 48)).copy(), device=device).requires_grad_()
    ak.manual_seed(seed)
    return q, k, v


def test_dropout_drops_with_probability_p_and_rescales():
    p = 0.3
    q, k, v = _dropout_setup(p, 0)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p).detach().numpy()
    weights = F.scaled_dot_product_attention(q, k, v).detach().numpy()
    dropped = out == 0
    n = dropped.size
    assert abs(dropped.mean() - p) < 4 * np.sqrt(p * (1 - p) / n)  # 4 standard deviations
    np.testing.assert_allclose(out[~dropped], weights[~dropped] / (1 - p), rtol=1e-12)
    assert np.all(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).detach().numpy() == 0)


def test_dropout_is_deterministic_under_a_seed_and_advances():
    q, k, v = _dropout_setup(0.5, 7)
    first = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).detach().numpy()
    second = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).detach().numpy()
    ak.manual_seed(7)
    again = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).detach().numpy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second)

    @ak.jit
    def attend(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)

    ak.manual_seed(7)
    traced = [attend(q, k, v).detach().numpy() for _ in range(2)]
    np.testing.assert_array_equal(traced[0], first)  # same numbers traced as eagerly
    np.testing.assert_array_equal(traced[1], second)


def test_dropout_gradient_uses_the_drawn_mask():
    p = 0.4
    q, k, v = _dropout_setup(p, 3)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
    rng = np.random.default_rng(6)
    g = rng.normal(size=out.shape)
    out.backward(ak.asarray(g, device=out.device))
    kept = out.detach().numpy() != 0
    # value's gradient: weights^T g, the weights being the dropped ones (v is the identity)
    np.testing.assert_allclose(v.grad.numpy(), np.swapaxes(out.detach().numpy(), -1, -2) @ g,
                               rtol=1e-10, atol=1e-12)
    tq = torch.tensor(q.detach().numpy(), requires_grad=True)
    tk, tv = torch.tensor(k.numpy()), torch.tensor(v.detach().numpy())
    weights = torch.softmax(tq @ tk.mT / np.sqrt(8), dim=-1) * torch.tensor(kept) / (1 - p)
    (weights @ tv).backward(torch.tensor(g))
    np.testing.assert_allclose(q.grad.numpy(), tq.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", [CASES[i] for i in (2, 4, 6, 10, 11, 13, 15, 17)], ids=str)
def test_dropout_path_keeping_everything_matches_torch(case):
    """The plain-XLA lowering that dropout takes (here dropping with probability
    1e-12: nothing) gives PyTorch's values and gradients for masks, grouped heads and
    broadcasting."""
    qs, ks, vs, kind, mask_shape, kwargs = case
    rng = np.random.default_rng(8)
    values = [rng.normal(size=s) for s in (qs, ks, vs)]
    mask = None if kind is None else _mask(kind, mask_shape, rng)
    mine = [ak.asarray(a).requires_grad_() for a in values]
    theirs = [torch.tensor(a, requires_grad=True) for a in values]
    a_out = F.scaled_dot_product_attention(*mine, None if mask is None else ak.asarray(mask),
                                           dropout_p=1e-12, **kwargs)
    t_out = TF.scaled_dot_product_attention(*theirs, None if mask is None else torch.tensor(mask),
                                            **kwargs)
    g = rng.normal(size=tuple(t_out.shape))
    a_out.backward(ak.asarray(g))
    t_out.backward(torch.tensor(g))
    np.testing.assert_allclose(a_out.detach().numpy(), t_out.detach().numpy(), **TOL[np.float64])
    for a, t in zip(mine, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), **TOL[np.float64])


@pytest.mark.parametrize("call, error, match", [
    (lambda q, m: F.scaled_dot_product_attention(q, q, q, m, is_causal=True), RuntimeError,
     "is_causal"),
    (lambda q, m: F.scaled_dot_product_attention(q, q.to(ak.float64), q), ValueError, "same dtype"),
    (lambda q, m: F.scaled_dot_product_attention(q, q[:, :2], q[:, :2]), ValueError, "enable_gqa"),
    (lambda q, m: F.scaled_dot_product_attention(q, q[:, :3], q[:, :3], enable_gqa=True),
     ValueError, "multiple"),
    (lambda q, m: F.scaled_dot_product_attention(q, q, q, m[:2, :3]), ValueError, "broadcast"),
    (lambda q, m: F.scaled_dot_product_attention(q, q, q, m.to(ak.int32)), TypeError, "boolean"),
    (lambda q, m: F.scaled_dot_product_attention(q, q, q, dropout_p=1.5), ValueError, "dropout_p"),
    (lambda q, m: F.scaled_dot_product_attention(q, q[..., :3], q), ValueError, "last dimension"),
    (lambda q, m: F.scaled_dot_product_attention(q, q, q[..., :3, :]), ValueError, "length S"),
])
def test_errors(call, error, match):
    q = ak.zeros((2, 4, 5, 4))
    with pytest.raises(error, match=match):
        call(q, ak.ones((5, 5), dtype=ak.bool))
