"""Manipulation functions against NumPy, on strided inputs; views must share storage."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit as ak
from arraykit.core import layout as L
from strategies import ALL_DTYPES, make_view, strided_pairs, values

SETTINGS = settings(max_examples=25, deadline=None)
SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4)
SMALL_DTYPES = st.sampled_from(("bool", "int8", "uint32", "int64", "float32", "complex64"))
# a strided tensor of a few dtypes, its NumPy twin, and data for the test to draw from
GIVEN_SMALL_PAIRS = given(pair=strided_pairs(dtype=SMALL_DTYPES), data=st.data())


def view_values(t):
    """The elements ``t`` addresses, read from its storage through its layout (no kernel)."""
    buf = np.asarray(t.untyped_storage().buffer).reshape(-1)
    return buf[L.storage_indices(t.layout)]


def check(got, want):
    """Same shape, dtype and values (floats up to flushed subnormals)."""
    values_ = got.numpy() if got.is_contiguous() and got.storage_offset() == 0 else view_values(got)
    assert got.shape == want.shape
    assert got.dtype.np == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(values_, want, rtol=1e-6, atol=1e-30)
    else:
        np.testing.assert_array_equal(values_, want)


def check_view(got, src, want):
    """``got`` is a view of ``src`` (same storage, no kernel) holding ``want``."""
    assert got.untyped_storage() is src.untyped_storage()
    assert got.shape == want.shape
    assert got.dtype is src.dtype
    np.testing.assert_array_equal(view_values(got), want)


def element_strides(a):
    return tuple(s // a.itemsize for s in a.strides)


# ----------------------------------------------------------------------------
# Views
# ----------------------------------------------------------------------------


@st.composite
def broadcast_targets(draw, shape):
    lead = draw(st.lists(st.integers(0, 3), max_size=2))
    tail = [draw(st.integers(0, 3)) if n == 1 else n for n in shape]
    return tuple(lead) + tuple(tail)


@SETTINGS
@GIVEN_SMALL_PAIRS
def test_broadcast_to(pair, data):
    x, a = pair
    shape = data.draw(broadcast_targets(a.shape))
    got = ak.broadcast_to(x, shape)
    check_view(got, x, np.broadcast_to(a, shape))
    if a.size and np.prod(shape):
        got = ak.broadcast_to(ak.asarray(a), shape).stride()
        want = element_strides(np.broadcast_to(a, shape))
        assert [g for g, n in zip(got, shape) if n > 1] == [w for w, n in zip(want, shape) if n > 1]


@SETTINGS
@GIVEN_SMALL_PAIRS
def test_broadcast_arrays(pair, data):
    x, a = pair
    other_shape = data.draw(broadcast_targets(a.shape))
    y, b = make_view(np.ones(other_shape, "int16"), "contiguous"), np.ones(other_shape, "int16")
    gx, gy = ak.broadcast_arrays(x, y)
    wx, wy = np.broadcast_arrays(a, b)
    check_view(gx, x, wx)
    check_view(gy, y, wy)
    assert ak.broadcast_arrays() == ()
    assert ak.broadcast_shapes(a.shape, other_shape) == np.broadcast_shapes(a.shape, other_shape)


def test_broadcast_errors():
    x = ak.zeros((2, 3))
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4, 3\)"):
        ak.broadcast_to(x, (4, 3))
    with pytest.raises(ValueError, match="negative"):
        ak.broadcast_to(ak.zeros((1,)), (-1,))
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(4, 3\)"):
        ak.broadcast_arrays(x, ak.zeros((4, 3)))
    with pytest.raises(ValueError, match="dimension -2"):
        ak.broadcast_shapes((2, 3), (4, 3))
    assert ak.broadcast_shapes() == ()


@SETTINGS
@given(pair=strided_pairs(), data=st.data())
def test_expand_dims(pair, data):
    x, a = pair
    m = a.ndim + 1
    axis = data.draw(st.integers(-m, m - 1))
    check_view(ak.expand_dims(x, axis=axis), x, np.expand_dims(a, axis))
    k = data.draw(st.integers(1, 3))
    axes = tuple(data.draw(st.lists(st.integers(-(a.ndim + k), a.ndim + k - 1), min_size=k, max_size=k)))
    if len({d % (a.ndim + k) for d in axes}) == k:
        check_view(ak.expand_dims(x, axis=axes), x, np.expand_dims(a, axes))
    else:
        with pytest.raises(ValueError, match="repeats"):
            ak.expand_dims(x, axis=axes)
    with pytest.raises(IndexError):
        ak.expand_dims(x, axis=m)
    with pytest.raises(IndexError):
        ak.expand_dims(x, axis=-m - 1)


@SETTINGS
@GIVEN_SMALL_PAIRS
def test_flip(pair, data):
    x, a = pair
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1) | st.lists(
        st.integers(0, a.ndim - 1), unique=True, max_size=a.ndim).map(tuple) if a.ndim else st.none())
    check_view(ak.flip(x, axis=axis), x, np.flip(a, axis))
    if not a.size:
        return
    got = ak.flip(ak.asarray(a), axis=axis)
    want = np.flip(a, axis)
    nonempty = [n > 1 for n in a.shape]
    assert [s for s, keep in zip(got.stride(), nonempty) if keep] == [
        s for s, keep in zip(element_strides(want), nonempty) if keep
    ]


@SETTINGS
@GIVEN_SMALL_PAIRS
def test_permute_dims_and_moveaxis(pair, data):
    x, a = pair
    perm = data.draw(st.permutations(range(a.ndim)))
    signed = tuple(d - a.ndim if data.draw(st.booleans()) else d for d in perm)
    got = ak.permute_dims(x, signed)
    check_view(got, x, np.transpose(a, perm))
    if a.size:
        assert ak.permute_dims(ak.asarray(a), signed).stride() == element_strides(np.transpose(a, perm))
    if a.ndim:
        k = data.draw(st.integers(1, a.ndim))
        src = tuple(data.draw(st.permutations(range(a.ndim)))[:k])
        dst = tuple(data.draw(st.permutations(range(-a.ndim, 0)))[:k])
        check_view(ak.moveaxis(x, src, dst), x, np.moveaxis(a, src, dst))
        check_view(ak.moveaxis(x, src[0], dst[0]), x, np.moveaxis(a, src[0], dst[0]))


@SETTINGS
@given(pair=strided_pairs(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=3)), data=st.data())
def test_squeeze(pair, data):
    x, a = pair
    ones = [d for d, n in enumerate(a.shape) if n == 1]
    axes = tuple(data.draw(st.lists(st.sampled_from(ones), unique=True)) if ones else [])
    check_view(ak.squeeze(x, axes), x, np.squeeze(a, axes))
    if ones:
        check_view(ak.squeeze(x, ones[0] - a.ndim), x, np.squeeze(a, ones[0]))
    others = [d for d, n in enumerate(a.shape) if n != 1]
    if others:
        with pytest.raises(ValueError, match=f"size {a.shape[others[0]]}"):
            ak.squeeze(x, others[0])


@SETTINGS
@given(pair=strided_pairs(shape=SHAPES), data=st.data())
def test_unstack(pair, data):
    x, a = pair
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    got = ak.unstack(x, axis=axis)
    want = np.unstack(a, axis=axis)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        check_view(g, x, w)


def prime_factors(n):
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@st.composite
def reshape_targets(draw, shape):
    """A random shape with as many elements as ``shape``, maybe with one -1."""
    n = int(np.prod(shape))
    if n == 0:
        return tuple(draw(st.permutations(shape)))
    out = [1]
    for p in draw(st.permutations(prime_factors(n))):
        if draw(st.booleans()):
            out.append(p)
        else:
            out[-1] *= p
    out += [1] * draw(st.integers(0, 1))
    out = list(draw(st.permutations(out)))
    if draw(st.booleans()):
        out[draw(st.integers(0, len(out) - 1))] = -1
    return tuple(out)


@SETTINGS
@GIVEN_SMALL_PAIRS
def test_reshape(pair, data):
    x, a = pair
    shape = data.draw(reshape_targets(a.shape))
    want = np.reshape(a, shape)
    viewable = L.try_view(x.layout, shape) is not None
    got = ak.reshape(x, shape)
    check(got, want)
    assert (got.untyped_storage() is x.untyped_storage()) == viewable
    if viewable:
        check_view(ak.reshape(x, shape, copy=False), x, want)
    else:
        with pytest.raises(ValueError, match="copy=False"):
            ak.reshape(x, shape, copy=False)
    copied = ak.reshape(x, shape, copy=True)
    assert copied.untyped_storage() is not x.untyped_storage()
    check(copied, want)


def test_reshape_errors():
    x = ak.asarray(np.arange(6).reshape(2, 3))
    assert ak.reshape(x, (3, 2)).untyped_storage() is x.untyped_storage()
    with pytest.raises(ValueError, match="copy=False"):
        ak.reshape(x.mT, (6,), copy=False)
    with pytest.raises(ValueError, match="size 6"):
        ak.reshape(x, (4, 2))
    with pytest.raises(ValueError, match="only one"):
        ak.reshape(x, (-1, -1))


# ----------------------------------------------------------------------------
# Copies
# ----------------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_concat(data):
    base = data.draw(SHAPES)
    axis = data.draw(st.integers(-len(base), len(base) - 1) | st.none())
    k = data.draw(st.integers(1, 3))
    pairs = []
    for _ in range(k):
        shape = list(base)
        if axis is not None:
            shape[axis] = data.draw(st.integers(0, 3))
        else:
            shape = data.draw(SHAPES)
        pairs.append(data.draw(strided_pairs(dtype=SMALL_DTYPES, shape=tuple(shape))))
    got = ak.concat([p[0] for p in pairs], axis=axis)
    check(got, np.concatenate([p[1] for p in pairs], axis=axis))
    for x, _ in pairs:
        assert got.untyped_storage() is not x.untyped_storage()


@SETTINGS
@given(data=st.data())
def test_stack(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    k = data.draw(st.integers(1, 3))
    pairs = [data.draw(strided_pairs(dtype=SMALL_DTYPES, shape=shape)) for _ in range(k)]
    got = ak.stack(tuple(p[0] for p in pairs), axis=axis)
    check(got, np.stack([p[1] for p in pairs], axis=axis))


def test_concat_stack_errors():
    a, b = ak.zeros((2, 3)), ak.zeros((2, 4))
    with pytest.raises(ValueError, match=r"axis 0.*\[\(2, 3\), \(2, 4\)\].*dimension 1"):
        ak.concat([a, b])
    with pytest.raises(ValueError, match="same number of dimensions"):
        ak.concat([a, ak.zeros((2,))])
    with pytest.raises(ValueError, match="zero-dimensional"):
        ak.concat([ak.zeros(()), ak.zeros(())])
    assert ak.concat([ak.zeros(()), ak.zeros(())], axis=None).shape == (2,)
    with pytest.raises(IndexError, match="axis 2"):
        ak.concat([a, a], axis=2)
    with pytest.raises(ValueError, match="at least one"):
        ak.concat([])
    with pytest.raises(TypeError, match="tuple or list"):
        ak.concat(a)
    with pytest.raises(TypeError, match="ndarray"):
        ak.concat([a, np.zeros((2, 3))])
    with pytest.raises(ValueError, match="same shape"):
        ak.stack([a, b])
    with pytest.raises(IndexError):
        ak.stack([a, a], axis=3)
    assert ak.concat([a, b], axis=1).shape == (2, 7)


@SETTINGS
@GIVEN_SMALL_PAIRS
def test_repeat(pair, data):
    x, a = pair
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    size = a.size if axis is None else a.shape[axis]
    kind = data.draw(st.sampled_from(["int", "one", "full"]))
    if kind == "int":
        r = data.draw(st.integers(0, 3))
        rep = r
    else:
        r = data.draw(hnp.arrays(st.sampled_from(["int32", "uint8", "int64"]), (1,) if kind == "one" else (size,), elements=st.integers(0, 3)))
        rep = ak.asarray(r)
    got = ak.repeat(x, rep, axis=axis)
    check(got, np.repeat(a, r, axis=axis))


def test_repeat_errors():
    x = ak.asarray(np.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match="non-negative"):
        ak.repeat(x, -1)
    with pytest.raises(ValueError, match="non-negative"):
        ak.repeat(x, ak.asarray([1, -1, 2]), axis=1)
    with pytest.raises(ValueError, match=r"shape \(2,\).*\(3,\)"):
        ak.repeat(x, ak.asarray([1, 2]), axis=1)
    with pytest.raises(TypeError, match="integer dtype"):
        ak.repeat(x, ak.asarray([1.0]))
    with pytest.raises(IndexError):
        ak.repeat(x, 2, axis=2)


@SETTINGS
@GIVEN_SMALL_PAIRS
def test_roll(pair, data):
    x, a = pair
    shift = data.draw(st.integers(-30, 30))
    check(ak.roll(x, shift), np.roll(a, shift))
    if a.ndim:
        axes = tuple(data.draw(st.lists(st.integers(-a.ndim, a.ndim - 1), min_size=1, max_size=3)))
        shifts = tuple(data.draw(st.lists(st.integers(-9, 9), min_size=len(axes), max_size=len(axes))))
        check(ak.roll(x, shifts, axis=axes), np.roll(a, shifts, axis=axes))
        check(ak.roll(x, shift, axis=axes[0]), np.roll(a, shift, axis=axes[0]))


def test_roll_shift_does_not_recompile():
    x = ak.asarray(np.arange(12.0).reshape(3, 4))
    ak.roll(x, 1, axis=1)
    misses = ak.cache_info()["misses"]
    for s in (2, -7, 100):
        np.testing.assert_array_equal(ak.roll(x, s, axis=1).numpy(), np.roll(np.arange(12.0).reshape(3, 4), s, axis=1))
    assert ak.cache_info()["misses"] == misses
    with pytest.raises(ValueError, match="same length"):
        ak.roll(x, (1, 2, 3), axis=(0, 1))
    with pytest.raises(ValueError, match="tuple axis"):
        ak.roll(x, (1, 2))


@SETTINGS
@GIVEN_SMALL_PAIRS
def test_tile(pair, data):
    x, a = pair
    reps = tuple(data.draw(st.lists(st.integers(0, 3), max_size=4)))
    check(ak.tile(x, reps), np.tile(a, reps))


def test_tile_errors():
    with pytest.raises(ValueError, match="non-negative"):
        ak.tile(ak.zeros((2,)), (-1,))


def test_axis_errors():
    x = ak.zeros((2, 1, 3))
    with pytest.raises(IndexError, match="axis 3"):
        ak.flip(x, axis=3)
    with pytest.raises(IndexError, match="0 dimensions"):
        ak.flip(ak.zeros(()), axis=0)
    with pytest.raises(ValueError, match="repeated"):
        ak.flip(x, axis=(0, -3))
    with pytest.raises(ValueError, match="size 2"):
        ak.squeeze(x, 0)
    with pytest.raises(IndexError):
        ak.squeeze(x, 5)
    with pytest.raises(ValueError, match="permute_dims"):
        ak.permute_dims(x, (0, 1))
    with pytest.raises(ValueError, match="repeated"):
        ak.permute_dims(x, (0, 1, 1))
    with pytest.raises(ValueError, match="same number"):
        ak.moveaxis(x, (0, 1), 2)
    with pytest.raises(IndexError):
        ak.unstack(x, axis=3)
    with pytest.raises(ValueError, match="0-d"):
        ak.unstack(ak.zeros(()))
    with pytest.raises(TypeError, match="ndarray"):
        ak.flip(np.zeros(3))


def test_view_functions_launch_no_kernel():
    x = ak.asarray(np.arange(24.0).reshape(2, 3, 4))
    before = ak.cache_info()
    views = [
        ak.broadcast_to(x[:, :1], (5, 2, 3, 4)),
        ak.expand_dims(x, axis=(0, 2)),
        ak.flip(x, axis=1),
        ak.moveaxis(x, 0, -1),
        ak.permute_dims(x, (2, 0, 1)),
        ak.reshape(x, (6, 4)),
        ak.squeeze(x[:, :1], 1),
        *ak.unstack(x, axis=2),
        *ak.broadcast_arrays(x, x[:1]),
    ]
    assert ak.cache_info() == before
    for v in views:
        assert ak.shares_memory(v, x)
    assert ak.broadcast_to(x[:, :1], (5, 2, 3, 4)).stride() == (0, 12, 0, 1)
    assert ak.flip(x, axis=1).stride() == (12, -4, 1)


def test_views_alias_writes():
    x = ak.asarray(np.arange(6).reshape(2, 3))
    f = ak.flip(x, axis=1)
    f[0, 0] = 100
    p = ak.permute_dims(x, (1, 0))
    p[1, 1] = -5
    u = ak.unstack(x, axis=1)[0]
    u[1] = 7
    np.testing.assert_array_equal(x.numpy(), [[0, 1, 100], [7, -5, 5]])


def test_promotion_and_values_concat():
    a = ak.asarray(np.array([1, 2], "int8"))
    b = ak.asarray(np.array([3.5], "float32"))
    out = ak.concat([a, b])
    assert out.dtype is ak.float32
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3.5])
    u = ak.asarray(np.array([1], "uint8"))
    assert ak.stack([u, ak.asarray(np.array([1], "int8"))]).dtype is ak.int16


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_roundtrips(dtype):
    a = np.arange(6).reshape(2, 3).astype(dtype)
    x = ak.asarray(a)
    check(ak.concat([x, x], axis=1), np.concatenate([a, a], axis=1))
    check(ak.roll(x, 1, axis=0), np.roll(a, 1, axis=0))


@SETTINGS
@given(a=values("float64", (3, 4)))
def test_chain_of_views_matches_numpy(a):
    x = ak.asarray(a)
    y = ak.squeeze(ak.expand_dims(ak.flip(ak.permute_dims(x, (1, 0)), axis=0), axis=1), 1)
    y = ak.reshape(ak.broadcast_to(y, (2, 4, 3))[1], (12,))
    want = np.reshape(np.broadcast_to(np.flip(a.T, 0), (2, 4, 3))[1], 12)
    check(y, want)


def test_copies_run_one_kernel_each():
    x = ak.asarray(np.arange(12.0).reshape(3, 4))
    y = ak.asarray(np.arange(8, dtype="int32").reshape(2, 4))
    calls = [
        lambda: ak.concat([x, y, ak.flip(x, axis=0)]),
        lambda: ak.stack([x, x.mT.mT, ak.flip(x)], axis=1),
        lambda: ak.roll(x, (1, 2), axis=(0, 1)),
        lambda: ak.tile(x.mT, (2, 1)),
        lambda: ak.repeat(x, 2, axis=0),
        lambda: ak.reshape(x.mT, (12,)),
    ]
    for call in calls:
        before = ak.cache_info()
        call()
        after = ak.cache_info()
        kernels = after["hits"] + after["misses"] - before["hits"] - before["misses"]
        # a concat, stack, tile or reshape copy of small CPU tensors runs no kernel: NumPy
        # moves the elements (tensors/host_paths.py)
        on_host = call in calls[:2] or call in calls[3:4] or call is calls[-1]
        assert kernels == 1 or (kernels == 0 and on_host and x.device.platform == "cpu")


def test_inside_jax_jit():
    import jax

    x = ak.asarray(np.arange(12.0).reshape(3, 4))

    def f(t):
        a = ak.concat([t, ak.flip(t, axis=0)], axis=1)
        b = ak.roll(ak.reshape(ak.permute_dims(a, (1, 0)), (-1,)), 3)
        c = ak.repeat(ak.stack([t, t]), 2, axis=-1)
        return b, ak.tile(c, (2,)), ak.unstack(t)[1], ak.broadcast_arrays(t[:1], t)[0]

    for got, want in zip(jax.jit(f)(x), f(x)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with pytest.raises(TypeError, match="concrete"):
        jax.jit(lambda t, r: ak.repeat(t, r))(x, ak.asarray([2]))
