"""Fused JAX kernels of the losses with hand-written gradients (pure functions of
dense arrays, launched through :func:`arraykit.kernels.launch.apply`).

Cross-entropy in one form for every option: with ``a`` the per-class weights of a
row (the target distribution times the class weights, label smoothing included;
zero for ignored rows) and ``A`` their sum, the row loss is
``-sum_c a_c log p_c = A * lse - sum_c a_c x_c`` and its gradient
``A * softmax(x) - a``. The forward returns the reduced loss and the per-row
log-sum-exp; the backward rebuilds ``softmax`` from that saved log-sum-exp in
the same fused pass that writes the gradient, so the only N x C buffer it makes
is the gradient itself.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax


def _compute_dtype(x):
    return jnp.float32 if jnp.dtype(x.dtype).itemsize < 4 else x.dtype


def _rows_last(x):
    """(N, C, d1, ...) -> (N, d1, ..., C): classes on the last axis."""
    return jnp.moveaxis(x, 1, -1) if x.ndim > 2 else x


def _rows_first(g, ndim):
    return jnp.moveaxis(g, -1, 1) if ndim > 2 else g


def _logsumexp(x):
    peak = lax.stop_gradient(jnp.max(x, axis=-1, keepdims=True))
    peak = jnp.where(jnp.isfinite(peak), peak, 0)
    return jnp.log(jnp.sum(jnp.exp(x - peak), axis=-1)) + peak[..., 0]


def _weights(x, target, weight, options):
    """(a, A, denominator terms) for the rows of ``x`` (classes last)."""
    by_index, has_weight, ignore_index, smoothing, _ = options
    classes = x.shape[-1]
    w = weight.astype(x.dtype) if has_weight else jnp.ones((classes,), x.dtype)
    if by_index:
        valid = target != ignore_index
        safe = jnp.where(valid, target, 0)
        w_target = jnp.where(valid, w[safe], 0)
        onehot = (safe[..., None] == lax.broadcasted_iota(safe.dtype, safe.shape + (classes,), safe.ndim))
        a = (1 - smoothing) * jnp.where(onehot, w_target[..., None], 0)
        if smoothing:
            a = a + (smoothing / classes) * jnp.where(valid[..., None], w, 0)
        return a, w_target
    dist = _rows_last(target).astype(x.dtype)
    if smoothing:
        dist = dist * (1 - smoothing) + smoothing / classes
    a = dist * w
    return a, jnp.ones(x.shape[:-1], x.dtype)


def _reduce(rows, denominator, reduction):
    if reduction == "none":
        return rows
    if reduction == "sum":
        return jnp.sum(rows)
    return jnp.sum(rows) / jnp.sum(denominator)


def _index_terms(x, target, weight, options):
    """Class-index targets without an N x C weight array: (valid, safe targets,
    class weights or None, target weights ``w_t``, row sums ``A`` of ``a``)."""
    _, has_weight, ignore_index, smoothing, _ = options
    classes = x.shape[-1]
    valid = target != ignore_index
    safe = jnp.where(valid, target, 0)
    w = weight.astype(x.dtype) if has_weight else None
    w_target = jnp.where(valid, w[safe], 0) if has_weight else valid.astype(x.dtype)
    total = (1 - smoothing) * w_target
    if smoothing:
        w_sum = jnp.sum(w) if has_weight else jnp.asarray(classes, x.dtype)
        total = total + jnp.where(valid, (smoothing / classes) * w_sum, 0)
    return valid, safe, w, w_target, total


def cross_entropy_forward(x, target, weight, options):
    """(loss, lse): the reduced loss and the per-row log-sum-exp (classes last)."""
    out_dtype = x.dtype
    x = _rows_last(x).astype(_compute_dtype(x))
    lse = _logsumexp(x)
    if options[0]:  # class indices: gather the target logits, no N x C weights
        smoothing = options[3]
        valid, safe, w, w_target, total = _index_terms(x, target, weight, options)
        x_target = jnp.take_along_axis(x, safe[..., None], axis=-1)[..., 0]
        picked = (1 - smoothing) * w_target * x_target
        if smoothing:
            spread = jnp.sum(x * w, axis=-1) if w is not None else jnp.sum(x, axis=-1)
            picked = picked + jnp.where(valid, (smoothing / x.shape[-1]) * spread, 0)
        rows = total * lse - picked
        return _reduce(rows, w_target, options[-1]).astype(out_dtype), lse
    a, denominator = _weights(x, target, weight, options)
    rows = jnp.sum(a, axis=-1) * lse - jnp.sum(a * x, axis=-1)
    return _reduce(rows, denominator, options[-1]).astype(out_dtype), lse


def row_logsumexp(x):
    """The per-row log-sum-exp that :func:`cross_entropy_forward` returns (classes last)."""
    return _logsumexp(_rows_last(x).astype(_compute_dtype(x)))


def cross_entropy_backward(x, target, weight, lse, grad, options):
    """The gradient of the logits: ``grad * (A * softmax(x) - a)``, scaled by the reduction."""
    ndim = x.ndim
    out_dtype = x.dtype
    x = _rows_last(x).astype(_compute_dtype(x))
    if options[0]:
        smoothing = options[3]
        valid, safe, w, w_target, total = _index_terms(x, target, weight, options)
        classes = x.shape[-1]
        onehot = safe[..., None] == lax.broadcasted_iota(safe.dtype, x.shape, x.ndim - 1)
        a = jnp.where(onehot, ((1 - smoothing) * w_target)[..., None], 0)
        if smoothing:
            uniform = (smoothing / classes) * (w if w is not None else 1)
            a = a + jnp.where(valid[..., None], uniform, 0)
        denominator = w_target
    else:
        a, denominator = _weights(x, target, weight, options)
        total = jnp.sum(a, axis=-1)
    reduction = options[-1]
    scale = grad.astype(x.dtype)
    if reduction == "mean":
        scale = scale / jnp.sum(denominator)
    scale = scale[..., None] if reduction == "none" else scale
    p = jnp.exp(x - lse[..., None])
    g = scale * (total[..., None] * p - a)
    return _rows_first(g, ndim).astype(out_dtype)


def log_softmax(x, dim):
    """``x - logsumexp(x)`` along ``dim``."""
    z = jnp.moveaxis(x, dim, -1)
    return jnp.moveaxis(z - _logsumexp(z)[..., None], -1, dim)


def log_softmax_backward(out, grad, dim):
    """VJP of log_softmax from its output: ``g - exp(out) * sum(g)``."""
    return grad - jnp.exp(out) * jnp.sum(grad, axis=dim, keepdims=True)


def softmax(x, dim):
    """``exp(x - logsumexp(x))`` along ``dim``."""
    return jnp.exp(log_softmax(x, dim))


def softmax_backward(out, grad, dim):
    """VJP of softmax from its output: ``out * (g - sum(g * out))``."""
    return out * (grad - jnp.sum(grad * out, axis=dim, keepdims=True))


def logsumexp(x, dims, keepdim):
    """Stable log-sum-exp over ``dims``."""
    peak = lax.stop_gradient(jnp.max(x, axis=dims, keepdims=True))
    peak = jnp.where(jnp.isfinite(peak), peak, 0)
    out = jnp.log(jnp.sum(jnp.exp(x - peak), axis=dims, keepdims=True)) + peak
    return out if keepdim else jnp.squeeze(out, axis=dims)


def logsumexp_backward(x, out, grad, dims, keepdim):
    """VJP of logsumexp from its output: ``g * exp(x - out)``."""
    if not keepdim:
        out = jnp.expand_dims(out, dims)
        grad = jnp.expand_dims(grad, dims)
    return grad * jnp.exp(x - out)
