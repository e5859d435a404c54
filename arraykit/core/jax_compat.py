"""The few JAX internals arraykit relies on, each with a fallback through public API.

Supported JAX releases: 0.10 and 0.11 (``pyproject.toml``). What arraykit needs
beyond ``jax``'s public namespace is a cheap "is any trace active?" test, taken on
every eager operation, running a traced jaxpr on new inputs, and moving a NumPy array
to one device without ``jax.device_put``'s Python (every tensor made from host values). Where a release
lacks the fast internal spelling, the public one is used instead.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.extend import core as _extend_core


def no_trace_active():
    """True when no JAX trace (jit, grad, vmap, ...) is active on this thread.

    Spelled with ``jax.extend.core`` (the current trace is JAX's evaluation
    trace); ``trace_state_clean`` is JAX's own flag read where the release has it.
    """
    with _extend_core.take_current_trace() as trace:
        return type(trace).__name__ == "EvalTrace"


try:  # a flag read, about 0.1 us
    from jax._src.core import trace_state_clean
except ImportError:  # pragma: no cover - depends on the installed JAX
    trace_state_clean = no_trace_active


try:  # the configuration values a traced or lowered program depends on
    from jax._src.config import trace_context as _trace_context
except ImportError:  # pragma: no cover - depends on the installed JAX
    _trace_context = None


def jax_config_context():
    """A hashable value of JAX's configuration that changes whenever a change of
    configuration could change a lowered program (``jax.jit``'s own cache key part);
    a fresh object (equal to nothing else) where the release does not expose it."""
    return object() if _trace_context is None else _trace_context()


try:  # the kernel libraries JAX's lowering rules initialize when first lowered to
    from jax._src.lax.linalg import initialize_lapack as _initialize_lapack
    from jaxlib.gpu_solver import initialize_hybrid_kernels as _initialize_hybrid
except ImportError:  # pragma: no cover - depends on the installed JAX
    _initialize_lapack = _initialize_hybrid = None
_RUNTIME_READY = []


def runtime_ready():
    """Whether an executable loaded without lowering anything can run: JAX's lowering
    rules initialize the CPU LAPACK entry points and the GPU hybrid solvers when a
    program first uses them, so a process that only loads programs (the persistent
    cache's named entries) initializes them here, once. False where this JAX release
    has no known way to."""
    if not _RUNTIME_READY:
        if _initialize_lapack is None:
            _RUNTIME_READY.append(False)
        else:
            _initialize_lapack()
            _initialize_hybrid()
            _RUNTIME_READY.append(True)
    return _RUNTIME_READY[0]


def weak_type(value):
    """Whether JAX treats ``value`` (an array, a tracer or a ``ShapeDtypeStruct``) as
    weakly typed (a Python scalar's promotion); False for NumPy values."""
    aval = getattr(value, "aval", value)
    return bool(getattr(aval, "weak_type", False))


def eval_jaxpr(jaxpr, consts, *args):
    """Run ``jaxpr`` with its constant variables bound to ``consts`` on ``args``."""
    return _extend_core.jaxpr_as_fun(_extend_core.ClosedJaxpr(jaxpr, list(consts)))(*args)


try:  # the classes of concrete JAX values, for a type test on the call path
    from jax._src.array import ArrayImpl as _ArrayImpl

    CONCRETE_ARRAY_TYPES = frozenset({_ArrayImpl})
except ImportError:  # pragma: no cover - depends on the installed JAX
    CONCRETE_ARRAY_TYPES = frozenset()  # every buffer takes the general path
try:  # the NumPy subclass JAX keeps a traced program's host constants in
    from jax._src.literals import TypedNdArray as _TypedNdArray

    _CONSTANT_TYPES = CONCRETE_ARRAY_TYPES | {_TypedNdArray}
except ImportError:  # pragma: no cover - depends on the installed JAX
    _CONSTANT_TYPES = CONCRETE_ARRAY_TYPES


def concrete_arrays(buffers):
    """Whether every one of ``buffers`` is a concrete JAX array or a JAX host constant
    (not NumPy memory, not a tracer): one type test per buffer."""
    return set(map(type, buffers)) <= _CONSTANT_TYPES


def fast_call(compiled):
    """The C++ call path of a ``jax.stages.Compiled`` that has been called once (JAX
    makes it on the first call; it skips the Python ``__call__`` frame and handles
    unexpected arguments itself), else ``compiled``."""
    call = getattr(compiled, "_call", None)
    return compiled if call is None else call


try:  # JAX's transfer of host values to devices, below jax.device_put's Python
    from jax._src.config import guard_lib as _guard_lib
    from jax._src.interpreters.pxla import batched_device_put as _batched_device_put

    _guard_state = _guard_lib.thread_local_state
except (ImportError, AttributeError):  # pragma: no cover - depends on the installed JAX
    _batched_device_put = None
_SHARDINGS = {}
_PLAIN_DTYPES = {}


def put_on_device(arr, device):
    """``jax.device_put(arr, device)`` for a NumPy array ``arr`` and one JAX
    ``device``: the same committed array, made by JAX's C++ transfer without
    ``device_put``'s argument handling (a few microseconds instead of about 30), an
    explicit transfer for JAX's transfer guards as ``device_put``'s is. Inside a JAX
    trace (where ``device_put`` gives a traced value), for dtypes other than native
    numbers (``device_put`` refuses them with its own errors) and for values JAX's
    configuration would convert (64-bit ones with x64 off), ``jax.device_put``."""
    if (_batched_device_put is None or type(arr) is not np.ndarray or not _plain(arr.dtype)
            or not trace_state_clean() or jax.dtypes.canonicalize_dtype(arr.dtype) != arr.dtype):
        return jax.device_put(arr, device)
    sharding = _SHARDINGS.get(device)
    if sharding is None:
        sharding = _SHARDINGS.setdefault(device, jax.sharding.SingleDeviceSharding(device))
    aval = jax.core.ShapedArray(arr.shape, arr.dtype)
    state = _guard_state()
    explicit = state.explicit_device_put
    state.explicit_device_put = True
    try:
        return _batched_device_put(aval, sharding, [arr], [device])
    finally:
        state.explicit_device_put = explicit


def _plain(dtype):
    """Whether ``dtype`` is a number type in native byte order (NumPy's or ml_dtypes')."""
    plain = _PLAIN_DTYPES.get(dtype)
    if plain is None:
        plain = _PLAIN_DTYPES[dtype] = dtype.isnative and (
            dtype.kind in "biufc" or dtype.type.__module__.startswith("ml_dtypes"))
    return plain
