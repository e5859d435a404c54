"""Hypothesis strategies shared by the tests: arraykit tensors paired with NumPy twins.

``strided_pairs`` draws a value array and returns it as an arraykit tensor whose
layout is contiguous, permuted, sliced with steps, flipped, broadcast or empty (in
equal shares), along with the NumPy array holding the same values.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit as ak

FLOAT_DTYPES = ("float32", "float64")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
NUMERIC_DTYPES = INT_DTYPES + FLOAT_DTYPES + ("complex64", "complex128")
ALL_DTYPES = ("bool",) + NUMERIC_DTYPES


def values(dtype, shape, **elements):
    """NumPy arrays of ``dtype``/``shape`` (finite floats unless elements say otherwise)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        elements.setdefault("allow_nan", False)
        elements.setdefault("allow_infinity", False)
        elements.setdefault("allow_subnormal", False)  # XLA:CPU flushes them to zero
        elements.setdefault("width", dt.itemsize * 8)
        elements.setdefault("min_value", -1e3)
        elements.setdefault("max_value", 1e3)
    return hnp.arrays(dt, shape, elements=_elements(dt, elements))


def _elements(dt, elements):
    if dt.kind == "f":
        return st.floats(**elements)
    if dt.kind == "c":
        part = st.floats(-1e3, 1e3, width=dt.itemsize * 4, allow_subnormal=False)
        return st.builds(complex, part, part)
    return None


# The layouts strided_pairs draws, each with probability 1/6 per draw; hypothesis steers
# its draws, so the shares it produces vary: tests/test_strategies.py measured, over 600
# draws with the default shapes, contiguous 10%, permuted 19%, stepped 19%, flipped 18%,
# broadcast 23%, empty 11%, at most one element 14% (before: 77% contiguous, under 2%
# with a zero stride, half with 0 or 1 elements).
LAYOUTS = ("contiguous", "permuted", "stepped", "flipped", "broadcast", "empty")


def fits(kind, shape):
    """Whether a tensor of ``shape`` can have a layout of ``kind`` that is not contiguous."""
    size = math.prod(shape)
    if kind == "empty":
        return size == 0
    if kind == "permuted":
        return size > 0 and sum(n >= 2 for n in shape) >= 2
    if kind in ("stepped", "flipped", "broadcast"):
        return size >= 2
    return size > 0


@st.composite
def default_shape(draw, kind):
    """A shape of 0 to 3 dimensions of sides 0 to 5 that fits ``kind``."""
    if kind == "contiguous":
        return draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=5))
    least = 2 if kind == "permuted" else 1
    shape = draw(hnp.array_shapes(min_dims=max(least, 1), max_dims=3, min_side=0 if kind == "empty" else 1, max_side=5))
    dims = draw(st.lists(st.integers(0, len(shape) - 1), min_size=least, max_size=least, unique=True))
    side = 0 if kind == "empty" else draw(st.integers(2, 5))
    return tuple(side if d in dims else n for d, n in enumerate(shape))


@st.composite
def strided_pairs(draw, dtype=st.sampled_from(ALL_DTYPES), shape=None, **elements):
    """(tensor, ndarray) with equal values; the tensor's layout is one of ``LAYOUTS``
    in equal shares: contiguous, dimensions permuted, sliced with steps 2-3 and an
    offset, flipped (negative strides, on one or more dimensions, sometimes step -2),
    broadcast (stride 0 on one or more dimensions of size >= 2) or empty.

    ``shape`` (a strategy or a fixed shape) defaults to :func:`default_shape`. A layout
    the drawn shape cannot have (an empty one for a fixed non-empty shape) is replaced
    by one it can have, so fixed shapes keep fair shares of the rest.
    """
    dt = draw(dtype) if isinstance(dtype, st.SearchStrategy) else dtype
    kind = draw(st.sampled_from(LAYOUTS))
    if shape is None:
        shp = draw(default_shape(kind))
    elif isinstance(shape, st.SearchStrategy):
        for _ in range(8):  # a shape this layout fits, if the strategy gives one
            shp = draw(shape)
            if fits(kind, shp):
                break
    else:
        shp = tuple(shape)
    if not fits(kind, shp):
        kind = draw(st.sampled_from([k for k in LAYOUTS if k != "contiguous" and fits(k, shp)] or ["contiguous"]))
    if kind == "contiguous" and not fits(kind, shp):
        kind = "empty"
    target = draw(values(dt, shp, **elements))
    return _LAYOUT_MAKERS[kind](draw, target)


def _some_dims(draw, shape, least=2):
    """A non-empty sorted list of the dimensions of size >= ``least``."""
    dims = [d for d, n in enumerate(shape) if n >= least]
    return sorted(draw(st.lists(st.sampled_from(dims), min_size=1, unique=True)))


def _contiguous(draw, target):
    return ak.asarray(target), target


def _permuted(draw, target):
    big = [d for d, n in enumerate(target.shape) if n >= 2]
    perm = list(draw(st.permutations(range(target.ndim))))
    if [d for d in perm if d in big] == big:  # keep the order of the dims that matter: swap two
        i, j = perm.index(big[0]), perm.index(big[1])
        perm[i], perm[j] = perm[j], perm[i]
    base = np.ascontiguousarray(np.transpose(target, np.argsort(perm)))
    return ak.permute_dims(ak.asarray(base), tuple(perm)), target


def _sliced(draw, target, steps):
    """``target`` as ``big[slices]`` with a step from ``steps`` on some dimensions."""
    slices = [slice(None)] * target.ndim
    shape = list(target.shape)
    for d in _some_dims(draw, target.shape):
        step = draw(st.sampled_from(steps))
        start = draw(st.integers(0, 1))
        shape[d] = target.shape[d] * abs(step) + start
        slices[d] = slice(start, None, step) if step > 0 else slice(shape[d] - 1 - start, None, step)
    big = np.zeros(shape, target.dtype)
    big[tuple(slices)] = target
    return ak.asarray(big)[tuple(slices)], target


def _stepped(draw, target):
    return _sliced(draw, target, (2, 3))


def _flipped(draw, target):
    return _sliced(draw, target, (-1, -1, -2))


def _broadcast(draw, target):
    dims = _some_dims(draw, target.shape)
    small = target[tuple(slice(0, 1) if d in dims else slice(None) for d in range(target.ndim))]
    small = np.ascontiguousarray(small)
    return ak.asarray(small).expand(target.shape), np.ascontiguousarray(np.broadcast_to(small, target.shape))


def _empty(draw, target):
    """An empty view: ``1:1`` of a size-3 dimension for each empty one, others flipped."""
    base = np.zeros(tuple(3 if n == 0 else n for n in target.shape), target.dtype)
    key = tuple(slice(1, 1) if n == 0 else slice(None, None, -1) for n in target.shape)
    return ak.asarray(base)[key], target


_LAYOUT_MAKERS = {
    "contiguous": _contiguous, "permuted": _permuted, "stepped": _stepped,
    "flipped": _flipped, "broadcast": _broadcast, "empty": _empty,
}


def make_view(target, kind, device=None):
    """An arraykit tensor with ``target``'s values laid out according to ``kind``, on
    ``device`` (default: the default device)."""
    def put(values):
        return ak.asarray(values, device=device)

    if kind == "transposed" and target.ndim >= 2:
        return put(np.ascontiguousarray(np.swapaxes(target, -1, -2))).mT
    if kind == "stepped" and target.ndim >= 1:
        big = np.zeros((2 * target.shape[0] + 1,) + target.shape[1:], dtype=target.dtype)
        big[1::2] = target
        return put(big)[1::2]
    if kind == "flipped" and target.ndim >= 1:
        return put(np.ascontiguousarray(target[::-1])).flip(0)
    if kind == "broadcast" and target.ndim >= 1 and target.shape[0] >= 1 and (target == target[:1]).all():
        return put(np.ascontiguousarray(target[:1])).expand(target.shape)
    return put(target)


@st.composite
def axes(draw, ndim):
    """An ``axis`` argument: None, one axis (possibly negative) or a tuple of distinct axes."""
    if ndim == 0:
        return draw(st.sampled_from([None, ()]))
    one = st.integers(-ndim, ndim - 1)
    many = st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim).map(
        lambda a: tuple(d - ndim if i % 2 else d for i, d in enumerate(a))
    )
    return draw(st.none() | one | many)


def reductions(ndim):
    """``(axis, keepdims)`` of a reduction over ``ndim`` dimensions (``axis`` as :func:`axes`)."""
    return st.tuples(axes(ndim), st.booleans())


@st.composite
def view_shapes(draw, shape, shuffle=True):
    """Target shapes of ``shape``'s numel: its prime factors regrouped, mostly in order
    (``shuffle``: sometimes permuted first), with 1s inserted and sometimes a -1."""
    numel = math.prod(shape)
    if numel == 0:
        return tuple(draw(st.permutations(list(shape) + draw(st.lists(st.just(1), max_size=2)))))
    factors = []
    for n in shape:
        k = 2
        while n > 1:
            while n % k == 0:
                factors.append(k)
                n //= k
            k += 1
    if shuffle and draw(st.booleans()):
        factors = draw(st.permutations(factors))
    out = []
    for f in factors:
        if out and draw(st.booleans()):
            out[-1] *= f
        else:
            out.append(f)
    for _ in range(draw(st.integers(0, 2))):
        out.insert(draw(st.integers(0, len(out))), 1)
    if out and draw(st.integers(0, 4)) == 0:
        out[draw(st.integers(0, len(out) - 1))] = -1
    return tuple(out)


TIED_SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)


@st.composite
def tied_arrays(draw, dtypes, shape=TIED_SHAPES, max_int=4):
    """NumPy arrays of one of ``dtypes`` with many ties: floats among a few values with
    signed zeros, subnormals, NaN and infinities; complex numbers of parts 0, ±1 and NaN;
    integers in ``0..max_int``. ``shape`` is a strategy or a fixed shape."""
    dt = np.dtype(draw(st.sampled_from(dtypes)))
    if dt.kind == "f":
        sub = float(np.finfo(dt).smallest_subnormal)
        elements = st.sampled_from([0.0, -0.0, sub, -sub, 2 * sub, 1.0, -2.5, 3.0, np.nan, np.inf, -np.inf])
    elif dt.kind == "c":
        part = st.sampled_from([0.0, 1.0, -1.0, np.nan])
        elements = st.builds(complex, part, part)
    elif dt.kind == "b":
        elements = st.booleans()
    else:
        elements = st.integers(0, max_int)
    return draw(hnp.arrays(dt, draw(shape) if isinstance(shape, st.SearchStrategy) else shape, elements=elements))
