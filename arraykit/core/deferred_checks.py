"""Checks on device data, reported where the host next reads values.

Some checks need the values of a tensor (an index within bounds, a class target
within range). On the CPU arraykit reads them on the host before the kernel runs
and raises at once. On a GPU that read would wait for the device on every call,
so the check is computed by a kernel, on the device, next to the operation: a small
result (for instance the smallest and largest index used) queued here with the
operation's name. Nothing waits for it. The queue is examined where the host reads
device data anyway (``item()``, ``tolist()``, ``numpy()``, printing, ``bool()``,
NumPy export) or when the user calls :func:`report`: the first failed check raises
its error there, naming the operation that failed, as PyTorch reports device-side
asserts at the next synchronisation. A loop that never reads keeps the queue short:
past ``LIMIT`` queued checks, those whose values the device has finished are read
(without waiting) and the first failure is kept for the next report. The operation's own result is as JAX
computes it (out-of-range gathers fill, scatters drop), never a read outside memory.

:func:`deferring` says whether a device defers its checks: every device but the
CPU, unless :func:`forced` says otherwise (tests use ``forced(True)`` to run the
deferred path on the CPU).
"""

from __future__ import annotations

import contextlib
import threading

import jax

_PENDING = []  # (device values, function of their host values -> the error or None)
LIMIT = 512  # queued checks before those the device has finished are examined
_failure = None  # the first failure found by _read_finished, raised by report()
_LOCK = threading.Lock()
_force = None  # None: defer off the CPU; True / False: always / never


def deferring(device):
    """Whether checks of data on ``device`` are deferred (:mod:`arraykit.core.deferred_checks`)."""
    if _force is not None:
        return _force
    return device.platform != "cpu"


@contextlib.contextmanager
def forced(defer):
    """Within the block, defer every device's checks (``True``) or none (``False``)."""
    global _force
    previous = _force
    _force = bool(defer)
    try:
        yield
    finally:
        _force = previous


def defer(values, error_of):
    """Queue a check: ``error_of(host values)`` returns the exception to raise, naming
    the operation, (or None) once ``values`` (JAX arrays computed on the device) are read.
    Values computed inside a trace (``arraykit.jit`` or a JAX transform) are not
    checked: they exist only while tracing, and the traced kernels guard themselves
    (indices out of range fill or drop, as for traced indices)."""
    if isinstance(values, jax.core.Tracer):
        return
    with _LOCK:
        _PENDING.append((values, error_of))
        if len(_PENDING) > LIMIT:
            _read_finished()


def _read_finished():
    """Examine the queued checks whose values the device has finished (reading them
    waits for nothing) and keep the first failure for the next :func:`report`: a loop
    that never reads a value keeps at most about ``LIMIT`` checks queued, those the
    device has not reached yet. The caller holds ``_LOCK``."""
    global _failure
    waiting = []
    for values, error_of in _PENDING:
        if not all(v.is_ready() for v in jax.tree.leaves(values)):
            waiting.append((values, error_of))
            continue
        error = error_of(jax.device_get(values))
        if error is not None and _failure is None:
            _failure = error
    _PENDING[:] = waiting


def check(device, values, error_of):
    """Run a check of ``values`` (a JAX array computed for data on ``device``): raise
    ``error_of(host values)`` now, or queue it (:func:`defer`) where ``device`` defers."""
    if deferring(device) or isinstance(values, jax.core.Tracer):
        defer(values, error_of)
        return
    error = error_of(jax.device_get(values))
    if error is not None:
        raise error


def pending():
    """Number of queued checks."""
    return len(_PENDING)


def report():
    """Read every queued check (waiting for them) and raise the first failure."""
    global _failure
    if not _PENDING and _failure is None:
        return
    with _LOCK:
        queued = _PENDING[:]
        del _PENDING[:]
        first, _failure = _failure, None
    for values, error_of in queued:
        error = error_of(jax.device_get(values))
        if error is not None and first is None:
            first = error
    if first is not None:
        raise first
