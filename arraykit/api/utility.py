"""Utility functions of the array API: ``all``, ``any`` and ``diff``."""

from __future__ import annotations

import operator

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import check_same_device
from ..kernels import size_buckets
from ..kernels.launch import apply
from ..tensors.tensor_type import Tensor, require_tensor
from . import torch_keywords as T
from .creation import from_numpy
from .manipulation import _axes, _axis
from .naming import named

__all__ = ["all", "any", "diff"]


def _nonzero_bits(x):
    """Exact ``x != 0`` for floats: XLA on CPU flushes subnormals to zero in comparisons."""
    bits = lax.bitcast_convert_type(x, jnp.dtype(f"uint{x.dtype.itemsize * 8}"))
    return (bits << 1) != 0


def _truth(x):
    if x.dtype == jnp.bool_:
        return x
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        return _nonzero_bits(jnp.real(x)) | _nonzero_bits(jnp.imag(x))
    if jnp.issubdtype(x.dtype, jnp.floating):
        return _nonzero_bits(x)
    return x != 0


@size_buckets.reduction(True)
def _all(x, axis, keepdims):
    return jnp.all(_truth(x), axis=axis, keepdims=keepdims)


@size_buckets.reduction(False)
def _any(x, axis, keepdims):
    return jnp.any(_truth(x), axis=axis, keepdims=keepdims)


def _truth_reduction(name, body, doc):
    """The reduction ``name`` (``all``, ``any``) of truth values computed by the kernel
    ``body``, documented by ``doc``."""

    def reduce(x=None, /, dim=None, keepdim=None, *, axis=None, keepdims=False,
        input=None, out=None,  # noqa: A002 (PyTorch's names)
    ):
        if dim is not None or keepdim is not None or input is not None or out is not None:
            return T.reduction(reduce, name, x, input, axis, keepdims, dim, keepdim, out)
        require_tensor(x, name)
        return apply(body, (x,), (_axes(axis, x.ndim), bool(keepdims)))

    return named(reduce, name, doc)


all = _truth_reduction(
    "all", _all,
    "Whether every element along ``axis`` (all axes by default) is nonzero; True if empty.",
)
any = _truth_reduction(
    "any", _any,
    "Whether some element along ``axis`` (all axes by default) is nonzero; False if empty.",
)


def _diff(*args):
    *parts, axis, n, dtype = args
    a = parts[0].astype(dtype) if len(parts) == 1 else jnp.concatenate(
        [p.astype(dtype) for p in parts], axis=axis
    )
    for _ in range(min(n, a.shape[axis])):
        hi = lax.slice_in_dim(a, 1, None, axis=axis)
        lo = lax.slice_in_dim(a, 0, a.shape[axis] - 1, axis=axis)
        a = hi != lo if a.dtype == jnp.bool_ else hi - lo
    return a


def _edge(value, x, axis, name, dtype):
    """``prepend``/``append`` as a tensor shaped like ``x`` except along ``axis``, and
    ``dtype`` promoted with it (Python scalars follow the scalar rules)."""
    if isinstance(value, Tensor):
        dtype = D.promote(dtype, value._dtype)
    elif D.scalar_kind(value) is not None:
        dtype = D.promote_scalar(dtype, value)
        value = from_numpy(np.asarray(value, dtype=dtype.np), device=x.device)
    else:
        raise TypeError(f"diff: {name} must be an array or a Python scalar, got {type(value).__name__}")
    check_same_device(x.device, value.device, "diff")
    shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]
    if value.ndim == 0:
        return value._view(L.broadcast_to(value._layout, shape)), dtype
    if value.ndim != x.ndim or value.shape[:axis] + value.shape[axis + 1:] != shape[:axis] + shape[axis + 1:]:
        raise ValueError(
            f"diff: {name} of shape {value.shape} must match the shape {x.shape} of x "
            f"except along axis {axis}"
        )
    return value, dtype


def diff(x=None, /, n=1, axis=-1, prepend=None, append=None, *, dim=None, input=None,  # noqa: A002
         out=None):
    """The ``n``-th forward difference along ``axis``, after joining ``prepend``/``append``.

    Boolean inputs give ``x[i+1] != x[i]`` (as NumPy); mixed dtypes are promoted.
    The standard makes ``n``/``axis`` keyword-only; they are also accepted
    positionally in NumPy's order (``diff(x, 2)``), as libraries written for
    NumPy call it that way. PyTorch's ``dim=``, ``input=`` and ``out=`` are accepted.
    """
    if dim is not None or input is not None or out is not None:
        axis = T.pick("diff", "axis", axis, "dim", dim, -1)
        return T.forward(diff, "diff", x, input, out, n, axis, prepend, append)
    require_tensor(x, "diff")
    if x.ndim == 0:
        raise ValueError("diff needs an array of at least one dimension, got a 0-d array")
    axis = _axis(axis, x.ndim)
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    parts = [x]
    dtype = x._dtype
    for name, value in (("prepend", prepend), ("append", append)):
        if value is not None:
            edge, dtype = _edge(value, x, axis, name, dtype)
            parts.insert(0 if name == "prepend" else len(parts), edge)
    return apply(_diff, tuple(parts), (axis, n, dtype.np))
