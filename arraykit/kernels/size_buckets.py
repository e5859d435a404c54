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

Reductions over every axis whose result does not depend on the order in which
elements are combined (``all``, ``any``: marked by :func:`full_reduction` with the
element that leaves the result unchanged) take the same path: the operand's elements
padded with that element to the bucket's size, reduced over the one axis, the 0-d
result reshaped to the exact result's shape. Their results are exact whatever the
size, so both paths give the same values.

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
import numpy as np

from ..core.devices import jax_target, one_cpu
from ..core.jax_compat import put_on_device
from . import bodies, compilation_cache

EXACT_AFTER = 256  # a compile costs about as much as a thousand calls' extra host copies
SMALLEST = 16
GROWTH = 8
LARGEST = 4096  # the launcher's small kernels: the last bucket is no larger

_PROGRAMS = {}
REDUCTIONS = {}  # body -> the padding element (see full_reduction)
_USES = {}
_LOCK = threading.Lock()
_TRACES = [0]


def full_reduction(padding):
    """Mark a reduction body ``body(x, axes, keepdims)`` as one that bucket programs
    may serve over all axes: ``padding`` (a Python scalar, cast to the operand's
    dtype) leaves its result unchanged, and the result does not depend on the order
    of the elements (exact logical or integer results)."""

    def mark(body):
        REDUCTIONS[body] = padding
        return body

    return mark


def reduces_all(fn, static, ndim, device):
    """Whether bucket programs may run the reduction ``fn`` with static arguments
    ``static`` (axes, keepdims) over an operand of ``ndim`` dimensions on ``device``."""
    return (fn in REDUCTIONS and len(static) == 2 and static[0] == tuple(range(ndim))
            and one_cpu(device))


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


def run_reduction(fn, keepdims, value, device, options):
    """``fn(value, all axes, keepdims)`` through the bucket program of ``value``'s
    size (``value``: the operand's elements as a NumPy array). Returns the result's
    exact-shape JAX buffer on the CPU ``device``."""
    n = value.size
    size = program_size(n)
    flat = np.full(size, REDUCTIONS[fn], value.dtype)
    flat[:n] = value.reshape(-1)
    key = (fn, "reduction", size, device, value.dtype)
    program = _PROGRAMS.get(key)
    if program is None:
        program = _build(key, fn, ((0,), False), False, (), device, options, [flat])
    (out,) = program(flat)
    shape = (1,) * value.ndim if keepdims else ()
    return put_on_device(np.asarray(out).reshape(shape).copy(), jax_target(device))


def _build(key, fn, static, multiple, size, device, options, args):
    """The bucket program for ``key``, compiled ahead of time for ``args`` (an
    executable keeps no traced program alive; see :class:`.launch._Compiled`), through
    the persistent :mod:`.compilation_cache` when it is on. Its
    results must have the shape ``size`` (an int: element-wise; ``()``: a reduction)."""

    def program(*args):
        _TRACES[0] += 1
        out = fn(*args, *static)
        outs = tuple(out) if multiple else (out,)
        expected = size if isinstance(size, tuple) else (size,)
        for o in outs:
            if o.shape != expected:
                raise AssertionError(
                    f"{fn.__name__} is marked element-wise or a full reduction but gave "
                    f"shape {o.shape} where {expected} was expected"
                )
        return outs

    on_device = jax.sharding.SingleDeviceSharding(jax_target(device))
    with _LOCK:
        compiled = _PROGRAMS.get(key)
        if compiled is None:
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
