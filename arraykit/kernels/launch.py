"""Compile and launch kernels over strided tensors.

A kernel is a pure JAX function of dense arrays. :func:`apply` wraps it so the
compiled program reads each operand straight from its storage through its layout
(see :mod:`.strided`), computes, and returns new flat buffers: one XLA computation
per operation. :func:`apply_inplace` does the same and writes the result back
through a target layout with a donating update. Kernels are cached by
(function, static arguments, operand layouts and dtypes), at most
``KERNEL_LIMIT`` of them (those not called since the last eviction are forgotten
first, see :func:`_evict`); :func:`cache_info` reports cache hits, misses and the number of
traces (compilations).

Offsets start out static (part of the key). Once one shape-and-strides has been
compiled at ``DYNAMIC_AFTER`` different offsets (a loop over ``x[i]``), its
offset becomes a run-time argument, so one more compile serves every offset.
Under a JAX trace (``arraykit.jit``, ``jax.jit``) offsets always stay static: the
kernel is inlined into the outer program, nothing is compiled per offset, and XLA
turns reads at known offsets into slices it can fuse.

Compilation, not execution, dominates small eager kernels on the CPU (milliseconds
per new shape against microseconds per call). The first calls of a small
element-wise kernel on the CPU are therefore served by a program compiled once per
size bucket (:mod:`.size_buckets`), and its exact kernel is compiled only once it
has been called ``size_buckets.EXACT_AFTER`` times. A CPU kernel whose operands and
results all have at most ``SMALL_KERNEL_ELEMENTS`` elements is therefore compiled
with XLA options that halve compile time (:func:`fast_compile_options`: the classic
element emitters, no LLVM optimization, code generated in one piece); at those sizes the run time stays within
a few microseconds. Transcendental functions can then differ from the fully
optimized kernel of a large operand in the last unit of precision, as NumPy's
vector and scalar loops do. Larger CPU kernels get the classic emitters only
(:func:`large_compile_options`): they compile in about two thirds of the time and
run as fast (a ResNet's first eager step: ``benchmarks/bench_models.py
--startup-runs``), except kernels that convolve or compute a transcendental
function, whose code (a convolution's gradient, an LSTM cell) runs faster under
XLA's defaults. With the persistent compilation cache off, those whose values the
classic emitters compute bit for bit alike (float32 and float64 convolutions,
``exp``, ``tanh``, ``logistic`` and more: ``_TIERABLE``) are compiled in tiers
(:mod:`.tiers`), the classic emitters first and XLA's defaults on a background
thread. A kernel's backward program gets its forward's options.
"""

from __future__ import annotations

import math
import threading

import jax
import numpy as np
from jax.extend import core as _extend_core

from ..core import buffer_pool
from ..core import dtypes as D
from ..core import host_memory
from ..core import layout as L
from ..core import storage as S
from ..core import x64
from ..core.devices import default_device, jax_target, put
from ..core.jax_compat import fast_call, trace_state_clean
from ..core.storage import Storage
from . import size_buckets, strided
from . import compilation_cache, kernel_names
from .ahead import compile_named, resolved_options
from .tiers import TIERED, TieredJit, final_options


class _Stats:
    __slots__ = ("hits", "misses", "traces")

    def __init__(self):
        self.hits = 0
        self.misses = 0
        self.traces = 0


_KERNELS = {}
_STATS = _Stats()
_BUILD_LOCK = threading.Lock()
_Tensor = None  # the tensor class, once registered
_make = None  # its trusted constructor, Tensor._make
_x64_on = x64._swap
_x64_restore = x64._restore
_RECORDER = []
DYNAMIC_AFTER = 3
KERNEL_LIMIT = 2048
SMALL_KERNEL_ELEMENTS = 4096
# The classic element emitters, no LLVM optimization, and the module compiled as one
# piece (XLA splits a CPU module's code generation across threads by default: for a
# small kernel the split costs more than it saves, 5-25% of its compile time here).
FAST_COMPILE_WANTED = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 0,
                       "xla_cpu_parallel_codegen_split_count": 1}
LARGE_COMPILE_WANTED = {"xla_cpu_use_fusion_emitters": False}
_FAST_COMPILE_ACCEPTED = []
_LARGE_COMPILE_ACCEPTED = []
_OFFSETS_SEEN = {}
_DYNAMIC = set()
_STATIC = "static offsets"  # ends the key of a kernel built under a trace (see _cache_key)


def register_tensor_type(cls):
    """Tell the launcher which class is the tensor (called once by tensor_type.py)."""
    global _Tensor, _make
    _Tensor = cls
    _make = cls._make


def is_tensor(x):
    """Whether ``x`` is a tensor (an instance of the registered class)."""
    return isinstance(x, _Tensor)


def register_recorder(recorder):
    """Install autograd's recorder (called once by :mod:`arraykit.autograd`).

    ``recorder.recording()`` says whether it records now;
    ``recorder.apply(entry, fn, operands, layouts, bufs, offsets, device, multiple)``
    and ``recorder.apply_inplace(entry, fn, target, operands, aliases, inputs,
    offsets)`` run a kernel whose operands' storages carry autograd versions
    (``storage.node``); they return None (``apply``) or False (``apply_inplace``)
    when nothing is to be recorded.
    """
    _RECORDER.append(recorder)


def recording():
    """Whether autograd's recorder is installed and would record kernels now (grad
    mode on in this thread)."""
    return bool(_RECORDER) and _RECORDER[0].recording()


def cache_info():
    """Kernel cache counters: ``hits``, ``misses``, ``traces`` (compilations), ``size``."""
    return {
        "hits": _STATS.hits,
        "misses": _STATS.misses,
        "traces": _STATS.traces + size_buckets.traces(),
        "size": len(_KERNELS),
    }


def cache_clear():
    """Forget every compiled kernel and reset the counters."""
    with _BUILD_LOCK:  # not in the middle of an eviction
        _KERNELS.clear()
    size_buckets.clear()
    _STATS.hits = 0
    _STATS.misses = 0
    _STATS.traces = 0


class _Compiled:
    """A kernel's executables plus the output layouts and dtypes recorded when traced.

    ``make_kernel()`` builds the traced function (a new one each time: see
    :attr:`kernel`). ``call``, ``donating`` (the old buffer donated, for in-place
    writes) and ``into`` (writing into a recycled buffer) run eagerly, compiled with
    ``options`` (:func:`fast_compile_options` or None): each starts as a stand-in
    whose first eager call compiles the kernel ahead of time for the arguments it gets
    and puts the executable in its place (:func:`_compiling`). An executable keeps no
    traced program alive, where a ``jax.jit`` wrapper keeps its kernel's jaxpr and
    JAX's caches keep hundreds of objects per kernel, all of which every full garbage
    collection walks; a process that has met thousands of shapes then pauses for a
    second at a time. A call with other argument types (another device, a storage of
    another size with the same layout) swaps in a ``jax.jit`` wrapper for good
    (:meth:`generalize`). ``nested`` is the plain ``jax.jit`` used inside an outer JAX
    trace, where compiler options are not allowed; ``forwards`` autograd's
    forward-with-VJP versions of the kernel, per differentiated set.
    """

    __slots__ = ("call", "donating", "_nested", "layouts", "dtypes", "flags", "make_kernel",
                 "pending", "forwards", "_options", "results", "pooled", "into", "used", "general",
                 "name")

    def __init__(self):
        self.used = False  # called since the last eviction (see _evict)
        self.general = ()  # the slots holding a jax.jit wrapper (see generalize)
        self.pending = None  # the kernel traced at build time, until first used (kernel)
        self.results = None
        self.pooled = False  # one output, large enough for a recycled buffer (buffer_pool)
        self.into = None
        self.make_kernel = None
        self._options = None
        self.name = None
        self.forwards = {}
        self.call = None
        self.donating = None
        self._nested = None
        self.layouts = None
        self.dtypes = None
        self.flags = None

    @property
    def kernel(self):
        """An instance of the traced function: the one traced when the entry was built
        the first time it is asked for (its trace is reused), then a new one each time.
        JAX caches what it traced per function object, so only what is kept
        (executables aside: ``nested``, ``forwards``) keeps that."""
        pending = self.pending
        if pending is None:
            return self.make_kernel()
        self.pending = None
        return pending

    @property
    def options(self):
        """The compiler options (see :func:`compile_options`), found when first asked
        for where the build left a function giving them."""
        return resolved_options(self)

    def describe(self):
        """What the persistent cache keeps beside a named program of this kernel: its
        result shapes and dtypes and its compiler options."""
        results = None if self.layouts is None else [  # in-place kernels record none
            (lay.shape, dtype.name) for lay, dtype in zip(self.layouts, self.dtypes)]
        return {"results": results, "options": self.options}

    def adopt(self, meta):
        """Take what :meth:`describe` stored, for a program loaded untraced."""
        if self.layouts is None and meta["results"] is not None:  # dtypes first: layouts
            # set is what other threads test
            self.dtypes = tuple(D.from_numpy(np.dtype(name)) for _, name in meta["results"])
            self.layouts = tuple(L.contiguous(shape) for shape, _ in meta["results"])
        if callable(self._options):
            self._options = meta["options"]

    @property
    def nested(self):
        """The plain ``jax.jit`` of the kernel, built when first called inside a trace."""
        nested = self._nested
        if nested is None:
            nested = self._nested = jax.jit(self.kernel)
        return nested

    def generalize(self, slot):
        """Replace the executable in ``slot`` (``"call"``, ``"donating"``, ``"into"``)
        by a ``jax.jit`` wrapper, which compiles for every argument signature, and
        return it. A wrapper already there is returned as it is."""
        if slot in self.general:
            return getattr(self, slot)
        wrapper = jax.jit(_SLOT_KERNELS[slot](self.kernel), compiler_options=final_options(self.options),
                          **_SLOT_OPTIONS[slot])
        setattr(self, slot, wrapper)
        self.general += (slot,)
        return wrapper


def _recycling_kernel(kernel):
    """``kernel`` taking the recycled output buffer first (donated, unused)."""
    return lambda out, offsets, *bufs: kernel(offsets, *bufs)


_SLOT_OPTIONS = {"call": {}, "donating": {"donate_argnums": 0},
                 "into": {"donate_argnums": 0, "keep_unused": True}}
_SLOT_KERNELS = {"call": lambda k: k, "donating": lambda k: k, "into": _recycling_kernel}


def _compiling(entry, slot):
    """The stand-in for ``entry``'s executable in ``slot``: its first eager call
    compiles the kernel (:attr:`_Compiled.kernel`) ahead of time for its arguments
    (through the persistent compilation cache when it is on, see :mod:`.ahead`),
    stores the executable in the slot and runs it. Inside an outer JAX trace it runs
    ``entry.nested``."""

    def first_call(*args):
        if not trace_state_clean():
            return entry.nested(*args)
        # the cache tested first: with it on, a named kernel's options are not computed
        if compilation_cache.get_compilation_cache_dir() is None and entry.options == TIERED:
            tiered = eager_jit(_SLOT_KERNELS[slot](entry.kernel), TIERED, **_SLOT_OPTIONS[slot])
            setattr(entry, slot, tiered)
            return tiered(*args)
        name = None if entry.name is None else f"{entry.name}|{slot}"
        compiled = compile_named(name, _SLOT_KERNELS[slot](entry.kernel), args, lambda: entry.options,
                                 _SLOT_OPTIONS[slot].get("donate_argnums", ()), entry.describe,
                                 entry.adopt)
        setattr(entry, slot, compiled)
        result = compiled(*args)
        if slot == "call":  # donating slots keep the Python path, which checks before donating
            entry.call = fast_call(compiled)
        return result

    return first_call


def fast_compile_options():
    """The options of ``FAST_COMPILE_WANTED`` that this jaxlib's CPU compiler accepts, or None.

    XLA adds and retires options between releases (jaxlib 0.11 has no
    ``xla_cpu_use_fusion_emitters``), so each is tried once on a one-element
    program, all together first, then one by one if that fails.
    """
    return _accepted(FAST_COMPILE_WANTED, _FAST_COMPILE_ACCEPTED)


def large_compile_options():
    """The options of ``LARGE_COMPILE_WANTED`` that this jaxlib's CPU compiler accepts,
    or None (see :func:`fast_compile_options`)."""
    return _accepted(LARGE_COMPILE_WANTED, _LARGE_COMPILE_ACCEPTED)


def eager_jit(fn, options, **jit_options):
    """``jax.jit(fn, compiler_options=options, **jit_options)`` for eager calls; with
    :data:`.tiers.TIERED` options and the persistent compilation cache off, a
    :class:`.tiers.TieredJit` (the classic emitters first, XLA's defaults later)."""
    if _tiered(options):
        return TieredJit(fn, large_compile_options(), **jit_options)
    return jax.jit(fn, compiler_options=final_options(options), **jit_options)


def _tiered(options):
    return options == TIERED and compilation_cache.get_compilation_cache_dir() is None


def _accepted(wanted, memo):
    if not memo:
        if not _cpu_compiler_accepts(wanted):
            wanted = {k: v for k, v in wanted.items() if _cpu_compiler_accepts({k: v})}
        memo.append(wanted or None)
    return memo[0]


def _cpu_compiler_accepts(options):
    probe = jax.device_put(np.float32(0), jax.devices("cpu")[0])
    try:
        jax.jit(lambda v: v + 1, compiler_options=options).lower(probe).compile()
    except jax.errors.JaxRuntimeError:
        return False
    return True


def compile_options(kernel, args, platform, in_sizes=()):
    """XLA options for compiling ``kernel`` on the CPU: :func:`fast_compile_options`
    when small, else :func:`large_compile_options` unless it convolves or computes a
    transcendental function, which gets XLA's defaults (None), in tiers where the
    classic emitters compute the same values (:data:`.tiers.TIERED`: those options
    first, XLA's defaults later; see ``_TIERABLE``); None elsewhere and inside a trace.

    A kernel is small on the CPU when ``in_sizes`` (element counts of what it reads)
    and its results all have at most ``SMALL_KERNEL_ELEMENTS`` elements; the result
    sizes and whether it convolves come from tracing ``kernel`` with ``args``.
    """
    if platform != "cpu" or any(isinstance(a, jax.core.Tracer) for a in jax.tree.leaves(args)):
        return None
    traced = jax.jit(kernel).trace(*args)
    results = jax.tree.leaves(traced.out_info)
    if max((*in_sizes, *(r.size for r in results)), default=0) <= SMALL_KERNEL_ELEMENTS:
        return fast_compile_options()
    large = large_compile_options()
    wanted = _default_emitters_wanted(traced.jaxpr.jaxpr)
    if wanted is None:
        return large
    return TIERED if wanted == "tiered" and large is not None else None


_DEFAULT_EMITTED = frozenset({
    "conv_general_dilated", "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin",
    "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh",
    "pow", "erf", "erfc", "erf_inv", "lgamma", "digamma", "polygamma", "igamma", "igammac",
    "igamma_grad_a", "random_gamma_grad", "regularized_incomplete_beta", "zeta",
    "bessel_i0e", "bessel_i1e", "cbrt",
})


# Those whose float32 and float64 values the classic emitters compute bit for bit as
# XLA's defaults do (tests/test_tiers.py checks each on this jaxlib); not tan, atan,
# cbrt, nor anything on 16-bit floats (log1p, asinh, ... differ there).
_TIERABLE = frozenset({
    "conv_general_dilated", "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin",
    "cos", "asin", "acos", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "pow", "erf",
    "erfc", "erf_inv", "lgamma", "digamma",
})
_TIERABLE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _default_emitters_wanted(jaxpr):
    """None when ``jaxpr`` (and those inside it) neither convolves nor computes a
    transcendental function; else ``"tiered"`` when each such operation is in
    ``_TIERABLE`` on float32 or float64 operands (compiled in tiers, the same values),
    ``"now"`` otherwise (XLA's default emitters from the start)."""
    found = None
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in _DEFAULT_EMITTED:
            if eqn.primitive.name not in _TIERABLE or not all(
                    np.dtype(v.aval.dtype) in _TIERABLE_DTYPES for v in eqn.invars):
                return "now"
            found = "tiered"
        for inner in _extend_core.jaxprs_in_params(eqn.params):
            wanted = _default_emitters_wanted(inner)
            if wanted == "now":
                return wanted
            found = found or wanted
    return found


def call_or_nested(call, nested, *args):
    """``call(*args)``; inside an outer JAX trace, which refuses a kernel compiled
    with options (ValueError) or ahead of time (TypeError), ``nested(*args)``. Eager
    calls pay no check."""
    try:
        return call(*args)
    except (TypeError, ValueError):
        if trace_state_clean():
            raise
        return nested(*args)


def _lookup(key, build):
    entry = _KERNELS.get(key)
    if entry is not None:
        _STATS.hits += 1
        entry.used = True
        return entry
    with _BUILD_LOCK:
        entry = _KERNELS.get(key)
        if entry is None:
            _STATS.misses += 1
            if len(_KERNELS) >= KERNEL_LIMIT:
                _evict()
            entry = _Compiled()
            build(entry)
            _KERNELS[key] = entry
        else:
            _STATS.hits += 1
            entry.used = True
    return entry


def _evict():
    """Forget kernels until a quarter of ``KERNEL_LIMIT`` is free (the caller holds
    ``_BUILD_LOCK``): those not called since the last eviction first, oldest first
    (each survivor's mark is cleared: a second chance), then the oldest.

    A process that meets new shapes all the time (variable-length batches, property
    tests) would otherwise keep every kernel, with its executable and the objects
    each full garbage collection walks, for ever. A kernel forgotten and needed again
    is compiled again; ``cache_info()["size"]`` stays at most ``KERNEL_LIMIT``.
    """
    target = KERNEL_LIMIT - max(1, KERNEL_LIMIT // 4)
    keys = list(_KERNELS)
    for key in keys:
        entry = _KERNELS[key]
        if entry.used:
            entry.used = False
        else:
            del _KERNELS[key]
            if len(_KERNELS) <= target:
                return
    for key in list(_KERNELS)[: len(_KERNELS) - target]:
        del _KERNELS[key]


class Locks:
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


def _layout_key(layout):
    """The layout itself, or only its geometry once its offset went dynamic."""
    geometry = layout.geometry
    return geometry if geometry in _DYNAMIC else layout


def _note_offsets(layouts):
    """On a cache miss: make geometries seen at too many offsets dynamic."""
    for layout in layouts:
        if layout is None or layout.geometry in _DYNAMIC:
            continue
        seen = _OFFSETS_SEEN.setdefault(layout.geometry, set())
        seen.add(layout.offset)
        if len(seen) >= DYNAMIC_AFTER:
            _DYNAMIC.add(layout.geometry)


def _dynamic_flags(layouts):
    return tuple(lay is not None and lay.geometry in _DYNAMIC for lay in layouts)


def _offsets(layouts, flags):
    """The run-time offsets of the dynamic operands, as one int64 array."""
    return np.array([lay.offset for lay, f in zip(layouts, flags) if f], dtype=np.int64)


def _read_all(layouts, flags, offsets, bufs):
    """Dense values of every operand; dynamic ones at their run-time offsets."""
    out = []
    k = 0
    for lay, dynamic, b in zip(layouts, flags, bufs):
        if lay is None:
            out.append(b)
        elif dynamic:
            out.append(strided.read(b, lay, offsets[k]))
            k += 1
        else:
            out.append(strided.read(b, lay))
    return out


def apply(fn, operands, static=(), device=None, multiple=False):
    """Run ``fn(*dense_operands, *static)`` as one compiled kernel.

    ``operands`` are tensors (read through their layouts) or NumPy scalars / 0-d
    NumPy arrays (passed as 0-d arrays). A 0-d view into a larger CPU storage
    (``x[i, j]``) is passed by value, read on the host, so a loop over elements
    compiles one kernel, not one per storage size (unless the storage carries an
    autograd version: the read must then be differentiated). ``fn`` must be a
    module-level function and ``static`` hashable: both are part of the cache key.
    ``fn`` returns one array, or a tuple of arrays when ``multiple`` is true. Results
    are new contiguous tensors on ``device`` (default: the first tensor operand's
    device). Runs in arraykit's 64-bit scope (:mod:`arraykit.core.x64`).

    This is every eager op's path, so the common case (operands with a shape, in JAX
    buffers, no gradient recorded, a cached kernel with static offsets, no
    ``arraykit.jit`` trace) is handled first with as little Python as possible;
    anything else goes through :func:`_apply`.
    """
    token = _x64_on(True)  # x64.scoped, inlined
    try:
        key = (fn, static, multiple)
        bufs = []
        first = None
        for x in operands:
            if isinstance(x, _Tensor):
                st = x._storage
                buf = st._buffer
                layout = x._layout
                if st.node is not None or type(buf) is np.ndarray or not layout.shape:
                    return _apply(fn, operands, static, device, multiple)
                if first is None:
                    first = st
                key += (layout, x._dtype)
                bufs.append(buf)
            else:
                key += (None, x.dtype)
                bufs.append(x)
        entry = _KERNELS.get(key)
        if entry is None or entry.flags is not None or S._trace is not None or first is None:
            return _apply(fn, operands, static, device, multiple)
        _STATS.hits += 1
        entry.used = True
        if device is None:
            device = first.device
        try:
            outs = _call_recycling(entry, None, bufs, device) if entry.pooled else entry.call(None, *bufs)
        except (RuntimeError, TypeError, ValueError) as error:
            layouts = [x._layout if isinstance(x, _Tensor) else None for x in operands]
            outs = _call_again(entry, None, operands, layouts, bufs, error)
        if multiple:
            return _outputs(entry, outs, device, multiple)
        layout, dtype, nbytes = (entry.results or output_specs(entry, outs))[0]  # _outputs, inlined
        return _make(Storage(outs[0], dtype, device, False, nbytes), layout, dtype)
    finally:
        _x64_restore(token)


def _apply(fn, operands, static, device, multiple):
    """:func:`apply` in general (called in the 64-bit scope)."""
    key = (fn, static, multiple)
    layouts = []
    bufs = []
    first = None
    tracked = False
    for x in operands:
        if isinstance(x, _Tensor):
            st = x._storage
            if first is None:
                first = st
            layout = x._layout
            if st.node is not None:
                tracked = True
            elif not layout.shape and _is_cpu_view(x):
                x = _host_scalar(x)
                key += (None, x.dtype)
                layouts.append(None)
                bufs.append(x)
                continue
            buf = st._buffer
            if type(buf) is np.ndarray:  # NumPy memory
                if _jit_tracing():  # arraykit.jit puts a JAX stand-in in its place
                    S._trace.read((x,))
                    buf = st._buffer
                else:  # a private copy of what the read selects
                    buf, layout = host_memory.read(st, layout)
            key += (layout, x._dtype)
            layouts.append(layout)
            bufs.append(buf)
        else:
            key += (None, x.dtype)
            layouts.append(None)
            bufs.append(x)
    if device is None:
        device = first.device if first is not None else default_device()
    _pin_to(device, bufs)
    entry = _KERNELS.get(key)
    if entry is None or entry.flags is not None and not trace_state_clean():
        traced = not trace_state_clean()
        cache_key = _cache_key(key, layouts, traced)
        entry = _KERNELS.get(cache_key)
        if entry is not None:
            _STATS.hits += 1
            entry.used = True
        else:  # nothing compiled for these layouts at any offset
            if not (tracked or traced or S._trace is not None):
                shape = _bucket_shape(fn, operands, layouts, bufs, device)
                if shape is not None and size_buckets.wants(_geometry_key(key, layouts)):
                    return _run_bucketed(fn, static, multiple, operands, layouts, bufs, shape,
                                         device)
                if (_bucket_reduction(fn, static, operands, layouts, bufs, device)
                        and size_buckets.wants(_geometry_key(key, layouts))):
                    return _run_bucketed_reduction(fn, static, operands[0], layouts[0], device)
            entry = _build_apply(cache_key, fn, static, multiple, layouts, bufs,
                                 device.platform, dynamic=not traced)
    else:
        _STATS.hits += 1
        entry.used = True
    offsets = None if entry.flags is None else _offsets(layouts, entry.flags)
    if S._trace is not None:
        S._trace.read(operands)
    if tracked and _RECORDER:
        made = _RECORDER[0].apply(entry, fn, operands, layouts, bufs, offsets, device, multiple)
        if made is not None:
            return made
    if not trace_state_clean():  # an executable would run now, with constants, not in the trace
        return _outputs(entry, entry.nested(offsets, *bufs), device, multiple)
    try:
        outs = _call_recycling(entry, offsets, bufs, device) if entry.pooled else entry.call(offsets, *bufs)
    except (RuntimeError, TypeError, ValueError) as error:
        outs = _call_again(entry, offsets, operands, layouts, bufs, error)
    return _outputs(entry, outs, device, multiple)


def _bucket_shape(fn, operands, layouts, bufs, device):
    """The result shape of a kernel :mod:`.size_buckets` may serve, or None: an
    element-wise ``fn`` on one CPU device over operands read from their own storages,
    with a small result."""
    if not size_buckets.serves(fn, device):
        return None
    shapes = []
    for x, layout, buf in zip(operands, layouts, bufs):
        if layout is not None:
            if buf is not x._storage._buffer:  # a private copy of NumPy memory
                return None
            shapes.append(layout.shape)
    if not shapes:
        return None
    shape = L.broadcast_shapes(*shapes)
    return shape if math.prod(shape) <= SMALL_KERNEL_ELEMENTS else None


def _bucket_reduction(fn, static, operands, layouts, bufs, device):
    """Whether :mod:`.size_buckets` may serve the reduction ``fn``: one small operand
    read from its own storage, on one CPU device."""
    if len(operands) != 1 or layouts[0] is None or _reads_a_copy(operands, bufs):
        return False
    layout = layouts[0]
    return (layout.numel <= SMALL_KERNEL_ELEMENTS
            and size_buckets.reduces(fn, static, layout.shape, device))


def _reads_a_copy(operands, bufs):
    """Whether some tensor operand is read from a private copy (of NumPy memory)."""
    return any(isinstance(x, _Tensor) and b is not x._storage._buffer
               for x, b in zip(operands, bufs))


def _run_bucketed_reduction(fn, static, x, layout, device):
    """The result of the reduction ``fn`` of ``x`` through its size-bucket
    program (see :mod:`.size_buckets`), ``x`` read on the host under its lock."""
    st = x._storage
    with st.lock:
        value = st.host_array(layout)
        buf = size_buckets.run_reduction(fn, tuple(_static_values(static)), value, device,
                                         fast_compile_options())
    dtype = D.from_numpy(buf.dtype)
    layout = L.contiguous(buf.shape)
    return _make(Storage(buf, dtype, device, False, layout.numel * dtype.itemsize), layout, dtype)


def _run_bucketed(fn, static, multiple, operands, layouts, bufs, shape, device):
    """Results of ``fn`` through its size-bucket program (see :mod:`.size_buckets`),
    the operands read on the host under their storages' locks."""
    with Locks([x._storage for x, lay in zip(operands, layouts) if lay is not None]):
        values = [x._storage.host_array(lay) if lay is not None else np.asarray(b)
                  for x, lay, b in zip(operands, layouts, bufs)]
        outs = size_buckets.run(fn, _static_values(static), multiple, values, shape, device,
                                fast_compile_options())
    layout = L.contiguous(shape)
    results = []
    for buf in outs:
        dtype = D.from_numpy(buf.dtype)
        results.append(_make(Storage(buf, dtype, device, False, layout.numel * dtype.itemsize),
                             layout, dtype))
    return results if multiple else results[0]


def _placed(buf):
    """Whether a kernel argument fixes where the kernel runs (a committed JAX array,
    or a tracer: the outer trace decides)."""
    return isinstance(buf, jax.core.Tracer) or (isinstance(buf, jax.Array) and buf.committed)


def _pin_to(device, bufs):
    """Make a kernel over ``bufs`` run on ``device``.

    JAX runs a jitted call on the devices of its committed array arguments; when
    every argument is host data (private copies of NumPy memory, values of 0-d CPU
    views) or an uncommitted array (cached Python scalars), it runs on JAX's default
    device instead, and the result would claim to
    be on ``device`` while living elsewhere (the GPU, when it is the default). The
    first host argument is then put on ``device``. Nothing to do when ``device`` is
    the default device, or under a trace.
    """
    if device == default_device() or any(_placed(b) for b in bufs):
        return
    for k, b in enumerate(bufs):
        if isinstance(b, (np.ndarray, np.generic)):
            bufs[k] = put(b, jax_target(device))
            return


def _call_recycling(entry, offsets, bufs, device):
    """Call ``entry`` (one large output) writing into a recycled buffer when the pool
    has one of the output's shape (see :mod:`arraykit.core.buffer_pool`)."""
    if S._trace is not None or not trace_state_clean():
        return entry.nested(offsets, *bufs)  # a pooled buffer would become a constant
    layout, dtype, _ = entry.results[0]
    recycled = buffer_pool.take(layout.shape, dtype.np, device)
    if recycled is None:
        return entry.call(offsets, *bufs)
    if entry.into is None:
        entry.into = _compiling(entry, "into")
    try:
        return entry.into(recycled, offsets, *bufs)
    except (TypeError, ValueError):  # arguments the executable was not compiled for
        if not recycled.is_deleted():
            return entry.generalize("into")(recycled, offsets, *bufs)
        raise


def _outputs(entry, outs, device, multiple):
    """New tensors over the output buffers ``outs`` of ``entry``."""
    results = entry.results or output_specs(entry, outs)
    if not multiple:
        layout, dtype, nbytes = results[0]
        return _make(Storage(outs[0], dtype, device, False, nbytes), layout, dtype)
    return [
        _make(Storage(buf, dtype, device, False, nbytes), layout, dtype)
        for buf, (layout, dtype, nbytes) in zip(outs, results)
    ]


def _cache_key(key, layouts, traced):
    """The key :func:`apply`'s kernel for ``key`` is cached under. Under a JAX trace
    (``arraykit.jit``, ``jax.jit``) offsets stay static: the kernel is inlined into the
    outer program, where nothing is compiled per offset, and XLA simplifies reads at
    known offsets (three views of one buffer, ``q, k, v = qkv.split(...)``, become
    slices of it). Otherwise the operands whose geometry went dynamic are keyed by
    geometry: one kernel for every offset."""
    if traced:
        return key + (_STATIC,)
    return _replace_layouts(key, layouts, _layout_key)


def _geometry_key(key, layouts):
    """``key`` with every layout replaced by its geometry: one key for all offsets."""
    return _replace_layouts(key, layouts, lambda layout: layout.geometry)


def _replace_layouts(key, layouts, replace):
    """``key`` with each operand's layout replaced by ``replace(layout)``."""
    new = key[:3]
    for k, layout in enumerate(layouts):
        new += (replace(layout) if layout is not None else None, key[4 + 2 * k])
    return new


def _static_values(static):
    """The static arguments a kernel body gets: arraykit dtypes (in keys, they hash
    by identity, faster than NumPy dtypes) as NumPy dtypes."""
    return [v.np if type(v) is D.DType else v for v in static]


def output_specs(entry, outs):
    """(layout, dtype, bytes) of each output of ``entry`` (known once it has been
    traced, or from its results ``outs`` when it was loaded untraced from the
    persistent cache), cached on it."""
    if entry.layouts is None:
        entry.dtypes = tuple(D.from_numpy(o.dtype) for o in outs)
        entry.layouts = tuple(L.contiguous(o.shape) for o in outs)
    entry.results = tuple(
        (lay, dtype, lay.numel * dtype.itemsize) for lay, dtype in zip(entry.layouts, entry.dtypes)
    )
    entry.pooled = len(entry.results) == 1 and entry.results[0][2] >= buffer_pool.MIN_BYTES
    return entry.results


def _abstract(value):
    """Shape and dtype of a buffer (a stand-in for tracing), or ``value`` itself."""
    if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer):
        return jax.ShapeDtypeStruct(value.shape, value.dtype, weak_type=value.weak_type)
    return value


def _set_options(entry, key, layouts, flags, leading, operands, platform):
    """Give ``entry`` (built for the launcher's ``key``) its :func:`compile_options`
    for a kernel called as ``(*leading, offsets, *operands)``, and its name in the
    persistent cache when that is on (:mod:`.kernel_names`). A named kernel finds its
    options when first asked for them: loaded from the cache, it is never traced."""
    tensor = _Tensor

    def stand_in(x):
        return _abstract(x._storage._buffer if isinstance(x, tensor) else x)

    offsets = _offsets(layouts, flags) if any(flags) else None
    args = (*map(stand_in, leading), offsets, *map(stand_in, operands))
    sizes = [lay.numel for lay in layouts if lay is not None]
    kernel = entry.pending

    def options():
        return compile_options(kernel, args, platform, sizes)

    if compilation_cache.get_compilation_cache_dir() is not None:
        entry.name = kernel_names.stable_text((key, flags, options_inputs()))
    entry._options = options if entry.name is not None else options()


def options_inputs():
    """What :func:`compile_options` chooses from besides the kernel itself (a name in
    the persistent cache must say it: the options are not computed before a load)."""
    return (SMALL_KERNEL_ELEMENTS, tuple(sorted(FAST_COMPILE_WANTED.items())),
            tuple(sorted(LARGE_COMPILE_WANTED.items())))


def _is_cpu_view(x):
    """Whether the 0-d tensor ``x`` is one element of a larger concrete CPU storage,
    read on the host. Never while this thread traces ``arraykit.jit``: a closed-over
    storage not read yet still holds its concrete buffer, and its value would be baked
    into the program instead of read at each call."""
    st = x._storage
    buf = st._buffer
    return (buf.size > 1 and st.device.platform == "cpu" and not isinstance(buf, jax.core.Tracer)
            and not _jit_tracing())


def _host_scalar(x):
    """The value of a 0-d CPU tensor as a 0-d NumPy array, read under its storage's lock."""
    st = x._storage
    with st.lock:
        return np.array(st.host_view()[x._layout.offset])


def _build_apply(key, fn, static, multiple, layouts, bufs, platform, dynamic=True):
    if dynamic:
        _note_offsets(layouts)
    flags = _dynamic_flags(layouts) if dynamic else (False,) * len(layouts)

    def build(entry):
        entry.flags = flags if any(flags) else None

        def make_kernel():
            def kernel(offsets, *bufs):
                _STATS.traces += 1
                out = fn(*_read_all(layouts, flags, offsets, bufs), *_static_values(static))
                outs = out if multiple else (out,)
                entry.dtypes = tuple(D.from_numpy(o.dtype) for o in outs)  # before layouts:
                entry.layouts = tuple(L.contiguous(o.shape) for o in outs)  # see output_specs
                return tuple(outs)

            return kernel

        entry.make_kernel = make_kernel
        entry.pending = make_kernel()
        _set_options(entry, key, layouts, flags, (), bufs, platform)
        entry.call = _compiling(entry, "call")

    return _lookup(key, build)


def _deleted(buf):
    return isinstance(buf, jax.Array) and not isinstance(buf, jax.core.Tracer) and buf.is_deleted()


def _call_again(entry, offsets, operands, layouts, bufs, error):
    """Retry a reading kernel whose call on ``bufs`` raised ``error``, or raise it.

    A writer on another thread may donate a buffer between the moment it is read
    and the dispatch; JAX then refuses the deleted buffer (RuntimeError, or
    ValueError from the executable). The call is then made once more under the
    storages' locks, which waits for the writer to install its new buffer; a
    buffer still deleted after that is a real error and propagates. Once
    dispatched, a read holds its inputs and a later donation waits for it.

    Inside an outer JAX trace, JAX refuses a kernel compiled with options
    (ValueError) or ahead of time (TypeError); ``entry.nested`` is called instead.
    Arguments the executable was not compiled for (another device, a storage of
    another size) get a ``jax.jit`` wrapper (:meth:`_Compiled.generalize`). Eager
    calls pay no check.
    """
    if not trace_state_clean():
        return entry.nested(offsets, *bufs)
    if not any(_deleted(b) for b in bufs):
        if isinstance(error, RuntimeError) or "call" in entry.general:
            raise error
        return entry.generalize("call")(offsets, *bufs)
    with Locks([x._storage for x, lay in zip(operands, layouts) if lay is not None]):
        fresh = [
            b if lay is None or type(b) is np.ndarray else x._storage._buffer  # copies stay
            for x, lay, b in zip(operands, layouts, bufs)
        ]
        return entry.call(offsets, *fresh)


@x64.scoped
def apply_inplace(fn, target, operands, static=()):
    """Write ``fn(target_values, *operand_values, *static)`` through ``target``'s layout.

    Operands sharing ``target``'s storage are read from the same buffer before the
    write, so overlapping source and target give NumPy's result. The update
    donates the old buffer unless it is shared outside the storage. A target over
    NumPy memory is written by NumPy instead (:func:`_write_host`).
    """
    tl = target._layout
    if L.overlaps_self(tl):
        raise RuntimeError(
            "unsupported operation: some elements of the written-to tensor refer to a "
            f"single memory location (shape {tl.shape}, strides {tl.strides}); "
            "clone() the tensor before writing to it"
        )
    tensor = _Tensor
    tst = target._storage
    if type(tst._buffer) is np.ndarray and not _jit_tracing():
        return _write_host(fn, target, operands, static)
    tracked = tst.node is not None
    traced = isinstance(tst._buffer, jax.core.Tracer)  # see strided.write(scatter=...)
    # a traced target (arraykit.jit, jax.jit) keeps offsets static, as apply's kernels do
    key = ["inplace", fn, static, tst.dtype, traced, tl if traced else _layout_key(tl)]
    layouts = [tl]
    aliases = []
    storages = [tst]
    for x in operands:
        if isinstance(x, tensor):
            if type(x._storage._buffer) is np.ndarray and not _jit_tracing():  # NumPy memory:
                # read it into a copy first
                return apply_inplace(fn, target, _private_copies(operands, tensor), static)
            layout = x._layout
            same = x._storage is tst
            key.append(layout.geometry if not traced and layout.geometry in _DYNAMIC else layout)
            key.append(x._dtype)
            key.append(same)
            layouts.append(layout)
            aliases.append(same)
            if not same:
                storages.append(x._storage)
                if x._storage.node is not None:
                    tracked = True
        else:
            key.append(None)
            key.append(x.dtype)
            layouts.append(None)
            aliases.append(False)
    key = tuple(key)
    if S._trace is not None:
        S._trace.read((target,) + tuple(operands))
    entry = _KERNELS.get(key)
    if entry is None:
        entry = _build_inplace(key, fn, static, tl, tuple(aliases), layouts, traced, target, operands)
    else:
        _STATS.hits += 1
        entry.used = True
    offsets = None if entry.flags is None else _offsets(layouts, entry.flags)
    with tst.lock if len(storages) == 1 else Locks(storages):
        if type(tst._buffer) is np.ndarray and not _jit_tracing():  # numpy() moved it meanwhile
            return _write_host(fn, target, operands, static)
        inputs = _private_inputs(operands, aliases, tensor)  # read under the locks
        if tracked and _RECORDER and _RECORDER[0].apply_inplace(
            entry, fn, target, operands, aliases, inputs, offsets
        ):
            return target
        if not trace_state_clean():  # an executable would write now, not in the trace
            tst.replace(entry.nested, entry.nested, offsets, *inputs)
            return target
        try:
            tst.replace(entry.call, entry.donating, offsets, *inputs)
        except (TypeError, ValueError):  # arguments the executables were not compiled for
            if tst._buffer.is_deleted():
                raise
            tst.replace(entry.generalize("call"), entry.generalize("donating"), offsets, *inputs)
    return target


def _jit_tracing():
    """Whether this thread is tracing an ``arraykit.jit`` function. Storages over NumPy
    memory then enter the trace through a JAX stand-in, like any closed-over buffer
    (read at each call, written back by ``arraykit.jit``), instead of through private
    copies, which the trace would bake in."""
    return S.tracing_here()


def _same(x):
    return x


def _private_copies(operands, tensor):
    """``operands`` with each tensor over NumPy memory replaced by a copy of its values."""
    return [
        apply(_same, (x,)) if isinstance(x, tensor) and type(x._storage._buffer) is np.ndarray
        else x
        for x in operands
    ]


def _computed(cur, *rest):
    """``fn(cur, *operands, *static)`` in ``cur``'s dtype: the values a write stores."""
    *operands, fn, static = rest
    return fn(cur, *operands, *static).astype(cur.dtype)


def _write_host(fn, target, operands, static):
    """:func:`apply_inplace` into NumPy memory (see :mod:`arraykit.core.host_memory`).

    Under the locks of every storage involved, one kernel computes the values the
    write stores (reading private copies of the extents it reads) and NumPy stores
    them through the target's layout: O(write), and the memory never moves.
    """
    tensor = _Tensor
    tst = target._storage
    with Locks([tst] + [x._storage for x in operands if isinstance(x, tensor)]):
        result = apply(_computed, (target, *operands), (fn, static))
        if result._storage.node is not None:  # autograd recorded it: NumPy memory has no history
            raise RuntimeError(
                "an in-place write into a tensor over NumPy memory (from_numpy, numpy()) cannot "
                "be recorded by autograd; write into a clone() of it, detach() the operands, "
                "or write under arraykit.no_grad()"
            )
        host_memory.write(tst, target._layout, result)
    return target


def _private_inputs(operands, aliases, tensor):
    """Buffers of the operands that do not live in the target's storage."""
    return [
        x._storage._buffer if isinstance(x, tensor) else x
        for x, same in zip(operands, aliases)
        if not same
    ]


def _build_inplace(key, fn, static, tl, aliases, layouts, traced, target, operands):
    if traced:
        flags = (False,) * len(layouts)
    else:
        _note_offsets(layouts)
        flags = _dynamic_flags(layouts)

    def build(entry):
        entry.flags = flags if any(flags) else None

        def make_kernel():
            def kernel(tbuf, offsets, *bufs):
                _STATS.traces += 1
                rest = iter(bufs)
                srcs = [tbuf] + [tbuf if same else next(rest) for same in aliases]
                cur, *vals = _read_all(layouts, flags, offsets, srcs)
                new = fn(cur, *vals, *static)
                return strided.write(tbuf, tl, new, offsets[0] if flags[0] else None, traced)

            return kernel

        private = [x for x, same in zip(operands, aliases) if not same]
        entry.make_kernel = make_kernel
        entry.pending = make_kernel()
        _set_options(entry, key, layouts, flags, (target,), private, target.device.platform)
        entry.call = _compiling(entry, "call")
        entry.donating = _compiling(entry, "donating")

    return _lookup(key, build)
