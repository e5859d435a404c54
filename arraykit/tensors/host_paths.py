"""Data movement of small CPU tensors done by NumPy on the host, with no kernel.

Advanced indexing (``x[mask]``, ``x[idx]``, ``x[idx] = v``), ``concat``, ``stack`` and
gathers (``take``, ``take_along_axis``; ``tile`` and reshapes that copy run here too,
with :func:`computed`) have shapes that change from call to call in the loops of
SciPy's iterative methods (the elements still active shrink each step), and a kernel
compiles for every new shape and layout (tens of milliseconds on the CPU, against
microseconds to run). For a small CPU tensor the values are in host memory already:
NumPy gathers, joins and stores them with no compilation, and the result is the same
(these operations only move elements; a conversion to the result dtype is taken here
only where NumPy's equals the kernels'). Gathers, tiles and reshape copies take the
host path for a shape's first calls only (:func:`still_new`): a shape used more often
gets its kernel, whose cached calls cost less.

An index write (:func:`store`) copies the storage's buffer, writes the copy and makes
it the storage's new buffer: every alias sees the write, an export keeps its
snapshot, and the storage's address changes, as after any write that cannot donate
its buffer (a storage over NumPy memory is written in place instead). Basic writes
(``x[1:3] = v``, ``fill_``) keep their kernels, which update the buffer in place.

The host path is taken where it gives exactly the kernel's result: concrete CPU
tensors of NumPy's own dtypes (not bfloat16), at most :data:`HOST_ELEMENTS` elements
each (a written storage as a whole), no autograd (no history, no ``requires_grad``),
no ``arraykit.jit`` or JAX trace. Everything else (GPU tensors, large, tracked or
traced tensors) runs the kernels.
"""

from __future__ import annotations

import jax
import numpy as np

from ..core import host_memory
from ..core import layout as L
from ..core import storage as S
from ..core import x64
from ..core.devices import jax_target, one_cpu
from ..core.jax_compat import put_on_device, trace_state_clean
from ..kernels import size_buckets
from ..kernels.launch import Locks, is_tensor
from . import indexing_keys as K
from .operands import from_numpy

HOST_ELEMENTS = 4096
"""Largest tensor (in elements) the host path handles."""


def applies(*tensors):
    """Whether the host path gives the kernels' result for ``tensors`` (see above)."""
    if S._trace is not None:
        return False
    for x in tensors:
        st = x._storage
        if (
            x._layout.numel > HOST_ELEMENTS
            or st.node is not None
            or x.requires_grad
            or not one_cpu(st.device)
            or isinstance(st._buffer, jax.core.Tracer)
            or x._dtype.np.isbuiltin != 1
        ):
            return False
    return True


def still_new(*key):
    """Whether the data movement ``key`` names (its operation and its operands' shapes,
    strides and dtypes) is within its first ``size_buckets.EXACT_AFTER`` calls: the
    host path serves those, and a kernel, compiled once, the calls of a shape used that
    often (as size buckets do for element-wise kernels). Every call of ``key`` counts,
    on the host path or not: asked first, this dictionary lookup is all a shape used
    often adds to its kernel's calls."""
    return size_buckets.wants(key)


def computed(fn, *tensors):
    """``fn(*values)`` of the tensors' NumPy values (read under their locks; ``fn``
    must not keep them) as a new tensor on the first tensor's device."""
    with Locks([t._storage for t in tensors]):
        out = fn(*[t._storage.host_array(t._layout) for t in tensors])
        out = np.array(out, copy=True)  # a result that still views a storage is copied out
    return from_numpy(out, tensors[0].device)


def getitem(x, plan):
    """``x[key]`` for the advanced key whose eager :class:`~.indexing_keys.Plan`
    (NumPy index arrays, checked) is ``plan``: a new tensor on ``x``'s device."""
    return computed(selection(plan), x)


def joins(arrays, np_dtype):
    """Whether :func:`concat` and :func:`stack` give the kernels' result for ``arrays``
    joined in ``np_dtype``: :func:`applies`, and NumPy converts each to it as XLA does."""
    return applies(*arrays) and all(_converts_alike(a._dtype.np, np_dtype) for a in arrays)


def concat(arrays, axis, np_dtype):
    """``concat(arrays, axis=axis)`` in ``np_dtype`` (``axis`` None: flattened first)."""

    return computed(lambda *values: np.concatenate(values, axis, dtype=np_dtype,
                                                   casting="unsafe"), *arrays)


def stack(arrays, axis, np_dtype):
    """``stack(arrays, axis=axis)`` in ``np_dtype``."""
    return computed(lambda *values: np.stack(values, axis, dtype=np_dtype, casting="unsafe"),
                    *arrays)


def stores(x, value):
    """Whether :func:`store` may write ``value`` (a tensor, or a 0-d value as
    ``writable_value`` gives it) into ``x``: both pass :func:`applies`, no JAX trace
    is in progress, ``x``'s whole storage is small, its memory writable, no two of
    its elements share a location, and NumPy converts ``value``'s dtype
    to ``x``'s as the write kernels do (:func:`_converts_alike`)."""
    if not applies(x) or not trace_state_clean() or L.overlaps_self(x._layout):
        return False  # (the kernel path raises for a self-overlapping target)
    buf = x._storage._buffer
    if buf.size > HOST_ELEMENTS:  # copied whole: a view of a large storage keeps the kernels
        return False
    if host_memory.is_host(x._storage) and not buf.flags.writeable:  # the kernels raise
        return False
    if is_tensor(value):
        if not applies(value):
            return False
        return _converts_alike(value._dtype.np, x._dtype.np)
    return not isinstance(value, jax.core.Tracer) and _converts_alike(value.dtype, x._dtype.np)


@x64.scoped
def store(x, select, value):
    """Write ``value`` (broadcastable to the selection, checked by the caller) into the
    elements of ``x`` that ``select`` picks, on the host: ``select`` maps an array of
    ``x``'s shape (its elements' storage positions) to the positions written, in the
    shape ``value`` is broadcast to. Returns ``x``.

    The values come from the storage as it is before the write (a source that
    overlaps the target reads the old values, as in NumPy). A JAX buffer is copied,
    written and put back as the storage's new buffer (O(storage), at most
    :data:`HOST_ELEMENTS` elements; the address changes, as after a write that cannot
    donate); NumPy memory is written in place. Either way one new version.
    """
    st = x._storage
    storages = [st]
    if is_tensor(value) and value._storage is not st:
        storages.append(value._storage)
    with Locks(storages):
        flat = st.host_view()
        positions = select(L.storage_indices(x._layout))
        values = value._storage.host_array(value._layout) if is_tensor(value) else np.asarray(value)
        if host_memory.is_host(st):  # NumPy memory: in place (NumPy copies an overlap)
            flat[positions] = values
            st.version += 1
        else:
            new = flat.copy()
            new[positions] = values
            st.overwrite(put_on_device(new.reshape(st._buffer.shape), jax_target(st.device)))
    return x


def selection(plan):
    """The ``select`` of :func:`store` for an advanced key's eager plan."""
    key = K.jax_key(plan.structure, plan.operands)
    return lambda positions: K.with_bool_axes(np, positions, plan.structure)[key]


def _converts_alike(source, target):
    """Whether NumPy's conversion of ``source`` values to ``target`` gives the kernels'
    (XLA's) result for every value: no conversion, or one from booleans or integers
    that widens exactly or wraps integers (as both do). Conversions between floating
    dtypes differ at the edges (XLA's CPU conversions flush subnormals to zero and
    quiet NaN payloads; NumPy keeps both), and floats into integers differ out of
    range, so those keep the kernels."""
    if source == target:
        return True
    if source.kind not in "biu":
        return False
    return np.can_cast(source, target, "safe") or (source.kind in "iu" and target.kind in "iu")
