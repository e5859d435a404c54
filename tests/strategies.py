"""Hypothesis strategies shared by the tests: arraykit tensors paired with NumPy twins.

``strided_pairs`` draws a value array and returns it as an arraykit tensor whose
layout is contiguous, transposed, sliced with a step, flipped or broadcast, along
with the NumPy array holding the same values.
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


@st.composite
def strided_pairs(draw, dtype=st.sampled_from(ALL_DTYPES), shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5), **elements):
    """(tensor, ndarray) with equal values; the tensor's layout is a random view."""
    dt = draw(dtype) if isinstance(dtype, st.SearchStrategy) else dtype
    shp = draw(shape) if isinstance(shape, st.SearchStrategy) else tuple(shape)
    target = draw(values(dt, shp, **elements))
    kind = draw(st.sampled_from(["contiguous", "transposed", "stepped", "flipped", "broadcast"]))
    return make_view(target, kind), target


def make_view(target, kind):
    """An arraykit tensor with ``target``'s values laid out according to ``kind``."""
    if kind == "transposed" and target.ndim >= 2:
        base = ak.asarray(np.ascontiguousarray(np.swapaxes(target, -1, -2)))
        return base.mT
    if kind == "stepped" and target.ndim >= 1:
        big = np.zeros((2 * target.shape[0] + 1,) + target.shape[1:], dtype=target.dtype)
        big[1::2] = target
        return ak.asarray(big)[1::2]
    if kind == "flipped" and target.ndim >= 1:
        return ak.asarray(np.ascontiguousarray(target[::-1])).flip(0)
    if kind == "broadcast" and target.ndim >= 1 and target.shape[0] >= 1 and (target == target[:1]).all():
        return ak.asarray(np.ascontiguousarray(target[:1])).expand(target.shape)
    return ak.asarray(target)


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
