"""Lowering of strided reads and writes of a storage buffer (addressed flat) to XLA operations.

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

from ..core import layout as L


def _normalize(layout, offset):
    """Split a layout into addressing dims and the ops that restore its shape.

    Returns (start, dims, flipped): ``start`` is the lowest storage index touched
    (``offset`` may be a traced value), ``dims`` lists (dim, size, stride) with
    positive strides sorted by decreasing stride and ``flipped`` the dims whose
    stride was negative.
    """
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
    span = sum((n - 1) * s for n, s in merged) + 1
    x = _fit(lax.dynamic_slice(buf, (offset,), (span,)), n0 * s0).reshape(n0, s0)
    for n, s in merged[1:]:
        x = _fit(x, n * s)
        x = x.reshape(x.shape[:-1] + (n, s))
    return lax.index_in_dim(x, 0, axis=x.ndim - 1, keepdims=False).reshape(
        tuple(n for _, n, _ in dims)
    )


def _read_reshaped(buf, offset, dims):
    """A nested read at a static offset as a reshape of the buffer and one static slice,
    or None when that form does not fit (then :func:`_read_nested` pads).

    It fits when each merged stride divides the next larger one and the offset's digits
    in that mixed radix leave room for each dimension without carrying: ``q, k, v`` of
    ``qkv.split(c, dim=-1)`` are then slices of ``qkv`` seen as ``(b, t, 3c)``, which XLA
    fuses into their readers (and whose transposes it sums in place) instead of
    copying or padding the whole buffer.
    """
    if not isinstance(offset, int):
        return None
    merged = _merge(dims)
    strides = [s for _, s in merged]
    if any(outer % inner for outer, inner in zip(strides, strides[1:])):
        return None
    n0, s0 = merged[0]
    first, rest = divmod(offset, s0)
    if (first + n0) * s0 > buf.shape[0]:
        return None
    shape = [n0]
    starts = [0]
    for (n, s), outer in zip(merged[1:], strides):
        digit, rest = divmod(rest, s)
        if digit + n > outer // s:
            return None
        shape.append(outer // s)
        starts.append(digit)
    sizes = [n for n, _ in merged]
    if strides[-1] != 1:  # elements between the innermost stride's steps: pick one
        shape.append(strides[-1])
        starts.append(rest)
        sizes.append(1)
    x = lax.slice_in_dim(buf, first * s0, (first + n0) * s0).reshape(shape)
    x = lax.slice(x, starts, [a + n for a, n in zip(starts, sizes)])
    return x.reshape(tuple(n for _, n, _ in dims))


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


def read(buf, layout, offset=None):
    """Values of ``layout`` over ``buf`` (addressed flat) as a dense array of ``layout.shape``.

    ``offset`` overrides ``layout.offset`` (a traced value lets one compiled
    kernel serve every offset of one shape and strides).
    """
    if buf.ndim != 1:
        if offset is None and buf.shape == layout.shape and layout == L.contiguous(buf.shape):
            return buf
        buf = buf.reshape(-1)
    if layout.numel == 0:
        return jnp.zeros(layout.shape, buf.dtype)
    offset, dims, flipped = _normalize(layout, layout.offset if offset is None else offset)
    if not dims:
        x = lax.dynamic_slice(buf, (offset,), (1,)).reshape(())
        return lax.broadcast_in_dim(x, layout.shape, ())
    if _nests(dims):
        x = _read_reshaped(buf, offset, dims)
        if x is None:
            x = _read_nested(buf, offset, dims)
    else:
        x = buf.at[_index(dims, offset)].get(mode="promise_in_bounds")
    return _restore(x, layout, dims, flipped)


_DENSE_ENOUGH = 4  # a nested write touching >= 1/4 of its span rewrites the span


def _place(x, merged, span):
    """Scatter-free placement: ``x`` (shape of the merged dims) laid out flat at
    positions ``sum(k_i * s_i)`` in an array of length ``span`` (zeros elsewhere).

    The inverse of :func:`_read_nested`: each level pads its trailing axis to its
    stride and merges; nesting guarantees the cuts only drop padding.
    """
    x = x.reshape(tuple(n for n, _ in merged) + (1,))
    for n, s in reversed(merged):
        x = _fit(x, s)
        x = x.reshape(x.shape[:-2] + (n * s,))
    return _fit(x, span)


def _write_region(buf, offset, merged, span, values):
    """Nested strided write as one pass over the touched span: select, then DUS."""
    placed = _place(values, merged, span)
    mask = _place(jnp.ones(values.shape, dtype=bool), merged, span)
    region = lax.dynamic_slice(buf, (offset,), (span,))
    return lax.dynamic_update_slice(buf, jnp.where(mask, placed, region), (offset,))


def _smallest_factor(n):
    """The smallest prime factor of ``n`` >= 2."""
    k = 2
    while k * k <= n:
        if n % k == 0:
            return k
        k += 1
    return n


def write(buf, layout, values, offset=None, scatter=False):
    """``buf`` with ``values`` (shape ``layout.shape``) stored through ``layout``.

    The layout must not overlap itself (callers check it). ``offset`` as in :func:`read`.
    A single dense block becomes a ``dynamic_update_slice``; a nested layout that
    fills at least a quarter of its span a select over that span (the reshape trick
    of :func:`_read_nested` in reverse) and one ``dynamic_update_slice``; anything
    else a scatter of contiguous runs (windows), or of single elements when no
    stride is 1.

    ``scatter=True`` (callers pass it when the buffer is traced inside an outer
    ``jax.jit``) avoids ``dynamic_update_slice`` for multi-element partial writes:
    XLA:CPU miscompiles an in-place dynamic-update-slice fusion whose update reads
    the same buffer at shifted positions once a reshape follows it
    (openxla/xla#49176), e.g. ``x[1:] = x[:-1] * 2`` traced whole. A scatter of a
    single window is turned back into a dynamic-update-slice by XLA, so a single
    block is scattered as at least two windows.
    """
    if buf.ndim != 1:
        return write(buf.reshape(-1), layout, values, offset, scatter).reshape(buf.shape)
    if layout.numel == 0:
        return buf
    values = values.astype(buf.dtype)
    offset, dims, flipped = _normalize(layout, layout.offset if offset is None else offset)
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
    (n_last, s_last) = merged[-1]
    if len(merged) == 1 and s_last == 1 and (not scatter or n_last == buf.shape[0]):
        return lax.dynamic_update_slice(buf, squeezed.reshape(-1), (offset,))
    if not scatter and _nests(dims):
        span = sum((n - 1) * s for n, s in merged) + 1
        if span <= _DENSE_ENOUGH * layout.numel:
            return _write_region(buf, offset, merged, span, squeezed)
    if s_last != 1:
        outer, window = merged, 1
    elif len(merged) == 1:  # scatter mode, one block: split it so XLA keeps a scatter
        window = n_last // _smallest_factor(n_last)
        outer, window = [(n_last // window, window)], window
    else:
        outer, window = merged[:-1], n_last
    shape = tuple(n for n, _ in outer)
    idx = jnp.full(shape, offset, dtype=jnp.int64)
    for axis, (n, s) in enumerate(outer):
        idx = idx + lax.broadcasted_iota(jnp.int64, shape, axis) * s
    dnums = lax.ScatterDimensionNumbers(
        update_window_dims=(len(shape),), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,)
    )
    return lax.scatter(
        buf, idx[..., None], squeezed.reshape(shape + (window,)), dnums,
        indices_are_sorted=_nests(dims), unique_indices=True,
        mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS,
    )
