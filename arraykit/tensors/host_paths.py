"""Data movement of small CPU tensors done by NumPy on the host, with no kernel.

Advanced indexing (``x[mask]``, ``x[idx]``) and ``concat`` have result shapes that
change from call to call in the loops of SciPy's iterative methods (the elements still
active shrink each step), and a kernel compiles for every new shape (tens of
milliseconds on the CPU, against microseconds to run). For a small CPU tensor the
values are in host memory already: NumPy gathers and joins them with no compilation,
and the result is the same (these operations only move elements; a cast to the result
dtype converts as the kernel does). Writes (``x[idx] = v``) keep the write kernels,
which update the storage in place (its address stays, as PyTorch's does); their index
arrays and values are padded on the host to a power-of-two length
(:func:`padded_write`), so one write kernel serves every length up to it.

The host path is taken where it gives exactly the kernel's result: concrete CPU
tensors of NumPy's own dtypes (not bfloat16), at most :data:`HOST_ELEMENTS` elements
each, no autograd (no history, no ``requires_grad``), no ``arraykit.jit`` trace.
Everything else (GPU tensors, large, tracked or traced tensors) runs the kernels.
"""

from __future__ import annotations

import jax
import numpy as np

from ..core import storage as S
from ..core.devices import one_cpu
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
    key = K.jax_key(plan.structure, plan.operands)
    return computed(lambda values: K.with_bool_axes(np, values, plan.structure)[key], x)


def concat(arrays, axis, np_dtype):
    """``concat(arrays, axis=axis)`` in ``np_dtype`` (``axis`` None: flattened first)."""

    def join(*values):
        if axis is None:
            return np.concatenate([v.reshape(-1).astype(np_dtype, copy=False) for v in values])
        return np.concatenate([v.astype(np_dtype, copy=False) for v in values], axis=axis)

    return computed(join, *arrays)


WRITE_BUCKET_MIN = 8
"""Shortest padded length of an index write (:func:`padded_write`)."""


def padded_write(x, plan, value):
    """``(index arrays, value)`` for ``x[key] = value`` padded to a power-of-two length,
    or None where padding does not apply. ``plan`` is the key's eager plan (NumPy index
    arrays, checked); ``value`` a tensor or 0-d value (the write kernel casts it to
    ``x``'s dtype).

    It applies when the key is one or more 1-D index arrays of one length ``n`` (an
    integer array, a boolean mask's ``nonzero``) followed only by full slices or an
    Ellipsis. The index arrays are padded with the axis length (an index past the
    end, which the write kernel's ``drop`` mode ignores). A one-element value is
    written as a 0-d one; a longer value is read on the host (the host path must
    apply to it), broadcast to the result and padded with zeros. The write is the
    same, with one kernel for all lengths up to the next power of two.
    """
    structure = plan.structure
    arrays = len(plan.operands)
    if not arrays or any(item[0] != "array" for item in structure[:arrays]) or not all(
            map(_whole_axis, structure[arrays:])):
        return None
    n = plan.operands[0].shape
    if len(n) != 1 or any(a.shape != n for a in plan.operands):
        return None
    n = n[0]
    size = max(WRITE_BUCKET_MIN, 1 << max(n - 1, 0).bit_length())
    indices = []
    for a, length in zip(plan.operands, x.shape):
        padded = np.full(size, length, np.int64)
        padded[:n] = np.where(a < 0, a + length, a)
        indices.append(padded)
    if getattr(value, "size", 1) == 1:  # a tensor of one element, or a 0-d scalar already
        return indices, value.reshape(()) if is_tensor(value) else value
    if not applies(value):
        return None
    with value._storage.lock:
        values = np.broadcast_to(value._storage.host_array(value._layout), plan.result_shape)
        padded = np.zeros((size,) + plan.result_shape[1:], values.dtype)
        padded[:n] = values
    return indices, from_numpy(padded, x.device)


def _whole_axis(item):
    """Whether a key's structure entry keeps whole axes: an Ellipsis, ``:``, ``0:``, ``::1``."""
    return item[0] == "ellipsis" or (
        item[0] == "slice" and item[1] in (None, 0) and item[2] is None and item[3] in (None, 1))
