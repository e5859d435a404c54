"""Creation functions against NumPy: values, dtypes, shapes, devices, copy semantics."""

from __future__ import annotations

import array
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit as ak
from arraykit.core import dtypes as D
from tests.strategies import ALL_DTYPES, NUMERIC_DTYPES, make_view, strided_pairs, values

SETTINGS = settings(max_examples=25, deadline=None)
REAL_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float32", "float64")


def check(t, expected, dtype=None):
    """``t`` is a tensor equal to ``expected`` in shape, dtype and values."""
    assert isinstance(t, ak.Tensor)
    expected = np.asarray(expected)
    assert t.shape == expected.shape
    assert t.dtype is D.from_numpy(dtype or expected.dtype)
    np.testing.assert_array_equal(t.numpy(), expected.astype(t.dtype.np))


def aligned_array(values, dtype):
    """A NumPy array with the given values whose data is 64-byte aligned (JAX aliases these)."""
    values = np.asarray(values, dtype=dtype)
    raw = np.zeros(values.nbytes + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    out = raw[start:start + values.nbytes].view(dtype).reshape(values.shape)
    out[...] = values
    return out


def unaligned_array(values, dtype):
    values = np.asarray(values, dtype=dtype)
    raw = np.zeros(values.nbytes + 64 + values.itemsize, np.uint8)
    start = (-raw.ctypes.data) % 64 + values.itemsize
    out = raw[start:start + values.nbytes].view(dtype).reshape(values.shape)
    out[...] = values
    return out


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)

# ---------------------------------------------------------------------- constant fills


@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(ALL_DTYPES), as_list=st.booleans())
def test_zeros_ones_empty(shape, dtype, as_list):
    spec = list(shape) if as_list else shape
    check(ak.zeros(spec, dtype=getattr(ak, dtype)), np.zeros(shape, dtype))
    check(ak.ones(spec, dtype=getattr(ak, dtype)), np.ones(shape, dtype))
    e = ak.empty(spec, dtype=getattr(ak, dtype))
    assert e.shape == shape and e.dtype is getattr(ak, dtype)


def test_defaults_and_int_shapes():
    check(ak.zeros(3), np.zeros(3, np.float32))
    check(ak.ones((2, 0)), np.ones((2, 0), np.float32))
    assert ak.empty(()).shape == ()
    assert ak.zeros(np.int64(2)).shape == (2,)
    assert ak.zeros((np.int32(2), 3)).shape == (2, 3)
    check(ak.ones(2, dtype=ak.complex64), np.ones(2, np.complex64))
    check(ak.zeros(2, dtype="int16"), np.zeros(2, np.int16))
    with pytest.raises(ValueError, match="negative"):
        ak.zeros((2, -1))
    with pytest.raises(TypeError):
        ak.ones((2.5,))


@SETTINGS
@given(
    shape=shapes,
    value=st.one_of(st.booleans(), st.integers(-100, 100), st.floats(-1e6, 1e6),
                    st.complex_numbers(max_magnitude=1e6)),
)
def test_full_infers_default_dtypes(shape, value):
    expected_dtype = {bool: np.bool_, int: np.int64, float: np.float32, complex: np.complex64}
    check(ak.full(shape, value), np.full(shape, value, dtype=expected_dtype[type(value)]))


@SETTINGS
@given(shape=shapes, dtype=st.sampled_from(NUMERIC_DTYPES), value=st.integers(0, 100))
def test_full_with_dtype(shape, dtype, value):
    check(ak.full(shape, value, dtype=getattr(ak, dtype)), np.full(shape, value, dtype))


def test_full_special_values():
    check(ak.full(2, np.float64(1.5)), np.full(2, 1.5, np.float64))
    check(ak.full((2,), math.nan), np.full(2, np.nan, np.float32))
    check(ak.full((2,), -math.inf, dtype=ak.float64), np.full(2, -np.inf))
    check(ak.full((), 2**64 - 1, dtype=ak.uint64), np.array(2**64 - 1, np.uint64))
    check(ak.full(2, ak.asarray(3.5)), np.full(2, 3.5, np.float32))
    with pytest.raises(TypeError, match="complex"):
        ak.full(2, 1j, dtype=ak.float32)
    with pytest.raises(OverflowError):
        ak.full(2, 300, dtype=ak.uint8)


@SETTINGS
@given(pair=strided_pairs(), dtype=st.sampled_from((None,) + ALL_DTYPES))
def test_like_functions(pair, dtype):
    x, ref = pair
    kw = {} if dtype is None else {"dtype": getattr(ak, dtype)}
    out_dtype = ref.dtype if dtype is None else np.dtype(dtype)
    check(ak.zeros_like(x, **kw), np.zeros(ref.shape, out_dtype))
    check(ak.ones_like(x, **kw), np.ones(ref.shape, out_dtype))
    check(ak.full_like(x, 1, **kw), np.full(ref.shape, 1, out_dtype))
    e = ak.empty_like(x, **kw)
    assert e.shape == ref.shape and e.dtype.np == out_dtype
    for t in (ak.zeros_like(x), ak.full_like(x, True), ak.empty_like(x)):
        assert t.device == x.device
        assert t.untyped_storage() is not x.untyped_storage()


def test_full_like_fill_kinds():
    x = ak.zeros((2, 3), dtype=ak.int32)
    check(ak.full_like(x, 7), np.full((2, 3), 7, np.int32))
    check(ak.full_like(x, 2.5, dtype=ak.float64), np.full((2, 3), 2.5))
    check(ak.full_like(ak.zeros(2, dtype=ak.bool), True), np.ones(2, bool))
    with pytest.raises(TypeError):
        ak.zeros_like(np.zeros(3))


# ---------------------------------------------------------------------- ranges


@SETTINGS
@given(
    start=st.integers(-50, 50), stop=st.one_of(st.none(), st.integers(-50, 50)),
    step=st.integers(-7, 7).filter(bool),
    dtype=st.sampled_from((None, "int8", "int16", "int32", "int64", "float32", "float64")),
)
def test_arange_integers(start, stop, step, dtype):
    kw = {} if dtype is None else {"dtype": getattr(ak, dtype)}
    args = (start,) if stop is None else (start, stop, step)
    expected = np.arange(*args, dtype=np.int64 if dtype is None else dtype)
    check(ak.arange(*args, **kw), expected)


@SETTINGS
@given(start=st.integers(0, 200), stop=st.integers(0, 255), step=st.integers(-9, 9).filter(bool),
       dtype=st.sampled_from(("uint8", "uint16", "uint32", "uint64")))
def test_arange_unsigned(start, stop, step, dtype):
    check(ak.arange(start, stop, step, dtype=getattr(ak, dtype)),
          np.arange(start, stop, step, dtype=dtype))


@SETTINGS
@given(
    start=st.floats(-100, 100, allow_subnormal=False), stop=st.floats(-100, 100, allow_subnormal=False),
    step=st.floats(0.01, 10) | st.floats(-10, -0.01),
    dtype=st.sampled_from((None, "float32", "float64")),
)
def test_arange_floats(start, stop, step, dtype):
    if math.ceil((stop - start) / step) > 2000:
        step = math.copysign(1.0, step)
    kw = {} if dtype is None else {"dtype": getattr(ak, dtype)}
    expected = np.arange(start, stop, step, dtype=np.float32 if dtype is None else dtype)
    out = ak.arange(start, stop, step, **kw)
    assert out.shape == expected.shape and out.dtype.np == expected.dtype
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-5)
    if expected.size >= 2:  # exact; a value subnormal in the dtype may be flushed to zero
        # (XLA's CPU kernels flush, small results made by NumPy on the host keep it)
        got, want = out.numpy()[:2], expected[:2]
        subnormal = np.abs(want) < np.finfo(expected.dtype).tiny
        np.testing.assert_array_equal(got[~subnormal], want[~subnormal])
        assert np.all((got[subnormal] == want[subnormal]) | (got[subnormal] == 0)), (got, want)


def test_arange_cases():
    check(ak.arange(5), np.arange(5))
    check(ak.arange(5.0), np.arange(5.0, dtype=np.float32))
    check(ak.arange(1, 10, 3, dtype=ak.float32), np.arange(1, 10, 3, dtype=np.float32))
    check(ak.arange(0.5, 4, dtype=ak.int64), np.arange(0.5, 4, dtype=np.int64))
    check(ak.arange(10, 0, -3, dtype=ak.uint8), np.arange(10, 0, -3, dtype=np.uint8))
    check(ak.arange(3, dtype=ak.complex64), np.arange(3, dtype=np.complex64))
    check(ak.arange(2, dtype=ak.bool), np.arange(2, dtype=bool))
    check(ak.arange(2**62, 2**62 + 3), np.arange(2**62, 2**62 + 3))
    check(ak.arange(ak.asarray(4)), np.arange(4))
    check(ak.arange(0, -5), np.arange(0, -5))
    with pytest.raises(ValueError, match="nonzero"):
        ak.arange(0, 5, 0)
    with pytest.raises(TypeError):
        ak.arange(3, dtype=ak.bool)
    with pytest.raises(TypeError):
        ak.arange(1j)


@SETTINGS
@given(
    start=st.floats(-1e3, 1e3).filter(lambda v: v == 0 or abs(v) > 1e-30),
    stop=st.floats(-1e3, 1e3).filter(lambda v: v == 0 or abs(v) > 1e-30),
    num=st.integers(0, 40),
    endpoint=st.booleans(),
    dtype=st.sampled_from((None, "float32", "float64", "int32", "int64")),
)
def test_linspace(start, stop, num, endpoint, dtype):
    """Same algorithm as NumPy; XLA fuses ``i*step + start`` into one rounding (FMA),
    so values may differ from NumPy's in the last bit (and by one after an integer floor).
    XLA on CPU flushes subnormals (also float32 ones) to zero, so tiny values are not drawn."""
    kw = {} if dtype is None else {"dtype": getattr(ak, dtype)}
    expected = np.linspace(start, stop, num, endpoint=endpoint,
                           dtype=np.float32 if dtype is None else dtype)
    out = ak.linspace(start, stop, num, endpoint=endpoint, **kw)
    assert out.shape == expected.shape and out.dtype.np == expected.dtype
    got = out.numpy()
    if expected.dtype.kind in "iu":
        assert np.abs(got.astype(np.int64) - expected).max(initial=0) <= 1
    else:
        scale = max(abs(start), abs(stop), 1.0)
        tol = 4 * np.finfo(expected.dtype).eps * scale
        np.testing.assert_allclose(got, expected, rtol=0, atol=tol)
    if num and endpoint:
        assert got[0] == expected[0] and got[-1] == expected[-1]


def test_linspace_complex_and_errors():
    check(ak.linspace(0, 1 + 2j, 5), np.linspace(0, 1 + 2j, 5, dtype=np.complex64))
    check(ak.linspace(1j, 3, 4, endpoint=False, dtype=ak.complex128),
          np.linspace(1j, 3, 4, endpoint=False))
    check(ak.linspace(2, 3, 1), np.linspace(2, 3, 1, dtype=np.float32))
    check(ak.linspace(5, 5, 3), np.linspace(5, 5, 3, dtype=np.float32))
    with pytest.raises(ValueError, match="non-negative"):
        ak.linspace(0, 1, -1)
    with pytest.raises(TypeError):
        ak.linspace(0, 1j, 3, dtype=ak.float32)
    with pytest.raises(TypeError):
        ak.linspace(0, 1, 2.5)


@SETTINGS
@given(n=st.integers(0, 6), m=st.one_of(st.none(), st.integers(0, 6)), k=st.integers(-7, 7),
       dtype=st.sampled_from((None,) + ALL_DTYPES))
def test_eye(n, m, k, dtype):
    kw = {} if dtype is None else {"dtype": getattr(ak, dtype)}
    check(ak.eye(n, m, k=k, **kw), np.eye(n, m, k=k, dtype=np.float32 if dtype is None else dtype))


def test_eye_errors():
    with pytest.raises(ValueError):
        ak.eye(-1)
    with pytest.raises(TypeError):
        ak.eye(2.0)


# ---------------------------------------------------------------------- from tensors


@SETTINGS
@given(
    pair=strided_pairs(shape=hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=5)),
    k=st.integers(-6, 6),
)
def test_tril_triu(pair, k):
    x, ref = pair
    check(ak.tril(x, k=k), np.tril(ref, k=k))
    check(ak.triu(x, k=k), np.triu(ref, k=k))
    check(ak.tril(x), np.tril(ref))


def test_tril_triu_errors():
    with pytest.raises(ValueError, match="2 dimensions"):
        ak.tril(ak.ones(3))
    with pytest.raises(ValueError, match="2 dimensions"):
        ak.triu(ak.ones(()))
    with pytest.raises(TypeError):
        ak.tril(np.ones((2, 2)))


@SETTINGS
@given(
    pairs=st.lists(strided_pairs(shape=hnp.array_shapes(min_dims=1, max_dims=1, max_side=4)),
                   min_size=0, max_size=3),
    indexing=st.sampled_from(["xy", "ij"]),
)
def test_meshgrid(pairs, indexing):
    out = ak.meshgrid(*[x for x, _ in pairs], indexing=indexing)
    expected = np.meshgrid(*[r for _, r in pairs], indexing=indexing)
    assert isinstance(out, tuple) and len(out) == len(expected)
    for o, e in zip(out, expected):
        check(o, e)


def test_meshgrid_errors_and_writes():
    a, b = ak.arange(3), ak.arange(2.0)
    gx, gy = ak.meshgrid(a, b)
    gx[0, 0] = 7
    assert a[0].item() == 0 and gx[0, 0].item() == 7
    with pytest.raises(ValueError, match="indexing"):
        ak.meshgrid(a, b, indexing="yx")
    with pytest.raises(ValueError, match="1-D"):
        ak.meshgrid(ak.ones((2, 2)))
    with pytest.raises(TypeError):
        ak.meshgrid(np.arange(3))


# ---------------------------------------------------------------------- asarray

scalars = st.one_of(st.booleans(), st.integers(-1000, 1000), st.floats(-1e6, 1e6),
                    st.complex_numbers(max_magnitude=1e6))


def nested(elements, depth):
    """Rectangular nested lists of ``elements`` with up to ``depth`` levels."""
    return hnp.array_shapes(min_dims=1, max_dims=depth, min_side=0, max_side=3).flatmap(
        lambda shape: st.lists(elements, min_size=math.prod(shape), max_size=math.prod(shape)).map(
            lambda flat: np.array(flat, dtype=object).reshape(shape).tolist()
        )
    )


def _default_dtype(flat):
    kinds = {type(v) for v in flat}
    for t, d in ((complex, np.complex64), (float, np.float32), (int, np.int64), (bool, np.bool_)):
        if t in kinds:
            return d
    return np.float32


@SETTINGS
@given(obj=nested(scalars, 3))
def test_asarray_nested_python_default_dtypes(obj):
    ref = np.array(obj, dtype=object)
    flat = ref.reshape(-1).tolist()
    expected = np.array(obj).astype(_default_dtype(flat)) if flat else np.zeros(ref.shape, np.float32)
    check(ak.asarray(obj), expected.reshape(ref.shape))


@SETTINGS
@given(obj=nested(st.integers(0, 100), 2), dtype=st.sampled_from(NUMERIC_DTYPES))
def test_asarray_nested_with_dtype(obj, dtype):
    check(ak.asarray(obj, dtype=getattr(ak, dtype)), np.asarray(obj, dtype=dtype))


@pytest.mark.parametrize("value,dtype", [
    (True, np.bool_), (3, np.int64), (2.5, np.float32), (1 - 2j, np.complex64),
    (np.float64(1.5), np.float64), (np.int8(3), np.int8), (np.bool_(True), np.bool_),
])
def test_asarray_scalars(value, dtype):
    check(ak.asarray(value), np.asarray(value, dtype=dtype))


def test_asarray_scalar_with_dtype_and_errors():
    check(ak.asarray(3, dtype=ak.float64), np.asarray(3.0))
    check(ak.asarray(True, dtype=ak.int8), np.asarray(1, np.int8))
    with pytest.raises(TypeError, match="complex"):
        ak.asarray(1j, dtype=ak.float32)
    with pytest.raises(TypeError, match="complex"):
        ak.asarray([1, 2j], dtype=ak.float64)
    with pytest.raises(OverflowError):
        ak.asarray(2**64)
    with pytest.raises(ValueError):
        ak.asarray([[1, 2], [3]])
    with pytest.raises(TypeError):
        ak.asarray("abc")
    with pytest.raises(TypeError):
        ak.asarray(np.zeros(2, np.longdouble))
    with pytest.raises(ValueError):
        ak.asarray(1, copy=False)
    with pytest.raises(ValueError):
        ak.asarray([1, 2], copy=False)


@SETTINGS
@given(ref=st.sampled_from(ALL_DTYPES).flatmap(lambda d: values(d, shapes)),
       kind=st.sampled_from(["plain", "transposed", "stepped", "flipped"]))
def test_asarray_numpy_layouts(ref, kind):
    src = ref
    if kind == "transposed" and ref.ndim >= 2:
        src = np.ascontiguousarray(np.swapaxes(ref, 0, 1)).swapaxes(0, 1)
    elif kind == "stepped" and ref.ndim >= 1:
        big = np.zeros((2 * ref.shape[0],) + ref.shape[1:], ref.dtype)
        big[::2] = ref
        src = big[::2]
    elif kind == "flipped" and ref.ndim >= 1:
        src = np.ascontiguousarray(ref[::-1])[::-1]
    np.testing.assert_array_equal(src, ref)
    check(ak.asarray(src), ref)
    check(ak.from_numpy(src), ref)


@pytest.mark.parametrize("make", [aligned_array, unaligned_array])
def test_asarray_numpy_copies_by_default(make):
    a = make(np.arange(64), np.float32)
    t = ak.asarray(a)
    f = ak.tensor(a)
    a[:] = -1
    np.testing.assert_array_equal(t.numpy(), np.arange(64, dtype=np.float32))
    np.testing.assert_array_equal(f.numpy(), np.arange(64, dtype=np.float32))
    t[0] = 5
    f[1] = 6
    assert a[0] == a[1] == -1  # from_numpy shares instead: tests/test_from_numpy.py


def test_asarray_numpy_copy_false():
    """copy=False aliases host memory: on the CPU only."""
    a = aligned_array(np.arange(16).reshape(4, 4), np.int32)
    t = ak.asarray(a, copy=False, device="cpu")
    a[0, 0] = 99
    assert t[0, 0].item() == 99
    t[1, 1] = -5
    assert a[1, 1] == 5
    assert t[1, 1].item() == -5
    s = ak.asarray(a[:, ::2].T, copy=False, device="cpu")
    assert s.shape == (2, 4) and s.stride() == (2, 4)
    np.testing.assert_array_equal(s.numpy(), a[:, ::2].T)
    with pytest.raises(ValueError, match="aligned"):
        ak.asarray(unaligned_array(np.arange(8), np.float32), copy=False, device="cpu")
    with pytest.raises(ValueError, match="copy"):
        ak.asarray(a, dtype=ak.int64, copy=False, device="cpu")


def test_asarray_tensor_copy_semantics():
    x = ak.arange(6).reshape(2, 3).mT
    assert ak.asarray(x) is x
    assert ak.asarray(x, copy=False) is x
    assert ak.asarray(x, dtype=ak.int64) is x
    c = ak.asarray(x, copy=True)
    assert c.untyped_storage() is not x.untyped_storage()
    c[0, 0] = 100
    assert x[0, 0].item() == 0
    f = ak.asarray(x, dtype=ak.float64)
    check(f, np.arange(6.0).reshape(2, 3).T)
    with pytest.raises(ValueError, match="copy"):
        ak.asarray(x, dtype=ak.float32, copy=False)
    assert ak.asarray(x, device=x.device) is x


def test_asarray_jax_arrays():
    j = jnp.arange(5.0)
    t = ak.asarray(j)
    assert t.dtype is ak.float32
    assert t.untyped_storage().buffer is j
    square = jnp.ones((2, 3))
    assert ak.asarray(square).untyped_storage().buffer is square  # any shape, no copy
    t[0] = 10.0
    assert float(j[0]) == 0.0 and t[0].item() == 10.0
    m = ak.asarray(jnp.ones((2, 3), jnp.int32), dtype=ak.float32)
    check(m, np.ones((2, 3), np.float32))
    c = ak.asarray(j, copy=True)
    assert c.untyped_storage().buffer is not j
    with pytest.raises(ValueError, match="copy"):
        ak.asarray(j, dtype=ak.float64, copy=False)


def test_asarray_buffer_protocol_and_array_like():
    check(ak.asarray(b"\x01\x02\x03"), np.array([1, 2, 3], np.uint8))
    check(ak.asarray(bytearray(b"\x05\x06")), np.array([5, 6], np.uint8))
    check(ak.asarray(array.array("d", [1.5, 2.5])), np.array([1.5, 2.5]))
    check(ak.asarray(memoryview(np.arange(6, dtype=np.int16).reshape(2, 3))),
          np.arange(6, dtype=np.int16).reshape(2, 3))
    check(ak.asarray(array.array("i", [1, 2]), dtype=ak.float64), np.array([1.0, 2.0]))

    class ArrayLike:
        def __array__(self, dtype=None, copy=None):
            return np.arange(4, dtype=np.int16)

    check(ak.asarray(ArrayLike()), np.arange(4, dtype=np.int16))
    check(ak.asarray([np.float64(1.5), 2.0]), np.array([1.5, 2.0]))
    check(ak.asarray([np.arange(2, dtype=np.int8), np.arange(2, dtype=np.int8)]),
          np.zeros((2, 2), np.int8) + np.arange(2, dtype=np.int8))


def test_asarray_sequences_of_tensors():
    a = ak.asarray([1, 2], dtype=ak.int8)
    check(ak.asarray([a, a]), np.array([[1, 2], [1, 2]], np.int8))
    check(ak.asarray([a[0], 5, True]), np.array([1, 5, 1], np.int8))
    check(ak.asarray([a[0], 2.5]), np.array([1.0, 2.5], np.float32))
    check(ak.asarray([[a[0], 2], [3, a[1]]], dtype=ak.float64), np.array([[1.0, 2], [3, 2]]))
    f = ak.arange(3.0, dtype=ak.float64)[::-1]
    check(ak.asarray((f, ak.asarray([1, 2, 3], dtype=ak.int16))), np.array([[2.0, 1, 0], [1, 2, 3]]))
    check(ak.asarray([ak.ones((2, 2)), ak.zeros((2, 2))]), np.stack([np.ones((2, 2)), np.zeros((2, 2))]).astype(np.float32))
    with pytest.raises(ValueError, match="inhomogeneous"):
        ak.asarray([a, 1])
    with pytest.raises(ValueError, match="inhomogeneous"):
        ak.asarray([ak.ones(2), ak.ones(3)])


def test_creation_under_jax_jit():
    def f(x):
        t = ak.asarray(x)
        return ak.asarray([t, ak.zeros(3), ak.arange(3.0), ak.linspace(0, 1, 3), ak.full(3, 2.0)])

    out = jax.jit(f)(jnp.arange(3.0))
    expected = np.stack([np.arange(3.0), np.zeros(3), np.arange(3.0), np.linspace(0, 1, 3),
                         np.full(3, 2.0)])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    assert jax.jit(lambda x: ak.tril(ak.asarray(x)))(jnp.ones((3, 3))).numpy().sum() == 6


def test_device_keyword_everywhere():
    dev = jax.devices("cpu")[0]
    made = [
        ak.zeros(2, device="cpu"), ak.ones(2, device=dev), ak.empty(2, device="cpu:0"),
        ak.full(2, 1, device=dev), ak.arange(3, device=dev), ak.linspace(0, 1, 3, device=dev),
        ak.eye(2, device="cpu"), ak.asarray([1, 2], device=dev), ak.asarray(np.ones(2), device=dev),
        ak.zeros_like(ak.ones(2), device=dev), ak.from_dlpack(np.ones(2), device=dev),
    ]
    for t in made:
        assert t.device == dev
        assert t.untyped_storage().buffer.devices() == {dev}
    with pytest.raises(ValueError, match="does not exist"):
        ak.zeros(2, device="cpu:7")
    with pytest.raises(ValueError, match="unknown device"):
        ak.zeros(2, device="abacus")
    with pytest.raises(TypeError):
        ak.zeros(2, device=3)


def test_creation_kernels_write_independently():
    a = ak.zeros(4)
    b = ak.zeros(4)
    a[1] = 3.0
    check(b, np.zeros(4, np.float32))
    check(a, np.array([0, 3, 0, 0], np.float32))
    e = make_view(np.arange(6.0).reshape(2, 3), "transposed")
    z = ak.zeros_like(e)
    z += 1
    check(z, np.ones((2, 3)))


def test_asarray_copies_host_data_before_returning():
    """A NumPy array changed right after asarray must not reach the tensor (async copies)."""
    n = (1 << 21) + 3
    for offset in range(4):  # aligned and unaligned host memory
        host = np.ones(n + offset, np.float32)[offset:]
        t = ak.asarray(host)
        host[:] = 5
        assert t.numpy()[-1] == 1.0 and t.numpy()[0] == 1.0
