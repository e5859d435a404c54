"""Scaled dot-product attention as pure JAX kernels (launched through
:func:`arraykit.kernels.launch.apply`, or :func:`arraykit.random.draw` with dropout).

Operands follow PyTorch's layout: query ``(..., Hq, L, E)``, key ``(..., Hk, S, E)``,
value ``(..., Hk, S, Ev)``, an optional mask broadcastable to ``(..., Hq, L, S)``
(boolean: True takes part; floating: added to the scores). Query head ``n`` reads
key/value head ``n // (Hq // Hk)`` (``repeat_interleave`` of the key/value heads,
PyTorch's ``enable_gqa``), computed by grouping the query heads, never by copying
keys. A row whose every score is masked out gives zeros (and zero gradients), as
PyTorch does.

Two lowerings of one semantics: :func:`attention` calls
``jax.nn.dot_product_attention`` (JAX's fused attention: cuDNN's kernel on a GPU for
16-bit inputs); :func:`attention_math` is plain XLA (dropout, shapes the fused form
rejects). Scores and softmax are computed in at least float32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.bodies import at_least_float32

HIGHEST = lax.Precision.HIGHEST


def _precision(dtype):
    """Full precision for 32/64-bit floats (as arraykit's matmul); 16-bit inputs
    multiply at their own precision and accumulate in float32."""
    return HIGHEST if jnp.dtype(dtype).itemsize >= 4 else None


def _causal(rows, cols):
    """PyTorch's causal mask: row ``i`` attends to columns ``j <= i`` (top-left aligned)."""
    return lax.broadcasted_iota(jnp.int32, (rows, cols), 0) >= lax.broadcasted_iota(
        jnp.int32, (rows, cols), 1)


def _masked_softmax(scores):
    """Softmax over the last axis where ``-inf`` marks masked scores; rows masked
    entirely give zeros (no NaN in values or gradients)."""
    peak = lax.stop_gradient(jnp.max(scores, axis=-1, keepdims=True))
    peak = jnp.where(jnp.isfinite(peak), peak, 0)
    e = jnp.exp(scores - peak)
    total = jnp.sum(e, axis=-1, keepdims=True)
    return e / jnp.where(total == 0, 1, total)


def _group_heads(t, groups, split):
    """``(..., H, R, C)`` -> ``(..., H / groups, groups, R, C)`` when ``split`` (query heads,
    or a mask with one entry per query head), else ``(..., H, 1, R, C)`` (key/value heads,
    or a mask without a head axis of its own, which broadcasts)."""
    if split:
        return t.reshape(t.shape[:-3] + (t.shape[-3] // groups, groups) + t.shape[-2:])
    return t[..., None, :, :] if t.ndim >= 3 else t


def attention_math(q, k, v, mask, key, options):
    """Attention in plain XLA: ``softmax(q k^T * scale + mask) v``, with dropout of the
    attention weights when ``key`` (a JAX PRNG key) is given.

    ``options`` is ``(mask_kind, is_causal, scale, groups, keep)``: ``mask_kind`` None,
    ``'bool'`` or ``'float'``; ``groups`` query heads per key/value head (1: none);
    ``keep`` the probability of keeping a weight under dropout.
    """
    mask_kind, is_causal, scale, groups, keep = options
    compute = at_least_float32(q.dtype)
    if groups > 1:
        q = _group_heads(q, groups, True)
        k = _group_heads(k, groups, False)
        v = _group_heads(v, groups, False)
        if mask is not None:
            mask = _group_heads(mask, groups, mask.ndim >= 3 and mask.shape[-3] > 1)
    scores = jnp.einsum("...le,...se->...ls", q, k, precision=_precision(q.dtype),
                        preferred_element_type=compute) * jnp.asarray(scale, compute)
    rows, cols = scores.shape[-2:]
    allowed = _causal(rows, cols) if is_causal else None
    if mask_kind == "float":
        scores = scores + mask.astype(compute)
    elif mask_kind == "bool":
        allowed = mask if allowed is None else mask & allowed
    if allowed is not None:
        scores = jnp.where(allowed, scores, -jnp.inf)
    weights = _masked_softmax(scores)
    if key is not None:
        kept = jax.random.bernoulli(key, keep, weights.shape)
        weights = jnp.where(kept, weights * (1 / keep if keep else 0.0), 0)
    out = jnp.einsum("...ls,...sv->...lv", weights.astype(v.dtype), v,
                     precision=_precision(v.dtype), preferred_element_type=compute)
    out = out.astype(q.dtype)
    if groups > 1:
        out = out.reshape(out.shape[:-4] + (out.shape[-4] * groups,) + out.shape[-2:])
    return out


def _to_4d(t, batch):
    """``(*batch, H, R, C)`` (leading axes broadcast to ``batch``) -> ``(B, H, R, C)``."""
    t = t.reshape((1,) * (len(batch) + 3 - t.ndim) + t.shape)
    t = jnp.broadcast_to(t, batch + t.shape[-3:])
    return t.reshape((int(np.prod(batch, dtype=np.int64)),) + t.shape[-3:])


def attention(q, k, v, mask, options):
    """The same attention through ``jax.nn.dot_product_attention`` (no dropout).

    Needs query, key and value of one rank >= 3 with equal leading (batch) axes,
    ``Ev == E``, and a mask broadcastable to ``(..., Hq, L, S)`` with at most that
    rank. ``options`` as :func:`attention_math` plus ``implementation`` (None: XLA,
    ``'cudnn'``: tried first, XLA when cuDNN refuses the shapes).
    """
    mask_kind, is_causal, scale, _, _, implementation = options
    batch = q.shape[:-3]
    out_shape = q.shape
    q, k, v = (jnp.swapaxes(_to_4d(t, batch), 1, 2) for t in (q, k, v))  # (B, L, H, E)
    compute = at_least_float32(q.dtype)
    bias = boolean = None
    rows, cols = q.shape[1], k.shape[1]
    allowed = _causal(rows, cols) if is_causal else None
    if mask_kind == "bool":
        boolean = _to_4d(mask, batch)
        allowed = boolean if allowed is None else boolean & allowed
    elif mask_kind == "float":
        bias = _to_4d(mask, batch).astype(compute)
        finite = bias > -jnp.inf
        allowed = finite if allowed is None else finite & allowed
        bias = jnp.maximum(bias, jnp.finfo(compute).min / 2)  # -inf: JAX's softmax gives NaN
    out = None
    if implementation == "cudnn":
        try:
            out = jax.nn.dot_product_attention(q, k, v, bias, boolean, scale=scale,
                                               is_causal=is_causal, implementation="cudnn")
        except (ValueError, NotImplementedError, RuntimeError, TypeError):
            out = None
    if out is None:
        out = jax.nn.dot_product_attention(q, k, v, bias, boolean, scale=scale,
                                           is_causal=is_causal, implementation="xla")
    if mask_kind is not None:  # rows with nothing to attend to: zeros, as PyTorch
        live = jnp.any(allowed, axis=-1)  # (B or 1, H or 1, L)
        live = jnp.broadcast_to(live, (q.shape[0], live.shape[1], rows))
        out = jnp.where(jnp.swapaxes(live, 1, 2)[..., None], out, 0)
    return jnp.swapaxes(out, 1, 2).reshape(out_shape[:-1] + (v.shape[-1],))
