"""One program for the same in-place write into many tensors (PyTorch's ``foreach``).

An optimizer's step writes each parameter (and each state tensor) with the same
kernel. Done one tensor at a time, a model with twenty parameter shapes compiles
twenty programs on its first step and launches twenty on every step;
:func:`apply_inplace_many` compiles and launches one, when every write qualifies.
"""

from __future__ import annotations

import jax

from ..core import layout as L
from ..core import storage as S
from ..core import x64
from ..core.jax_compat import trace_state_clean
from . import compilation_cache, kernel_names, launch
from .ahead import FirstCall

_PROGRAMS = {}
_PROGRAM_LIMIT = 256


def apply_inplace_many(fn, targets, operand_lists, static=()):
    """``launch.apply_inplace(fn, t, ops, static)`` for each target ``t`` and its
    operands ``ops``, as one compiled program when every write qualifies: an eager
    call, nothing recorded by autograd, every target and tensor operand the whole of
    its storage (contiguous, the storage's dtype) with a buffer on one device, an
    operand on its target's storage the target itself, no storage written by two of
    the writes or written by one and read by another.
    Otherwise one ``apply_inplace`` each, in order. The values are the same either
    way."""
    targets = list(targets)
    operand_lists = [tuple(ops) for ops in operand_lists]
    plan = _plan(targets, operand_lists) if len(targets) > 1 else None
    if plan is None:
        for target, operands in zip(targets, operand_lists):
            launch.apply_inplace(fn, target, operands, static)
        return
    written, read, device = plan
    token = x64.on()
    try:
        with launch.Locks(written + read):
            ran = all(_on_device(st) for st in written + read)  # not moved meanwhile
            if ran:
                for part in _by_size(targets, operand_lists):
                    _run(fn, static, [targets[i] for i in part], [operand_lists[i] for i in part],
                         [written[i] for i in part], device)
    finally:
        x64.off(token)
    if not ran:
        for target, operands in zip(targets, operand_lists):
            launch.apply_inplace(fn, target, operands, static)


def _plan(targets, operand_lists):
    """``(written storages, read storages, device)`` when the writes qualify, else None."""
    if not trace_state_clean() or S.tracing_here() or S._trace is not None:
        return None
    written, read = [], []
    seen = set()
    device = targets[0]._storage.device
    for target, operands in zip(targets, operand_lists):
        st = target._storage
        if id(st) in seen or not _whole(target, device):
            return None
        seen.add(id(st))
        written.append(st)
        for x in operands:
            if not launch.is_tensor(x) or not _whole(x, device):
                return None
            if x._storage is not st:
                read.append(x._storage)
            elif x._layout != target._layout:  # the target itself in another shape
                return None
    if any(id(st) in seen for st in read):
        return None
    if launch.recording() and any(st.node is not None for st in written + read):
        return None  # autograd records these writes (or refuses them), one at a time
    return written, read, device


def _by_size(targets, operand_lists):
    """The writes' positions in two parts, those whose tensors all have at most
    ``launch.SMALL_KERNEL_ELEMENTS`` elements and the others: one write alone would be
    compiled with the options of its part (:func:`launch.compile_options`), and so is
    the part's program, computing the same values."""
    small, large = [], []
    for i, (target, operands) in enumerate(zip(targets, operand_lists)):
        size = max([target._layout.numel] + [x._layout.numel for x in operands])
        (small if size <= launch.SMALL_KERNEL_ELEMENTS else large).append(i)
    return [part for part in (small, large) if part]


def _whole(x, device):
    """Whether tensor ``x`` is the whole of its storage, in its dtype, on ``device``."""
    st = x._storage
    layout = x._layout
    return (st.device == device and x._dtype == st.dtype and layout.offset == 0
            and layout.numel == st.size() and L.is_contiguous(layout) and _on_device(st))


def _on_device(st):
    buf = st._buffer
    return isinstance(buf, jax.Array) and not isinstance(buf, jax.core.Tracer)


def _run(fn, static, targets, operand_lists, written, device):
    """Run the program over the storages' buffers and install its results (the
    caller holds every lock)."""
    for st in written:
        st._host = None  # a host view would keep the old buffer from being donated
    bufs = [st._buffer for st in written]
    donate = all(st.donatable(1) for st in written)  # the list holds one reference each
    operands, layout = [], []
    for target, ops in zip(targets, operand_lists):
        alias = tuple(x._storage is target._storage for x in ops)
        operands.append([x._storage._buffer for x, same in zip(ops, alias) if not same])
        layout.append((target._layout.shape, alias,
                       tuple(x._layout.shape for x, same in zip(ops, alias) if not same)))
    layout = tuple(layout)
    key = (fn, static, donate, layout, tuple(b.dtype for b in bufs),
           tuple(b.dtype for ops in operands for b in ops), device)
    program = _PROGRAMS.get(key)
    if program is None:
        if len(_PROGRAMS) >= _PROGRAM_LIMIT:
            _PROGRAMS.clear()
        program = _PROGRAMS[key] = _compiled(fn, static, layout, donate, bufs, operands, device)
    new = program(bufs, operands)
    for st, buf in zip(written, new):
        st.overwrite(buf)


def _compiled(fn, static, layout, donate, bufs, operands, device):
    """The program writing ``fn``'s values into every target buffer; ``layout`` per
    write: the target's shape, which operands are the target itself, the others'
    shapes."""

    def program(targets, operand_lists):
        results = []
        for buf, ops, (shape, alias, shapes) in zip(targets, operand_lists, layout):
            cur = buf.reshape(shape)
            others = (operand.reshape(s) for operand, s in zip(ops, shapes))
            values = [cur if same else next(others) for same in alias]
            results.append(fn(cur, *values, *static).astype(buf.dtype).reshape(buf.shape))
        return results

    sizes = [b.size for b in bufs] + [b.size for ops in operands for b in ops]
    donated = (0,) if donate else ()
    shapes = jax.tree.map(lambda b: jax.ShapeDtypeStruct(b.shape, b.dtype), (bufs, operands))

    def options():
        return launch.compile_options(program, shapes, device.platform, sizes)

    if compilation_cache.get_compilation_cache_dir() is None:
        return launch.eager_jit(program, options(), donate_argnums=donated)
    # through the persistent cache, found by name (options computed only to compile)
    name = kernel_names.stable_text(("foreach", fn, static, layout, launch.options_inputs()))
    return FirstCall(program, options, donated, jax.jit(program, donate_argnums=donated), name)
