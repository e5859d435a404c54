"""Set functions against NumPy on strided inputs: unique_* (each NaN distinct) and isin."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arraykit as ak
from strategies import make_view, tied_arrays

SETTINGS = settings(max_examples=20, deadline=None)
VIEWS = st.sampled_from(["contiguous", "transposed", "stepped", "flipped", "broadcast"])


SET_DTYPES = ("bool", "int8", "uint16", "int64", "uint64", "float32", "float64", "complex128")


def check(got, want):
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype.np == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got.numpy(), want)


@SETTINGS
@given(a=tied_arrays(SET_DTYPES), view=VIEWS)
def test_unique_all_matches_numpy(a, view):
    x = make_view(a, view)
    values, indices, inverse, counts = np.unique(
        a, return_index=True, return_inverse=True, return_counts=True, equal_nan=False
    )
    got = ak.unique_all(x)
    assert got._fields == ("values", "indices", "inverse_indices", "counts")
    check(got.values, values)
    check(got.indices, indices.astype(np.int64))
    check(got.inverse_indices, inverse.reshape(a.shape).astype(np.int64))
    check(got.counts, counts.astype(np.int64))
    flat = a.reshape(-1)
    # indices are first occurrences; values[inverse] rebuilds x up to the sign of zero
    for v, i in zip(got.values.numpy(), got.indices.numpy()):
        assert (flat[i] == v or (np.isnan(v) and np.isnan(flat[i])))
        if not np.isnan(v):
            assert i == np.flatnonzero(flat == v)[0]
    np.testing.assert_array_equal(got.values.numpy()[got.inverse_indices.numpy()], a)


@settings(max_examples=12, deadline=None)
@given(a=tied_arrays(SET_DTYPES), view=VIEWS)
def test_unique_values_counts_inverse(a, view):
    x = make_view(a, view)
    # return_index makes NumPy sort stably, which fixes the order of the (distinct) NaNs
    values, _, inverse, counts = np.unique(
        a, return_index=True, return_inverse=True, return_counts=True, equal_nan=False
    )
    check(ak.unique_values(x), values)
    vc = ak.unique_counts(x)
    assert vc._fields == ("values", "counts")
    check(vc.values, values)
    check(vc.counts, counts.astype(np.int64))
    vi = ak.unique_inverse(x)
    assert vi._fields == ("values", "inverse_indices")
    check(vi.values, values)
    check(vi.inverse_indices, inverse.reshape(a.shape).astype(np.int64))


def test_unique_nan_distinct_and_signed_zero_merged():
    a = np.array([np.nan, 0.0, -0.0, np.nan, 1.0], np.float32)
    r = ak.unique_counts(ak.asarray(a))
    assert r.values.shape == (4,)
    np.testing.assert_array_equal(r.counts.numpy(), [2, 1, 1, 1])
    c = np.array([complex(np.nan, 1), complex(np.nan, 1), 1j], np.complex64)
    assert ak.unique_values(ak.asarray(c)).shape == (3,)
    with pytest.raises(TypeError, match="trace"):
        jax.jit(ak.unique_values)(ak.asarray(a))


@SETTINGS
@given(
    a1=tied_arrays(("int8", "int64", "uint8", "float32", "float64")),
    a2=tied_arrays(("int16", "uint64", "float64")),
    invert=st.booleans(),
    view=VIEWS,
)
def test_isin_matches_numpy(a1, a2, invert, view):
    # XLA on CPU flushes subnormals when it converts between float widths
    common = np.promote_types(a1.dtype, a2.dtype)
    a1, a2 = (
        np.where(np.abs(a) < np.finfo(a.dtype).tiny, np.zeros_like(a), a)
        if a.dtype.kind == "f" and a.dtype != common else a
        for a in (a1, a2)
    )
    got = ak.isin(make_view(a1, view), make_view(a2, view), invert=invert)
    check(got, np.isin(a1, a2, invert=invert))


def test_isin_scalars_and_errors():
    x = ak.asarray(np.array([[1, 2], [3, 4]], np.int32))
    check(ak.isin(x, 3), np.isin(np.array([[1, 2], [3, 4]]), 3))
    check(ak.isin(2, x), np.asarray(True))
    check(ak.isin(5, x, invert=True), np.asarray(True))
    check(ak.isin(x, ak.asarray(np.zeros(0, np.int32))), np.zeros((2, 2), bool))
    with pytest.raises(TypeError, match="Tensor"):
        ak.isin(1, 2)
