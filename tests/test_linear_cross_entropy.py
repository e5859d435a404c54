"""linear_cross_entropy against the unfused ``cross_entropy(linear(...))`` of PyTorch
(a test-only oracle) and of arraykit: values and gradients of input, weight and bias
for every reduction, ignore_index and label smoothing, in one chunk and in many
(chunks that overlap at the ends), float64/float32/bfloat16; the JAX custom_vjp
function; arraykit.grad and arraykit.jit; no N x V buffer in the compiled kernels."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import arraykit as ak
import arraykit.nn.functional as F
import arraykit.nn.functional.loss as LF
from arraykit.nn import linear_ce_kernels as LCE
from device_checks import raises_checked
from training import check_grad_and_jit_match_eager

TF = torch.nn.functional


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 16 tokens and 128 vocabulary rows, so that N=37, V=300 take three
    overlapping chunks of each."""
    monkeypatch.setattr(LF, "_LCE_TOKENS", 16)
    monkeypatch.setattr(LF, "_LCE_CPU_BLOCK_ELEMENTS", 16 * 128)


def _data(shape, d, vocab, dtype, rng, ignored=True):
    x = rng.normal(size=shape + (d,)).astype(dtype)
    w = (rng.normal(size=(vocab, d)) * 0.5).astype(dtype)
    b = rng.normal(size=vocab).astype(dtype)
    target = rng.integers(0, vocab, size=shape)
    if ignored:
        target.flat[::5] = -100
    return x, w, b, target


def _torch_unfused(x, w, b, target, **kwargs):
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    logits = TF.linear(tx, tw, tb if kwargs.pop("bias") else None)
    loss = TF.cross_entropy(logits.reshape(-1, w.shape[0]), torch.tensor(target).reshape(-1), **kwargs)
    if kwargs["reduction"] == "none":
        loss = loss.reshape(target.shape)
    return loss, (tx, tw, tb)


def _fused(x, w, b, target, **kwargs):
    ax, aw, ab = (ak.asarray(a).requires_grad_() for a in (x, w, b))
    loss = F.linear_cross_entropy(ax, aw, ak.asarray(target), ab if kwargs.pop("bias") else None,
                                  **kwargs)
    return loss, (ax, aw, ab)


CASES = list(itertools.product([(37,), (3, 13)], ["mean", "sum", "none"], [0.0, 0.15],
                               [False, True], [False, True]))


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("shape, reduction, smoothing, bias, ignored", CASES)
def test_matches_torch_unfused_float64(shape, reduction, smoothing, bias, ignored, chunked, request):
    if chunked:
        request.getfixturevalue("small_chunks")
    rng = np.random.default_rng(len(shape) + 2 * bias + 4 * ignored)
    x, w, b, target = _data(shape, 16, 300, np.float64, rng, ignored)
    kwargs = dict(reduction=reduction, label_smoothing=smoothing, bias=bias)
    t_loss, t_params = _torch_unfused(x, w, b, target, **kwargs)
    a_loss, a_params = _fused(x, w, b, target, **kwargs)
    assert a_loss.shape == tuple(t_loss.shape)
    np.testing.assert_allclose(a_loss.detach().numpy(), t_loss.detach().numpy(), rtol=1e-12, atol=1e-13)
    g = rng.normal(size=tuple(t_loss.shape))
    t_loss.backward(torch.tensor(g))
    a_loss.backward(ak.asarray(g))
    for a, t in zip(a_params, t_params[:3] if bias else t_params[:2]):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-13)
    if not bias:
        assert a_params[2].grad is None


@pytest.mark.parametrize("chunked", [False, True])
def test_float32_matches_unfused_forms(chunked, request):
    if chunked:
        request.getfixturevalue("small_chunks")
    rng = np.random.default_rng(11)
    x, w, b, target = _data((37,), 16, 300, np.float32, rng)
    kwargs = dict(reduction="mean", label_smoothing=0.1)
    a_loss, (ax, aw, ab) = _fused(x, w, b, target, bias=True, **kwargs)
    a_loss.backward()
    ux, uw, ub = (ak.asarray(a).requires_grad_() for a in (x, w, b))
    u_loss = F.cross_entropy(F.linear(ux, uw, ub), ak.asarray(target), **kwargs)
    u_loss.backward()
    t_loss, (tx, tw, tb) = _torch_unfused(x, w, b, target, bias=True, **kwargs)
    t_loss.backward()
    for mine, unfused, theirs in [(a_loss, u_loss, t_loss), (ax.grad, ux.grad, tx.grad),
                                  (aw.grad, uw.grad, tw.grad), (ab.grad, ub.grad, tb.grad)]:
        mine = mine.detach().numpy()
        scale = np.abs(theirs.detach().numpy()).max()
        np.testing.assert_allclose(mine, unfused.detach().numpy(), rtol=1e-5, atol=1e-6 * scale)
        np.testing.assert_allclose(mine, theirs.detach().numpy(), rtol=1e-5, atol=1e-6 * scale)


def test_bfloat16_within_bfloat16_error_of_torch_unfused(small_chunks):
    """bfloat16 inputs (float32 accumulation): the error against a float64 reference
    of the same bfloat16-rounded inputs is at most PyTorch's unfused bfloat16 error
    (which rounds the logits to bfloat16) plus one bfloat16 unit of the values."""
    rng = np.random.default_rng(12)
    x, w, b, target = _data((37,), 32, 300, np.float64, rng)
    x, w, b = (torch.tensor(a).to(torch.bfloat16).double().numpy() for a in (x, w, b))
    kwargs = dict(reduction="mean", label_smoothing=0.1)
    ref_loss, ref = _torch_unfused(x, w, b, target, bias=True, **kwargs)
    ref_loss.backward()
    t16 = [torch.tensor(a).to(torch.bfloat16).requires_grad_() for a in (x, w, b)]
    t_loss = TF.cross_entropy(TF.linear(*t16), torch.tensor(target), **kwargs)
    t_loss.backward()
    a16 = [ak.asarray(a).to(ak.bfloat16).requires_grad_() for a in (x, w, b)]
    a_loss = F.linear_cross_entropy(a16[0], a16[1], ak.asarray(target), a16[2], **kwargs)
    a_loss.backward()
    assert a_loss.dtype == ak.bfloat16 and all(a.grad.dtype == ak.bfloat16 for a in a16)
    pairs = [(a_loss, t_loss, ref_loss)] + [(a.grad, t.grad, r.grad) for a, t, r in zip(a16, t16, ref)]
    for mine, theirs, exact in pairs:
        exact = exact.detach().numpy()
        mine_err = np.abs(mine.detach().to(ak.float64).numpy() - exact).max()
        torch_err = np.abs(theirs.detach().double().numpy() - exact).max()
        assert mine_err <= torch_err + 2.0**-8 * np.abs(exact).max()


def test_all_targets_ignored_gives_nan_mean_as_torch():
    rng = np.random.default_rng(13)
    x, w, b, _ = _data((4,), 8, 20, np.float64, rng)
    target = np.full(4, -100)
    a = F.linear_cross_entropy(ak.asarray(x), ak.asarray(w), ak.asarray(target))
    t = TF.cross_entropy(TF.linear(torch.tensor(x), torch.tensor(w)), torch.tensor(target))
    assert np.isnan(a.item()) and np.isnan(t.item())
    s = F.linear_cross_entropy(ak.asarray(x), ak.asarray(w), ak.asarray(target), reduction="sum")
    assert s.item() == 0.0


def test_second_derivative_matches_torch(small_chunks):
    rng = np.random.default_rng(14)
    x, w, b, target = _data((37,), 16, 300, np.float64, rng)
    ax, aw = ak.asarray(x).requires_grad_(), ak.asarray(w).requires_grad_()
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    a_loss = F.linear_cross_entropy(ax, aw, ak.asarray(target), label_smoothing=0.1)
    t_loss = TF.cross_entropy(TF.linear(tx, tw), torch.tensor(target), label_smoothing=0.1)
    (a_gx,) = ak.autograd.grad(a_loss, ax, create_graph=True)
    (t_gx,) = torch.autograd.grad(t_loss, tx, create_graph=True)
    (a_gx ** 2).sum().backward()
    (t_gx ** 2).sum().backward()
    np.testing.assert_allclose(aw.grad.numpy(), tw.grad.numpy(), rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-14)


def test_functional_grad_and_jit_match_eager(small_chunks):
    rng = np.random.default_rng(15)
    x, w, b, target = (ak.asarray(a) for a in _data((2, 19), 16, 300, np.float32, rng))

    def loss(x, w, b):
        return F.linear_cross_entropy(x, w, target, b, label_smoothing=0.05)

    check_grad_and_jit_match_eager(loss, (x, w, b), rtol=1e-5, atol=1e-7)


def test_jax_custom_vjp_function_matches_optax_style_unfused():
    rng = np.random.default_rng(16)
    x, w, b, target = _data((37,), 16, 300, np.float32, rng)
    target = jnp.asarray(target, jnp.int32)
    options = (True, -100, 0.1, "mean", 16, 128)

    def unfused(x, w, b):
        logits = x @ w.T + b
        logp = jax.nn.log_softmax(logits)
        valid = target != -100
        safe = jnp.where(valid, target, 0)
        picked = jnp.take_along_axis(logp, safe[:, None], axis=1)[:, 0]
        rows = -(0.9 * picked + 0.1 * jnp.mean(logp, axis=1))
        return jnp.sum(jnp.where(valid, rows, 0)) / jnp.sum(valid)

    def fused(x, w, b):
        return LCE.linear_cross_entropy(x, w, b, target, options)

    with jax.default_matmul_precision("highest"):
        want, want_grads = jax.value_and_grad(unfused, argnums=(0, 1, 2))(x, w, b)
    got, got_grads = jax.jit(jax.value_and_grad(fused, argnums=(0, 1, 2)))(x, w, b)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for g, h in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, h, rtol=1e-5, atol=1e-7)


def test_compiled_kernels_hold_no_logits():
    """The compiled forward and backward need less temporary memory than half of one
    N x V float32 array (the unfused form needs at least one). Compiled for the CPU,
    whose chunk sizes these are (a GPU's figure adds its matrix library's workspace)."""
    n, d, vocab = 512, 64, 32768
    tokens, rows = LF._lce_chunks(n, vocab, "cpu")
    options = (False, -100, 0.0, "mean", tokens, rows)
    x = jax.ShapeDtypeStruct((n, d), jnp.float32)
    w = jax.ShapeDtypeStruct((vocab, d), jnp.float32)
    target = jnp.zeros((n,), jnp.int32)
    logits_bytes = n * vocab * 4

    def fused(x, w):
        return LCE.linear_cross_entropy(x, w, None, target, options)

    def unfused(x, w):
        return -jnp.mean(jax.nn.log_softmax(x @ w.T)[:, 0])

    def temp_bytes(loss):
        step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
        with jax.default_device(jax.devices("cpu")[0]):
            return step.lower(x, w).compile().memory_analysis().temp_size_in_bytes

    assert temp_bytes(fused) < logits_bytes / 2
    assert temp_bytes(unfused) >= logits_bytes


def test_target_out_of_range():
    with raises_checked(IndexError, match="target 20 is out of bounds for 20 classes"):
        F.linear_cross_entropy(ak.zeros((3, 4)), ak.zeros((20, 4)), ak.asarray([0, 1, 20]))


@pytest.mark.parametrize("call, error, match", [
    (lambda x, w, t: F.linear_cross_entropy(x, w, ak.asarray([0, 1])), ValueError, "target of shape"),
    (lambda x, w, t: F.linear_cross_entropy(x, w[:, :3], t), ValueError, "weight"),
    (lambda x, w, t: F.linear_cross_entropy(x, w.to(ak.float64), t), TypeError, "one dtype"),
    (lambda x, w, t: F.linear_cross_entropy(x, w, t, ak.zeros(3)), ValueError, "bias"),
    (lambda x, w, t: F.linear_cross_entropy(x, w, t.to(ak.float32)), TypeError, "integers"),
    (lambda x, w, t: F.linear_cross_entropy(x, w, t, reduction="avg"), ValueError, "reduction"),
    (lambda x, w, t: F.linear_cross_entropy(x, w, t, label_smoothing=2.0), ValueError, "smoothing"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(ak.zeros((3, 4)), ak.zeros((20, 4)), ak.asarray([0, 1, 2]))
