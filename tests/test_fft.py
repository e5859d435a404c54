"""``arraykit.fft`` against ``numpy.fft`` on strided inputs: values, dtypes, shapes, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit as ak
from strategies import ALL_DTYPES, strided_pairs

F = ak.fft
SETTINGS = settings(max_examples=15, deadline=None)
NORMS = st.sampled_from(["backward", "ortho", "forward"])
REAL = ("float32", "float64")
COMPLEX = ("complex64", "complex128")
SHAPES = st.sampled_from([(5,), (8,), (1, 6), (3, 4), (2, 3, 4)])


def pairs(dtypes):
    return strided_pairs(dtype=st.sampled_from(dtypes), shape=SHAPES, min_value=-10, max_value=10)


def wide(a):
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def expect(got, want, dtype, a):
    """Shape, dtype and values of ``got`` against NumPy's float64/complex128 ``want``."""
    dtype = np.dtype(dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype.np == dtype, (got.dtype, dtype)
    single = dtype in (np.float32, np.complex64)
    scale = max(1.0, float(np.abs(a).max(initial=1))) * max(1, a.size)
    t = 1e-6 if single else 1e-13
    np.testing.assert_allclose(got.numpy(), want, rtol=t * 10, atol=t * scale)


def complex_of(dtype):
    return np.result_type(dtype, np.complex64)


def real_of(dtype):
    return np.finfo(np.dtype(dtype)).dtype


@st.composite
def n_axis(draw, a, half=False):
    axis = draw(st.integers(-a.ndim, a.ndim - 1))
    m = a.shape[axis]
    lo = 2 if half else 1
    n = draw(st.none() | st.integers(lo, 2 * m + 2))
    if half and n is None and m < 2:
        n = 2
    return n, axis


def check_1d(name, pair, norm, data, half=False):
    """The 1-D transform ``name`` against NumPy's, along a drawn axis with a drawn ``n``;
    ``half``: a complex-to-real transform (``n`` counts real outputs)."""
    x, a = pair
    n, axis = data.draw(n_axis(a, half))
    got = getattr(F, name)(x, n=n, axis=axis, norm=norm)
    want = getattr(np.fft, name)(wide(a), n=n, axis=axis, norm=norm)
    expect(got, want, (real_of if half else complex_of)(a.dtype), a)


@SETTINGS
@given(pairs(REAL + COMPLEX), NORMS, st.sampled_from(["fft", "ifft"]), st.data())
def test_fft_ifft(pair, norm, name, data):
    check_1d(name, pair, norm, data)


@st.composite
def s_axes(draw, a, half=False):
    """(s, axes) for the n-D transforms (axes may be None only when s is None)."""
    axes = draw(st.none() | st.lists(st.integers(0, a.ndim - 1), min_size=1, unique=True))
    used = list(range(a.ndim)) if axes is None else axes
    if draw(st.booleans()):
        return None, axes
    s = [draw(st.integers(1, 2 * a.shape[i] + 1)) for i in used]
    if half:
        s[-1] = max(s[-1], 2)
    if draw(st.booleans()):
        s[0] = -1
    return s, used


def numpy_s(a, s, axes, half=False):
    """NumPy spelling of ``s`` (it has no -1 entries)."""
    if s is None:
        return None
    out = []
    for k, (v, ax) in enumerate(zip(s, axes)):
        default = 2 * (a.shape[ax] - 1) if half and k == len(s) - 1 else a.shape[ax]
        out.append(default if v == -1 else v)
    return out


def check_nd(name, pair, norm, data):
    """The n-D transform ``name`` (complex result) against NumPy's, with drawn ``s``, ``axes``."""
    x, a = pair
    s, axes = data.draw(s_axes(a))
    got = getattr(F, name)(x, s=s, axes=axes, norm=norm)
    want = getattr(np.fft, name)(wide(a), s=numpy_s(a, s, axes), axes=axes, norm=norm)
    expect(got, want, complex_of(a.dtype), a)


@SETTINGS
@given(pairs(REAL + COMPLEX), NORMS, st.sampled_from(["fftn", "ifftn"]), st.data())
def test_fftn_ifftn(pair, norm, name, data):
    check_nd(name, pair, norm, data)


@SETTINGS
@given(pairs(REAL), NORMS, st.sampled_from(["rfft", "ihfft"]), st.data())
def test_rfft_ihfft(pair, norm, name, data):
    check_1d(name, pair, norm, data)


@SETTINGS
@given(pairs(REAL + COMPLEX), NORMS, st.sampled_from(["irfft", "hfft"]), st.data())
def test_irfft_hfft(pair, norm, name, data):
    check_1d(name, pair, norm, data, half=True)


@SETTINGS
@given(pairs(REAL), NORMS, st.data())
def test_rfftn(pair, norm, data):
    check_nd("rfftn", pair, norm, data)


@SETTINGS
@given(pairs(REAL + COMPLEX), NORMS, st.data())
def test_irfftn(pair, norm, data):
    x, a = pair
    s, axes = data.draw(s_axes(a, half=True))
    last = a.ndim - 1 if axes is None else axes[-1]
    if s is None and a.shape[last] < 2:
        s, axes = [2], [last]
    elif s is not None and s[-1] == -1 and a.shape[last] < 2:
        s = list(s[:-1]) + [2]  # -1 keeps the input length, which would give 0 points
    got = F.irfftn(x, s=s, axes=axes, norm=norm)
    want = np.fft.irfftn(wide(a), s=numpy_s(a, s, axes, half=True), axes=axes, norm=norm)
    expect(got, want, real_of(a.dtype), a)


@SETTINGS
@given(pairs(COMPLEX), NORMS)
def test_round_trips(pair, norm):
    x, a = pair
    back = F.ifft(F.fft(x, norm=norm), norm=norm)
    expect(back, wide(a), a.dtype, a)
    n = 2 * a.shape[-1]
    real = F.irfft(F.rfft(ak.asarray(a.real.copy()), n=n, norm=norm), n=n, norm=norm)
    assert real.shape == a.shape[:-1] + (n,)
    np.testing.assert_allclose(real.numpy()[..., : a.shape[-1]], a.real, atol=1e-3)


@SETTINGS
@given(st.integers(1, 20), st.floats(0.1, 5), st.sampled_from([None, "float32", "float64"]))
def test_fftfreq_rfftfreq(n, d, dtype):
    dt = None if dtype is None else getattr(ak, dtype)
    want_dtype = np.dtype(dtype or "float32")
    for ours, theirs in ((F.fftfreq, np.fft.fftfreq), (F.rfftfreq, np.fft.rfftfreq)):
        got = ours(n, d=d, dtype=dt, device="cpu")
        want = theirs(n, d=d).astype(want_dtype)
        assert got.dtype.np == want_dtype and got.shape == want.shape
        assert got.device == ak.asarray(np.zeros(1), device="cpu").device
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


@SETTINGS
@given(
    strided_pairs(dtype=st.sampled_from(ALL_DTYPES), shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5)),
    st.data(),
)
def test_fftshift_ifftshift(pair, data):
    x, a = pair
    axes = data.draw(
        st.none()
        | st.integers(-a.ndim, a.ndim - 1)
        | st.lists(st.integers(0, a.ndim - 1), max_size=a.ndim, unique=True)
    )
    for ours, theirs in ((F.fftshift, np.fft.fftshift), (F.ifftshift, np.fft.ifftshift)):
        got = ours(x, axes=axes)
        want = theirs(a, axes=axes)
        assert got.dtype.np == a.dtype and got.shape == a.shape
        np.testing.assert_array_equal(got.numpy(), want)


def test_dtype_requirements():
    ints = ak.asarray(np.arange(4))
    cplx = ak.asarray(np.ones(4, np.complex64))
    for fn in (F.fft, F.ifft, F.fftn, F.ifftn, F.rfft, F.irfft, F.rfftn, F.irfftn, F.hfft, F.ihfft):
        with pytest.raises(TypeError):
            fn(ints)
    for fn in (F.rfft, F.rfftn, F.ihfft):
        with pytest.raises(TypeError, match="real floating"):
            fn(cplx)
    with pytest.raises(TypeError):
        F.fftfreq(4, dtype=ak.int64)
    with pytest.raises(TypeError):
        F.fft(np.ones(4))


def test_argument_errors():
    x = ak.asarray(np.ones((2, 4), np.complex128))
    with pytest.raises(ValueError, match="norm"):
        F.fft(x, norm="none")
    with pytest.raises(ValueError, match="n=0"):
        F.fft(x, n=0)
    with pytest.raises(IndexError):
        F.fft(x, axis=2)
    with pytest.raises(ValueError):
        F.fft(ak.asarray(np.complex128(1)))
    with pytest.raises(ValueError, match="same length"):
        F.fftn(x, s=(2, 2), axes=(0,))
    with pytest.raises(ValueError, match="repeated"):
        F.fftn(x, axes=(0, 0))
    with pytest.raises(ValueError):
        F.irfft(ak.asarray(np.ones((2, 1), np.complex128)))
    with pytest.raises(ValueError):
        F.fftfreq(0)
