"""Lowering of strided reads and writes of a flat buffer to XLA operations.

Called while tracing a kernel, with the layout static. Reads become
``slice -> reshape -> strided slice -> transpose -> rev -> broadcast_in_dim``
whenever the strides nest (each dimension's span fits inside the next larger
stride); only overlapping layouts (``unfold``/``as_strided`` windows) fall back to
a gather with an iota-computed index. Writes of a dense block become a
``dynamic_update_slice``; other writes a scatter with unique, in-bounds indices.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax



def _normalize(layout):
    """Split a layout into addressing dims and the ops that restore its shape.

    Returns (offset, dims, flipped) where ``dims`` lists (dim, size, stride) with
    positive strides sorted by decreasing stride and ``flipped`` the dims whose
    stride was negative.
    """
    offset = layout.offset
    dims = []
    flipped = []
    for d, (n, s) in enumerate(zip(layout.shape, layout.strides)):
        if n == 1 or s == 0:
            continue
        if s < 0:
            offset += (n - 1) * s
            s = -s
            flipped.append(d)
        dims.append((d, n, s))
    dims.sort(key=lambda t: -t[2])
    return offset, dims, flipped


def _nests(dims):
    """Whether each dim's span below it fits inside its stride (no overlap)."""
    reach = 0
    for _, n, s in reversed(dims):
        if s <= reach:
            return False
        reach += (n - 1) * s
    return True


def _merge(dims):
    """Merge adjacent sorted dims that are contiguous with each other."""
    merged = []
    for _, n, s in dims:
        if merged and merged[-1][1] == n * s:
            pn, _ = merged[-1]
            merged[-1] = (pn * n, s)
        else:
            merged.append((n, s))
    return merged


def _fit(x, length):
    """Cut or zero-pad the last axis of ``x`` to ``length``."""
    have = x.shape[-1]
    if have >= length:
        return lax.slice_in_dim(x, 0, length, axis=x.ndim - 1)
    pad = [(0, 0, 0)] * (x.ndim - 1) + [(0, length - have, 0)]
    return lax.pad(x, jnp.zeros((), x.dtype), pad)


def _read_nested(buf, offset, dims):
    merged = _merge(dims)
    n0, s0 = merged[0]
    stop = min(offset + n0 * s0, buf.shape[0])
    x = _fit(lax.slice(buf, (offset,), (stop,)), n0 * s0).reshape(n0, s0)
    for n, s in merged[1:]:
        x = _fit(x, n * s)
        x = x.reshape(x.shape[:-1] + (n, s))
    return lax.index_in_dim(x, 0, axis=x.ndim - 1, keepdims=False).reshape(
        tuple(n for _, n, _ in dims)
    )


def _index(dims, offset):
    """Flat storage index of every element of the sorted ``dims``, built from iotas."""
    shape = tuple(n for _, n, _ in dims)
    idx = jnp.full(shape, offset, dtype=jnp.int64)
    for axis, (_, n, s) in enumerate(dims):
        idx = idx + lax.broadcasted_iota(jnp.int64, shape, axis) * s
    return idx


def _restore(x, layout, dims, flipped):
    """Undo the sort (transpose), the flips (rev) and the dropped dims (broadcast)."""
    kept = [d for d, _, _ in dims]
    order = sorted(range(len(kept)), key=lambda i: kept[i])
    if order != list(range(len(kept))):
        x = lax.transpose(x, order)
    kept_sorted = sorted(kept)
    rev = [kept_sorted.index(d) for d in flipped if d in kept_sorted]
    if rev:
        x = lax.rev(x, rev)
    if len(kept_sorted) != layout.ndim:
        x = lax.broadcast_in_dim(x, layout.shape, kept_sorted)
    return x


def read(buf, layout):
    """Values of ``layout`` over flat ``buf`` as a dense array of ``layout.shape``."""
    if layout.numel == 0:
        return jnp.zeros(layout.shape, buf.dtype)
    offset, dims, flipped = _normalize(layout)
    if not dims:
        x = lax.slice(buf, (offset,), (offset + 1,)).reshape(())
        return lax.broadcast_in_dim(x, layout.shape, ())
    if _nests(dims):
        x = _read_nested(buf, offset, dims)
    else:
        x = buf.at[_index(dims, offset)].get(mode="promise_in_bounds")
    return _restore(x, layout, dims, flipped)


def write(buf, layout, values):
    """``buf`` with ``values`` (shape ``layout.shape``) stored through ``layout``.

    The layout must not overlap itself (callers check it).
    """
    if layout.numel == 0:
        return buf
    values = values.astype(buf.dtype)
    offset, dims, flipped = _normalize(layout)
    if not dims:
        return lax.dynamic_update_slice(buf, values.reshape(1), (offset,))
    kept = sorted(d for d, _, _ in dims)
    squeezed = values.reshape(tuple(layout.shape[d] for d in kept))
    if flipped:
        squeezed = lax.rev(squeezed, [kept.index(d) for d in flipped])
    order = [kept.index(d) for d, _, _ in dims]
    if order != list(range(len(order))):
        squeezed = lax.transpose(squeezed, order)
    merged = _merge(dims)
    if len(merged) == 1 and merged[0][1] == 1:
        return lax.dynamic_update_slice(buf, squeezed.reshape(-1), (offset,))
    idx = _index(dims, offset)
    return buf.at[idx].set(
        squeezed, mode="promise_in_bounds", unique_indices=True, indices_are_sorted=True
    )

