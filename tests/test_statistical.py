"""Statistical functions against NumPy on strided inputs: values, shapes and dtypes."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit as ak
from strategies import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, reductions, strided_pairs

SETTINGS = settings(max_examples=25, deadline=None)
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
REAL_DTYPES = ("bool",) + INT_DTYPES + FLOAT_DTYPES


def check(got, want, rtol=1e-6, atol=0.0):
    """Same shape, dtype and values (NaNs equal)."""
    want = np.asarray(want)
    assert isinstance(got, ak.Tensor)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype.np == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got.numpy(), want)


def _reduced_axes(axis, ndim):
    """The non-negative axes an ``axis`` argument reduces over ``ndim`` dimensions."""
    return range(ndim) if axis is None else np.atleast_1d(axis) % max(ndim, 1)


def sum_atol(a, axis):
    """Absolute tolerance for float reductions: a few ulps of the summed magnitudes."""
    if a.dtype.kind not in "fc" or a.size == 0:
        return 0.0
    eps = np.finfo(a.dtype).eps
    return 8 * eps * float(np.max(np.sum(np.abs(a.astype(np.complex128)), axis=axis), initial=1.0))


# ----------------------------------------------------------------------------- sum / prod


@SETTINGS
@given(pair=strided_pairs(dtype=st.sampled_from(ALL_DTYPES), shape=SHAPES), data=st.data())
def test_sum_matches_numpy(pair, data):
    x, a = pair
    axis, keepdims = data.draw(reductions(a.ndim))
    dtype = data.draw(st.sampled_from([None, "int64", "float64", "complex128"]))
    if dtype is not None and a.dtype.kind == "c" and dtype != "complex128":
        dtype = None
    got = ak.sum(x, axis=axis, keepdims=keepdims, dtype=None if dtype is None else getattr(ak, dtype))
    want = np.sum(a, axis=axis, keepdims=keepdims, dtype=dtype)
    check(got, want, rtol=1e-5, atol=sum_atol(a, axis))


@pytest.mark.parametrize(
    "dtype, expected",
    [("bool", "int64"), ("int8", "int64"), ("int32", "int64"), ("uint8", "uint64"),
     ("uint32", "uint64"), ("uint64", "uint64"), ("float32", "float32"),
     ("complex64", "complex64")],
)
def test_accumulation_dtypes(dtype, expected):
    x = ak.asarray(np.ones((2, 3), dtype=dtype))
    for f in (ak.sum, ak.prod, ak.cumulative_sum):
        kw = {"axis": 1} if f is ak.cumulative_sum else {}
        assert f(x, **kw).dtype is getattr(ak, expected), f
    if dtype == "complex64":
        with pytest.raises(TypeError, match="complex"):
            ak.sum(x, dtype=ak.float64)
    else:
        assert ak.sum(x, dtype=ak.float64).dtype is ak.float64


def test_sum_dtype_casts_before_accumulating():
    x = ak.asarray(np.full(300, 100, dtype=np.int8))
    assert int(ak.sum(x)) == 30000
    assert int(ak.sum(x, dtype=ak.int8)) == int(np.sum(np.full(300, 100, np.int8), dtype=np.int8))
    assert float(ak.sum(ak.asarray(np.zeros((0, 2), np.float32)))) == 0.0


@SETTINGS
@given(
    pair=strided_pairs(
        dtype=st.sampled_from(("bool", "int8", "int32", "uint16", "uint64", "float32", "float64")),
        shape=SHAPES, min_value=-2, max_value=2, allow_subnormal=False,
    ),
    data=st.data(),
)
def test_prod_matches_numpy(pair, data):
    x, a = pair
    axis, keepdims = data.draw(reductions(a.ndim))
    got = ak.prod(x, axis=axis, keepdims=keepdims)
    # XLA on CPU flushes subnormal results to zero
    tiny = float(np.finfo(a.dtype).tiny) if a.dtype.kind == "f" else 0.0
    check(got, np.prod(a, axis=axis, keepdims=keepdims), rtol=1e-5, atol=tiny)


def test_prod_complex_and_empty():
    a = np.array([[1 + 2j, 3 - 1j], [0.5j, 2]], dtype=np.complex64)
    check(ak.prod(ak.asarray(a), axis=0), np.prod(a, axis=0), rtol=1e-6)
    check(ak.prod(ak.asarray(np.zeros((3, 0), np.float64)), axis=1), np.ones(3))


# ----------------------------------------------------------------------------- max / min


@SETTINGS
@given(pair=strided_pairs(dtype=st.sampled_from(REAL_DTYPES), shape=SHAPES), data=st.data())
def test_max_min_match_numpy(pair, data):
    x, a = pair
    axis, keepdims = data.draw(reductions(a.ndim))
    reduced = _reduced_axes(axis, a.ndim)
    empty = a.ndim > 0 and any(a.shape[d] == 0 for d in reduced) or a.size == 0 and axis is None
    for f, g in ((ak.max, np.max), (ak.min, np.min)):
        if empty:
            with pytest.raises(ValueError, match="zero-size"):
                f(x, axis=axis, keepdims=keepdims)
        else:
            check(f(x, axis=axis, keepdims=keepdims), g(a, axis=axis, keepdims=keepdims))


def test_max_min_nan_propagates_and_complex_rejected():
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -6.0]], dtype=np.float32)
    x = ak.asarray(a)
    check(ak.max(x, axis=1), np.max(a, axis=1))
    check(ak.min(x, axis=0), np.min(a, axis=0))
    with pytest.raises(TypeError, match="complex"):
        ak.max(ak.asarray(np.ones(2, np.complex64)))
    sub = np.array([[0.0, 1e-45, -1e-45], [-0.0, 2e-45, 0.0]], np.float32)
    check(ak.max(ak.asarray(sub), axis=1), np.max(sub, axis=1))
    check(ak.min(ak.asarray(sub)), np.min(sub))


# ----------------------------------------------------------------------------- mean / var / std


@SETTINGS
@given(
    pair=strided_pairs(
        dtype=st.sampled_from(("int16", "uint8", "int64", "float32", "float64", "complex128")),
        shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4),
    ),
    data=st.data(),
)
def test_mean_var_std_match_numpy(pair, data):
    x, a = pair
    axis, keepdims = data.draw(reductions(a.ndim))
    reduced = _reduced_axes(axis, a.ndim)
    m = math.prod(a.shape[d] for d in reduced) if a.ndim else 1
    correction = data.draw(st.sampled_from([0, 1, 0.5]))
    assume(m - correction > 0)
    out = np.float32 if a.dtype.kind in "iu" else a.dtype
    real = np.empty(0, out).real.dtype
    rtol = 1e-4 if out == np.float32 or out == np.complex64 else 1e-9
    # the variance is computed from deviations: compare against float64 with a scale-aware atol
    scale = float(np.max(np.abs(a), initial=1.0)) ** 2
    check(ak.mean(x, axis=axis, keepdims=keepdims),
          np.mean(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), axis=axis,
                  keepdims=keepdims).astype(out), rtol=rtol, atol=rtol * math.sqrt(scale))
    check(ak.var(x, axis=axis, correction=correction, keepdims=keepdims),
          np.var(a, axis=axis, ddof=correction, keepdims=keepdims).astype(real),
          rtol=rtol, atol=rtol * scale)
    check(ak.std(x, axis=axis, correction=correction, keepdims=keepdims),
          np.std(a, axis=axis, ddof=correction, keepdims=keepdims).astype(real),
          rtol=rtol, atol=rtol * math.sqrt(scale))


def test_mean_var_special_cases():
    empty = ak.asarray(np.zeros((0,), np.float32))
    assert math.isnan(float(ak.mean(empty)))
    x = ak.asarray(np.array([1.0, 2.0, 4.0], np.float64))
    assert math.isnan(float(ak.var(x, correction=3)))
    assert math.isnan(float(ak.std(x, correction=3.5)))
    assert float(ak.var(x, correction=1)) == pytest.approx(np.var([1, 2, 4], ddof=1))
    assert math.isnan(float(ak.mean(ak.asarray(np.array([1.0, np.nan])))))
    assert ak.mean(ak.asarray(np.arange(4))).dtype is ak.float32
    assert ak.var(ak.asarray(np.ones(3, np.complex64))).dtype is ak.float32
    assert float(ak.std(x, correction=np.int64(1))) == pytest.approx(np.std([1, 2, 4], ddof=1))
    with pytest.raises(TypeError, match="correction"):
        ak.var(x, correction="1")


# ----------------------------------------------------------------------------- cumulative


@SETTINGS
@given(
    pair=strided_pairs(
        dtype=st.sampled_from(("bool", "int8", "uint32", "int64", "float32", "float64", "complex64")),
        shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
        min_value=-2, max_value=2,
    ),
    data=st.data(),
)
def test_cumulative_match_numpy(pair, data):
    x, a = pair
    if a.ndim <= 1:
        axis = data.draw(st.sampled_from([None, 0, -1]))
    else:
        axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    include_initial = data.draw(st.booleans())
    dtype = data.draw(st.sampled_from([None, "float64"])) if a.dtype.kind != "c" else None
    kw = dict(axis=axis, include_initial=include_initial)
    akdtype = None if dtype is None else getattr(ak, dtype)
    check(ak.cumulative_sum(x, dtype=akdtype, **kw),
          np.cumulative_sum(a, dtype=dtype, **kw), rtol=1e-5, atol=1e-5)
    check(ak.cumulative_prod(x, dtype=akdtype, **kw),
          np.cumulative_prod(a, dtype=dtype, **kw), rtol=1e-5, atol=1e-5)


def test_cumulative_requires_axis_for_nd():
    x = ak.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError, match="axis"):
        ak.cumulative_sum(x)
    with pytest.raises(IndexError):
        ak.cumulative_prod(x, axis=2)


# ----------------------------------------------------------------------------- errors and tracing


def test_axis_errors():
    x = ak.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(IndexError, match="axis 2"):
        ak.sum(x, axis=2)
    with pytest.raises(IndexError):
        ak.mean(x, axis=(0, -3))
    with pytest.raises(ValueError, match="repeated"):
        ak.max(x, axis=(1, -1))
    with pytest.raises(TypeError, match="Tensor"):
        ak.sum(np.ones(3))


def test_reductions_trace_under_jit():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)

    @jax.jit
    def f(t):
        return ak.var(t, axis=0, correction=1), ak.max(t.mT, axis=1), ak.cumulative_sum(t, axis=1)

    v, m, c = f(ak.asarray(a))
    check(v, np.var(a, axis=0, ddof=1), rtol=1e-6)
    check(m, np.max(a.T, axis=1))
    check(c, np.cumsum(a, axis=1))


def test_tensor_methods_call_the_namespace_functions():
    a = np.array([[3.0, 1.0, 2.0], [2.0, 5.0, -1.0]], np.float32)
    x = ak.asarray(a).mT
    t = a.T
    check(x.mean(axis=0), np.mean(t, axis=0))
    check(x.max(), np.max(t))
    check(x.min(axis=1, keepdims=True).values, np.min(t, axis=1, keepdims=True))
    check(x.prod(axis=1), np.prod(t, axis=1))
    check(x.std(correction=1), np.std(t, ddof=1), rtol=1e-6)
    check(x.var(axis=0), np.var(t, axis=0, ddof=1), rtol=1e-6)  # PyTorch's default correction
    check(x.argmax(axis=0), np.argmax(t, axis=0))
    check(x.argmin(), np.asarray(np.argmin(t)))
    check(x.argsort(axis=0, descending=True), np.argsort(-t, axis=0, kind="stable"))
    check(x.sort().values, np.sort(t))
    check(x.cumsum(axis=1), np.cumsum(t, axis=1))
