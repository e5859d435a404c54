"""Sorting functions of the array API: argsort and sort.

Sorts are stable by default; a stable descending sort keeps equal elements in
their original order. Values are ordered exactly as NumPy orders them, on every
platform (see :mod:`arraykit.kernels.ordering`): ``-0.0`` and ``0.0`` are equal, NaNs sort
last in ascending order and first in descending order, and complex values sort
lexicographically with NumPy's placement of NaNs (``R + Rj, R + nanj, nan + Rj,
nan + nanj``). A 0-d tensor sorts to a copy of itself (its only valid axes are 0
and -1).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..core import layout as L
from ..kernels import ordering as O
from ..kernels.launch import apply
from ..tensors.tensor_type import require_tensor

__all__ = ["argsort", "sort"]


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


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """A sorted copy of ``x`` along ``axis``."""
    return apply(_sort, (x,), _prepare(x, axis, descending, stable, "sort"))


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """Indices that sort ``x`` along ``axis`` (default index dtype)."""
    return apply(_argsort, (x,), _prepare(x, axis, descending, stable, "argsort"))
