"""Sorting functions of the array API (argsort and sort) and PyTorch's ``topk``.

Sorts are stable by default; a stable descending sort keeps equal elements in
their original order. Values are ordered exactly as NumPy orders them, on every
platform (see :mod:`arraykit.kernels.ordering`): ``-0.0`` and ``0.0`` are equal, NaNs sort
last in ascending order and first in descending order, and complex values sort
lexicographically with NumPy's placement of NaNs (``R + Rj, R + nanj, nan + Rj,
nan + nanj``). A 0-d tensor sorts to a copy of itself (its only valid axes are 0
and -1).
"""

from __future__ import annotations

import collections
import operator

import jax
import jax.numpy as jnp
import numpy as np

from ..core import layout as L
from ..kernels import ordering as O
from ..kernels.launch import apply
from ..tensors.tensor_type import require_tensor
from . import torch_keywords as T

__all__ = ["argsort", "sort", "topk"]

TopK = collections.namedtuple("topk", ["values", "indices"])
TopK.__doc__ = "``(values, indices)`` of :func:`topk` (PyTorch's ``torch.return_types.topk``)."


def _sort(x, axis, descending, stable):
    if x.ndim == 0:
        return x
    return O.sort_with(x, (x,), axis, descending, stable)[1][0]


def _argsort(x, axis, descending, stable):
    if x.ndim == 0:
        return jnp.zeros((), np.int64)
    return O.argsort(x, axis, descending, stable)


def _prepare(x, axis, descending, stable, name):
    require_tensor(x, name)
    axis = L.normalize_dim(axis, x.ndim, "axis")
    return (axis, bool(descending), bool(stable))


def sort(x=None, /, dim=None, descending=False, *, axis=-1, stable=True,  # noqa: A002
         input=None, out=None):
    """A sorted copy of ``x`` along ``axis``.

    With PyTorch's keywords (``dim=``, ``input=``, ``out=``), PyTorch's result: a
    ``(values, indices)`` named tuple, as ``x.sort(dim)``.
    """
    if dim is not None or input is not None or out is not None:
        x = require_tensor(T.pick_input("sort", x, input), "sort")
        result = x.sort(T.pick("sort", "axis", axis, "dim", dim, -1), descending, stable)
        return result if out is None else T.into_each("sort", result, out)
    return apply(_sort, (x,), _prepare(x, axis, descending, stable, "sort"))


def argsort(x=None, /, dim=None, descending=False, *, axis=-1, stable=True,  # noqa: A002
            input=None):
    """Indices that sort ``x`` along ``axis`` (default index dtype); PyTorch's ``dim=``
    and ``input=`` are accepted."""
    if dim is not None or input is not None:
        x = T.pick_input("argsort", x, input)
        axis = T.pick("argsort", "axis", axis, "dim", dim, -1)
    return apply(_argsort, (x,), _prepare(x, axis, descending, stable, "argsort"))


def _topk_indices(x, k, axis, largest):
    if x.ndim == 0:
        return jnp.zeros((k,), np.int64).reshape(()) if k else jnp.zeros((0,), np.int64)
    if jnp.iscomplexobj(x):
        raise TypeError("topk: complex tensors have no order")
    (key,) = O.sort_keys(x)  # NaN is the largest value, as in PyTorch
    if not largest:
        key = ~key
    moved = jnp.moveaxis(key, axis, -1)
    _, indices = jax.lax.top_k(moved, k)  # ties: the lower index first
    return jnp.moveaxis(indices.astype(np.int64), -1, axis)


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The ``k`` largest (or, ``largest=False``, smallest) elements of ``input`` along
    ``dim`` and their indices, as ``torch.topk``: a ``(values, indices)`` named tuple,
    values in order (largest first; ``sorted=False`` gives the same order). NaN counts
    as larger than every number; among equal values the lower index comes first.
    Differentiable in ``values``; ``out=(values, indices)`` writes into those tensors."""
    result = _topk(input, k, dim, largest)
    return result if out is None else T.into_each("topk", result, out)


def values_at(x, indices, dim, keepdim):
    """``x``'s elements at ``indices`` along ``dim``, indices valid by construction (no
    bounds check): the gradient of ``x.max(dim).values`` or ``topk``'s values goes to
    the element the index names, as in PyTorch."""
    values = jnp.take_along_axis(x, indices, axis=dim)
    return values if keepdim else jnp.squeeze(values, axis=dim)


def _topk(input, k, dim, largest):
    require_tensor(input, "topk")
    k = operator.index(k)
    axis = L.normalize_dim(dim, max(input.ndim, 1), "dim")
    size = input.shape[axis] if input.ndim else 1
    if not 0 <= k <= size:
        raise IndexError(f"topk: k={k} is out of range for dimension {dim} of size {size}")
    indices = apply(_topk_indices, (input,), (k, axis, bool(largest)))
    if input.ndim == 0:
        return TopK(input.clone() if k else input.reshape(1)[:0], indices)
    return TopK(apply(values_at, (input, indices), (axis, True)), indices)
