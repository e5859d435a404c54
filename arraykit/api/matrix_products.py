"""Linear algebra functions of the array API main namespace.

``matmul``, ``tensordot`` and ``vecdot`` promote their operands with the
standard's table and contract at the precision of
:func:`arraykit.set_float32_matmul_precision` (default ``"highest"``: full float32
products on every backend, so results match NumPy closely); under
:class:`arraykit.autocast` matmul and vecdot compute in its lower-precision dtype.
``matrix_transpose`` is a view.
"""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp

from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import check_same_device
from ..kernels.launch import apply
from ..tensors import namespace_registry
from ..tensors.tensor_type import Tensor
from . import torch_keywords as T
from ..core import precision as P
from .autocasting import coerce

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]

HIGHEST = jax.lax.Precision.HIGHEST


def _matmul(a, b, dtype, precision):
    return jnp.matmul(a.astype(dtype), b.astype(dtype), precision=precision)


def _tensordot(a, b, axes1, axes2, dtype, precision):
    return jnp.tensordot(a.astype(dtype), b.astype(dtype), (axes1, axes2), precision=precision)


def _vecdot(a, b, axis, dtype, precision):
    return jnp.vecdot(a.astype(dtype), b.astype(dtype), axis=axis, precision=precision)


def _precision(dtype, x):
    """The contraction precision for ``dtype`` operands on ``x``'s device (a static
    kernel argument, so part of the kernel's cache key)."""
    return P.dot_precision(dtype.np, x._storage.device)


def numeric_pair(x1, x2, name):
    """Check two tensors for a numeric binary op; return their promoted dtype."""
    if not isinstance(x1, Tensor) or not isinstance(x2, Tensor):
        raise TypeError(
            f"{name} expects two arraykit tensors, got {type(x1).__name__} and "
            f"{type(x2).__name__}"
        )
    if x1._dtype.kind == "bool" or x2._dtype.kind == "bool":
        raise TypeError(
            f"{name} expects numeric tensors, got dtypes {x1._dtype} and {x2._dtype}"
        )
    if x1._storage.device is not x2._storage.device:
        check_same_device(x1.device, x2.device, name)
    return D.promote(x1._dtype, x2._dtype)


def _batch_shape(s1, s2, name):
    """Broadcast the batch dims of two operands; ValueError naming both full shapes."""
    try:
        return L.broadcast_shapes(s1[:-2], s2[:-2])
    except ValueError as err:
        raise ValueError(
            f"{name}: batch dimensions of shapes {s1} and {s2} cannot be broadcast ({err})"
        ) from None


def matmul(x1=None, x2=None, /, input=None, other=None, out=None):  # noqa: A002
    """Matrix product with NumPy's ``@`` rules (1-D operands are promoted and squeezed);
    PyTorch's ``input=``, ``other=`` and ``out=`` are read only when given."""
    if input is not None or other is not None or out is not None:
        result = matmul(*T.pick_pair("matmul", x1, x2, input, other))
        return result if out is None else T.into("matmul", result, out)
    dtype = numeric_pair(x1, x2, "matmul")
    x1, x2 = coerce("matmul", x1, x2)
    dtype = D.promote(x1._dtype, x2._dtype)
    s1, s2 = x1._layout.shape, x2._layout.shape
    if not s1 or not s2:
        raise ValueError(
            f"matmul: both operands need at least one dimension, got shapes {s1} and {s2}"
        )
    k1 = s1[-1]
    k2 = s2[0] if len(s2) == 1 else s2[-2]
    if k1 != k2:
        d2 = "dim 0" if len(s2) == 1 else "dim -2"
        raise ValueError(
            f"matmul: shapes {s1} and {s2} are not aligned: dim -1 of the first "
            f"({k1}) != {d2} of the second ({k2})"
        )
    if len(s1) > 2 or len(s2) > 2:
        _batch_shape(s1 if len(s1) > 1 else (1,) + s1, s2 if len(s2) > 1 else s2 + (1,), "matmul")
    return apply(_matmul, (x1, x2), (dtype.np, _precision(dtype, x1)))


def matrix_transpose(x, /):
    """Transpose of the last two dimensions (a view sharing ``x``'s storage)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"matrix_transpose expects an arraykit tensor, got {type(x).__name__}")
    return x._view(L.matrix_transpose(x._layout))


def _axis_list(axes, ndim, which):
    if isinstance(axes, (tuple, list)):
        return tuple(L.normalize_dim(a, ndim, f"axis of {which}") for a in axes)
    return (L.normalize_dim(axes, ndim, f"axis of {which}"),)


def tensordot(x1, x2, /, dims=None, *, axes=2, out=None):
    """Contract the given axes of ``x1`` and ``x2`` (an int ``N``: last N of x1 with first
    N of x2); PyTorch's ``dims=`` (for ``axes``) and ``out=`` are accepted."""
    if dims is not None or out is not None:
        result = tensordot(x1, x2, axes=T.pick("tensordot", "axes", axes, "dims", dims, 2))
        return result if out is None else T.into("tensordot", result, out)
    dtype = numeric_pair(x1, x2, "tensordot")
    s1, s2 = x1._layout.shape, x2._layout.shape
    if isinstance(axes, (tuple, list)):
        if len(axes) != 2:
            raise ValueError(
                f"tensordot: axes must be an int or a pair of sequences, got {axes!r}"
            )
        a1 = _axis_list(axes[0], len(s1), "x1")
        a2 = _axis_list(axes[1], len(s2), "x2")
        if len(a1) != len(a2):
            raise ValueError(
                f"tensordot: axes {tuple(axes[0])} and {tuple(axes[1])} have different lengths"
            )
        if len(set(a1)) != len(a1) or len(set(a2)) != len(a2):
            raise ValueError(f"tensordot: axes {axes!r} contain a repeated axis")
    else:
        n = operator.index(axes)
        if n < 0 or n > len(s1) or n > len(s2):
            raise ValueError(
                f"tensordot: axes={n} must be in [0, min(ndim)] for shapes {s1} and {s2}"
            )
        a1 = tuple(range(len(s1) - n, len(s1)))
        a2 = tuple(range(n))
    for i, j in zip(a1, a2):
        if s1[i] != s2[j]:
            raise ValueError(
                f"tensordot: shapes {s1} and {s2} do not match on the contracted axes: "
                f"axis {i} of x1 has size {s1[i]}, axis {j} of x2 has size {s2[j]}"
            )
    return apply(_tensordot, (x1, x2), (a1, a2, dtype.np, _precision(dtype, x1)))


def vector_axis(x1, x2, axis, name):
    """The (negative) contracted axis shared by two broadcast operands.

    A negative ``axis`` counts from the end of both operands; it must exist in
    both. The axis must have the same size in both operands (it is not broadcast).
    """
    s1, s2 = x1._layout.shape, x2._layout.shape
    if axis == -1 and s1 == s2 and s1:
        return -1
    n1, n2 = len(s1), len(s2)
    nmin, nmax = (n1, n2) if n1 < n2 else (n2, n1)
    axis = operator.index(axis)
    neg = axis if axis < 0 else axis - nmax
    if nmin == 0 or not -nmin <= neg <= -1:
        raise IndexError(
            f"{name}: axis {axis} is out of range for shapes {s1} and {s2} "
            f"(expected an axis present in both, in [-{nmin}, -1])"
        )
    if s1[neg] != s2[neg]:
        raise ValueError(
            f"{name}: shapes {s1} and {s2} differ along axis {axis} "
            f"({s1[neg]} != {s2[neg]})"
        )
    if s1 != s2:
        L.broadcast_shapes(s1, s2)
    return neg


def vecdot(x1, x2, /, *, axis=-1):
    """Dot products ``sum(conj(x1) * x2)`` along ``axis`` (other dims broadcast)."""
    numeric_pair(x1, x2, "vecdot")
    x1, x2 = coerce("vecdot", x1, x2)
    dtype = D.promote(x1._dtype, x2._dtype)
    axis = vector_axis(x1, x2, axis, "vecdot")
    return apply(_vecdot, (x1, x2), (axis, dtype.np, _precision(dtype, x1)))


namespace_registry.register(matmul=matmul)
