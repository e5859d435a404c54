"""Storage: one flat 1-D ``jax.Array`` shared by every tensor that aliases it.

The buffer itself is immutable. A write swaps in a new buffer computed by a
jitted kernel that *donates* the old one, so XLA updates it in place. A buffer
that something outside the storage may still reference (a NumPy or DLPack export,
a JAX array the user handed in or got back) is marked *shared* and never donated:
that write copies instead, and the exporter keeps a consistent snapshot.

Exports are snapshots: they hold the values as of the export, never a torn mix.
"""

from __future__ import annotations

import threading

import jax
import numpy as np


class Storage:
    """A flat buffer with its device, dtype, version counter and lock.

    ``extremes`` is a cache for index checks: ``(version, layout, smallest, largest)``
    of the elements some layout selected, valid while ``version`` is unchanged.
    """

    __slots__ = (
        "_buffer", "_host", "device", "dtype", "version", "lock", "shared", "extremes",
        "__weakref__",
    )

    def __init__(self, buffer, dtype, device, shared=False):
        self._buffer = buffer
        self._host = None
        self.dtype = dtype
        self.device = device
        self.version = 0
        self.lock = threading.Lock()
        self.shared = shared
        self.extremes = None

    @property
    def buffer(self):
        """The current buffer (internal: callers must not keep it across writes)."""
        return self._buffer

    def export(self):
        """The current buffer for a caller that will keep it; it is never donated."""
        with self.lock:
            self.shared = True
            return self._buffer

    def host_view(self):
        """Zero-copy, read-only NumPy view of a CPU buffer, kept until the next write.

        Only the storage holds it (callers copy out of it under ``self.lock``), and a
        write drops it before donating, so reads through it never cost a donation.
        """
        host = self._host
        if host is None:
            host = self._host = np.asarray(self._buffer)
        return host

    def host_array(self, layout):
        """Zero-copy, read-only NumPy view of the elements ``layout`` selects (CPU only).

        Like :meth:`host_view`, valid until the next write: callers use it under
        ``self.lock``.
        """
        host = self.host_view()
        if layout.strides == (1,) and layout.offset == 0 and layout.shape[0] == host.shape[0]:
            return host
        if layout.numel == 0:
            return np.zeros(layout.shape, host.dtype)
        itemsize = host.itemsize
        return np.ndarray(
            layout.shape, host.dtype, buffer=host, offset=layout.offset * itemsize,
            strides=tuple(s * itemsize for s in layout.strides),
        )

    def size(self):
        """Number of elements."""
        return self._buffer.shape[0]

    def nbytes(self):
        """Size in bytes."""
        return self._buffer.shape[0] * self.dtype.itemsize

    def data_ptr(self):
        """Address of the first element (changes when a write could not donate)."""
        buf = self._buffer
        if isinstance(buf, jax.core.Tracer):
            raise RuntimeError("data_ptr() is not available inside a jax trace")
        return buf.unsafe_buffer_pointer()

    def replace(self, kernel, donating_kernel, *args):
        """Run ``kernel(buffer, *args)`` and make its result the new buffer.

        ``donating_kernel`` is used when the old buffer is private to this storage.
        The caller holds ``self.lock``.
        """
        self._host = None
        if self.shared or isinstance(self._buffer, jax.core.Tracer):
            self._buffer = kernel(self._buffer, *args)
            self.shared = False
        else:
            self._buffer = donating_kernel(self._buffer, *args)
        self.version += 1

    def set_buffer(self, buffer):
        """Install a new buffer wholesale (used by tracing to write results back)."""
        with self.lock:
            self._host = None
            self._buffer = buffer
            self.version += 1

    def __repr__(self):
        return f"Storage(size={self.size()}, dtype={self.dtype}, device={self.device})"
