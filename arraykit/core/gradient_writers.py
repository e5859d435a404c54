"""Which compiled programs write a leaf's ``.grad``, and dropping them when anything
else sets it.

A compiled ``arraykit.jit`` step whose trace made a leaf's ``.grad`` (``zero_grad()``
set it to None, ``backward()`` made it) writes each later call's gradient into the
storage of that tensor, without running the Python that assigned it. Once anything
else assigns the leaf's ``.grad`` (another trace, an eager ``backward()``, ``p.grad =
None``), the program no longer writes where ``.grad`` is: it is dropped, and its next
call traces again. Leaves are keyed by ``id``; a reused id only drops a program that
would have traced again anyway.
"""

from __future__ import annotations

import threading
import weakref

_WRITERS = {}  # id(leaf) -> weak references to the programs that write its .grad
_LOCK = threading.Lock()
_PRUNE_ABOVE = [1024]  # prune keys whose programs all died once there are more


def register(leaves, program):
    """``program`` (with an ``abandon()`` method) writes the ``.grad`` of ``leaves``."""
    ref = weakref.ref(program)
    with _LOCK:
        for leaf in leaves:
            refs = [r for r in _WRITERS.get(id(leaf), ()) if r() is not None]
            refs.append(ref)
            _WRITERS[id(leaf)] = refs
        if len(_WRITERS) > _PRUNE_ABOVE[0]:
            for key in [k for k, refs in _WRITERS.items() if all(r() is None for r in refs)]:
                del _WRITERS[key]
            _PRUNE_ABOVE[0] = 2 * max(len(_WRITERS), 512)


def replaced(leaf):
    """``leaf``'s ``.grad`` was set to another tensor or to None: the programs that
    wrote the old one are abandoned."""
    if not _WRITERS:
        return
    with _LOCK:
        refs = _WRITERS.pop(id(leaf), ())
    for ref in refs:
        program = ref()
        if program is not None:
            program.abandon()
