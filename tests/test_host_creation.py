"""Small creation results on the CPU are computed by NumPy on the host from the same
bodies as the kernels (arraykit.api.creation._launch): they compile nothing, keep no
kernel alive, and give the kernel's values bit for bit and NumPy's values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

import arraykit as ak
from arraykit.api import creation
from arraykit.kernels import launch

CPU = "cpu"
DTYPES = ["bool", "int8", "uint8", "int32", "int64", "uint64", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128"]
REAL = [d for d in DTYPES if not d.startswith(("complex", "bool"))]


def _bits(t):
    """The tensor's bytes, so that -0.0 and NaN payloads count."""
    return np.ascontiguousarray(np.asarray(t)).view(np.uint8)


def _both(make):
    """``make()`` through the host path, then through the kernel path."""
    host = make()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(creation, "HOST_ELEMENTS", -1)
        kernel = make()
    return host, kernel


def _same(host, kernel):
    """Same bits, except where the kernel flushed a subnormal result to zero (XLA's CPU
    code does, NumPy does not)."""
    assert host.dtype == kernel.dtype and host.shape == kernel.shape
    assert host.device == kernel.device
    assert host._storage._buffer.shape == kernel._storage._buffer.shape  # 0-d stays 0-d
    h, k = np.asarray(host), np.asarray(kernel)
    if h.dtype.kind in "fc":
        tiny = np.finfo(h.dtype).smallest_normal
        flushed = (k == 0) & (np.abs(h) < tiny) if h.dtype.kind == "f" else (
            ((k.real == 0) & (np.abs(h.real) < tiny)) | ((k.imag == 0) & (np.abs(h.imag) < tiny)))
        h = np.where(flushed, k, h)
    np.testing.assert_array_equal(_bits(h), _bits(k))


starts = st.one_of(st.integers(-300, 300), st.floats(-1e4, 1e4, allow_nan=False, width=32))


@settings(max_examples=60, deadline=None)
@given(start=starts, length=st.integers(0, 60), step=st.one_of(
    st.integers(-7, 7).filter(bool), st.floats(0.01, 5) | st.floats(-5, -0.01)),
    dtype=st.sampled_from(REAL + [None]))
def test_arange_host_matches_kernel_and_numpy(start, length, step, dtype):
    stop = start + length * step
    try:
        host, kernel = _both(lambda: ak.arange(start, stop, step, dtype=dtype, device=CPU))
    except OverflowError:  # start or stop outside an integer dtype: NumPy's error too
        reject()
    _same(host, kernel)
    got = np.asarray(host)
    exact = all(isinstance(v, int) for v in (start, step))
    if dtype in (None, "float32", "float64") or dtype == "int64" and exact:
        want = np.arange(start, stop, step, dtype=got.dtype)
        rtol = 0 if got.dtype.kind == "i" else 8 * np.finfo(got.dtype).eps
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * abs(step))


@settings(max_examples=60, deadline=None)
@given(start=st.floats(-1e6, 1e6, allow_nan=False), stop=st.floats(-1e6, 1e6, allow_nan=False),
       num=st.integers(0, 50), endpoint=st.booleans(),
       dtype=st.sampled_from(["float32", "float64", "int32", "uint8", "complex64"]))
def test_linspace_host_matches_kernel(start, stop, num, endpoint, dtype):
    host, kernel = _both(lambda: ak.linspace(start, stop, num, endpoint=endpoint,
                                                          dtype=dtype, device=CPU))
    _same(host, kernel)
    if dtype == "float64":
        want = np.linspace(start, stop, num, endpoint=endpoint)
        np.testing.assert_allclose(np.asarray(host), want, rtol=1e-13, atol=1e-9)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fills_and_eye_host_match_kernel(dtype):
    for make in (lambda: ak.zeros((3, 4), dtype=dtype, device=CPU),
                 lambda: ak.ones((2, 0, 5), dtype=dtype, device=CPU),
                 lambda: ak.full((7,), True if dtype == "bool" else 3, dtype=dtype, device=CPU),
                 lambda: ak.full((), 1, dtype=dtype, device=CPU),
                 lambda: ak.eye(4, 6, k=-1, dtype=dtype, device=CPU),
                 lambda: ak.eye(5, k=7, dtype=dtype, device=CPU),
                 lambda: ak.eye(2, 3, k=2**70, dtype=dtype, device=CPU),
                 lambda: ak.eye(3, 2, k=-2**64, dtype=dtype, device=CPU)):
        _same(*_both(make))
    np.testing.assert_array_equal(np.asarray(ak.eye(4, 6, k=2, dtype=dtype, device=CPU) == 1),
                                  np.eye(4, 6, k=2) == 1)


def test_full_of_a_nan_and_negative_zero_keeps_their_bits():
    for value in (float("nan"), -0.0, float("-inf")):
        _same(*_both(lambda: ak.full((3,), value, dtype="float32", device=CPU)))
        assert _bits(ak.full((1,), value, device=CPU)).tolist() == \
            np.full(1, value, np.float32).view(np.uint8).tolist()


def test_host_path_compiles_nothing_and_keeps_no_kernel():
    creation._CREATE.clear()
    launch.cache_clear()
    for n in range(1, 40):
        ak.zeros((n, 3), device=CPU)
        ak.arange(n, device=CPU)
        ak.linspace(0, 1, n, device=CPU)
        ak.eye(n, device=CPU)
        ak.full((n,), 2.5, device=CPU)
    assert creation._CREATE == {}
    assert launch.cache_info()["traces"] == 0


def test_large_results_and_traces_still_use_kernels():
    creation._CREATE.clear()
    n = creation.HOST_ELEMENTS + 1
    big = ak.arange(n, dtype="int32", device=CPU)
    assert len(creation._CREATE) == 1
    np.testing.assert_array_equal(np.asarray(big), np.arange(n, dtype=np.int32))

    @ak.jit
    def shifted(x):
        return x + ak.arange(3, dtype=x.dtype, device=x.device)

    x = ak.ones(3, device=CPU)
    np.testing.assert_array_equal(np.asarray(shifted(x)), [1.0, 2.0, 3.0])
    assert len(creation._CREATE) == 2  # traced: a kernel, inlined into the program


def test_host_results_are_private_and_writable():
    z = ak.zeros(8, device=CPU)
    o = ak.zeros(8, device=CPU)
    z[2:4] = 5.0
    z.add_(1)
    np.testing.assert_array_equal(np.asarray(z), [1, 1, 6, 6, 1, 1, 1, 1])
    np.testing.assert_array_equal(np.asarray(o), np.zeros(8))


def test_linspace_into_integers_saturates_like_xla_on_both_paths():
    cases = [((0, 1000, 3, "int8"), [0, 127, 127]),
             ((0, float("inf"), 3, "int32"), [0, 2**31 - 1, 2**31 - 1]),
             ((float("nan"), 4.0, 3, "int64"), [0, 0, 4]),
             ((-1e30, 1e30, 3, "int64"), [-2**63, 0, 2**63 - 1]),
             ((0, 1e30, 2, "uint64"), [0, 2**64 - 1]),
             ((-5, 300, 4, "uint8"), [0, 96, 198, 255])]
    for (start, stop, num, dtype), want in cases:
        host, kernel = _both(lambda: ak.linspace(start, stop, num, dtype=dtype, device=CPU))
        _same(host, kernel)
        assert np.asarray(host).tolist() == want, (start, stop, dtype)


def test_bfloat16_arange_with_a_fractional_step():
    got = ak.arange(0, 1, 0.25, dtype="bfloat16", device=CPU)
    np.testing.assert_array_equal(ak.astype(got, ak.float32).numpy(), [0, 0.25, 0.5, 0.75])
    _same(*_both(lambda: ak.arange(-3, 2, 0.375, dtype="bfloat16", device=CPU)))


def test_eye_with_an_empty_side_allocates_nothing():
    for make in (lambda: ak.eye(0, 10**12, device=CPU), lambda: ak.eye(10**12, 0, device=CPU)):
        host, kernel = _both(make)
        assert host.shape == kernel.shape and 0 in host.shape


def test_linspace_into_integers_of_a_subnormal_start_agrees_on_both_paths():
    """Found by hypothesis: -1.1e-308 is flushed to zero by XLA's CPU code before the
    floor; the host path flushes it too, so both give 0 (NumPy's own floor gives -1)."""
    for start in (-1.1125369292536007e-308, -5e-324):
        host, kernel = _both(lambda: ak.linspace(start, 0.0, 1, endpoint=False, dtype=ak.int32,
                                                 device=CPU))
        assert host.tolist() == kernel.tolist() == [0]
