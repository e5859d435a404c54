"""Storage: one ``jax.Array`` shared by every tensor that aliases it.

Layouts address the buffer flat, in C order: a storage of ``n`` elements is its
buffer's ``n`` elements whatever the buffer's shape. A buffer keeps the shape of
the tensor that created it (kernels flatten it inside their compiled program, at
no cost), so a tensor that covers its whole storage in C order hands JAX its
buffer as is, without a reshaping copy.

The buffer itself is immutable. A write swaps in a new buffer computed by a
jitted kernel that *donates* the old one, so XLA updates it in place. Two kinds of
buffer are not always donated:

* *exported* ones, handed out as they are (a NumPy or DLPack export, a JAX array the
  user handed in or got back, a pytree leaf given to ``jax.jit``, optax or
  ``jax.block_until_ready``). A write donates such a buffer only once nothing but
  the storage references it: while an export is alive the write copies instead (the
  exporter keeps a consistent snapshot), after it died the write is O(write) again.
  Exports hold the ``jax.Array`` object itself (NumPy ones through a wrapper), so
  its reference count tells whether one is alive.
* *shared* ones, memory that belongs to someone else (a buffer aliasing a NumPy
  array, a DLPack producer, a memory-mapped file, a DLPack export on a GPU, whose
  holders arraykit cannot count): never donated, the first write copies.

Exports are snapshots: they hold the values as of the export, never a torn mix.

A storage over *NumPy memory* (:func:`arraykit.from_numpy`, ``Tensor.numpy()``)
holds a writable, C-contiguous NumPy array instead of a JAX buffer; kernels read private
copies of it and writes store into it with NumPy, so it is never replaced (see
:mod:`arraykit.core.host_memory`).

Every storage counts in the live-storage statistics of its device (bytes, number,
peak since the last reset; :mod:`arraykit.api.device_memory` reports them): creating
one appends an event to its device's event list (an atomic append, no lock),
releasing it another, and the list is folded into the counters in order (with
NumPy, a running sum), so the peak is exact.
"""

from __future__ import annotations

import _thread
import contextlib
import threading

import jax
import numpy as np

from . import buffer_pool
from .devices import as_device, host_to_device

_referenced_elsewhere = buffer_pool.referenced_elsewhere
_Tracer = jax.core.Tracer
# device -> list of events in the order its storages come and go: nbytes (>= 0) for a
# new storage, ~nbytes (< 0) for a released one. Appends are atomic; only _fold removes.
_EVENTS = {}
_FOLD_AFTER = 4096
_FOLD_LOCK = threading.Lock()
_LIVE = {}  # device -> [bytes, count, peak bytes]
_LOCK_MAKING = threading.Lock()


def _event_list(device):
    """The event list of ``device``, made on its first storage."""
    with _FOLD_LOCK:
        return _EVENTS.setdefault(device, [])


def _fold():
    """Apply the queued events to the per-device counters, oldest first."""
    with _FOLD_LOCK:
        for device, events in list(_EVENTS.items()):
            n = len(events)
            if not n:
                continue
            batch = np.array(events[:n], dtype=np.int64)
            del events[:n]  # appends made meanwhile lie beyond n and stay queued
            counters = _LIVE.setdefault(device, [0, 0, 0])
            released = batch < 0
            running = counters[0] + np.cumsum(np.where(released, batch + 1, batch))
            counters[0] = int(running[-1])
            counters[1] += n - 2 * int(np.count_nonzero(released))
            counters[2] = max(counters[2], int(running.max()))


def live_storages(device):
    """``(bytes, number, peak bytes since the last reset)`` of the live storages on ``device``."""
    _fold()
    return tuple(_LIVE.get(device, (0, 0, 0)))


def reset_peak(device):
    """Start the peak of :func:`live_storages` over from the bytes live now."""
    _fold()
    with _FOLD_LOCK:
        counters = _LIVE.get(device)
        if counters is not None:
            counters[2] = counters[0]


_trace = None  # the arraykit.jit trace in progress (see arraykit.jit), or None


def set_trace(trace):
    """Install (or, with None, remove) the arraykit.jit trace that watches storages."""
    global _trace
    _trace = trace


_MAKING_INPUTS = threading.local()


@contextlib.contextmanager
def made_as_inputs():
    """Storages made in the block are concrete and, under an ``arraykit.jit`` trace,
    inputs of the traced program (read from the storage at each call, as if they had
    existed before the trace) rather than values it computes: state a first call
    creates (an optimizer's zeroed moments) then gives the program that later calls,
    which read the state, give too."""
    depth = getattr(_MAKING_INPUTS, "depth", 0)
    _MAKING_INPUTS.depth = depth + 1
    try:
        with jax.ensure_compile_time_eval():
            yield
    finally:
        _MAKING_INPUTS.depth = depth
        trace = _trace
        if depth == 0 and trace is not None and trace.thread == threading.get_ident():
            trace.inputs_made()


def gradient_made(leaf, storage):
    """Autograd made ``storage`` for ``leaf``'s ``.grad``: an ``arraykit.jit`` trace in
    progress on this thread notes it (see :mod:`arraykit.jit_gradients`)."""
    trace = _trace
    if trace is not None and trace.thread == threading.get_ident():
        trace.gradients[id(storage)] = leaf


def making_inputs():
    """Whether this thread is inside :func:`made_as_inputs`."""
    return getattr(_MAKING_INPUTS, "depth", 0) > 0


def tracing_here():
    """Whether this thread is tracing an ``arraykit.jit`` function."""
    trace = _trace
    return trace is not None and trace.thread == threading.get_ident()


class Storage:
    """A buffer (addressed flat) with its device, dtype, version counter and lock.

    ``extremes`` is a cache for index checks: ``(version, layout, smallest, largest)``
    of the elements some layout selected, valid while ``version`` is unchanged.
    ``node`` is the autograd version of the buffer (see :mod:`arraykit.autograd.graph`),
    None when no gradient flows through this storage. ``shared`` and ``exported``
    say who else may hold the buffer (see the module docstring); :meth:`donatable`
    decides whether a write may donate it.
    """

    __slots__ = (
        "_buffer", "_host", "device", "dtype", "version", "_lock", "shared", "exported",
        "extremes",
        "_counted", "_events", "node", "__weakref__",
    )

    def __init__(self, buffer, dtype, device, shared=False, nbytes=None, exported=False):
        self._buffer = buffer
        self._host = None
        self.dtype = dtype
        self.device = device
        self.version = 0
        self._lock = None  # made on first use (most storages are never locked)
        self.shared = shared
        self.exported = exported
        self.extremes = None
        self.node = None
        if _trace is not None:
            _trace.created(self)
        if isinstance(buffer, _Tracer):
            self._counted = None  # a traced value holds no memory
        else:
            if nbytes is None:  # kernels pass it: .size of a fresh output costs microseconds
                nbytes = buffer.size * dtype.itemsize
            events = self._events = _EVENTS.get(device) or _event_list(device)
            events.append(nbytes)
            self._counted = nbytes
            if len(events) > _FOLD_AFTER:
                _fold()

    def __del__(self, _recycle=buffer_pool.recycle, _min_bytes=buffer_pool.MIN_BYTES):
        # An exported buffer is recycled only if nothing else references it (recycle checks).
        # A storage whose construction failed (an exception in __init__, an unpickling
        # that stopped half-way) may not have counted itself: nothing to release then.
        try:
            counted = self._counted
        except AttributeError:
            return
        if counted is not None:
            self._events.append(~counted)
            if counted >= _min_bytes and not self.shared:
                _recycle(self._buffer, self.device, counted)

    def __reduce__(self):
        """Pickle and ``copy.deepcopy``: the whole buffer's values (a NumPy copy), the
        dtype and the device (its ``platform:id``; a placement over several devices
        is restored on the default device). Tensors pickled together that shared this
        storage share the restored one (pickle's and deepcopy's memo)."""
        buf = self._buffer
        if isinstance(buf, _Tracer):
            raise TypeError("a storage traced inside a JAX transform cannot be pickled or copied")
        with self.lock:
            values = np.array(buf)
        device = self.device
        spec = None
        if isinstance(device, jax.Device):
            spec = f"{device.platform}:{jax.local_devices(backend=device.platform).index(device)}"
        return _restore, (values, self.dtype, spec)

    @property
    def lock(self):
        """The storage's re-entrant lock (re-entrant: writes into NumPy memory read under it)."""
        lock = self._lock
        if lock is None:
            with _LOCK_MAKING:
                lock = self._lock
                if lock is None:
                    lock = self._lock = _thread.RLock()
        return lock

    @property
    def buffer(self):
        """The current buffer (internal: callers must not keep it across writes)."""
        return self._buffer

    def export(self):
        """The current buffer for a caller that will keep it: not donated while the
        caller (or anything it hands the buffer to) still references it."""
        with self.lock:
            self.exported = True
            return self._buffer

    def share(self):
        """Mark the buffer as referenced by holders arraykit cannot count: never donated."""
        with self.lock:
            self.shared = True

    def donatable(self, holders=0):
        """Whether a write may donate the current buffer: it is not shared, and no
        export of it is alive. ``holders``: references the caller holds itself (e.g.
        a list of operands). An export found dead is forgotten."""
        if self.shared:
            return False
        if self.exported:
            if _referenced_elsewhere(self._buffer, holders):
                return False
            self.exported = False
        return True

    def host_view(self):
        """Zero-copy, read-only NumPy view of a CPU buffer, kept until the next write.

        Only the storage holds it (callers copy out of it under ``self.lock``), and a
        write drops it before donating, so reads through it never cost a donation.
        """
        host = self._host
        if host is None:
            host = self._host = np.asarray(self._buffer).reshape(-1)
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
        return self._buffer.size

    def nbytes(self):
        """Size in bytes."""
        return self._buffer.size * self.dtype.itemsize

    def data_ptr(self):
        """Address of the first element (changes when a write could not donate; NumPy
        memory never moves)."""
        buf = self._buffer
        if isinstance(buf, jax.core.Tracer):
            raise RuntimeError("data_ptr() is not available inside a jax trace")
        if type(buf) is np.ndarray:
            return buf.ctypes.data
        return buf.unsafe_buffer_pointer()

    def replace(self, kernel, donating_kernel, *args):
        """Run ``kernel(buffer, *args)`` and make its result the new buffer.

        ``donating_kernel`` is used when the old buffer is private to this storage.
        The caller holds ``self.lock``.
        """
        self._host = None
        old = self._buffer
        if isinstance(old, jax.core.Tracer):
            self._buffer = kernel(old, *args)
        else:
            new = (donating_kernel if self.donatable(1) else kernel)(old, *args)
            if isinstance(new, jax.core.Tracer) and (_trace is None or not _trace.adopt(self, old)):
                raise _leak_error(self)
            self._buffer = new
            self.shared = self.exported = False
        self.version += 1

    def overwrite(self, buffer):
        """Replace every element at once by ``buffer`` (a concrete JAX array of the
        current buffer's shape and dtype, made on the same device, that nothing else
        holds): a write, without a kernel. The old buffer is dropped, not donated."""
        with self.lock:
            old = self._buffer
            if buffer.shape != old.shape or buffer.dtype != old.dtype:
                raise ValueError(
                    f"overwrite: a buffer of shape {buffer.shape} and dtype {buffer.dtype} "
                    f"cannot replace one of shape {old.shape} and dtype {old.dtype}"
                )
            self._buffer = buffer
            self._host = None
            self.shared = self.exported = False
            self.extremes = None
            self.version += 1

    def __repr__(self):
        return f"Storage(size={self.size()}, dtype={self.dtype}, device={self.device})"


def _leak_error(storage):
    return RuntimeError(
        f"an in-place write inside a JAX trace (jax.jit, jax.grad, ...) targets a tensor "
        f"created outside it (a storage of {storage.size()} {storage.dtype} elements on "
        f"{storage.device}); the tensor would keep a traced value after the trace. Pass "
        "the tensor to the traced function as an argument and return the result, or "
        "use arraykit.jit, which writes such tensors back after the call"
    )


def _restore(values, dtype, device):
    """The storage :meth:`Storage.__reduce__` describes, on ``device`` (None: the default)."""
    device = as_device(device)
    return Storage(host_to_device(values, device), dtype, device)
