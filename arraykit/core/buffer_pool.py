"""Recycling of large CPU buffers for kernel outputs.

A fresh output buffer on the CPU is fresh memory from the operating system: XLA
allocates large buffers with ``mmap``, and the first write to each 4 KiB page is a
page fault. On the machines this library is measured on, writing a new 64 MiB
result costs about 15 ms of page faults against under 3 ms for the computation.
PyTorch's CPU allocator and eager JAX pay this on every large op.

arraykit keeps the buffers of large storages that die (at least ``MIN_BYTES``, on
a CPU device, private: never exported, and referenced by nothing but the dying
storage) and hands one to the next kernel with an output of the same shape, dtype
and device, which donates it: XLA writes the result into memory that is already
mapped. A buffer is only taken out of the pool once, so nothing can read it after
it is reused. The pool holds at most ``PER_SHAPE`` buffers per shape (more of one
shape are not kept) and ``MAX_BYTES`` in all (the oldest go first), and :func:`empty`
releases it. A kernel's first call allocates its output: the output size is known
once it has been traced.
Pooled buffers are not live storages, so the memory statistics do not count them
(as PyTorch's ``memory_allocated`` does not count its allocator's cache).
GPUs need none of this: XLA's device allocator already reuses its memory.
"""

from __future__ import annotations

import collections
import itertools
import sys
import threading

import jax

MIN_BYTES = 1 << 20
MAX_BYTES = 1 << 30
PER_SHAPE = 4

_LOCK = threading.RLock()  # re-entrant: a collection inside a locked section may run Storage.__del__
_ENTRIES = collections.OrderedDict()  # token -> (key, buffer, nbytes), oldest first
_BY_KEY = {}  # (shape, dtype, device) -> tokens of its pooled buffers
_TOKENS = itertools.count()
_held = 0  # bytes in the pool


def _reference_count(buffer):
    return sys.getrefcount(buffer)


def _references_of_a_private_object():
    """What :func:`_reference_count` reports for an object one caller holds: measured,
    since what ``sys.getrefcount`` counts of its own argument differs between CPython
    versions (3.14 borrows references to locals)."""
    probe = object()
    return _reference_count(probe)


# A buffer passed to recycle() by its only holder (a dying storage's slot, a local)
# carries one reference more than the probe: recycle's own argument.
_PRIVATE_REFS = _references_of_a_private_object() + 1


def referenced_elsewhere(buffer, holders=0):
    """Whether anything references ``buffer`` besides the one slot it was read from
    (e.g. ``storage._buffer``) and ``holders`` references of the caller's own."""
    return _reference_count(buffer) > _PRIVATE_REFS + holders


def recycle(buffer, device, nbytes):
    """Keep the buffer of a dying storage for reuse, if it is large and private.

    Called by ``Storage.__del__`` for storages of at least ``MIN_BYTES`` that were
    never exported; a buffer some other object still references is left alone.
    """
    if _reference_count(buffer) > _PRIVATE_REFS or getattr(device, "platform", None) != "cpu":
        return
    if not isinstance(buffer, jax.Array) or isinstance(buffer, jax.core.Tracer):
        return  # NumPy memory; a traced value
    if buffer.is_deleted():  # donated
        return
    _keep(buffer, device, nbytes)


def _keep(buffer, device, nbytes):
    global _held
    key = (buffer.shape, buffer.dtype, device)
    with _LOCK:
        tokens = _BY_KEY.setdefault(key, [])
        if len(tokens) >= PER_SHAPE:
            return
        token = next(_TOKENS)
        _ENTRIES[token] = (key, buffer, nbytes)
        tokens.append(token)
        _held += nbytes
        while _held > MAX_BYTES:
            _drop_oldest()


def _drop_oldest():
    global _held
    token, (key, _, nbytes) = _ENTRIES.popitem(last=False)
    _BY_KEY[key].remove(token)
    _held -= nbytes


def put_back(buffer, device):
    """Return a buffer :func:`take` handed out and that was not used."""
    _keep(buffer, device, buffer.nbytes)


def take(shape, dtype, device):
    """A pooled buffer of ``shape``, ``dtype`` (NumPy) and ``device`` for a kernel to
    donate, removed from the pool; None when there is none."""
    global _held
    if not _BY_KEY.get((shape, dtype, device)):
        return None
    with _LOCK:
        tokens = _BY_KEY.get((shape, dtype, device))
        if not tokens:
            return None
        _, buffer, nbytes = _ENTRIES.pop(tokens.pop())
        _held -= nbytes
    return buffer


def held_bytes():
    """Bytes of the buffers the pool holds now."""
    return _held


def empty():
    """Release every pooled buffer."""
    global _held
    with _LOCK:
        _ENTRIES.clear()
        _BY_KEY.clear()
        _held = 0
