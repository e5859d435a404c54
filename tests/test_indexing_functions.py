"""take and take_along_axis against NumPy on strided inputs; eager bounds checks."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit as ak
from device_checks import raises_checked
from strategies import ALL_DTYPES, make_view, strided_pairs

SETTINGS = settings(max_examples=25, deadline=None)
VIEWS = st.sampled_from(["contiguous", "transposed", "stepped", "flipped"])
INDEX_DTYPES = st.sampled_from(("int8", "int32", "int64", "uint8", "uint64"))


def check(got, want):
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype.np == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got.numpy(), want)


# what take and take_along_axis draw: x (strided, 1-3 dims), the indices' dtype and view
GIVEN_TAKE_INPUTS = given(
    pair=strided_pairs(dtype=st.sampled_from(ALL_DTYPES),
                       shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)),
    dtype=INDEX_DTYPES, view=VIEWS, data=st.data(),
)


def draw_indices(data, size, shape, dtype):
    """In-range indices (negative ones too for signed dtypes)."""
    lo = 0 if np.dtype(dtype).kind == "u" else -size
    return data.draw(hnp.arrays(dtype, shape, elements=st.integers(lo, size - 1)))


@SETTINGS
@GIVEN_TAKE_INPUTS
def test_take_matches_numpy(pair, dtype, view, data):
    x, a = pair
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1)) if a.ndim > 1 else data.draw(st.sampled_from([None, 0, -1]))
    n = data.draw(st.integers(0, 5))
    idx = draw_indices(data, a.shape[0 if axis is None else axis], (n,), dtype)
    got = ak.take(x, make_view(idx, view), axis=axis)
    check(got, np.take(a, idx, axis=axis))


@SETTINGS
@GIVEN_TAKE_INPUTS
def test_take_along_axis_matches_numpy(pair, dtype, view, data):
    x, a = pair
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    ax = axis % a.ndim
    # indices broadcast against x outside `axis`: each dim is x's size or 1
    shape = tuple(
        data.draw(st.integers(0, 4)) if d == ax else data.draw(st.sampled_from([a.shape[d], 1]))
        for d in range(a.ndim)
    )
    idx = draw_indices(data, a.shape[ax], shape, dtype)
    got = ak.take_along_axis(x, make_view(idx, view), axis=axis)
    check(got, np.take_along_axis(a, idx, axis=axis))


def test_take_along_axis_broadcasts_x():
    a = np.arange(3.0).reshape(1, 3)
    idx = np.array([[0], [2], [-1]])
    check(ak.take_along_axis(ak.asarray(a), ak.asarray(idx), axis=1), np.take_along_axis(np.broadcast_to(a, (3, 3)), idx, axis=1))


def test_take_reads_sorted_order():
    a = np.array([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]], np.float32)
    x = ak.asarray(a)
    check(ak.take_along_axis(x, ak.argsort(x, axis=1), axis=1), np.sort(a, axis=1))


def test_out_of_range_indices_raise():
    x = ak.asarray(np.arange(12.0).reshape(3, 4))
    with raises_checked(IndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        ak.take(x, ak.asarray(np.array([0, 4])), axis=1)
    with raises_checked(IndexError, match="index -4 is out of bounds for axis 0 with size 3"):
        ak.take(x, ak.asarray(np.array([-4, 1])), axis=0)
    with raises_checked(IndexError, match="index 255 is out of bounds"):
        ak.take(x, ak.asarray(np.array([255], np.uint8)), axis=-1)
    with raises_checked(IndexError, match="index 7 is out of bounds for axis 0 with size 3"):
        ak.take_along_axis(x, ak.asarray(np.array([[7, 0, 0, 0]])), axis=0)
    with pytest.raises(IndexError, match="size 0"):
        ak.take(ak.asarray(np.zeros((2, 0))), ak.asarray(np.array([0])), axis=1)


def test_index_check_sees_writes_to_the_indices():
    """The checked extremes are cached per storage version: any write invalidates them."""
    x = ak.asarray(np.arange(5.0))
    base = ak.asarray(np.array([0, 1, 2, 3]))
    i = base[:2]
    check(ak.take(x, i), [0.0, 1.0])
    base[3] = 9  # a write through another view of the same storage
    check(ak.take(x, i), [0.0, 1.0])
    base[1] = 7
    with raises_checked(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        ak.take(x, i)
    i[1] = -6
    with raises_checked(IndexError, match="index -6 is out of bounds"):
        ak.take(x, i)
    i += 5  # [5, -1]
    with raises_checked(IndexError, match="index 5 is out of bounds"):
        ak.take(x, i)
    check(ak.take(x, base[2:3]), [2.0])


def test_indices_in_the_storage_of_x():
    """x and its indices may be views of one storage (one lock guards check and gather)."""
    x = ak.asarray(np.array([3, 0, 2, 1, 4]))
    check(ak.take(x, x[:3]), [1, 3, 2])
    check(ak.take_along_axis(x, x[::-1]), [4, 0, 2, 3, 1])
    with raises_checked(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        ak.take(x[:4], x[2:])


def test_argument_errors():
    x = ak.asarray(np.arange(12.0).reshape(3, 4))
    i = ak.asarray(np.array([0, 1]))
    with pytest.raises(ValueError, match="axis"):
        ak.take(x, i)
    with pytest.raises(ValueError, match="1-D"):
        ak.take(x, ak.asarray(np.zeros((1, 1), np.int64)), axis=0)
    with pytest.raises(TypeError, match="integer"):
        ak.take(x, ak.asarray(np.array([0.0])), axis=0)
    with pytest.raises(IndexError):
        ak.take(x, i, axis=2)
    with pytest.raises(ValueError, match="dimensions"):
        ak.take_along_axis(x, i, axis=0)
    with pytest.raises(ValueError, match="broadcast"):
        ak.take_along_axis(x, ak.asarray(np.zeros((2, 1), np.int64)), axis=1)
    check(ak.take(x, ak.asarray(np.zeros(0, np.int64)), axis=1), np.zeros((3, 0)))


def test_traced_indices_fill_instead_of_raising():
    a = np.arange(6.0).reshape(2, 3)

    @jax.jit
    def f(t, i):
        return ak.take(t, i, axis=1), ak.take_along_axis(t, i.reshape(1, 3), axis=1)

    got, along = f(ak.asarray(a), ak.asarray(np.array([2, 5, -1])))
    np.testing.assert_array_equal(got.numpy(), [[2.0, np.nan, 2.0], [5.0, np.nan, 5.0]])
    np.testing.assert_array_equal(along.numpy(), [[2.0, np.nan, 2.0], [5.0, np.nan, 5.0]])
