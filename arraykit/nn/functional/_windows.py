"""Argument handling shared by the sliding-window families (convolution, pooling,
fold): per-dimension tuples, the optional batch dimension, output sizes."""

from __future__ import annotations

import operator


def _ntuple(value, n, name, op):
    """``value`` as an ``n``-tuple of ints (an int is repeated, as PyTorch)."""
    if not isinstance(value, (tuple, list)):
        return (operator.index(value),) * n
    value = tuple(value)
    if len(value) == 1 and n > 1:
        value *= n
    if len(value) != n or not all(isinstance(v, int) for v in value):
        raise ValueError(f"{op}: {name} must be an int or a tuple of {n} ints, got {value!r}")
    return value


def _batched(x, nd, op, what="input"):
    """``(x with a batch dimension, whether one was added)`` for an input of ``nd``
    spatial dimensions given with or without its batch dimension."""
    if x.ndim == nd + 1:
        return x.unsqueeze(0), True
    if x.ndim != nd + 2:
        raise RuntimeError(
            f"{op}: Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) {what}, but got "
            f"{what} of size: {list(x.shape)}"
        )
    return x, False


def _pool_out(size, kernel, stride, pad, dilation, ceil_mode):
    """PyTorch's pooling output length along one dimension (a window that would start
    in the right padding is dropped in ``ceil_mode``)."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out
