"""Statistical functions of the array API (reductions)."""

from __future__ import annotations

import jax.numpy as jnp

from . import dtypes as D
from . import layout as L
from .kernels.launch import apply


__all__ = ["sum"]

def _axes(axis, ndim):
    if axis is None:
        return None
    return L.normalize_dims(axis, ndim, "axis")


def _sum(x, axis, keepdims, np_dtype):
    return jnp.sum(x, axis=axis, keepdims=keepdims, dtype=np_dtype)


def _sum_dtype(dtype):
    if dtype.kind == "bool" or dtype.kind == "int":
        return D.int64
    if dtype.kind == "uint":
        return D.uint64
    return dtype


def sum(x, /, *, axis=None, dtype=None, keepdims=False):
    """Sum over ``axis`` (all axes by default); integers accumulate in 64 bits."""
    dtype = _sum_dtype(x.dtype) if dtype is None else D.as_dtype(dtype)
    return apply(_sum, (x,), (_axes(axis, x.ndim), bool(keepdims), dtype.np))
