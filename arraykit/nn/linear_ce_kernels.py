"""Fused linear cross-entropy: ``cross_entropy(x @ w.T + b, target)`` without the
N x V logits (pure JAX; the Cut Cross-Entropy / Liger "fused linear" idea).

Tokens are split into chunks of ``tokens`` rows and the vocabulary into chunks of
``vocab`` rows of ``w``; only one (tokens x vocab) block of logits exists at a
time. The forward carries each row's running maximum and sum of exponentials
across the vocabulary chunks (an online log-sum-exp), with the target's logit and,
for label smoothing, the sum of the logits. The backward recomputes each block of
logits from the saved per-row log-sum-exp, forms that block's gradient
``scale * (softmax - a)`` (``a`` the smoothed one-hot target) and accumulates
``dx += g @ w_c`` and ``dw_c += g.T @ x_c``, ``db_c += sum(g)``.

A chunk that would run past the end starts earlier instead (``start = min(i *
size, total - size)``): no padded copy of ``x`` or ``w``; the rows or columns it
shares with the chunk before are masked out wherever they would count twice.
Logits and their statistics are computed in float32 (float64 for float64 inputs);
16-bit inputs are multiplied at their own precision with float32 accumulation.

``options`` is the hashable tuple ``(has_bias, ignore_index, smoothing, reduction,
tokens, vocab)``. :func:`linear_cross_entropy` is the ``jax.custom_vjp`` function;
:func:`forward` and :func:`backward` are its two halves, which arraykit launches as
the kernels of one autograd node.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

from ..kernels.bodies import at_least_float32

HIGHEST = lax.Precision.HIGHEST


def _dot(a, b, contract, compute):
    """``a`` and ``b`` contracted on ``contract`` (axis pairs), accumulated in ``compute``."""
    precision = HIGHEST if jnp.dtype(a.dtype).itemsize >= 4 else None
    return lax.dot_general(a, b, (contract, ((), ())), precision=precision,
                           preferred_element_type=compute)


def _chunk(i, size, total):
    """(nominal start, actual start) of chunk ``i``: the last chunk is moved back to fit."""
    nominal = i * size
    return nominal, jnp.minimum(nominal, total - size)


def _block_logits(x_c, w, b, start, size, compute):
    """Logits of the token chunk ``x_c`` against vocabulary rows ``[start, start + size)``."""
    w_c = lax.dynamic_slice_in_dim(w, start, size, 0)
    logits = _dot(x_c, w_c, ((1,), (1,)), compute)
    if b is not None:
        logits = logits + lax.dynamic_slice_in_dim(b, start, size, 0).astype(compute)
    return logits, w_c


def _row_stats(x_c, target_c, w, b, options):
    """Per row of ``x_c``: (log-sum-exp, target logit, sum of logits) over the vocabulary."""
    smoothing, size = options[2], options[5]
    vocab = w.shape[0]
    compute = at_least_float32(x_c.dtype)
    rows = x_c.shape[0]
    columns = lax.broadcasted_iota(jnp.int32, (1, size), 1)

    def step(i, carry):
        peak, total, picked, summed = carry
        nominal, start = _chunk(i, size, vocab)
        logits, _ = _block_logits(x_c, w, b, start, size, compute)
        fresh = start + columns >= nominal  # columns no earlier chunk has counted
        z = jnp.where(fresh, logits, -jnp.inf)
        new_peak = jnp.maximum(peak, jnp.max(z, axis=1))
        shift = jnp.where(jnp.isfinite(new_peak), new_peak, 0)
        total = total * jnp.exp(peak - shift) + jnp.sum(jnp.exp(z - shift[:, None]), axis=1)
        inside = (target_c >= nominal) & (target_c < start + size)
        at = jnp.clip(target_c - start, 0, size - 1)[:, None]
        picked = picked + jnp.where(inside, jnp.take_along_axis(logits, at, axis=1)[:, 0], 0)
        if smoothing:
            summed = summed + jnp.sum(jnp.where(fresh, logits, 0), axis=1)
        return new_peak, total, picked, summed

    zeros = jnp.zeros((rows,), compute)
    init = (jnp.full((rows,), -jnp.inf, compute), zeros, zeros, zeros)
    peak, total, picked, summed = lax.fori_loop(0, -(-vocab // size), step, init)
    shift = jnp.where(jnp.isfinite(peak), peak, 0)
    return jnp.log(total) + shift, picked, summed


def _token_chunks(n, size):
    return -(-n // size)


def forward(x, w, b, target, options):
    """(loss, lse): the reduced loss (``x``'s dtype) and each row's log-sum-exp (float32+)."""
    _, ignore_index, smoothing, reduction, size, _ = options
    n = x.shape[0]
    vocab = w.shape[0]
    compute = at_least_float32(x.dtype)

    def step(i, carry):
        lse, rows = carry
        _, start = _chunk(i, size, n)
        x_c = lax.dynamic_slice_in_dim(x, start, size, 0)
        t_c = lax.dynamic_slice_in_dim(target, start, size, 0)
        lse_c, picked, summed = _row_stats(x_c, t_c, w, b, options)
        # rows shared with the chunk before are recomputed to the same values: overwrite
        row = lse_c - (1 - smoothing) * picked - (smoothing / vocab) * summed
        row = jnp.where(t_c != ignore_index, row, 0)
        return (lax.dynamic_update_slice_in_dim(lse, lse_c, start, 0),
                lax.dynamic_update_slice_in_dim(rows, row, start, 0))

    init = (jnp.zeros((n,), compute), jnp.zeros((n,), compute))
    lse, rows = lax.fori_loop(0, _token_chunks(n, size), step, init)
    if reduction == "none":
        loss = rows
    elif reduction == "sum":
        loss = jnp.sum(rows)
    else:
        loss = jnp.sum(rows) / jnp.sum(target != ignore_index).astype(compute)
    return loss.astype(x.dtype), lse


def _row_scale(grad, target, ignore_index, reduction, compute):
    """d loss / d row loss per row (zero for ignored rows)."""
    valid = target != ignore_index
    grad = grad.astype(compute)
    if reduction == "mean":
        grad = grad / jnp.sum(valid).astype(compute)
    return jnp.where(valid, grad, 0)


def _chunk_gradients(x_c, t_c, lse_c, scale_c, fresh_rows, w, b, options, acc_dtype):
    """(dx_c, dw, db) of one token chunk; ``fresh_rows`` (None: all) masks the rows an
    earlier chunk already counted out of ``dw`` and ``db``."""
    _, _, smoothing, _, _, size = options
    vocab, _ = w.shape
    compute = at_least_float32(x_c.dtype)
    columns = lax.broadcasted_iota(jnp.int32, (1, size), 1)
    x_w = x_c if fresh_rows is None else jnp.where(fresh_rows[:, None], x_c, 0)
    row_weight = None if fresh_rows is None else fresh_rows.astype(compute)

    def step(i, carry):
        dx, dw, db = carry
        nominal, start = _chunk(i, size, vocab)
        logits, w_c = _block_logits(x_c, w, b, start, size, compute)
        p = jnp.exp(logits - lse_c[:, None])
        onehot = (start + columns) == t_c[:, None]
        a = jnp.where(onehot, 1 - smoothing, 0) + smoothing / vocab
        g = jnp.where(start + columns >= nominal, scale_c[:, None] * (p - a), 0)
        g_in = g.astype(x_c.dtype)
        dx = dx + _dot(g_in, w_c, ((1,), (0,)), compute)
        dw_c = _dot(g_in, x_w, ((0,), (0,)), compute)
        old = lax.dynamic_slice_in_dim(dw, start, size, 0)
        dw = lax.dynamic_update_slice_in_dim(dw, old + dw_c.astype(acc_dtype), start, 0)
        if b is not None:
            db_c = jnp.sum(g, axis=0) if row_weight is None else row_weight @ g
            old = lax.dynamic_slice_in_dim(db, start, size, 0)
            db = lax.dynamic_update_slice_in_dim(db, old + db_c.astype(acc_dtype), start, 0)
        return dx, dw, db

    init = (jnp.zeros(x_c.shape, compute), jnp.zeros(w.shape, acc_dtype),
            jnp.zeros((vocab,) if b is not None else (0,), acc_dtype))
    return lax.fori_loop(0, -(-vocab // size), step, init)


def backward(x, w, b, target, lse, grad, options):
    """(dx, dw, db) (db None without a bias) of the loss weighted by ``grad``."""
    _, ignore_index, _, reduction, size, _ = options
    n = x.shape[0]
    compute = at_least_float32(x.dtype)
    scale = _row_scale(grad, target, ignore_index, reduction, compute)
    chunks = _token_chunks(n, size)
    if chunks == 1:  # every dw row is written once: accumulate in w's own dtype
        dx, dw, db = _chunk_gradients(x, target, lse, jnp.broadcast_to(scale, (n,)), None, w, b,
                                      options, w.dtype)
        return dx.astype(x.dtype), dw, (db if b is not None else None)
    scale = jnp.broadcast_to(scale, (n,))
    acc = at_least_float32(w.dtype)

    def step(i, carry):
        dx, dw, db = carry
        nominal, start = _chunk(i, size, n)
        piece = functools.partial(lax.dynamic_slice_in_dim, start_index=start, slice_size=size,
                                  axis=0)
        fresh = start + jnp.arange(size) >= nominal
        dx_c, dw_c, db_c = _chunk_gradients(piece(x), piece(target), piece(lse), piece(scale),
                                            fresh, w, b, options, acc)
        return (lax.dynamic_update_slice_in_dim(dx, dx_c.astype(x.dtype), start, 0),
                dw + dw_c, db + db_c)

    init = (jnp.zeros(x.shape, x.dtype), jnp.zeros(w.shape, acc),
            jnp.zeros((w.shape[0],) if b is not None else (0,), acc))
    dx, dw, db = lax.fori_loop(0, chunks, step, init)
    return dx, dw.astype(w.dtype), (db.astype(b.dtype) if b is not None else None)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))
def linear_cross_entropy(x, w, b, target, options):
    """``cross_entropy(x @ w.T + b, target)`` of ``x`` (N, d), ``w`` (V, d), ``b`` (V,) or
    None and integer ``target`` (N,), without the N x V logits (see the module)."""
    return forward(x, w, b, target, options)[0]


def _fwd(x, w, b, target, options):
    loss, lse = forward(x, w, b, target, options)
    return loss, (x, w, b, target, lse)


def _bwd(options, residuals, grad):
    x, w, b, target, lse = residuals
    dx, dw, db = backward(x, w, b, target, lse, grad, options)
    return dx, dw, db, None


linear_cross_entropy.defvjp(_fwd, _bwd)
