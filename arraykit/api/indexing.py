"""Indexing functions of the array API: take and take_along_axis.

Negative indices count from the end. Eagerly, out-of-range indices raise
``IndexError`` naming the index and the axis size (JAX itself would clamp
silently): indices on the CPU are checked on the host, and the gather is dispatched
on the very buffer checked, in one step under the storages' locks (a concurrent
write cannot slip unchecked indices in); elsewhere the gather kernel also returns
the smallest and largest index it used, checked where the host next reads values
(:mod:`arraykit.core.deferred_checks`), so the call does not wait for the device.
Under a JAX trace no check is possible; out-of-range positions are filled (NaN for
floating dtypes, the dtype's minimum for integers, ``True`` for booleans).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core import layout as L
from ..core.devices import addressable, check_same_device
from ..kernels.launch import apply
from ..tensors import host_paths
from ..tensors.tensor_type import require_tensor
from . import torch_keywords as T
from ..core import deferred_checks

__all__ = ["take", "take_along_axis"]

_SMALL = 64  # up to this many indices, Python's min/max beat two NumPy reductions
_Tracer = jax.core.Tracer
_CPUS = set()  # CPU devices met so far: a set lookup is cheaper than Device.platform


def _is_cpu(device):
    """Whether ``device`` is a CPU whose memory this process holds, so its values are
    read on the host (remembered in ``_CPUS`` when it is). A placement over several
    processes' CPUs is not: its checks run as a kernel whose verdict every process reads."""
    if device.platform != "cpu" or not addressable(device):
        return False
    _CPUS.add(device)
    return True


def _bounds(idx):
    return jnp.stack([jnp.min(idx), jnp.max(idx)])


# ----------------------------------------------------------------------------- kernels


# Gathers fill out-of-range positions: under a trace, where indices cannot be checked,
# they never read outside x. with_bounds adds min/max outputs.


def _take(x, idx, axis, with_bounds):
    out = x.at[(slice(None),) * axis + (idx,)].get(mode="fill")
    return (out, _bounds(idx)) if with_bounds else out


def _take_along(x, idx, axis, shape, with_bounds):
    x = jnp.broadcast_to(x, shape[:axis] + x.shape[axis:axis + 1] + shape[axis + 1:])
    idx = jnp.broadcast_to(idx, shape)
    out = jnp.take_along_axis(x, idx, axis=axis, mode="fill")
    return (out, _bounds(idx)) if with_bounds else out


# ----------------------------------------------------------------------------- functions


def _extremes(indices):
    """``(version, layout, smallest, largest)`` of the non-empty CPU tensor ``indices``.

    Read in place under the storage's lock, which the caller holds, and cached on the
    storage until its next write, so indices used again (a fixed gather in a loop)
    are not scanned again.
    """
    st = indices._storage
    cached = st.extremes
    if cached is not None and cached[0] == st.version and cached[1] is indices._layout:
        return cached
    view = st.host_array(indices._layout)
    if view.size <= _SMALL:
        values = view.ravel().tolist()
        lo, hi = min(values), max(values)
    else:
        lo, hi = int(view.min()), int(view.max())
    extremes = (st.version, indices._layout, lo, hi)
    if type(st._buffer) is not np.ndarray:  # NumPy memory changes without a new version
        st.extremes = extremes
    return extremes


def _check_operands(x, indices, name):
    require_tensor(x, name)
    require_tensor(indices, name)
    if indices._dtype.kind not in ("int", "uint"):
        raise TypeError(f"{name}() indices must have an integer dtype, got {indices.dtype}")
    device = indices._storage.device
    if device is not x._storage.device:
        check_same_device(x._storage.device, device, name)


def _out_of_bounds(lo, hi, size, axis, name):
    bad = lo if lo < -size else hi
    return IndexError(f"{name}(): index {bad} is out of bounds for axis {axis} with size {size}")


def _host_take(axis):
    return lambda values, idx: np.take(values, idx, axis=axis)


def _host_take_along(axis, shape):
    def gathered(values, idx):
        outside = shape[:axis] + values.shape[axis:axis + 1] + shape[axis + 1:]
        values = np.broadcast_to(values, outside)
        return np.take_along_axis(values, np.broadcast_to(idx, shape), axis=axis)

    return gathered


def _gather(body, x, indices, axis, static, name, host):
    """Run ``body`` checked (eager) or filling (traced) and raise on bad indices;
    small CPU tensors gather with ``host(values, index values)`` in NumPy instead
    (:mod:`~arraykit.tensors.host_paths`: no kernel per shape)."""
    size = x._layout.shape[axis]
    empty = 0 in indices._layout.shape
    if size == 0 and not empty:
        raise IndexError(f"{name}(): cannot take indices from axis {axis} with size 0")
    xst = x._storage
    ist = indices._storage
    static = (axis, *static, False)
    if empty or isinstance(xst._buffer, _Tracer) or isinstance(ist._buffer, _Tracer):
        return apply(body, (x, indices), static)
    if deferred_checks.deferring(ist.device) or not _is_cpu(ist.device):
        out, bounds = apply(body, (x, indices), (*static[:-1], True), multiple=True)

        def error_of(host_bounds):
            lo, hi = host_bounds.tolist()
            return _out_of_bounds(lo, hi, size, axis, name) if lo < -size or hi >= size else None

        deferred_checks.check(ist.device, bounds._storage.buffer, error_of)
        return out
    # Check the current index buffer and dispatch the gather on it while no write can
    # replace it. x's lock is held too, both taken in the launcher's order (by storage
    # id), so no operand is donated meanwhile: the launcher's retry would wait for them.
    # (acquire/release by hand: two `with` blocks cost take() a measurable 0.5 us.)
    first, second = (xst.lock, ist.lock) if id(xst) < id(ist) else (ist.lock, xst.lock)
    first.acquire()
    if second is not first:
        second.acquire()
    try:
        _, _, lo, hi = _extremes(indices)
        if lo < -size or hi >= size:
            raise _out_of_bounds(lo, hi, size, axis, name)
        new = host_paths.still_new(body, static, x._layout.geometry, x._dtype,
                                   indices._layout.geometry, indices._dtype)
        if new and host_paths.applies(x, indices):
            return host_paths.computed(host, x, indices)
        return apply(body, (x, indices), static)
    finally:
        if second is not first:
            second.release()
        first.release()


def take(x=None, indices=None, /, *, axis=None, input=None, index=None):  # noqa: A002
    """Elements of ``x`` at the 1-D integer ``indices`` along ``axis``.

    ``axis`` may be omitted for a tensor of at most one dimension. PyTorch's
    spelling ``take(input=, index=)`` is ``torch.take``: ``x`` read as flat, ``index``
    of any shape, a result of ``index``'s shape (``take_flat``).
    """
    if input is not None or index is not None:
        return take_flat(T.pick_input("take", x, input), T.pick("take", "indices", indices,
                                                                "index", index))
    _check_operands(x, indices, "take")
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
    return _gather(_take, x, indices, axis, (), "take", _host_take(axis))


def take_flat(x, index):
    """PyTorch's ``torch.take``/``x.take(index)``: elements of ``x`` read as a flat
    tensor (C order, any layout) at ``index`` (any shape; negative counts from the
    end), shaped like ``index``."""
    _check_operands(x, index, "take")
    flat = x.reshape(-1)
    if flat.shape[0] == 0 and index._layout.numel:
        raise IndexError("take(): cannot take elements of an empty tensor")
    return take(flat, index.reshape(-1), axis=0).reshape(index.shape)


def take_along_axis(x, indices, /, *, axis=-1):
    """Elements of ``x`` at ``indices`` along ``axis``; other axes broadcast together."""
    _check_operands(x, indices, "take_along_axis")
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
    return _gather(_take_along, x, indices, axis, (tuple(shape),), "take_along_axis",
                   _host_take_along(axis, tuple(shape)))
