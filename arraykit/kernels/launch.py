"""Compile and launch kernels over strided tensors.

A kernel is a pure JAX function of dense arrays. :func:`apply` wraps it so the
compiled program reads each operand straight from its storage through its layout
(see :mod:`.strided`), computes, and returns new flat buffers: one XLA computation
per operation. :func:`apply_inplace` does the same and writes the result back
through a target layout with a donating update. Compiled programs are cached by
(function, static arguments, operand layouts, storage sizes and dtypes); the
cache's hits and misses are observable through :func:`cache_info`.
"""

from __future__ import annotations

import threading

import jax
import numpy as np

from .. import layout as L
from . import strided


class _Stats:
    __slots__ = ("hits", "misses")

    def __init__(self):
        self.hits = 0
        self.misses = 0


_KERNELS = {}
_STATS = _Stats()
_BUILD_LOCK = threading.Lock()


def cache_info():
    """Kernel cache counters: ``hits``, ``misses`` (one compile each) and ``size``."""
    return {"hits": _STATS.hits, "misses": _STATS.misses, "size": len(_KERNELS)}


def cache_clear():
    """Forget every compiled kernel and reset the counters."""
    _KERNELS.clear()
    _STATS.hits = 0
    _STATS.misses = 0


class _Compiled:
    """A jitted kernel plus the output shapes recorded when it was traced."""

    __slots__ = ("call", "donating", "shapes")

    def __init__(self):
        self.call = None
        self.donating = None
        self.shapes = None


def _lookup(key, build):
    entry = _KERNELS.get(key)
    if entry is not None:
        _STATS.hits += 1
        return entry
    with _BUILD_LOCK:
        entry = _KERNELS.get(key)
        if entry is None:
            _STATS.misses += 1
            entry = _Compiled()
            build(entry)
            _KERNELS[key] = entry
        else:
            _STATS.hits += 1
    return entry


class _Locks:
    """Hold the locks of several storages, always taken in one global order."""

    __slots__ = ("storages",)

    def __init__(self, storages):
        unique = {id(s): s for s in storages}
        self.storages = [unique[k] for k in sorted(unique)]

    def __enter__(self):
        for s in self.storages:
            s.lock.acquire()

    def __exit__(self, *exc):
        for s in reversed(self.storages):
            s.lock.release()


def _operand_key(x):
    from ..tensor import Tensor

    if isinstance(x, Tensor):
        st = x._storage
        return (x._layout, st._buffer.shape[0], st.dtype)
    return ("scalar", x.dtype)


def _reader(operands):
    """Static description of how each operand is read inside a kernel."""
    from ..tensor import Tensor

    return tuple(x._layout if isinstance(x, Tensor) else None for x in operands)


def _inputs(operands):
    from ..tensor import Tensor

    return [x._storage._buffer if isinstance(x, Tensor) else x for x in operands]


def _read_all(layouts, bufs):
    return [b if lay is None else strided.read(b, lay) for lay, b in zip(layouts, bufs)]


def _wrap_outputs(entry, outs, device):
    from ..tensor import Tensor

    return [
        Tensor._from_buffer(buf, L.contiguous(shape), device)
        for buf, shape in zip(outs, entry.shapes)
    ]


def apply(fn, operands, static=(), device=None, multiple=False):
    """Run ``fn(*dense_operands, *static)`` as one compiled kernel.

    ``operands`` are tensors (read through their layouts) or NumPy scalars / 0-d
    NumPy arrays (passed as 0-d arrays). ``fn`` must be a module-level function and
    ``static`` hashable: both are part of the cache key. ``fn`` returns one array, or a tuple of arrays when
    ``multiple`` is true. Results are new contiguous tensors on ``device``
    (default: the first tensor operand's device).
    """
    from ..tensor import Tensor

    key = (fn, static, multiple) + tuple(_operand_key(x) for x in operands)

    def build(entry):
        layouts = _reader(operands)

        def kernel(*bufs):
            out = fn(*_read_all(layouts, bufs), *static)
            outs = out if multiple else (out,)
            entry.shapes = tuple(o.shape for o in outs)
            return tuple(o.reshape(-1) for o in outs)

        entry.call = jax.jit(kernel)

    entry = _lookup(key, build)
    storages = [x._storage for x in operands if isinstance(x, Tensor)]
    if device is None:
        from ..devices import default_device

        device = storages[0].device if storages else default_device()
    if len(storages) == 1:
        st = storages[0]
        with st.lock:
            outs = entry.call(*_inputs(operands))
    else:
        with _Locks(storages):
            outs = entry.call(*_inputs(operands))
    results = _wrap_outputs(entry, outs, device)
    return results if multiple else results[0]


def apply_inplace(fn, target, operands, static=()):
    """Write ``fn(target_values, *operand_values, *static)`` through ``target``'s layout.

    Operands sharing ``target``'s storage are read from the same buffer before the
    write, so overlapping source and target give NumPy's result. The update
    donates the old buffer unless it is shared outside the storage.
    """
    from ..tensor import Tensor

    tl = target._layout
    if L.overlaps_self(tl):
        raise RuntimeError(
            "unsupported operation: some elements of the written-to tensor refer to a "
            f"single memory location (shape {tl.shape}, strides {tl.strides}); "
            "clone() the tensor before writing to it"
        )
    tst = target._storage
    aliases = tuple(isinstance(x, Tensor) and x._storage is tst for x in operands)
    key = ("inplace", fn, static, tl, tst._buffer.shape[0], tst.dtype, aliases) + tuple(
        _operand_key(x) for x in operands
    )

    def build(entry):
        layouts = _reader(operands)

        def kernel(tbuf, *bufs):
            rest = iter(bufs)
            srcs = [tbuf if same else next(rest) for same in aliases]
            vals = _read_all(layouts, srcs)
            new = fn(strided.read(tbuf, tl), *vals, *static)
            return strided.write(tbuf, tl, new)

        entry.call = jax.jit(kernel)
        entry.donating = jax.jit(kernel, donate_argnums=0)

    entry = _lookup(key, build)
    inputs = [x for same, x in zip(aliases, _inputs(operands)) if not same]
    storages = [tst] + [x._storage for x in operands if isinstance(x, Tensor)]
    with _Locks(storages):
        tst.replace(entry.call, entry.donating, *inputs)
    return target


def to_device_buffer(value, dtype, device):
    """A flat jax buffer of ``value`` (NumPy array or scalar) with ``dtype`` on ``device``."""
    arr = np.asarray(value, dtype=dtype.np).reshape(-1)
    return jax.device_put(arr, device)

