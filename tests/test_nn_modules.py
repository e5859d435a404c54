"""arraykit.nn modules against torch.nn: registration, state_dict, repr, modes, every
layer's forward and parameter gradients with weights copied from PyTorch, default
initialisations, and modules as JAX pytrees (optax)."""

from __future__ import annotations

import collections
import math

import jax
import numpy as np
import optax
import pytest
import torch

import arraykit as ak
from arraykit import nn
from arraykit.nn import functional as F
from device_checks import raises_checked


def t2a(t):
    return ak.asarray(t.detach().numpy())


def close(a, t, tol=1e-5):
    np.testing.assert_allclose(a.numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def copy_from_torch(module, tmodule):
    module.load_state_dict({k: v.detach().numpy() for k, v in tmodule.state_dict().items()})


def check_against_torch(module, tmodule, x, tol=1e-5):
    """Same forward values and the same parameter gradients of sum(out * w)."""
    copy_from_torch(module, tmodule)
    xt = torch.tensor(x.numpy())
    out, tout = module(x), tmodule(xt)
    close(out, tout, tol)
    if not list(module.parameters()):
        return out
    w = np.random.default_rng(1).standard_normal(tout.shape).astype(np.float32)
    (out * ak.asarray(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    tparams = dict(tmodule.named_parameters())
    for name, p in module.named_parameters():
        close(p.grad, tparams[name].grad, tol)
    return out


# ---------------------------------------------------------------------- registration


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)
        self.scale = nn.Parameter(ak.ones(()))
        self.register_buffer("count", ak.zeros((), dtype=ak.int64))
        self.register_buffer("scratch", ak.zeros(3), persistent=False)
        self.name = "net"

    def forward(self, x):
        return self.head(self.body(x)) * self.scale


def test_registration_and_iteration():
    m = Net()
    assert [n for n, _ in m.named_parameters()] == [
        "scale", "body.0.weight", "body.0.bias", "head.weight", "head.bias"]
    assert [n for n, _ in m.named_buffers()] == ["count", "scratch"]
    assert [n for n, _ in m.named_children()] == ["body", "head"]
    assert [n for n, _ in m.named_modules()] == ["", "body", "body.0", "body.1", "head"]
    assert len(list(m.modules())) == 5 and len(list(m.children())) == 2
    assert len(list(m.parameters())) == 5 and len(list(m.buffers())) == 2
    assert all(isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf for p in m.parameters())
    assert not isinstance(ak.zeros(2), nn.Parameter)
    assert m.name == "net" and "name" not in dict(m.named_parameters())
    # shared parameters appear once
    shared = nn.Sequential(m.head, m.head)
    assert len(list(shared.parameters())) == 2
    # reassigning and deleting
    m.head = None
    assert "head" not in [n for n, _ in m.named_children()]
    m.scale = None
    assert "scale" not in dict(m.named_parameters())
    with pytest.raises(TypeError, match="parameter 'scale'"):
        m.scale = ak.ones(())
    del m.body
    assert not hasattr(m, "body")
    m.add_module("extra", nn.ReLU())
    m.register_parameter("w", nn.Parameter(ak.zeros(2)))
    assert "w" in dict(m.named_parameters()) and m.get_submodule("extra") is m.extra
    with pytest.raises(KeyError, match="empty or contain"):
        m.register_buffer("a.b", ak.zeros(1))
    with pytest.raises(TypeError):
        m.register_parameter("v", ak.zeros(2))


def test_assignment_before_init_raises():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(ak.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()


def test_apply_train_eval_zero_grad_requires_grad():
    m = Net()
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "ReLU", "Sequential", "Linear", "Net"]
    assert m.training and m.body[0].training
    m.eval()
    assert not m.training and not m.body[0].training
    m.train()
    assert m.body[1].training
    m(ak.ones((2, 4))).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(float(ak.abs(p.grad).sum()) == 0 for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_to_dtype_keeps_parameter_objects():
    m = Net()
    w = m.head.weight
    assert m.double() is m
    assert m.head.weight is w and w.dtype == ak.float64 and w.requires_grad
    assert m.count.dtype == ak.int64  # non-floating buffers keep their dtype
    m.to(ak.float32)
    assert w.dtype == ak.float32 and isinstance(w, nn.Parameter)
    m.to("cpu")
    with pytest.raises(TypeError, match="floating point"):
        m.to(ak.int32)


# ---------------------------------------------------------------------- state_dict


def test_state_dict_round_trip_and_strict_errors():
    m, other = Net(), Net()
    sd = m.state_dict()
    assert list(sd) == ["scale", "count", "body.0.weight", "body.0.bias", "head.weight", "head.bias"]
    assert not sd["head.weight"].requires_grad
    result = other.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for k, v in other.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())
    partial = collections.OrderedDict(sd)
    del partial["head.bias"]
    partial["extra"] = ak.zeros(1)
    with pytest.raises(RuntimeError) as info:
        other.load_state_dict(partial)
    message = str(info.value)
    assert "Error(s) in loading state_dict for Net" in message
    assert 'Missing key(s) in state_dict: "head.bias"' in message
    assert 'Unexpected key(s) in state_dict: "extra"' in message
    missing, unexpected = other.load_state_dict(partial, strict=False)
    assert missing == ["head.bias"] and unexpected == ["extra"]
    bad = dict(sd, **{"head.weight": ak.zeros((3, 8))})
    with pytest.raises(RuntimeError, match="size mismatch for head.weight"):
        other.load_state_dict(bad)


def test_state_dict_matches_torch_keys():
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.LayerNorm(16), nn.Linear(16, 2))
    t = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.LayerNorm(16),
                            torch.nn.Linear(16, 2))
    assert list(m.state_dict()) == list(t.state_dict())
    copy_from_torch(m, t)
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4)).astype(np.float32)
    close(m(ak.asarray(x)), t(torch.tensor(x)))


def test_repr_like_pytorch():
    m = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Dropout(0.1),
                      nn.Conv2d(3, 6, 3, stride=2, padding=1, bias=False), nn.LayerNorm(5),
                      nn.Embedding(10, 3), nn.GELU(), nn.Flatten())
    t = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                            torch.nn.Conv2d(3, 6, 3, stride=2, padding=1, bias=False),
                            torch.nn.LayerNorm(5), torch.nn.Embedding(10, 3), torch.nn.GELU(),
                            torch.nn.Flatten())
    expected = """Sequential(
  (0): Linear(in_features=4, out_features=3, bias=True)
  (1): ReLU()
  (2): Dropout(p=0.1, inplace=False)
  (3): Conv2d(3, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)
  (4): LayerNorm((5,), eps=1e-05, elementwise_affine=True, bias=True)
  (5): Embedding(10, 3)
  (6): GELU(approximate='none')
  (7): Flatten(start_dim=1, end_dim=-1)
)"""
    assert repr(m) == expected
    if "bias=" in repr(t[4]):  # PyTorch 2.11's LayerNorm takes `bias` but its repr leaves it out
        assert repr(t) == expected
    assert repr(Net()).startswith("Net(\n  (body): Sequential(\n    (0): Linear(")


# ---------------------------------------------------------------------- layers vs torch


def test_linear_forward_and_gradients():
    x = ak.asarray(np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32))
    check_against_torch(nn.Linear(4, 3), torch.nn.Linear(4, 3), x)
    check_against_torch(nn.Linear(4, 3, bias=False), torch.nn.Linear(4, 3, bias=False), x)


CONVS = [
    dict(in_channels=4, out_channels=6, kernel_size=3),
    dict(in_channels=4, out_channels=6, kernel_size=(3, 2), stride=2, padding=1),
    dict(in_channels=4, out_channels=6, kernel_size=3, stride=(1, 2), padding=(2, 1), dilation=2),
    dict(in_channels=4, out_channels=6, kernel_size=3, padding="same", dilation=(1, 2), groups=2),
    dict(in_channels=4, out_channels=4, kernel_size=2, padding="valid", groups=4, bias=False),
]


@pytest.mark.parametrize("options", CONVS)
def test_conv2d_forward_and_gradients(options):
    x = ak.asarray(np.random.default_rng(0).standard_normal((2, 4, 9, 8)).astype(np.float32))
    check_against_torch(nn.Conv2d(**options), torch.nn.Conv2d(**options), x, tol=1e-4)


def test_conv2d_channels_last_input_is_read_in_place():
    options = dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1)
    x = np.random.default_rng(0).standard_normal((2, 4, 9, 8)).astype(np.float32)
    conv, tconv = nn.Conv2d(**options), torch.nn.Conv2d(**options)
    nchw = check_against_torch(conv, tconv, ak.asarray(x), tol=1e-4)
    cl = ak.asarray(x).contiguous(memory_format=ak.channels_last)
    assert cl.is_contiguous(memory_format=ak.channels_last) and not cl.is_contiguous()
    conv.zero_grad()
    conv(cl)  # compile once
    before = ak.cache_info()
    out = conv(cl)
    after = ak.cache_info()
    assert after["hits"] - before["hits"] == 1 and after["misses"] == before["misses"]  # one kernel
    assert out.is_contiguous(memory_format=ak.channels_last) and not out.is_contiguous()
    np.testing.assert_allclose(out.numpy(), nchw.numpy(), rtol=1e-5, atol=1e-5)
    # gradients through the channels-last path match too
    conv.zero_grad()
    out.sum().backward()
    tconv.zero_grad()
    tconv(torch.tensor(x)).sum().backward()
    close(conv.weight.grad, tconv.weight.grad, 1e-4)
    close(conv.bias.grad, tconv.bias.grad, 1e-4)


def test_conv2d_errors():
    conv = nn.Conv2d(4, 6, 3)
    with pytest.raises(RuntimeError, match="to have 4 channels, but got 3 channels"):  # as PyTorch
        conv(ak.zeros((1, 3, 5, 5)))
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(4, 6, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="groups"):
        nn.Conv2d(4, 6, 3, groups=4)
    assert conv(ak.zeros((4, 5, 5))).shape == (6, 3, 3)  # unbatched


def test_embedding_forward_and_gradients():
    emb, temb = nn.Embedding(10, 3, padding_idx=1), torch.nn.Embedding(10, 3, padding_idx=1)
    copy_from_torch(emb, temb)
    idx = np.array([[1, 2, 4], [4, 3, 9]])
    out, tout = emb(ak.asarray(idx)), temb(torch.tensor(idx))
    close(out, tout)
    (out * out).sum().backward()
    (tout * tout).sum().backward()
    close(emb.weight.grad, temb.weight.grad)
    assert float(ak.abs(emb.weight.grad[1]).sum()) == 0
    with raises_checked(IndexError, match="index 10 is out of range"):
        emb(ak.asarray([10]))


def test_layer_norm_forward_and_gradients():
    x = ak.asarray(np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32) * 3 + 1)
    ln, tln = nn.LayerNorm((4, 5)), torch.nn.LayerNorm((4, 5))
    with torch.no_grad():
        tln.weight.uniform_(0.5, 1.5)
        tln.bias.uniform_(-1, 1)
    check_against_torch(ln, tln, x, tol=1e-4)
    check_against_torch(nn.LayerNorm(5, elementwise_affine=False),
                        torch.nn.LayerNorm(5, elementwise_affine=False), x, tol=1e-4)
    check_against_torch(nn.LayerNorm(5, bias=False), torch.nn.LayerNorm(5, bias=False), x, tol=1e-4)


def test_activations_flatten_and_losses():
    x = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    for ours, theirs in [(nn.ReLU(), torch.nn.ReLU()), (nn.GELU(), torch.nn.GELU()),
                         (nn.GELU("tanh"), torch.nn.GELU("tanh")), (nn.SiLU(), torch.nn.SiLU()),
                         (nn.Flatten(), torch.nn.Flatten()), (nn.Flatten(0, 1), torch.nn.Flatten(0, 1))]:
        close(ours(ak.asarray(x)), theirs(torch.tensor(x)))
    logits = x.reshape(4, 6)
    target = np.array([0, 5, 2, 1])
    close(nn.CrossEntropyLoss(label_smoothing=0.1)(ak.asarray(logits), ak.asarray(target)),
          torch.nn.CrossEntropyLoss(label_smoothing=0.1)(torch.tensor(logits), torch.tensor(target)))
    y = np.ones_like(logits)
    close(nn.MSELoss(reduction="sum")(ak.asarray(logits), ak.asarray(y)),
          torch.nn.MSELoss(reduction="sum")(torch.tensor(logits), torch.tensor(y)))


def test_dropout_follows_train_and_eval():
    drop = nn.Dropout(0.5)
    x = ak.ones((200,))
    out = drop(x).numpy()
    assert set(np.unique(out)) <= {0.0, 2.0} and 0 < (out == 0).sum() < 200
    assert not np.array_equal(out, drop(x).numpy())  # a new mask each call
    drop.eval()
    assert drop(x) is x
    seq = nn.Sequential(nn.Linear(3, 3), nn.Dropout(1.0))
    seq.eval()
    assert float(ak.abs(seq(ak.ones((2, 3)))).sum()) > 0
    seq.train()
    assert float(ak.abs(seq(ak.ones((2, 3)))).sum()) == 0


def test_containers():
    layers = nn.ModuleList([nn.Linear(2, 2), nn.ReLU()])
    layers.append(nn.Linear(2, 1))
    layers.insert(0, nn.SiLU())
    assert [type(m).__name__ for m in layers] == ["SiLU", "Linear", "ReLU", "Linear"]
    assert len(layers) == 4 and isinstance(layers[-1], nn.Linear) and len(layers[1:3]) == 2
    assert [n for n, _ in layers.named_parameters()] == ["1.weight", "1.bias", "3.weight", "3.bias"]
    del layers[0]
    assert [n for n, _ in layers.named_children()] == ["0", "1", "2"]
    d = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    d["c"] = nn.Linear(2, 3)
    assert list(d) == ["a", "b", "c"] and "c" in d and len(d) == 3
    assert [n for n, _ in d.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]
    seq = nn.Sequential(collections.OrderedDict(first=nn.Linear(2, 3), act=nn.ReLU()))
    assert seq.first is seq[0] and len(seq[:1]) == 1
    assert seq(ak.ones((1, 2))).shape == (1, 3)
    with pytest.raises(IndexError, match="out of range"):
        seq[2]


# ---------------------------------------------------------------------- initialisation


def test_default_initialisations_follow_pytorch_bounds():
    lin = nn.Linear(50, 40)
    bound = 1 / math.sqrt(50)  # kaiming_uniform(a=sqrt(5)) gives the same bound as the bias
    for p in (lin.weight, lin.bias):
        v = p.numpy()
        assert np.abs(v).max() <= bound and np.abs(v).max() > 0.9 * bound
    assert abs(lin.weight.numpy().std() - bound / math.sqrt(3)) < 0.1 * bound
    conv = nn.Conv2d(6, 8, 3, groups=2)
    fan_in = 3 * 9
    assert np.abs(conv.weight.numpy()).max() <= 1 / math.sqrt(fan_in)
    assert np.abs(conv.bias.numpy()).max() <= 1 / math.sqrt(fan_in)
    emb = nn.Embedding(200, 50)
    v = emb.weight.numpy()
    assert abs(v.mean()) < 0.05 and abs(v.std() - 1) < 0.05
    ln = nn.LayerNorm(7)
    assert (ln.weight.numpy() == 1).all() and (ln.bias.numpy() == 0).all()
    assert not np.array_equal(nn.Linear(5, 5).weight.numpy(), nn.Linear(5, 5).weight.numpy())


def test_init_functions():
    w = ak.zeros((64, 32), dtype=ak.float64)
    nn.init.xavier_uniform_(w, gain=2.0)
    a = 2.0 * math.sqrt(6 / 96)
    assert np.abs(w.numpy()).max() <= a and np.abs(w.numpy()).max() > 0.9 * a
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.numpy().std() - math.sqrt(2 / 64)) < 0.02
    nn.init.normal_(w, 3.0, 0.5)
    assert abs(w.numpy().mean() - 3) < 0.05 and abs(w.numpy().std() - 0.5) < 0.05
    nn.init.uniform_(w, -2, -1)
    assert (w.numpy() >= -2).all() and (w.numpy() < -1).all()
    nn.init.ones_(w)
    assert (w.numpy() == 1).all()
    assert nn.init.calculate_gain("leaky_relu", 0.2) == torch.nn.init.calculate_gain("leaky_relu", 0.2)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.kaiming_uniform_(ak.zeros(3))
    with pytest.raises(TypeError, match="arraykit.Generator"):
        nn.init.uniform_(w, generator=object())
    g1, g2 = ak.Generator(), ak.Generator()
    g1.manual_seed(4)
    g2.manual_seed(4)
    a, b = ak.zeros(5), ak.zeros(5)
    nn.init.normal_(a, generator=g1)
    nn.init.normal_(b, generator=g2)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


# ---------------------------------------------------------------------- pytrees and optax


def test_module_is_a_pytree_in_state_dict_order():
    m = Net()
    leaves = jax.tree.leaves(m)
    names = ["scale", "count", "scratch", "body.0.weight", "body.0.bias", "head.weight", "head.bias"]
    assert len(leaves) == len(names)
    everything = dict(m.named_parameters(), **dict(m.named_buffers()))
    for name, leaf in zip(names, leaves):
        np.testing.assert_array_equal(np.asarray(leaf), everything[name].numpy())
    doubled = jax.tree.map(lambda v: v * 2 if v.dtype.kind == "f" else v, m)
    assert type(doubled) is Net and doubled.name == "net"
    np.testing.assert_allclose(doubled.head.weight.numpy(), 2 * m.head.weight.numpy())
    assert jax.tree.structure(doubled) == jax.tree.structure(m)
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(m)[0]]
    assert paths[-1].startswith(".head.bias")


@pytest.mark.parametrize("make", [lambda: optax.sgd(0.1, momentum=0.9), lambda: optax.adam(0.05)])
def test_optax_updates_a_model_through_pytrees(make):
    rng = np.random.default_rng(0)
    x = ak.asarray(rng.standard_normal((16, 3)).astype(np.float32))
    y = ak.asarray(rng.standard_normal((16, 1)).astype(np.float32))
    model = nn.Sequential(nn.Linear(3, 8), nn.GELU(), nn.Linear(8, 1))

    def loss_fn(m):
        return F.mse_loss(m(x), y)

    tx = make()
    state = tx.init(model)
    first = float(loss_fn(model))
    for _ in range(10):
        grads = ak.grad(loss_fn)(model)
        assert type(grads) is nn.Sequential
        updates, state = tx.update(grads, state, model)
        model = optax.apply_updates(model, updates)
    assert float(loss_fn(model)) < first
    # the same with parameter dicts and in-place writes into the live model
    live = nn.Sequential(nn.Linear(3, 8), nn.GELU(), nn.Linear(8, 1))
    params = dict(live.named_parameters())
    state = tx.init(params)
    first = float(loss_fn(live))
    for _ in range(10):
        live.zero_grad()
        loss_fn(live).backward()
        grads = {n: p.grad for n, p in params.items()}
        updates, state = tx.update(grads, state, params)
        with ak.no_grad():
            for n, new in optax.apply_updates(params, updates).items():
                params[n].copy_(new)
    assert float(loss_fn(live)) < first
