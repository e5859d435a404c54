"""Storages over NumPy memory: ``from_numpy`` and ``Tensor.numpy()`` share memory.

A storage normally holds an immutable JAX buffer that each write replaces (donating
the old one). A storage *over NumPy memory* holds a writable, C-contiguous NumPy
array instead (addressed flat, like any buffer), and never replaces it:

* :func:`arraykit.from_numpy` wraps the memory of the array it is given: the span
  its elements cover, so the tensor keeps the array's strides (negative ones too)
  and a view of a larger array shares that array's memory;
* ``Tensor.numpy()`` on the CPU moves its storage's values into NumPy memory the
  first time (one copy; every tensor sharing the storage follows, since they hold
  the same storage) and returns a NumPy view with the tensor's shape and strides.

Both sides see each other's writes, as in PyTorch:

* **Reads.** A kernel never reads NumPy memory in place: JAX would have to alias
  it (it can only for 64-byte-aligned memory, and most NumPy arrays are not) and
  would read it asynchronously, while NumPy may already be writing it. Instead,
  under the storage's lock, the elements the read selects are copied into a
  private buffer (O(read), not O(storage): a column of a large matrix copies the
  column), and the kernel reads that. A kernel sees the values as of its call,
  never a half-written mix.
* **Writes.** An in-place operation computes the written values with a kernel
  (reading as above) and stores them with NumPy through the target's layout (a
  strided view), all under the storage's lock: O(write), no donation. The memory
  never moves; ``data_ptr()`` is the NumPy array's address.
* **NumPy's own writes** into the array are seen by the next kernel. Writes from
  other threads while a kernel copies are a race, as they are between NumPy
  threads and in PyTorch.
* **Lifetime.** The storage holds the NumPy array, and NumPy views hold their
  base, so the memory lives until the last of them goes away: nothing can read
  freed memory.

Exports of such a storage (``np.asarray(t)``, DLPack) are views of the shared
memory, not snapshots. JAX's transforms (``jax.jit(f)(t)``) get a private copy of
the tensor's values.
"""

from __future__ import annotations

import jax
import numpy as np

from . import layout as L
from .devices import host_span
from .storage import _leak_error


def is_host(storage):
    """Whether ``storage`` holds NumPy memory."""
    return type(storage._buffer) is np.ndarray


def share(array):
    """``(buffer, layout)`` of a storage over the memory of the NumPy array ``array``."""
    return host_span(array)


def adopt(storage):
    """Move a CPU storage's values into NumPy memory, once (``Tensor.numpy()``)."""
    with storage.lock:
        buf = storage._buffer
        if type(buf) is not np.ndarray:
            storage._buffer = np.array(buf)  # the buffer's shape, as autograd records it
            storage._host = None
            storage.shared = False
            storage.extremes = None


def read(storage, layout):
    """``(private copy, layout over it)`` of the values ``layout`` selects: O(read).

    The copy, taken under the storage's lock, holds the selected elements in C
    order, once per element of a broadcast (stride 0) dimension; the returned
    layout reads them back with ``layout``'s shape. A storage autograd tracks
    (``storage.node``) is copied whole, with ``layout`` unchanged: gradients with
    respect to a read address the storage's buffer.
    """
    if storage.node is not None:
        with storage.lock:
            return np.array(storage._buffer), layout
    compact = tuple(1 if s == 0 else n for n, s in zip(layout.shape, layout.strides))
    with storage.lock:
        copy = np.array(storage.host_array(L.Layout(compact, layout.strides, layout.offset)))
    strides = tuple(
        0 if s == 0 else c for s, c in zip(layout.strides, L.contiguous(compact).strides)
    )
    return copy.reshape(-1), L.Layout(layout.shape, strides, 0)


def write(storage, layout, result):
    """Store the tensor ``result`` (of ``layout``'s shape) through ``layout``.

    The caller holds the storage's lock. A traced ``result`` (an in-place write
    inside a JAX trace) raises, as for any storage created outside the trace.
    """
    buf = result._storage._buffer
    if isinstance(buf, jax.core.Tracer):
        raise _leak_error(storage)
    if not storage._buffer.flags.writeable:
        raise ValueError(
            "cannot write into a tensor over a read-only NumPy array (from_numpy of an "
            "array whose flags.writeable is False)"
        )
    storage.host_array(layout)[...] = np.asarray(buf).reshape(layout.shape)
    storage.version += 1
