"""Small element-wise CPU kernels served by programs compiled per size bucket.

Compiling, not running, is what a new small shape costs on the CPU (milliseconds for
a kernel that then runs in microseconds), and code that meets many shapes a few
times each (property tests, ``x[start:end]`` for data-dependent bounds, a loop over
ragged rows) pays it for every shape and every operation. An element-wise body does
not depend on the shape, so the launcher serves the first ``EXACT_AFTER`` calls of a
new small kernel (its operands' shapes and strides, at any offsets) through one
program per (body, static arguments, dtypes, bucket):
the operands (scalar ones too) are broadcast and copied on the host into flat
buffers padded to the bucket's size (``SMALLEST`` times a power of ``GROWTH``, at
most ``LARGEST``: few programs, each run over at most ``GROWTH`` times the
elements), the program runs over
them, and the first ``n`` elements of each result are copied into a buffer of the
exact shape. From the next call on, the launcher compiles exact kernels as it
always does (static offsets, then one run-time offset for all: see :mod:`.launch`),
which read the operands through their layouts with no host copy.

Reductions whose results are unchanged, bit for bit, by padding an axis with an
element (marked by :func:`reduction`: ``all`` and ``any`` with True and False,
``max`` and ``min`` with the lowest and highest element, ``sum`` over axes of at most
1024 elements with -0.0, its halving order being defined over the axis padded to a
power of two; ``argmax`` and ``argmin`` over one axis) take the same path: each axis of the operand padded to a bucket of ``AXIS_SIZES`` with that
element, the padded operand reduced over the same axes, the exact result sliced out
of the padded one. Both paths give the same values.

Both programs are compiled with the launcher's small-kernel options. With jaxlib
0.10's (the classic element emitters) every element is computed by the same code
whatever the shape, so they give the same bits; a compiler without that option
(jaxlib 0.11) may vectorize a transcendental function differently per shape, and the
last unit of precision can then differ, as between NumPy's SIMD and scalar loops. Only bodies marked element-wise
(:func:`.bodies.elementwise`) on one CPU device take this path, outside traces and
autograd recording; the host copies wait for the operands' values, as reading any
value does.
"""

from __future__ import annotations

import math
import threading

import jax
import jax.numpy as jnp
import numpy as np

from ..core.devices import jax_target, one_cpu
from ..core.jax_compat import put_on_device
from . import bodies, compilation_cache

EXACT_AFTER = 256  # a compile costs about as much as a thousand calls' extra host copies
SMALLEST = 16
GROWTH = 8
LARGEST = 4096  # the launcher's small kernels: the last bucket is no larger

_PROGRAMS = {}
PROGRAM_LIMIT = 1024  # bucket programs kept; beyond, all are dropped and compiled again as met
REDUCTIONS = {}  # body -> (padding per dtype, longest reduced axis, along); see reduction
AXIS_SIZES = (1, 4, 16, 64, 256, 1024, 4096)  # what each axis of a reduced operand is padded to
PADDED_LARGEST = 1 << 16  # no reduction bucket program holds more elements
_USES = {}
_LOCK = threading.Lock()
_TRACES = [0]


def reduction(padding, longest=None, along=False):
    """Mark a reduction body ``body(x, axes, keepdims, *rest)`` as one that bucket
    programs may serve: appending ``padding`` (an element, or a function of the NumPy
    dtype giving it) to any axis of ``x`` changes no bit of the results at the
    unpadded positions; ``longest``: the longest reduced axis for which that holds
    (None: any). ``along``: the body takes one axis or None (flattened) in place of
    ``axes``, as ``argmax`` does (served when None flattens at most one axis)."""

    def mark(body):
        REDUCTIONS[body] = (padding if callable(padding) else lambda dtype: padding, longest,
                            along)
        return body

    return mark


def zero_sum(dtype):
    """The padding of a summed axis: -0.0 (adding it changes no float) or 0."""
    return -0.0 if jnp.issubdtype(dtype, jnp.inexact) else 0


def lowest(dtype):
    """The padding of an axis reduced by a maximum: -inf (the lowest finite value
    where the dtype has no infinity), the integer type's minimum, or False."""
    if jnp.issubdtype(dtype, jnp.floating):
        return -np.inf if np.isinf(np.array(-np.inf).astype(dtype)) else jnp.finfo(dtype).min
    return False if dtype == np.bool_ else jnp.iinfo(dtype).min


def highest(dtype):
    """The padding of an axis reduced by a minimum: inf (or the highest finite value),
    the integer type's maximum, or True."""
    if jnp.issubdtype(dtype, jnp.floating):
        return np.inf if np.isinf(np.array(np.inf).astype(dtype)) else jnp.finfo(dtype).max
    return True if dtype == np.bool_ else jnp.iinfo(dtype).max


def reduces(fn, static, shape, device):
    """Whether bucket programs may run the reduction ``fn`` with static arguments
    ``static`` (axes, keepdims, ...) over an operand of ``shape`` on ``device``."""
    marked = REDUCTIONS.get(fn)
    if marked is None or len(static) < 2 or not one_cpu(device):
        return False
    axes = _reduced_axes(static[0], len(shape), marked[2])
    longest = marked[1]
    if axes is None or longest is not None and any(shape[a] > longest for a in axes):
        return False
    padded = 1
    for n in shape:
        if n > AXIS_SIZES[-1]:
            return False
        padded *= _axis_size(n)
    return padded <= PADDED_LARGEST


def _reduced_axes(axes, ndim, along):
    """The reduced axes, as a tuple, or None where padding would move the results
    (a flattened index over several axes)."""
    if not along:
        return axes
    if axes is None:
        return tuple(range(ndim)) if ndim <= 1 else None
    return (axes,)


def _axis_size(n):
    """The bucket of an axis of ``n`` elements (an empty axis: one padding element,
    which leaves the reduction's identity)."""
    for size in AXIS_SIZES:
        if size >= n:
            return size
    raise ValueError(f"an axis of {n} elements has no bucket (at most {AXIS_SIZES[-1]})")


def bucket(n):
    """The static size that serves ``n`` elements: the next power of two (0 for 0)."""
    return 0 if n == 0 else 1 << (n - 1).bit_length()


def serves(fn, device):
    """Whether bucket programs may run ``fn`` on ``device``: an element-wise body on
    one CPU device."""
    return fn in bodies.ELEMENTWISE and one_cpu(device)


def wants(key):
    """Count one more call of a kernel not compiled yet, ``key`` naming it at every
    offset: whether a bucket program should serve it (False from the
    ``EXACT_AFTER + 1``-th call, when the launcher compiles it)."""
    uses = _USES.get(key, 0)
    if uses >= EXACT_AFTER:
        return False
    _USES[key] = uses + 1
    return True


def program_size(n):
    """The size of the bucket program that serves ``n`` elements: ``SMALLEST`` times
    the smallest power of ``GROWTH`` that holds them, at most ``LARGEST`` (few programs
    per body and dtypes; at most ``GROWTH`` times the elements, microseconds at these
    sizes)."""
    size = SMALLEST
    while size < n:
        size *= GROWTH
    return min(size, max(LARGEST, bucket(n)))


def run(fn, static, multiple, values, shape, device, options):
    """``fn(*values, *static)`` for a result of ``shape`` through its bucket program.

    ``values`` are NumPy arrays broadcastable to ``shape`` (a tensor operand's
    elements, or a 0-d scalar operand): each is broadcast into a flat buffer of the
    program's size, so one program serves every mix of scalar and array operands.
    Returns the exact-size JAX buffers of the results on the CPU ``device`` (a list
    of one unless ``multiple``).
    """
    n = math.prod(shape)
    size = program_size(n)
    key = [fn, tuple(static), multiple, size, device]
    args = []
    for value in values:
        flat = np.zeros(size, value.dtype)
        flat[:n].reshape(shape)[...] = value
        key.append(value.dtype)
        args.append(flat)
    key = tuple(key)
    program = _PROGRAMS.get(key)
    if program is None:
        program = _build(key, fn, static, multiple, size, device, options, args)
    target = jax_target(device)
    # each result's first n elements, copied on the host: a private array JAX may alias
    return [put_on_device(np.asarray(out)[:n].reshape(shape).copy(), target)
            for out in program(*args)]


def run_reduction(fn, static, value, device, options):
    """``fn(value, *static)`` (``static``: axes, keepdims, ...) through the bucket
    program of ``value``'s axis sizes (``value``: the operand's elements as a NumPy
    array). Returns the result's exact-shape JAX buffer on the CPU ``device``."""
    axes = _reduced_axes(static[0], value.ndim, REDUCTIONS[fn][2])
    keepdims = static[1]
    sizes = tuple(_axis_size(n) for n in value.shape)
    padded = np.full(sizes, REDUCTIONS[fn][0](value.dtype), value.dtype)
    padded[tuple(slice(0, n) for n in value.shape)] = value
    key = (fn, "reduction", static, sizes, device, value.dtype)
    program = _PROGRAMS.get(key)
    if program is None:
        result = tuple(1 if d in axes else n for d, n in enumerate(sizes)
                       if keepdims or d not in axes)
        program = _build(key, fn, static, False, result, device, options, [padded])
    (out,) = program(padded)
    exact = tuple(slice(0, 1 if d in axes else n) for d, n in enumerate(value.shape)
                  if keepdims or d not in axes)
    return put_on_device(np.asarray(out)[exact].copy(), jax_target(device))


def _build(key, fn, static, multiple, size, device, options, args):
    """The bucket program for ``key``, compiled ahead of time for ``args`` (an
    executable keeps no traced program alive; see :class:`.launch._Compiled`), through
    the persistent :mod:`.compilation_cache` when it is on. Its
    results must have the shape ``size`` (an int: element-wise; a tuple: a reduction's)."""

    def program(*args):
        _TRACES[0] += 1
        out = fn(*args, *static)
        outs = tuple(out) if multiple else (out,)
        expected = size if isinstance(size, tuple) else (size,)
        for o in outs:
            if o.shape != expected:
                raise AssertionError(
                    f"{fn.__name__} is marked element-wise or a reduction but gave "
                    f"shape {o.shape} where {expected} was expected"
                )
        return outs

    on_device = jax.sharding.SingleDeviceSharding(jax_target(device))
    with _LOCK:
        compiled = _PROGRAMS.get(key)
        if compiled is None:
            if len(_PROGRAMS) >= PROGRAM_LIMIT:
                _PROGRAMS.clear()
            jitted = jax.jit(program, in_shardings=on_device, out_shardings=on_device,
                             compiler_options=options, keep_unused=True)  # see ahead.py
            lowered = jitted.trace(*args).lower()
            compiled = _PROGRAMS[key] = compilation_cache.compile(
                lowered, (), tuple(on_device.device_set), options)
    return compiled


def traces():
    """How many bucket programs have been traced (compiled)."""
    return _TRACES[0]


def clear():
    """Forget every bucket program and call count."""
    with _LOCK:
        _PROGRAMS.clear()
        _USES.clear()
        _TRACES[0] = 0
