"""Indexing functions of the array API: take and take_along_axis.

Negative indices count from the end. Eagerly, out-of-range indices raise
``IndexError`` naming the index and the axis size (JAX itself would clamp
silently): indices on the CPU are checked on the host before the gather; elsewhere
the gather kernel also returns the smallest and largest index, and one host
synchronisation checks them. Under a JAX trace no check is possible; out-of-range
positions are filled (NaN for floating dtypes, the dtype's minimum for integers,
``True`` for booleans).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from . import layout as L
from .devices import check_same_device
from .kernels.launch import apply
from .tensor import is_traced, require_tensor

__all__ = ["take", "take_along_axis"]

_SMALL = 64  # up to this many indices, Python's min/max beat two NumPy reductions


def _bounds(idx):
    return jnp.stack([jnp.min(idx), jnp.max(idx)])


# ----------------------------------------------------------------------------- kernels


# Gathers fill out-of-range positions, so even indices rewritten by another thread
# after the check never read outside the storage; with_bounds adds min/max outputs.


def _take(x, idx, axis, with_bounds):
    out = x.at[(slice(None),) * axis + (idx,)].get(mode="fill")
    return (out, _bounds(idx)) if with_bounds else out


def _take_along(x, idx, axis, shape, with_bounds):
    x = jnp.broadcast_to(x, shape[:axis] + x.shape[axis:axis + 1] + shape[axis + 1:])
    idx = jnp.broadcast_to(idx, shape)
    out = jnp.take_along_axis(x, idx, axis=axis, mode="fill")
    return (out, _bounds(idx)) if with_bounds else out


# ----------------------------------------------------------------------------- functions


def _host_extremes(indices):
    """Smallest and largest of the (non-empty) CPU tensor ``indices``, read in place.

    The pair is cached on the storage until its next write, so indices used again
    (a fixed gather in a loop) are not scanned again.
    """
    st = indices._storage
    layout = indices._layout
    cached = st.extremes
    if cached is not None and cached[0] == st.version and cached[1] is layout:
        return cached[2], cached[3]
    with st.lock:
        view = st.host_array(layout)
        if view.size <= _SMALL:
            values = view.ravel().tolist()
            lo, hi = min(values), max(values)
        else:
            lo, hi = int(view.min()), int(view.max())
        if type(st._buffer) is not np.ndarray:  # NumPy memory changes without a new version
            st.extremes = (st.version, layout, lo, hi)
    return lo, hi


def _check_indices(indices, x, name):
    require_tensor(indices, name)
    if indices._dtype.kind not in ("int", "uint"):
        raise TypeError(f"{name}() indices must have an integer dtype, got {indices.dtype}")
    device = indices._storage.device
    if device is not x._storage.device:
        check_same_device(x._storage.device, device, name)


def _gather(body, x, indices, axis, static, name):
    """Run ``body`` checked (eager) or filling (traced) and raise on bad indices."""
    size = x._layout.shape[axis]
    count = indices._layout.numel
    if size == 0 and count:
        raise IndexError(f"{name}(): cannot take indices from axis {axis} with size 0")
    if count == 0 or is_traced(x, indices):
        return apply(body, (x, indices), (axis, *static, False))
    out = None
    if indices._storage.device.platform == "cpu":
        lo, hi = _host_extremes(indices)
    else:
        out, bounds = apply(body, (x, indices), (axis, *static, True), multiple=True)
        lo, hi = bounds.tolist()
    if lo < -size or hi >= size:
        bad = lo if lo < -size else hi
        raise IndexError(
            f"{name}(): index {bad} is out of bounds for axis {axis} with size {size}"
        )
    if out is None:
        out = apply(body, (x, indices), (axis, *static, False))
    return out


def take(x, indices, /, *, axis=None):
    """Elements of ``x`` at the 1-D integer ``indices`` along ``axis``.

    ``axis`` may be omitted for a tensor of at most one dimension.
    """
    require_tensor(x, "take")
    _check_indices(indices, x, "take")
    if len(indices._layout.shape) != 1:
        raise ValueError(f"take() expects 1-D indices, got shape {indices.shape}")
    ndim = len(x._layout.shape)
    if axis is None:
        if ndim > 1:
            raise ValueError(
                f"take() needs an axis for a tensor of {ndim} dimensions (shape {x.shape})"
            )
        axis = 0
    elif type(axis) is not int or not 0 <= axis < ndim:
        axis = L.normalize_dim(axis, ndim, "axis")
    if ndim == 0:
        x = x.reshape(1)
    return _gather(_take, x, indices, axis, (), "take")


def take_along_axis(x, indices, /, *, axis=-1):
    """Elements of ``x`` at ``indices`` along ``axis``; other axes broadcast together."""
    require_tensor(x, "take_along_axis")
    _check_indices(indices, x, "take_along_axis")
    if x.ndim == 0:
        raise ValueError("take_along_axis() needs a tensor with at least one dimension")
    if indices.ndim != x.ndim:
        raise ValueError(
            f"take_along_axis() indices of shape {indices.shape} must have as many "
            f"dimensions as x of shape {x.shape}"
        )
    axis = L.normalize_dim(axis, x.ndim, "axis")
    xs = x.shape[:axis] + (1,) + x.shape[axis + 1:]
    js = indices.shape[:axis] + (1,) + indices.shape[axis + 1:]
    try:
        shape = list(L.broadcast_shapes(xs, js))
    except ValueError:
        raise ValueError(
            f"take_along_axis(): x of shape {x.shape} and indices of shape {indices.shape} "
            f"do not broadcast outside axis {axis}"
        ) from None
    shape[axis] = indices.shape[axis]
    return _gather(_take_along, x, indices, axis, (tuple(shape),), "take_along_axis")
