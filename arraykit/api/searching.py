"""Searching functions of the array API: argmax, argmin, count_nonzero, nonzero,
searchsorted and where.

``nonzero`` has a data-dependent shape: one kernel counts the non-zero elements,
the count is synchronised to the host once, and a second kernel produces the
indices into buffers of that count rounded up to a power of two (see
:func:`bucket`); the results are views of the exact length. A CPU tensor's indices
are computed by NumPy instead (:mod:`arraykit.host_results`: no compilation). It
cannot run under a JAX trace. Every index result
has the default index dtype ``int64``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import check_same_device
from ..kernels import bodies as B
from ..kernels import ordering as O
from ..kernels import size_buckets
from ..kernels.launch import apply
from ..kernels.size_buckets import bucket  # kernels with data-dependent sizes compile per bucket
from ..tensors.operands import promote, scalar
from ..tensors.tensor_type import Tensor, is_traced, require_tensor
from . import torch_keywords as T
from . import host_results
from ..core import deferred_checks
from .statistical import _axes, _check_nonempty, _check_ordered

_PYTHON_SCALARS = frozenset((bool, int, float, complex))

__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]

_INDEX = np.dtype(np.int64)
# jnp.searchsorted's binary search unrolled (log2(n) steps): the same results as its
# default loop, and about half the compile time of a new shape on the CPU
SEARCH_METHOD = "scan_unrolled"


# ----------------------------------------------------------------------------- kernels


_UINT_OF_WIDTH = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _is_nonzero(x):
    """``x != 0`` that also counts subnormals (XLA on CPU flushes them in comparisons)."""
    if jnp.iscomplexobj(x):
        return _is_nonzero(jnp.real(x)) | _is_nonzero(jnp.imag(x))
    if jnp.issubdtype(x.dtype, jnp.floating):
        bits = jax.lax.bitcast_convert_type(x, _UINT_OF_WIDTH[x.dtype.itemsize])
        return (bits << 1) != 0
    return x != 0


@size_buckets.reduction(size_buckets.lowest, along=True)
def _argmax(x, axis, keepdims):
    if jnp.issubdtype(x.dtype, jnp.floating):
        x = O.float_key(x, nan_last=True)
    return jnp.argmax(x, axis=axis, keepdims=keepdims).astype(_INDEX)


@size_buckets.reduction(size_buckets.highest, along=True)
def _argmin(x, axis, keepdims):
    if jnp.issubdtype(x.dtype, jnp.floating):
        x = O.float_key(x, nan_last=False)
    return jnp.argmin(x, axis=axis, keepdims=keepdims).astype(_INDEX)


def _count_nonzero(x, axes, keepdims):
    return jnp.sum(_is_nonzero(x), axis=axes, keepdims=keepdims, dtype=_INDEX)


def _nonzero(x, size):
    return jnp.nonzero(_is_nonzero(x), size=size)


def _argwhere(x, size):
    return jnp.argwhere(_is_nonzero(x), size=size).astype(jnp.int64).reshape(size, x.ndim)


@B.elementwise
def _where(c, a, b, np_dtype):
    return jnp.where(_is_nonzero(c), a.astype(np_dtype), b.astype(np_dtype))


def _searchsorted(a, v, side, np_dtype):
    (ka,) = O.sort_keys(a.astype(np_dtype))
    (kv,) = O.sort_keys(v.astype(np_dtype))
    return jnp.searchsorted(ka, kv, side=side, method=SEARCH_METHOD).astype(_INDEX)


def _searchsorted_sorter(a, v, sorter, side, np_dtype):
    return _searchsorted(jnp.take(a, sorter, mode="fill"), v, side, np_dtype)


def _searchsorted_sorter_checked(a, v, sorter, side, np_dtype):
    out = _searchsorted_sorter(a, v, sorter, side, np_dtype)
    return out, jnp.stack([jnp.min(sorter), jnp.max(sorter)])


# ----------------------------------------------------------------------------- functions


def _arg_reduce(body, x, axis, keepdims, name):
    require_tensor(x, name)
    _check_ordered(x._dtype, name)
    ndim = x.ndim
    if axis is None:
        if x.size == 0:
            raise ValueError(f"{name}() of an empty tensor (shape {x.shape})")
        return apply(body, (x,), (None, bool(keepdims)))
    axis = L.normalize_dim(axis, ndim, "axis")
    if ndim == 0:
        return apply(body, (x,), (None, False))
    _check_nonempty(x, (axis,), name)
    return apply(body, (x,), (axis, bool(keepdims)))


def argmax(x=None, /, dim=None, keepdim=None, *, axis=None, keepdims=False,
    input=None, out=None,  # noqa: A002 (PyTorch's names)
):
    """Index of the first maximum along ``axis`` (of the flattened tensor by default)."""
    if dim is not None or keepdim is not None or input is not None or out is not None:
        return T.reduction(argmax, "argmax", x, input, axis, keepdims, dim, keepdim, out)
    return _arg_reduce(_argmax, x, axis, keepdims, "argmax")


def argmin(x=None, /, dim=None, keepdim=None, *, axis=None, keepdims=False,
    input=None, out=None,  # noqa: A002 (PyTorch's names)
):
    """Index of the first minimum along ``axis`` (of the flattened tensor by default)."""
    if dim is not None or keepdim is not None or input is not None or out is not None:
        return T.reduction(argmin, "argmin", x, input, axis, keepdims, dim, keepdim, out)
    return _arg_reduce(_argmin, x, axis, keepdims, "argmin")


def count_nonzero(x=None, /, dim=None, *, axis=None, keepdims=False,
    keepdim=None, input=None, out=None,  # noqa: A002 (PyTorch's names)
):
    """Number of non-zero (for bool: true) elements over ``axis``."""
    if dim is not None or keepdim is not None or input is not None or out is not None:
        return T.reduction(count_nonzero, "count_nonzero", x, input, axis, keepdims, dim,
                           keepdim, out)
    require_tensor(x, "count_nonzero")
    return apply(_count_nonzero, (x,), (_axes(axis, x.ndim), bool(keepdims)))


def nonzero(x=None, /, *, as_tuple=None, input=None, out=None):  # noqa: A002
    """Indices of the non-zero elements, one index tensor per dimension (C order).

    ``as_tuple=False`` (PyTorch's default for ``torch.nonzero``, not the standard's)
    gives them as one ``(count, x.ndim)`` tensor instead, a 0-d ``x`` included; it is
    the default when PyTorch's ``input=`` or ``out=`` is given.
    """
    if input is not None or out is not None:  # PyTorch's keywords, PyTorch's default
        as_tuple = False if as_tuple is None else as_tuple
        return T.forward(nonzero, "nonzero", x, input, out, as_tuple=as_tuple)
    as_tuple = True if as_tuple is None else as_tuple
    require_tensor(x, "nonzero")
    if x.ndim == 0 and as_tuple:
        raise ValueError("nonzero() needs a tensor with at least one dimension, got a 0-d tensor")
    if is_traced(x):
        raise TypeError(
            "nonzero() has a data-dependent output shape and cannot run under a JAX "
            "trace; use arraykit.where or a mask multiply instead"
        )
    values = host_results.host_values(x)
    if values is not None:
        found = (np.argwhere(values[0]),) if not as_tuple else np.nonzero(values[0])
        found = host_results.to_tensors([f.astype(_INDEX) for f in found], x.device)
        return found[0] if not as_tuple else tuple(found)
    count = int(apply(_count_nonzero, (x,), (tuple(range(x.ndim)), False)).item())
    if not as_tuple:
        return apply(_argwhere, (x,), (bucket(count),))[:count]
    return tuple(t[:count] for t in apply(_nonzero, (x,), (bucket(count),), multiple=True))


def where(condition, x1=None, x2=None, /, input=None, other=None, out=None):  # noqa: A002
    """Elements of ``x1`` where ``condition`` is true, else of ``x2`` (broadcast).

    ``x1`` and ``x2`` may be Python scalars; the result dtype follows the standard's
    promotion rules. Two Python scalars (which the standard leaves out) give PyTorch's
    result: the default dtype of the higher kind (``where(c, 0.5, 1)`` is of the
    default float dtype, ``where(c, 1, 2)`` int64). A non-boolean ``condition`` is tested for non-zero.
    ``where(condition)`` alone is NumPy's spelling of :func:`nonzero`. PyTorch's
    ``input=``, ``other=`` (for ``x1``, ``x2``) and ``out=`` are read only when given.
    """
    if input is not None or other is not None or out is not None:
        if input is not None or other is not None:
            x1, x2 = T.pick_pair("where", x1, x2, input, other)
        result = where(condition, x1, x2)
        return result if out is None else T.into("where", result, out)
    require_tensor(condition, "where")
    if x1 is None and x2 is None:
        return nonzero(condition)
    if x1 is None or x2 is None:
        raise TypeError("where() takes either 1 or 3 arguments (condition[, x1, x2])")
    if type(x1) in _PYTHON_SCALARS and type(x2) in _PYTHON_SCALARS:  # PyTorch's extension
        dtype = D.promote_scalar(D.as_dtype(type(x1)), x2)
        a, b = scalar(dtype, x1), scalar(dtype, x2)
    else:
        a, b, dtype = promote(x1, x2)
    for t in (a, b):
        if isinstance(t, Tensor) and t._storage.device is not condition._storage.device:
            check_same_device(condition.device, t.device, "where")
    shape = condition.shape
    if not shape == np.shape(a) == np.shape(b):
        L.broadcast_shapes(shape, np.shape(a), np.shape(b))
    return apply(_where, (condition, a, b), (dtype.np,))


def searchsorted(x1=None, x2=None, /, *, side="left", sorter=None, sorted_sequence=None,
                 input=None, right=None, out=None):  # noqa: A002 (PyTorch's names)
    """Insertion indices of ``x2`` into the ascending 1-D ``x1`` (or ``x1[sorter]``).

    Values are compared exactly as :func:`arraykit.sort` orders them (NaNs last). ``sorter`` entries outside
    ``[0, x1.shape[0])`` raise ``ValueError`` (NumPy). PyTorch's ``sorted_sequence=``
    (``x1``), ``input=`` (``x2``), ``right=`` and ``out=`` are read only when given.
    """
    if sorted_sequence is not None or input is not None or right is not None or out is not None:
        x1 = T.pick("searchsorted", "x1", x1, "sorted_sequence", sorted_sequence)
        x2 = T.pick("searchsorted", "x2", x2, "input", input)
        if right is not None:
            side = T.pick("searchsorted", "side", side, "right", "right" if right else "left",
                          "left")
        result = searchsorted(x1, x2, side=side, sorter=sorter)
        return result if out is None else T.into("searchsorted", result, out)
    require_tensor(x1, "searchsorted")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted() expects a 1-D x1, got shape {x1.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted() side must be 'left' or 'right', got {side!r}")
    _check_ordered(x1._dtype, "searchsorted")
    if isinstance(x2, Tensor):
        _check_ordered(x2._dtype, "searchsorted")
    _, x2, dtype = promote(x1, x2, broadcast=False, name="searchsorted")
    _check_ordered(dtype, "searchsorted")
    if sorter is None:
        return apply(_searchsorted, (x1, x2), (side, dtype.np))
    require_tensor(sorter, "searchsorted")
    if sorter.dtype.kind not in ("int", "uint"):
        raise TypeError(f"searchsorted() sorter must have an integer dtype, got {sorter.dtype}")
    if sorter.shape != x1.shape:
        raise ValueError(
            f"searchsorted() sorter of shape {sorter.shape} does not match x1 of shape {x1.shape}"
        )
    check_same_device(x1.device, sorter.device, "searchsorted")
    if x1.size == 0 or is_traced(x1) or is_traced(sorter):
        return apply(_searchsorted_sorter, (x1, x2, sorter), (side, dtype.np))
    out, bounds = apply(
        _searchsorted_sorter_checked, (x1, x2, sorter), (side, dtype.np), multiple=True
    )
    size = x1.size

    def error_of(host_bounds):
        lo, hi = host_bounds.tolist()
        if lo >= 0 and hi < size:
            return None
        bad = lo if lo < 0 else hi
        return ValueError(f"searchsorted() sorter index {bad} is out of range for x1 of size {size}")

    deferred_checks.check(sorter.device, bounds._storage.buffer, error_of)
    return out
