"""Property tests of the pure layout math (arraykit.core.layout) against NumPy and PyTorch.

Every random layout gets a NumPy twin: an int64 array built with ``np.ndarray``
over ``np.arange(storage_size)`` with the same shape, byte strides and byte
offset, so each element's value *is* its storage index. A layout function is
checked by applying the NumPy equivalent to the twin and comparing the shape,
the element strides (of dims of size > 1), the offset (from the data pointers)
and every element's storage index.
"""

from __future__ import annotations

import math
import os
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit  # noqa: F401  (enables 64-bit JAX)
from arraykit.core import layout as L
from strategies import view_shapes

EXAMPLES = int(os.environ.get("ARRAYKIT_TEST_EXAMPLES", "30"))
ITEM = 8  # the twins are int64


# ----------------------------------------------------------------------------
# strategies and twins
# ----------------------------------------------------------------------------


def _bounds(shape, strides):
    lo = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return lo, hi


@st.composite
def layouts(draw, max_dims=4, max_side=5, negative=True, zero=True):
    """(Layout, storage size): random or realistic (permuted, stepped, flipped) strides."""
    ndim = draw(st.integers(0, max_dims))
    shape = tuple(draw(st.lists(st.integers(0, max_side), min_size=ndim, max_size=ndim)))
    if draw(st.booleans()):
        lo_s = -7 if negative else (0 if zero else 1)
        stride = st.integers(lo_s, 7)
        if not zero:
            stride = stride.filter(lambda s: s != 0)
        strides = tuple(draw(st.lists(stride, min_size=ndim, max_size=ndim)))
    else:
        steps = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
        dense = L.contiguous_strides(tuple(max(n, 1) * k for n, k in zip(shape, steps)))
        dense = [s * k for s, k in zip(dense, steps)]
        perm = draw(st.permutations(range(ndim)))
        strides = [dense[p] for p in perm]
        if negative:
            signs = draw(st.lists(st.sampled_from([1, -1]), min_size=ndim, max_size=ndim))
            strides = [s * g for s, g in zip(strides, signs)]
        if zero and ndim and draw(st.booleans()):
            strides[draw(st.integers(0, ndim - 1))] = 0
        strides = tuple(strides)
    nonempty = tuple(max(n, 1) for n in shape)
    lo, hi = _bounds(nonempty, strides)
    offset = -lo + draw(st.integers(0, 3))
    size = offset + hi + 1 + draw(st.integers(0, 3))
    return L.Layout(shape, strides, offset), size


def twin(layout, size):
    """The NumPy int64 array of ``layout`` over ``np.arange(size)`` (values = indices)."""
    base = np.arange(size, dtype=np.int64)
    arr = np.ndarray(
        layout.shape, np.int64, buffer=base, offset=layout.offset * ITEM,
        strides=tuple(s * ITEM for s in layout.strides),
    )
    return base, arr


def twin_and_dim(lay_size, data):
    """``(layout, base, arr, d)`` for a drawn ``(layout, size)`` of at least one dimension:
    its :func:`twin` and a drawn dimension ``d`` (possibly negative)."""
    lay, size = lay_size
    assume(lay.ndim > 0)
    base, arr = twin(lay, size)
    return lay, base, arr, data.draw(dims_of(lay.ndim))


def np_offset(arr, base):
    return (arr.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // arr.itemsize


def assert_matches(layout, arr, base):
    """``layout`` describes exactly the NumPy view ``arr`` of ``base``."""
    assert layout.shape == np.shape(arr), (layout, np.shape(arr))
    if not isinstance(arr, np.ndarray):  # NumPy returns scalars for 0-d results
        assert L.storage_indices(layout) == arr
        return
    if arr.size == 0:
        return
    for d, n in enumerate(arr.shape):
        if n > 1:
            assert layout.strides[d] == arr.strides[d] // arr.itemsize, (layout, arr.strides)
    assert layout.offset == np_offset(arr, base), (layout, np_offset(arr, base))
    np.testing.assert_array_equal(L.storage_indices(layout), arr)


def dims_of(ndim):
    return st.integers(-ndim, ndim - 1) if ndim else st.nothing()


# ----------------------------------------------------------------------------
# construction and queries
# ----------------------------------------------------------------------------


@given(layouts())
@settings(max_examples=EXAMPLES, deadline=None)
def test_storage_indices_match_numpy_twin(lay_size):
    lay, size = lay_size
    base, arr = twin(lay, size)
    np.testing.assert_array_equal(L.storage_indices(lay), arr)


@given(hnp.array_shapes(min_dims=0, max_dims=5, min_side=0, max_side=4))
@settings(max_examples=EXAMPLES, deadline=None)
def test_contiguous_strides_match_torch(shape):
    assert L.contiguous_strides(shape) == torch.empty(shape).stride()
    lay = L.contiguous(shape, 3)
    assert lay.offset == 3 and L.is_contiguous(lay)


@given(hnp.array_shapes(min_dims=4, max_dims=5, min_side=0, max_side=4))
@settings(max_examples=EXAMPLES, deadline=None)
def test_channels_last_strides_match_torch(shape):
    fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    t = torch.empty(shape, memory_format=fmt)
    assert L.channels_last_strides(shape) == t.stride()
    lay = L.Layout(shape, t.stride())
    assert L.is_channels_last_contiguous(lay) == t.is_contiguous(memory_format=fmt)
    assert L.is_contiguous(lay) == t.is_contiguous()


def test_channels_last_strides_reject_other_ranks():
    with pytest.raises(ValueError, match="4-D or 5-D"):
        L.channels_last_strides((2, 3, 4))


@given(layouts(negative=False))
@settings(max_examples=EXAMPLES, deadline=None)
def test_contiguity_matches_torch(lay_size):
    lay, size = lay_size
    t = torch.empty(size).as_strided(lay.shape, lay.strides, lay.offset)
    assert L.is_contiguous(lay) == t.is_contiguous()
    if lay.ndim in (4, 5):
        fmt = torch.channels_last if lay.ndim == 4 else torch.channels_last_3d
        assert L.is_channels_last_contiguous(lay) == t.is_contiguous(memory_format=fmt)
    else:
        assert not L.is_channels_last_contiguous(lay)


@given(layouts())
@settings(max_examples=EXAMPLES, deadline=None)
def test_extent_and_required_size_brute_force(lay_size):
    lay, size = lay_size
    idx = L.storage_indices(lay)
    if idx.size == 0:
        assert L.extent(lay) is None and L.required_storage_size(lay) == 0
    else:
        assert L.extent(lay) == (idx.min(), idx.max())
        assert L.required_storage_size(lay) == idx.max() + 1 <= size


@given(layouts())
@settings(max_examples=EXAMPLES, deadline=None)
def test_overlaps_self_brute_force(lay_size):
    lay, _ = lay_size
    flat = L.storage_indices(lay).ravel()
    assert L.overlaps_self(lay) == (np.unique(flat).size != flat.size)


@given(layouts())
@settings(max_examples=EXAMPLES, deadline=None)
def test_is_dense_brute_force(lay_size):
    lay, _ = lay_size
    flat = L.storage_indices(lay).ravel()
    assume(flat.size > 0)
    dense = np.unique(flat).size == flat.size and flat.max() - flat.min() + 1 == flat.size
    assert L.is_dense(lay) == dense


def test_overlaps_self_empty_layout_is_false():
    assert not L.overlaps_self(L.Layout((0, 3), (0, 0), 0))
    assert not L.overlaps_self(L.Layout((3, 0), (1, 1), 0))


@st.composite
def layout_pairs(draw):
    (a, sa), (b, sb) = draw(layouts(max_dims=3)), draw(layouts(max_dims=3))
    return a, b, max(sa, sb)


@given(layout_pairs())
@settings(max_examples=EXAMPLES, deadline=None)
def test_overlap_matches_numpy_shares_memory(pair):
    a, b, size = pair
    base = np.arange(size, dtype=np.int64)
    na = np.ndarray(a.shape, np.int64, buffer=base, offset=a.offset * ITEM,
                    strides=tuple(s * ITEM for s in a.strides))
    nb = np.ndarray(b.shape, np.int64, buffer=base, offset=b.offset * ITEM,
                    strides=tuple(s * ITEM for s in b.strides))
    assert L.overlap(a, b) == np.shares_memory(na, nb, max_work=None)
    assert L.may_overlap(a, b) == np.may_share_memory(na, nb)
    assert L.overlap(a, b) == L.overlap(b, a)
    if L.overlap(a, b):
        assert L.may_overlap(a, b)


def test_layout_is_frozen_hashable_and_picklable():
    a = L.Layout((2, 3), (3, 1), 4)
    b = L.Layout([2, 3], [3, 1], 4)
    assert a == b and hash(a) == hash(b) and {a: 1}[b] == 1
    assert a != L.Layout((2, 3), (3, 1), 5) and a != L.Layout((3, 2), (1, 3), 4)
    assert pickle.loads(pickle.dumps(a)) == a
    with pytest.raises(AttributeError):
        a.offset = 1
    with pytest.raises(ValueError, match="same length"):
        L.Layout((2, 3), (1,))
    assert a.ndim == 2 and a.numel == 6


# ----------------------------------------------------------------------------
# dimension helpers and shapes
# ----------------------------------------------------------------------------


@given(st.integers(0, 4), st.integers(-7, 7))
@settings(max_examples=EXAMPLES, deadline=None)
def test_normalize_dim(ndim, dim):
    if -max(ndim, 1) <= dim < max(ndim, 1):
        assert L.normalize_dim(dim, ndim) == (dim % ndim if ndim else 0)
    else:
        with pytest.raises(IndexError, match=f"dim {dim} is out of range"):
            L.normalize_dim(dim, ndim)


def test_normalize_dims_rejects_repeats_and_accepts_none():
    assert L.normalize_dims(None, 3) == (0, 1, 2)
    assert L.normalize_dims(-1, 3) == (2,)
    assert L.normalize_dims(np.int64(1), 3) == (1,)
    with pytest.raises(ValueError, match="repeated"):
        L.normalize_dims((0, -3), 3)


@given(st.lists(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3), min_size=1, max_size=4))
@settings(max_examples=EXAMPLES, deadline=None)
def test_broadcast_shapes_match_numpy(shapes):
    try:
        expected = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ValueError, match="cannot be broadcast"):
            L.broadcast_shapes(*shapes)
    else:
        assert L.broadcast_shapes(*shapes) == expected


def test_broadcast_shapes_message_names_shapes_and_dim():
    with pytest.raises(ValueError) as info:
        L.broadcast_shapes((2, 3), (4, 5, 3))
    msg = str(info.value)
    assert "(2, 3)" in msg and "(4, 5, 3)" in msg and "dimension -2" in msg


@given(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_infer_shape(shape, data):
    numel = math.prod(shape)
    shape = list(shape)
    if shape and data.draw(st.booleans()):
        shape[data.draw(st.integers(0, len(shape) - 1))] = -1
    try:
        expected = np.empty(numel).reshape(shape).shape
    except ValueError:
        with pytest.raises(ValueError):
            L.infer_shape(shape, numel)
    else:
        assert L.infer_shape(shape, numel) == expected


def test_infer_shape_errors():
    with pytest.raises(ValueError, match="only one dimension"):
        L.infer_shape((-1, -1), 4)
    with pytest.raises(ValueError, match="invalid for input of size 5"):
        L.infer_shape((2, -1), 5)
    with pytest.raises(ValueError, match="invalid for input of size 5"):
        L.infer_shape((2, 2), 5)


# ----------------------------------------------------------------------------
# view functions
# ----------------------------------------------------------------------------


@given(layouts(), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_index_basic_keys(lay_size, data):
    lay, size = lay_size
    base, arr = twin(lay, size)
    key = data.draw(hnp.basic_indices(lay.shape, allow_newaxis=True, allow_ellipsis=True))
    assert_matches(L.index(lay, key), arr[key], base)


@given(layouts(), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_index_out_of_range_int_raises(lay_size, data):
    lay, _ = lay_size
    assume(lay.ndim > 0)
    d = data.draw(st.integers(0, lay.ndim - 1))
    n = lay.shape[d]
    i = data.draw(st.one_of(st.integers(n, n + 5), st.integers(-n - 5, -n - 1)))
    key = (slice(None),) * d + (i,)
    with pytest.raises(IndexError, match=f"index {i} is out of bounds for dimension {d}"):
        L.index(lay, key)
    with pytest.raises(IndexError):
        L.select(lay, d, i)


def test_index_key_errors():
    lay = L.contiguous((2, 3))
    with pytest.raises(IndexError, match="too many indices"):
        L.index(lay, (0, 0, 0))
    with pytest.raises(IndexError, match="single ellipsis"):
        L.index(lay, (Ellipsis, 0, Ellipsis))
    with pytest.raises(ValueError, match="step cannot be zero"):
        L.index(lay, slice(None, None, 0))


@given(layouts(), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_permute_transpose(lay_size, data):
    lay, size = lay_size
    base, arr = twin(lay, size)
    perm = data.draw(st.permutations(range(lay.ndim)))
    assert_matches(L.permute(lay, perm), np.transpose(arr, perm), base)
    assert_matches(L.reverse_dims(lay), arr.T, base)
    if lay.ndim:
        d0, d1 = data.draw(dims_of(lay.ndim)), data.draw(dims_of(lay.ndim))
        assert_matches(L.transpose(lay, d0, d1), np.swapaxes(arr, d0, d1), base)
    if lay.ndim >= 2:
        assert_matches(L.matrix_transpose(lay), np.swapaxes(arr, -1, -2), base)
    else:
        with pytest.raises(ValueError, match="at least 2 dimensions"):
            L.matrix_transpose(lay)
    with pytest.raises(ValueError, match="does not match"):
        L.permute(lay, tuple(range(lay.ndim + 1)))


@given(layouts(), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_select_narrow_slice(lay_size, data):
    lay, base, arr, d = twin_and_dim(lay_size, data)
    n = lay.shape[d]
    pre = (slice(None),) * (d % lay.ndim)
    if n:
        i = data.draw(st.integers(-n, n - 1))
        assert_matches(L.select(lay, d, i), arr[pre + (i,)], base)
    start = data.draw(st.integers(0, n))
    length = data.draw(st.integers(0, n - start))
    assert_matches(L.narrow(lay, d, start, length), arr[pre + (slice(start, start + length),)], base)
    with pytest.raises(IndexError, match="exceeds dimension"):
        L.narrow(lay, d, start, n - start + 1)
    bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    a, b = data.draw(bound), data.draw(bound)
    step = data.draw(st.one_of(st.none(), st.integers(-4, 4).filter(bool)))
    assert_matches(L.slice_dim(lay, d, a, b, step), arr[pre + (slice(a, b, step),)], base)


@given(layouts(), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_flip(lay_size, data):
    lay, size = lay_size
    base, arr = twin(lay, size)
    dims = data.draw(st.lists(st.integers(0, max(lay.ndim - 1, 0)), unique=True, max_size=lay.ndim)) if lay.ndim else []
    assert_matches(L.flip(lay, dims), np.flip(arr, axis=tuple(dims)), base)
    assert_matches(L.flip(lay, None), np.flip(arr), base)


@given(layouts(), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_diagonal(lay_size, data):
    lay, size = lay_size
    assume(lay.ndim >= 2)
    base, arr = twin(lay, size)
    d1 = data.draw(dims_of(lay.ndim))
    d2 = data.draw(dims_of(lay.ndim).filter(lambda d: d % lay.ndim != d1 % lay.ndim))
    off = data.draw(st.integers(-6, 6))
    assert_matches(L.diagonal(lay, off, d1, d2), np.diagonal(arr, off, d1, d2), base)
    with pytest.raises(ValueError, match="cannot be identical"):
        L.diagonal(lay, 0, d1, d1)


@given(layouts(max_dims=3), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_broadcast_to_and_expand(lay_size, data):
    lay, size = lay_size
    base, arr = twin(lay, size)
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    target = tuple(lead) + tuple(
        data.draw(st.sampled_from([n, 0, 3])) if n == 1 else data.draw(st.sampled_from([n, n, n + 1]))
        for n in lay.shape
    )
    try:
        expected = np.broadcast_to(arr, target)
    except ValueError:
        with pytest.raises(ValueError, match="cannot broadcast"):
            L.broadcast_to(lay, target)
        return
    out = L.broadcast_to(lay, target)
    assert_matches(out, expected, base)
    for d, n in enumerate(target):
        if n > 1 and (d < len(lead) or lay.shape[d - len(lead)] == 1):
            assert out.strides[d] == 0
    sizes = tuple(lead) + tuple(-1 if data.draw(st.booleans()) and n == m else n
                                for n, m in zip(target[len(lead):], lay.shape))
    assert L.expand(lay, sizes) == out


def test_expand_errors():
    lay = L.contiguous((1, 3))
    with pytest.raises(ValueError, match="must be greater or equal"):
        L.expand(lay, (3,))
    with pytest.raises(ValueError, match="-1 is not allowed"):
        L.expand(lay, (-1, 2, 3))
    with pytest.raises(ValueError, match="cannot broadcast"):
        L.expand(lay, (2, 4))
    with pytest.raises(ValueError, match="fewer dimensions"):
        L.broadcast_to(lay, (3,))


@given(layouts(), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_squeeze_unsqueeze(lay_size, data):
    lay, size = lay_size
    base, arr = twin(lay, size)
    assert_matches(L.squeeze(lay), np.squeeze(arr), base)
    ones = [d for d, n in enumerate(lay.shape) if n == 1]
    if ones:
        named = data.draw(st.lists(st.sampled_from(ones), unique=True, min_size=1))
        assert_matches(L.squeeze(lay, named), np.squeeze(arr, tuple(named)), base)
    others = [d for d, n in enumerate(lay.shape) if n != 1]
    if others:
        d = data.draw(st.sampled_from(others))
        with pytest.raises(ValueError, match="cannot squeeze"):
            L.squeeze(lay, d)
        assert L.squeeze(lay, d, strict=False) == lay
    d = data.draw(st.integers(-lay.ndim - 1, lay.ndim))
    out = L.unsqueeze(lay, d)
    assert_matches(out, np.expand_dims(arr, d), base)
    if min(lay.strides, default=0) >= 0:
        t = torch.empty(size).as_strided(lay.shape, lay.strides, lay.offset)
        assert out.strides == t.unsqueeze(d).stride()


def test_squeeze_zero_dim_layout():
    lay = L.contiguous(())
    assert L.squeeze(lay) == lay
    assert L.squeeze(lay, 0) == lay
    assert L.squeeze(lay, -1) == lay
    assert L.squeeze(lay, (0,)) == lay


@given(layouts(max_dims=3), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_unfold_matches_sliding_window_view(lay_size, data):
    lay, base, arr, d = twin_and_dim(lay_size, data)
    n = lay.shape[d]
    win = data.draw(st.integers(0, n))
    step = data.draw(st.integers(1, 3))
    windows = np.lib.stride_tricks.sliding_window_view(arr, win, axis=d)
    expected = windows[(slice(None),) * (d % lay.ndim) + (slice(None, None, step),)]
    assert_matches(L.unfold(lay, d, win, step), expected, base)
    with pytest.raises(ValueError, match="size"):
        L.unfold(lay, d, n + 1, 1)
    with pytest.raises(ValueError, match="step must be positive"):
        L.unfold(lay, d, win, 0)


@given(
    st.lists(st.integers(0, 4), max_size=4).flatmap(
        lambda shape: st.tuples(
            st.just(tuple(shape)),
            st.lists(st.integers(-1, 6), min_size=len(shape), max_size=len(shape)),
        )
    ),
    st.integers(-1, 6),
    st.integers(0, 40),
)
@settings(max_examples=EXAMPLES, deadline=None)
def test_as_strided_bounds_match_torch(shape_strides, offset, storage_size):
    shape, strides = shape_strides
    ok = True
    try:
        expected = torch.empty(storage_size).as_strided(shape, strides, offset)
    except RuntimeError:
        ok = False
    if not ok:
        with pytest.raises(ValueError) as info:
            L.as_strided(shape, strides, offset, storage_size)
        msg = str(info.value)
        if min(strides, default=0) >= 0 and offset >= 0:
            assert str(list(shape)) in msg and str(list(strides)) in msg
            assert f"storage offset {offset}" in msg and f"size {storage_size}" in msg
        return
    out = L.as_strided(shape, strides, offset, storage_size)
    assert out == L.Layout(expected.shape, expected.stride(), expected.storage_offset())


def test_as_strided_messages():
    with pytest.raises(ValueError, match="negative strides"):
        L.as_strided((2,), (-1,), 1, 10)
    with pytest.raises(ValueError, match="mismatch in length"):
        L.as_strided((2, 2), (1,), 0, 10)
    with pytest.raises(ValueError, match="negative storage offset"):
        L.as_strided((2,), (1,), -1, 10)
    with pytest.raises(ValueError, match=r"sizes \[3, 4\], strides \[4, 1\] and storage offset 1 "
                                         r"need a storage of 13 elements.*size 12"):
        L.as_strided((3, 4), (4, 1), 1, 12)


@given(layouts(negative=False, max_dims=4, max_side=6), st.data())
@settings(max_examples=EXAMPLES * 2, deadline=None)
def test_view_matches_torch(lay_size, data):
    lay, size = lay_size
    new = data.draw(view_shapes(lay.shape))
    t = torch.empty(size).as_strided(lay.shape, lay.strides, lay.offset)
    try:
        expected = t.view(new)
    except RuntimeError as err:
        assert "view size is not compatible" in str(err)
        assert L.try_view(lay, new) is None
        with pytest.raises(RuntimeError, match=r"reshape"):
            L.view(lay, new)
        return
    out = L.view(lay, new)
    assert out == L.Layout(expected.shape, expected.stride(), expected.storage_offset())
    assert L.try_view(lay, new) == out


@given(layouts(), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_view_addresses_the_same_elements(lay_size, data):
    lay, size = lay_size
    new = data.draw(view_shapes(lay.shape))
    out = L.try_view(lay, new)
    if out is not None:
        np.testing.assert_array_equal(
            L.storage_indices(out).ravel(), L.storage_indices(lay).ravel()
        )


@given(layouts(), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_flatten_shape(lay_size, data):
    lay, _ = lay_size
    if lay.ndim == 0:
        assert L.flatten(lay) == (1,)
        return
    s = data.draw(dims_of(lay.ndim))
    e = data.draw(dims_of(lay.ndim))
    ts, te = s % lay.ndim, e % lay.ndim
    if ts > te:
        with pytest.raises(ValueError, match="cannot come after"):
            L.flatten(lay, s, e)
    else:
        expected = torch.empty(lay.shape).flatten(s, e).shape
        assert L.flatten(lay, s, e) == tuple(expected)


@given(layouts(negative=False))
@settings(max_examples=EXAMPLES, deadline=None)
def test_clone_strides_match_torch(lay_size):
    """PyTorch's clone(): dense layouts keep their strides, others get infer_dense_strides."""
    lay, size = lay_size
    t = torch.empty(size).as_strided(lay.shape, lay.strides, lay.offset)
    expected = t.clone().stride()
    if lay.numel and L.is_dense(lay):
        assert lay.strides == expected
    elif lay.numel:
        assert L.infer_dense_strides(lay.shape, lay.strides) == expected


# ----------------------------------------------------------------------------
# the XLA lowering of strided reads and writes (arraykit.kernels.strided)
# ----------------------------------------------------------------------------


def _lowered_read(buf, lay, dynamic):
    from arraykit.kernels import strided

    if dynamic:
        return jax.jit(lambda b, o: strided.read(b, lay, o))(buf, np.int64(lay.offset))
    return jax.jit(lambda b: strided.read(b, lay))(buf)


@given(layouts(max_dims=3, max_side=6), st.booleans())
@settings(max_examples=EXAMPLES, deadline=None)
def test_strided_read_lowering(lay_size, dynamic):
    lay, size = lay_size
    base, arr = twin(lay, size)
    got = _lowered_read(jnp.asarray(base), lay, dynamic)
    assert got.shape == lay.shape
    np.testing.assert_array_equal(np.asarray(got), arr)


@given(layouts(max_dims=3, max_side=6), st.booleans(), st.booleans(), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_strided_write_lowering(lay_size, scatter, dynamic, data):
    from arraykit.kernels import strided

    lay, size = lay_size
    assume(not L.overlaps_self(lay))
    base, arr = twin(lay, size)
    values = data.draw(hnp.arrays(np.int64, lay.shape, elements=st.integers(-99, -1)))
    expected = base.copy()
    np.ndarray(lay.shape, np.int64, buffer=expected, offset=lay.offset * ITEM,
               strides=tuple(s * ITEM for s in lay.strides))[...] = values
    if dynamic:
        fn = jax.jit(lambda b, v, o: strided.write(b, lay, v, o, scatter))
        got = fn(jnp.asarray(base), values, np.int64(lay.offset))
    else:
        got = jax.jit(lambda b, v: strided.write(b, lay, v, None, scatter))(jnp.asarray(base), values)
    np.testing.assert_array_equal(np.asarray(got), expected)
