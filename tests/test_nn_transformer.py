"""arraykit.nn.MultiheadAttention and the transformer layers against torch.nn, with
weights copied from the torch module through state_dict -> NumPy -> load_state_dict:
outputs, attention weights, every parameter's gradient, masks of every kind,
need_weights both ways, kdim/vdim, batch_first, norm_first, eval mode; state_dict
keys as PyTorch's; an encoder layer under arraykit.jit."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn

TOL = {np.float32: 2e-5, np.float64: 1e-10}
TDTYPE = {np.float32: torch.float32, np.float64: torch.float64}


def copy_weights(m, t, dtype):
    if dtype == np.float64:
        m.double()
    m.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    assert list(m.state_dict()) == list(t.state_dict())


def convert(value, to_torch):
    if isinstance(value, np.ndarray):
        return torch.tensor(value, requires_grad=value.dtype.kind == "f") if to_torch else ak.asarray(value)
    return value


def compare(m, t, args, kwargs, dtype, grads=True):
    """Same results (tensors or None) and the same gradients of sum(result * w) for every
    parameter and floating input."""
    tol = TOL[dtype]
    t_args = [convert(a, True) for a in args]
    a_args = [convert(a, False) for a in args]
    for a in a_args:
        if isinstance(a, ak.Tensor) and a.dtype.kind == "float":
            a.requires_grad_()
    t_kw = {k: convert(v, True) for k, v in kwargs.items()}
    a_kw = {k: convert(v, False) for k, v in kwargs.items()}
    tout, out = t(*t_args, **t_kw), m(*a_args, **a_kw)
    touts = list(tout) if isinstance(tout, tuple) else [tout]
    outs = list(out) if isinstance(out, tuple) else [out]
    rng = np.random.default_rng(5)
    total = ttotal = 0
    for a, b in zip(outs, touts):
        if b is None:
            assert a is None
            continue
        assert a.shape == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=tol, atol=tol)
        w = rng.standard_normal(b.shape).astype(dtype)
        total = total + (a * ak.asarray(w)).sum()
        ttotal = ttotal + (b * torch.tensor(w)).sum()
    if not grads:
        return out
    total.backward()
    ttotal.backward()
    tparams = dict(t.named_parameters())
    for name, p in m.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tparams[name].grad.numpy(), rtol=tol * 10,
                                   atol=tol * 10, err_msg=name)
    for a, b in zip(a_args, t_args):
        if isinstance(b, torch.Tensor) and b.requires_grad and b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol * 10, atol=tol * 10)
    return out


def causal(n, m=None):
    return np.triu(np.ones((n, m or n), dtype=bool), 1)


# ---------------------------------------------------------------------- MultiheadAttention

E, HEADS, L, S, N = 8, 2, 3, 4, 2
RNG = np.random.default_rng(0)
PADDING = np.array([[False, False, True, False], [False, True, False, False]])
FLOAT_PADDING = np.where(PADDING, -1e9, RNG.standard_normal((N, S))).astype(np.float32)

MHA_CASES = [
    ("plain", {}, {}),
    ("weights-per-head", {}, dict(average_attn_weights=False)),
    ("no-weights", {}, dict(need_weights=False)),
    ("kdim-vdim", dict(kdim=5, vdim=6), {}),
    ("kdim-vdim-no-weights-bool-masks", dict(kdim=5, vdim=6),
     dict(need_weights=False, key_padding_mask=PADDING, attn_mask=causal(L, S))),
    ("bool-masks", {}, dict(key_padding_mask=PADDING, attn_mask=causal(L, S))),
    ("float-masks-3d", {}, dict(key_padding_mask=FLOAT_PADDING,
                                attn_mask=RNG.standard_normal((N * HEADS, L, S)).astype(np.float32))),
    ("float-masks-no-weights", {}, dict(need_weights=False, key_padding_mask=FLOAT_PADDING,
                                        attn_mask=RNG.standard_normal((L, S)).astype(np.float32))),
    ("bool-3d-no-weights", {}, dict(need_weights=False,
                                    attn_mask=np.broadcast_to(causal(L, S), (N * HEADS, L, S)).copy())),
    ("bias-kv-zero-attn", dict(add_bias_kv=True, add_zero_attn=True),
     dict(key_padding_mask=PADDING, attn_mask=causal(L, S))),
    ("bias-kv-no-weights", dict(add_bias_kv=True), dict(need_weights=False, key_padding_mask=PADDING)),
    ("no-bias", dict(bias=False), {}),
    ("batch-first", dict(batch_first=True), dict(key_padding_mask=PADDING)),
]


MHA_PARAMS = [pytest.param(*case, np.float32, id=case[0] + "-float32") for case in MHA_CASES] + [
    pytest.param(*case, np.float64, id=case[0] + "-float64") for case in MHA_CASES
    if case[0] in ("plain", "bool-masks", "float-masks-no-weights")]


@pytest.mark.parametrize("name,kw,fw,dtype", MHA_PARAMS)
def test_multihead_attention_matches_torch(name, kw, fw, dtype):
    torch.manual_seed(0)
    t = torch.nn.MultiheadAttention(E, HEADS, **kw).to(TDTYPE[dtype])
    m = nn.MultiheadAttention(E, HEADS, **kw)
    copy_weights(m, t, dtype)
    rng = np.random.default_rng(1)

    def make(n, d):
        return rng.standard_normal((N, n, d) if kw.get("batch_first") else (n, N, d)).astype(dtype)

    q, k, v = make(L, E), make(S, kw.get("kdim", E)), make(S, kw.get("vdim", E))
    fw = {key: value.astype(dtype) if getattr(value, "dtype", None) == np.float32 else value
          for key, value in fw.items()}
    compare(m, t, [q, k, v], fw, dtype)


@pytest.mark.parametrize("need_weights", [True, False])
def test_self_attention_causal_and_unbatched(need_weights):
    torch.manual_seed(0)
    t = torch.nn.MultiheadAttention(E, HEADS, batch_first=True)
    m = nn.MultiheadAttention(E, HEADS, batch_first=True)
    copy_weights(m, t, np.float32)
    x = np.random.default_rng(2).standard_normal((N, 4, E)).astype(np.float32)
    xt, xa = torch.tensor(x, requires_grad=True), ak.asarray(x).requires_grad_()
    mask = causal(4)
    tout = t(xt, xt, xt, attn_mask=torch.tensor(mask), is_causal=True, need_weights=need_weights)
    out = m(xa, xa, xa, attn_mask=ak.asarray(mask), is_causal=True, need_weights=need_weights)
    np.testing.assert_allclose(out[0].numpy(), tout[0].detach().numpy(), rtol=2e-5, atol=2e-5)
    tout[0].sum().backward()
    out[0].sum().backward()
    np.testing.assert_allclose(xa.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    # unbatched (L, E) with a 3-D (heads, L, S) mask and a 1-D padding mask
    u = x[0, :3]
    three_d = np.broadcast_to(causal(3), (HEADS, 3, 3)).copy()
    compare(m, t, [u, u, u], dict(attn_mask=three_d, key_padding_mask=np.array([False, False, True]),
                                  need_weights=need_weights), np.float32)


def test_multihead_attention_structure_init_and_errors():
    for kw in ({}, dict(kdim=5, vdim=6, add_bias_kv=True, bias=False)):
        m, t = nn.MultiheadAttention(E, HEADS, **kw), torch.nn.MultiheadAttention(E, HEADS, **kw)
        assert [(k, v.shape) for k, v in m.state_dict().items()] == [
            (k, tuple(v.shape)) for k, v in t.state_dict().items()]
        assert repr(m) == repr(t)
    m = nn.MultiheadAttention(E, HEADS)
    assert np.all(m.in_proj_bias.numpy() == 0) and np.all(m.out_proj.bias.numpy() == 0)
    bound = np.sqrt(6 / (E + 3 * E))  # xavier_uniform_ of (3E, E)
    w = m.in_proj_weight.numpy()
    assert np.abs(w).max() <= bound and w.std() > bound / 3
    with pytest.raises(ValueError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)
    x = ak.zeros((3, 2, E))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is \(3, 3\), but should be \(3, 4\)"):
        m(x, ak.zeros((4, 2, E)), ak.zeros((4, 2, E)), attn_mask=ak.zeros((3, 3)))
    with pytest.raises(TypeError, match="only bool and floating types of key_padding_mask"):
        m(x, x, x, key_padding_mask=ak.zeros((2, 3), dtype=ak.int32))


# ---------------------------------------------------------------------- transformer layers


@contextlib.contextmanager
def quiet():
    """Silence torch's warnings about its nested-tensor fast path, irrelevant here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


LAYER = dict(d_model=8, nhead=2, dim_feedforward=16)


def layer_pair(cls_name, dtype=np.float32, **kw):
    torch.manual_seed(0)
    t = getattr(torch.nn, cls_name)(**LAYER, **kw).to(TDTYPE[dtype]).eval()
    m = getattr(nn, cls_name)(**LAYER, **kw).eval()
    copy_weights(m, t, dtype)
    return m, t


ENCODER_CASES = [
    ("post-norm", dict(), np.float32),
    ("norm-first-gelu", dict(norm_first=True, activation="gelu"), np.float32),
    ("batch-first-callable", dict(batch_first=True, activation=torch.nn.functional.gelu), np.float32),
    ("norm-first-no-bias-float64", dict(norm_first=True, bias=False), np.float64),
]


def _activation(kw, ours):
    kw = dict(kw)
    if callable(kw.get("activation")) and ours:
        kw["activation"] = nn.functional.gelu
    return kw


@pytest.mark.parametrize("name,kw,dtype", ENCODER_CASES, ids=[c[0] for c in ENCODER_CASES])
def test_encoder_layer_matches_torch(name, kw, dtype):
    torch.manual_seed(0)
    t = torch.nn.TransformerEncoderLayer(**LAYER, **_activation(kw, False)).to(TDTYPE[dtype]).eval()
    m = nn.TransformerEncoderLayer(**LAYER, **_activation(kw, True)).eval()
    copy_weights(m, t, dtype)
    rng = np.random.default_rng(3)
    shape = (N, 4, 8) if kw.get("batch_first") else (4, N, 8)
    x = rng.standard_normal(shape).astype(dtype)
    padding = np.array([[False, False, False, True], [False, True, False, False]])
    compare(m, t, [x], dict(src_mask=causal(4), src_key_padding_mask=padding), dtype)
    m.zero_grad()
    t.zero_grad()
    float_mask = rng.standard_normal((4, 4)).astype(dtype)
    compare(m, t, [x], dict(src_mask=float_mask), dtype)
    compare(m, t, [x], dict(src_mask=causal(4), is_causal=True), dtype, grads=False)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first):
    m, t = layer_pair("TransformerDecoderLayer", norm_first=norm_first)
    rng = np.random.default_rng(4)
    tgt = rng.standard_normal((3, N, 8)).astype(np.float32)
    memory = rng.standard_normal((5, N, 8)).astype(np.float32)
    compare(m, t, [tgt, memory], dict(
        tgt_mask=causal(3), memory_mask=rng.standard_normal((3, 5)).astype(np.float32),
        tgt_key_padding_mask=np.array([[False, False, True], [False, False, False]]),
        memory_key_padding_mask=np.array([[False, True, False, False, False], [False] * 4 + [True]]),
    ), np.float32)


def test_transformer_matches_torch():
    batch_first = False
    kw = dict(LAYER, num_encoder_layers=2, num_decoder_layers=2)
    torch.manual_seed(0)
    with quiet():
        t = torch.nn.Transformer(**kw).eval()
    m = nn.Transformer(**kw).eval()
    assert [(k, v.shape) for k, v in m.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in t.state_dict().items()]
    assert "encoder.layers.1.self_attn.in_proj_weight" in m.state_dict()
    copy_weights(m, t, np.float32)
    rng = np.random.default_rng(6)
    src = rng.standard_normal((N, 5, 8) if batch_first else (5, N, 8)).astype(np.float32)
    tgt = rng.standard_normal((N, 3, 8) if batch_first else (3, N, 8)).astype(np.float32)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(tgt_mask.numpy(), torch.nn.Transformer.generate_square_subsequent_mask(3).numpy())
    with quiet():
        compare(m, t, [src, tgt], dict(
            tgt_mask=tgt_mask.numpy(), src_key_padding_mask=np.array([[False] * 4 + [True], [False] * 5]),
            memory_key_padding_mask=np.array([[False] * 4 + [True], [False] * 5]),
        ), np.float32)
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        m(ak.zeros((N, N, 4)), ak.zeros((N, N, 4)))
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        nn.Transformer(**kw, batch_first=True)(ak.zeros((2, 5, 8)), ak.zeros((3, 5, 8)))


def test_encoder_stack_clones_and_norm():
    layer = nn.TransformerEncoderLayer(**LAYER, dropout=0.0)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8))
    p0, p1 = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    assert p0 is not p1 and p0 is not layer.linear1.weight
    np.testing.assert_array_equal(p0.numpy(), layer.linear1.weight.numpy())
    with ak.no_grad():
        p0.add_(1.0)
    assert not np.array_equal(p0.numpy(), p1.numpy())
    torch.manual_seed(0)
    with quiet():
        t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(**LAYER, dropout=0.0), 2,
                                        norm=torch.nn.LayerNorm(8))
    copy_weights(enc, t, np.float32)
    x = np.random.default_rng(7).standard_normal((4, N, 8)).astype(np.float32)
    with quiet():  # training mode, dropout 0: deterministic
        compare(enc, t, [x], dict(mask=causal(4)), np.float32)


def test_dropout_active_in_training_only():
    layer = nn.TransformerEncoderLayer(**LAYER, dropout=0.5)
    x = ak.asarray(np.random.default_rng(8).standard_normal((4, N, 8)).astype(np.float32))
    a, b = layer(x).numpy(), layer(x).numpy()
    assert not np.allclose(a, b)
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), layer(x).numpy())


def test_encoder_layer_under_jit_matches_eager():
    layer = nn.TransformerEncoderLayer(**LAYER, batch_first=True, norm_first=True).eval()
    params = list(layer.parameters())
    mask = ak.asarray(causal(4))

    def loss_and_grads(x):
        loss = (layer(x, src_mask=mask) ** 2).mean()
        return loss, ak.autograd.grad(loss, params)

    rng = np.random.default_rng(9)
    jitted = ak.jit(loss_and_grads)
    for _ in range(2):
        x = ak.asarray(rng.standard_normal((N, 4, 8)).astype(np.float32))
        loss, grads = loss_and_grads(x)
        jloss, jgrads = jitted(x)
        np.testing.assert_allclose(jloss.item(), loss.item(), rtol=1e-5)
        for g, jg in zip(grads, jgrads):
            np.testing.assert_allclose(jg.numpy(), g.numpy(), rtol=1e-4, atol=1e-6)
    assert jitted.compile_count == 1
