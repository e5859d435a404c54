"""Sorting functions of the array API: argsort and sort.

Sorts are stable by default; a stable descending sort keeps equal elements in
their original order. NaNs sort last in ascending order and first in descending
order (NumPy's order reversed). Complex values sort lexicographically with NumPy's
placement of NaNs: ``R + Rj, R + nanj, nan + Rj, nan + nanj``. A 0-d tensor sorts
to a copy of itself (its only valid axes are 0 and -1).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from . import layout as L
from .kernels.launch import apply
from .statistical import _tensor

__all__ = ["argsort", "sort"]

_INDEX = np.dtype(np.int64)


def _complex_keys(x):
    """lexsort keys (last is primary) giving NumPy's order of complex values."""
    re, im = jnp.real(x), jnp.imag(x)
    nan_class = jnp.isnan(im).astype(jnp.int8) + 2 * jnp.isnan(re).astype(jnp.int8)
    return (im, re, nan_class)


def _complex_argsort(x, axis, descending):
    if not descending:
        return jnp.lexsort(_complex_keys(x), axis=axis)
    idx = jnp.flip(jnp.lexsort(_complex_keys(jnp.flip(x, axis)), axis=axis), axis)
    return x.shape[axis] - 1 - idx


def argsort_values(x, axis, descending, stable):
    """Kernel helper: the sorting permutation of ``x`` along ``axis`` (int64)."""
    if jnp.iscomplexobj(x):
        return _complex_argsort(x, axis, descending).astype(_INDEX)
    return jnp.argsort(x, axis=axis, descending=descending, stable=stable).astype(_INDEX)


def _sort(x, axis, descending, stable):
    if x.ndim == 0:
        return x
    if jnp.iscomplexobj(x):
        return jnp.take_along_axis(x, _complex_argsort(x, axis, descending), axis=axis)
    return jnp.sort(x, axis=axis, descending=descending, stable=stable)


def _argsort(x, axis, descending, stable):
    if x.ndim == 0:
        return jnp.zeros((), _INDEX)
    return argsort_values(x, axis, descending, stable)


def _prepare(x, axis, descending, stable, name):
    _tensor(x, name)
    axis = L.normalize_dim(axis, x.ndim, "axis")
    return (axis, bool(descending), bool(stable))


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """A sorted copy of ``x`` along ``axis``."""
    return apply(_sort, (x,), _prepare(x, axis, descending, stable, "sort"))


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """Indices that sort ``x`` along ``axis`` (default index dtype)."""
    return apply(_argsort, (x,), _prepare(x, axis, descending, stable, "argsort"))
