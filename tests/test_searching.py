"""Searching functions against NumPy on strided inputs: values, shapes and dtypes."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit as ak
from arraykit.core import dtypes as D
from device_checks import raises_checked
from strategies import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, make_view, strided_pairs, values

SETTINGS = settings(max_examples=25, deadline=None)
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
REAL_DTYPES = ("bool",) + INT_DTYPES + FLOAT_DTYPES
VIEWS = st.sampled_from(["contiguous", "transposed", "stepped", "flipped"])


def check(got, want):
    want = np.asarray(want)
    assert isinstance(got, ak.Tensor)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype.np == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got.numpy(), want)


# ----------------------------------------------------------------------------- argmax / argmin


@SETTINGS
@given(
    pair=strided_pairs(dtype=st.sampled_from(REAL_DTYPES), shape=SHAPES, allow_nan=True,
                         min_value=None, max_value=None),
    data=st.data(),
)
def test_argmax_argmin_match_numpy(pair, data):
    x, a = pair
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    keepdims = data.draw(st.booleans())
    empty = a.size == 0 and (axis is None or a.shape[axis] == 0)
    for f, g in ((ak.argmax, np.argmax), (ak.argmin, np.argmin)):
        if empty:
            with pytest.raises(ValueError):
                f(x, axis=axis, keepdims=keepdims)
        else:
            check(f(x, axis=axis, keepdims=keepdims),
                  g(a, axis=axis, keepdims=keepdims).astype(np.int64))


def test_argmax_argmin_see_subnormals():
    a = np.array([0.0, 5e-324, -0.0, -5e-324, 1e-310], np.float64)
    check(ak.argmax(ak.asarray(a)), np.asarray(np.argmax(a), np.int64))
    check(ak.argmin(ak.asarray(a)), np.asarray(np.argmin(a), np.int64))
    b = np.array([[1.0, np.nan, 3.0], [np.nan, -1.0, np.nan]], np.float32)
    check(ak.argmin(ak.asarray(b), axis=1), np.argmin(b, axis=1).astype(np.int64))


def test_argmax_first_occurrence_and_errors():
    x = ak.asarray(np.array([[1, 5, 5], [7, 7, 0]], np.int32))
    check(ak.argmax(x, axis=1), np.array([1, 0]))
    check(ak.argmin(x, axis=0, keepdims=True), np.array([[0, 0, 1]]))
    with pytest.raises(IndexError):
        ak.argmax(x, axis=2)
    with pytest.raises(TypeError, match="complex"):
        ak.argmin(ak.asarray(np.ones(3, np.complex64)))


# ----------------------------------------------------------------------------- count_nonzero / nonzero


@SETTINGS
@given(pair=strided_pairs(dtype=st.sampled_from(ALL_DTYPES), shape=SHAPES), data=st.data())
def test_count_nonzero_matches_numpy(pair, data):
    x, a = pair
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    keepdims = data.draw(st.booleans())
    want = np.count_nonzero(a, axis=axis, keepdims=keepdims)
    check(ak.count_nonzero(x, axis=axis, keepdims=keepdims), np.asarray(want, dtype=np.int64))


def test_count_nonzero_tuple_axis():
    a = np.array([[[0, 1], [2, 0]], [[0, 0], [3, 4]]], np.int16)
    check(ak.count_nonzero(ak.asarray(a), axis=(0, 2)), np.count_nonzero(a, axis=(0, 2)).astype(np.int64))


@SETTINGS
@given(
    pair=strided_pairs(
        dtype=st.sampled_from(ALL_DTYPES),
        shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
    )
)
def test_nonzero_matches_numpy(pair):
    x, a = pair
    got = ak.nonzero(x)
    want = np.nonzero(a)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        check(g, w.astype(np.int64))


def test_nonzero_special_values_and_errors():
    a = np.array([0.0, -0.0, np.nan, 1j, 0j, 1e-40j], np.complex64)
    check(ak.nonzero(ak.asarray(a))[0], np.array([2, 3, 5]))
    sub = np.array([0.0, 5e-324, -0.0, -1e-310])
    check(ak.count_nonzero(ak.asarray(sub)), np.asarray(2))
    check(ak.where(ak.asarray(sub), 1, ak.asarray(np.zeros(4, np.int8))), np.array([0, 1, 0, 1], np.int8))
    with pytest.raises(ValueError, match="0-d"):
        ak.nonzero(ak.asarray(np.float32(1)))
    with pytest.raises(TypeError, match="trace"):
        jax.jit(ak.nonzero)(ak.asarray(np.ones(3)))


# ----------------------------------------------------------------------------- where


@st.composite
def where_args(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3)).input_shapes
    cond = draw(values("bool", shapes[0]))
    args = []
    for shape in shapes[1:]:
        kind = draw(st.sampled_from(["array", "array", "int", "float", "bool"]))
        if kind == "array":
            dt = draw(st.sampled_from(("bool", "int8", "uint8", "int64", "float32", "float64", "complex64")))
            arr = draw(values(dt, shape))
            args.append((make_view(arr, draw(VIEWS)), arr))
        elif kind == "int":
            v = draw(st.integers(0, 100))
            args.append((v, v))
        elif kind == "float":
            v = draw(st.floats(-10, 10))
            args.append((v, v))
        else:
            v = draw(st.booleans())
            args.append((v, v))
    if not any(isinstance(t, ak.Tensor) for t, _ in args):
        arr = draw(values("int16", shapes[1]))
        args[0] = (ak.asarray(arr), arr)
    return (make_view(cond, draw(VIEWS)), cond), args[0], args[1]


def expected_dtype(a, b):
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return D.promote(D.from_numpy(a.dtype), D.from_numpy(b.dtype))
    if isinstance(a, np.ndarray):
        return D.promote_scalar(D.from_numpy(a.dtype), b)
    return D.promote_scalar(D.from_numpy(b.dtype), a)


@SETTINGS
@given(args=where_args())
def test_where_matches_numpy(args):
    (c, cn), (x1, a1), (x2, a2) = args
    dtype = expected_dtype(a1, a2)
    got = ak.where(c, x1, x2)
    want = np.where(cn, np.asarray(a1).astype(dtype.np), np.asarray(a2).astype(dtype.np))
    check(got, want)


def test_where_errors():
    c = ak.asarray(np.array([True, False]))
    with pytest.raises(ValueError):
        ak.where(c, ak.asarray(np.ones(3)), 0.0)
    # two Python scalars beside an array condition (the standard allows it since
    # 2024.12): PyTorch's dtypes, the default integer and float dtypes
    check(ak.where(c, 1, 2), np.array([1, 2], np.int64))
    check(ak.where(c, 0.5, 1), np.array([0.5, 1.0], np.float32))
    check(ak.where(ak.asarray(np.array([0, 2])), 1.5, ak.asarray(np.zeros(2, np.float32))),
          np.array([0.0, 1.5], np.float32))


# ----------------------------------------------------------------------------- searchsorted


def without_subnormals(a):
    if a.dtype.kind != "f":
        return a
    return np.where(np.abs(a) < np.finfo(a.dtype).tiny, np.zeros_like(a), a)


@st.composite
def small_values(draw, shape):
    """Arrays with many ties (and NaNs for floats) to exercise side= and sort order."""
    dt = np.dtype(draw(st.sampled_from(("int8", "int64", "uint16", "float32", "float64"))))
    if dt.kind == "f":
        sub = float(np.finfo(dt).smallest_subnormal)
        elements = st.sampled_from([0.0, -0.0, sub, -sub, 1.0, 2.5, 3.0, 7.0, np.nan, np.inf, -np.inf])
    else:
        elements = st.integers(0, 7)
    return draw(hnp.arrays(dt, draw(shape), elements=elements))


@SETTINGS
@given(
    a1=small_values(hnp.array_shapes(min_dims=1, max_dims=1, min_side=0, max_side=8)),
    a2=small_values(hnp.array_shapes(min_dims=0, max_dims=2, max_side=4)),
    side=st.sampled_from(["left", "right"]),
    use_sorter=st.booleans(),
    view=VIEWS,
)
def test_searchsorted_matches_numpy(a1, a2, side, use_sorter, view):
    # XLA on CPU flushes subnormals when it converts between float widths
    common = np.promote_types(a1.dtype, a2.dtype)
    a1, a2 = (without_subnormals(a) if a.dtype != common else a for a in (a1, a2))
    if use_sorter:
        sorter = np.argsort(a1, kind="stable")
        got = ak.searchsorted(make_view(a1, view), make_view(a2, view), side=side,
                              sorter=ak.asarray(sorter))
        want = np.searchsorted(a1, a2, side=side, sorter=sorter)
    else:
        s = np.sort(a1)
        got = ak.searchsorted(make_view(s, view), make_view(a2, view), side=side)
        want = np.searchsorted(s, a2, side=side)
    check(got, np.asarray(want, dtype=np.int64))


@pytest.mark.parametrize("dtype", ["int8", "uint32", "float32"])
def test_searchsorted_dtypes_and_scalars(dtype):
    a = np.array([1, 3, 3, 5, 9], dtype=dtype)
    x = ak.asarray(a)
    check(ak.searchsorted(x, 3), np.asarray(np.searchsorted(a, 3), np.int64))
    check(ak.searchsorted(x, 3, side="right"), np.asarray(np.searchsorted(a, 3, side="right"), np.int64))
    check(ak.searchsorted(x, 4.5), np.asarray(np.searchsorted(a, 4.5), np.int64))
    v = np.array([[0, 9], [4, 100]], np.int64)
    check(ak.searchsorted(x, ak.asarray(v)), np.searchsorted(a.astype(np.float64), v).astype(np.int64))


def test_searchsorted_errors():
    x = ak.asarray(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="1-D"):
        ak.searchsorted(ak.asarray(np.ones((2, 2))), 1.0)
    with pytest.raises(ValueError, match="side"):
        ak.searchsorted(x, 1.0, side="middle")
    with pytest.raises(ValueError, match="shape"):
        ak.searchsorted(x, 1.0, sorter=ak.asarray(np.array([0, 1])))
    with raises_checked(ValueError, match="sorter index 3"):
        ak.searchsorted(x, 1.0, sorter=ak.asarray(np.array([0, 3, 1])))
    with pytest.raises(TypeError, match="integer"):
        ak.searchsorted(x, 1.0, sorter=ak.asarray(np.array([0.0, 1.0, 2.0])))
