"""Sorting functions against NumPy on strided inputs, including stability."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arraykit as ak
from strategies import make_view, tied_arrays

SETTINGS = settings(max_examples=25, deadline=None)
VIEWS = st.sampled_from(["contiguous", "transposed", "stepped", "flipped", "broadcast"])


SORT_DTYPES = ("bool", "int8", "uint8", "int32", "uint64", "int64", "float32", "float64", "complex64")


def numpy_argsort(a, axis, descending):
    """Stable NumPy argsort; descending keeps equal elements in their original order."""
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    n = a.shape[axis]
    flipped = np.flip(a, axis=axis)
    return n - 1 - np.flip(np.argsort(flipped, axis=axis, kind="stable"), axis=axis)


@SETTINGS
@given(a=tied_arrays(SORT_DTYPES, max_int=3), view=VIEWS, descending=st.booleans(), data=st.data())
def test_sort_argsort_match_numpy(a, view, descending, data):
    x = make_view(a, view)
    if a.ndim == 0:
        axis = data.draw(st.sampled_from([0, -1]))
        assert ak.sort(x, axis=axis).item() == a.item() or np.isnan(a)
        assert ak.argsort(x, axis=axis).item() == 0
        return
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    idx = numpy_argsort(a, axis, descending)
    got_idx = ak.argsort(x, axis=axis, descending=descending)
    assert got_idx.dtype is ak.int64 and got_idx.shape == a.shape
    np.testing.assert_array_equal(got_idx.numpy(), idx)
    got = ak.sort(x, axis=axis, descending=descending)
    assert got.dtype.np == a.dtype and got.shape == a.shape
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(a, idx, axis=axis))


@SETTINGS
@given(a=tied_arrays(SORT_DTYPES, max_int=3), descending=st.booleans())
def test_unstable_sort_orders_values(a, descending):
    if a.ndim == 0:
        return
    got = ak.sort(ak.asarray(a), descending=descending, stable=False).numpy()
    want = np.take_along_axis(a, numpy_argsort(a, -1, descending), axis=-1)
    np.testing.assert_array_equal(got, want)
    idx = ak.argsort(ak.asarray(a), descending=descending, stable=False).numpy()
    np.testing.assert_array_equal(np.sort(idx, axis=-1), np.broadcast_to(np.arange(a.shape[-1]), a.shape))
    np.testing.assert_array_equal(np.take_along_axis(a, idx, axis=-1), want)


def test_descending_stable_keeps_original_order_of_ties():
    a = np.array([2, 1, 2, 3, 1, 2], np.int32)
    idx = ak.argsort(ak.asarray(a), descending=True).numpy()
    np.testing.assert_array_equal(idx, [3, 0, 2, 5, 1, 4])
    f = np.array([1.0, np.nan, -0.0, 0.0, np.nan], np.float32)
    np.testing.assert_array_equal(ak.argsort(ak.asarray(f)).numpy(), [2, 3, 0, 1, 4])
    np.testing.assert_array_equal(ak.argsort(ak.asarray(f), descending=True).numpy(), [1, 4, 0, 2, 3])
    c = np.array([complex(np.nan, 1), complex(2, np.nan), 1 + 1j, complex(np.nan, np.nan), -1 + 0j,
                  complex(np.nan, -3), complex(-5, np.nan)], np.complex64)
    np.testing.assert_array_equal(ak.argsort(ak.asarray(c)).numpy(), np.argsort(c, kind="stable"))
    np.testing.assert_array_equal(ak.sort(ak.asarray(c)).numpy(), np.sort(c))


def test_sort_errors_and_tracing():
    x = ak.asarray(np.arange(6.0).reshape(2, 3))
    with pytest.raises(IndexError):
        ak.sort(x, axis=2)
    with pytest.raises(IndexError):
        ak.argsort(x, axis=-3)
    with pytest.raises(TypeError):
        ak.sort(np.arange(3))
    out = jax.jit(lambda t: ak.sort(t.mT, axis=0, descending=True))(x)
    np.testing.assert_array_equal(out.numpy(), np.sort(np.arange(6.0).reshape(2, 3).T, axis=0)[::-1])
