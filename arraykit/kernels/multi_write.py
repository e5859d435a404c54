"""One kernel that writes several tensors in place: :func:`apply_inplace_many`.

``apply_inplace`` writes one target per kernel; an update over many tensors of one
model (scaling every gradient by one clipping factor) would be one kernel per
tensor. Here one compiled program reads every target and operand through its
layout, computes the new values of all targets (and extra results) together and
writes each target back through its layout, donating the old buffers that are
private to their storages.
"""

from __future__ import annotations

import threading

import jax
import numpy as np

from ..core import dtypes as D
from ..core import layout as L
from ..core import storage as S
from ..core import x64
from ..core.storage import Storage
from . import strided
from .launch import Locks, apply

__all__ = ["apply_inplace_many"]

_PROGRAMS = {}
_LOCK = threading.Lock()


def _program(key, fn, static, target_layouts, operand_layouts, traced, donated):
    program = _PROGRAMS.get(key)
    if program is not None:
        return program
    n = len(target_layouts)

    def kernel(*bufs):
        current = [strided.read(b, lay) for b, lay in zip(bufs[:n], target_layouts)]
        values = [b if lay is None else strided.read(b, lay) for b, lay in zip(bufs[n:], operand_layouts)]
        new, extra = fn(current, values, *static)
        written = tuple(strided.write(b, lay, v, None, traced) for b, lay, v in zip(bufs[:n], target_layouts, new))
        return written, tuple(extra)

    program = jax.jit(kernel, donate_argnums=donated)
    with _LOCK:
        return _PROGRAMS.setdefault(key, program)


def _general(fn, targets, operands, static):
    """Any case (shared storages, autograd history, NumPy memory): the new values as
    one kernel, then one copy per target."""
    n = len(targets)
    outs = apply(_flat, tuple(targets) + tuple(operands), (fn, n, static), multiple=True)
    for t, v in zip(targets, outs[:n]):
        t.copy_(v)
    return list(outs[n:])


def _flat(*rest):
    *bufs, fn, n, static = rest
    new, extra = fn(list(bufs[:n]), list(bufs[n:]), *static)
    return tuple(new) + tuple(extra)


def _simple(targets, operands):
    """Whether the one-program path applies: distinct target storages in JAX buffers,
    no autograd history, operands outside the targets' storages."""
    seen = set()
    for t in targets:
        st = t._storage
        if id(st) in seen or st.node is not None or type(st._buffer) is np.ndarray \
                or L.overlaps_self(t._layout):
            return False
        seen.add(id(st))
    for x in operands:
        if hasattr(x, "_storage"):
            st = x._storage
            if id(st) in seen or st.node is not None or type(st._buffer) is np.ndarray:
                return False
    return True


@x64.scoped
def apply_inplace_many(fn, targets, operands=(), static=()):
    """Write ``fn(target_values, operand_values, *static) -> (new_values, extras)`` into
    ``targets`` in place as one compiled kernel; returns the ``extras`` (a tuple of
    arrays) as new tensors on the first target's device.

    ``fn`` must be a module-level function and ``static`` hashable; ``targets`` are
    tensors on one device, ``operands`` tensors or NumPy scalars. Each new value is
    cast to its target's dtype.
    """
    targets = list(targets)
    operands = list(operands)
    if not targets:
        raise ValueError("apply_inplace_many: no target tensors")
    if not _simple(targets, operands):
        return _general(fn, targets, operands, static)
    if S._trace is not None:
        S._trace.read(tuple(targets) + tuple(operands))
    storages = [t._storage for t in targets]
    device = storages[0].device
    tracer = jax.core.Tracer
    with Locks(storages + [x._storage for x in operands if hasattr(x, "_storage")]):
        for st in storages:
            st._host = None  # a host view would hold the buffer: gone before donation
        donated = tuple(i for i, st in enumerate(storages)
                        if not isinstance(st._buffer, tracer) and st.donatable())
        olds = [st._buffer for st in storages]
        traced = any(isinstance(b, tracer) for b in olds)
        target_layouts = tuple(t._layout for t in targets)
        operand_layouts = tuple(x._layout if hasattr(x, "_storage") else None for x in operands)
        key = (fn, static, tuple((t._layout, t._dtype) for t in targets),
               tuple((lay, x.dtype) for lay, x in zip(operand_layouts, operands)), traced, donated)
        program = _program(key, fn, static, target_layouts, operand_layouts, traced, donated)
        bufs = [x._storage._buffer if hasattr(x, "_storage") else x for x in operands]
        written, extra = program(*olds, *bufs)
        trace = S._trace
        for st, old, new in zip(storages, olds, written):
            if isinstance(new, tracer) and not isinstance(old, tracer) \
                    and (trace is None or not trace.adopt(st, old)):
                raise S._leak_error(st)
            st._buffer = new
            st.shared = st.exported = False
            st.version += 1
    tensor = type(targets[0])
    results = []
    for e in extra:
        dtype = D.as_dtype(e.dtype)
        results.append(tensor._make(Storage(e, dtype, device), L.contiguous(e.shape), dtype))
    return results
