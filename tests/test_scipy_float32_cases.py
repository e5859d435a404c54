"""The arraykit behaviours behind SciPy 1.17.1's arraykit-f32 failures that pass on torch-f32.

``conformance/scipy_report.md`` traces each of those 15 failures to a behaviour of
PyTorch's or NumPy's that arraykit shares (SciPy adjusts, skips or xfails the test for
torch only) or to the array API standard's promotion, which PyTorch does not follow for
0-d tensors. These tests pin each behaviour against its oracle under a float32 default,
so that a change made to please SciPy's tests shows up here.
"""

from __future__ import annotations

import numpy as np
import pytest

import arraykit as ak


@pytest.fixture
def float32_default():
    """arraykit (and PyTorch, when installed) with a float32 default, restored afterwards."""
    torch = pytest.importorskip("torch")
    ak_before, torch_before = ak.get_default_dtype(), torch.get_default_dtype()
    ak.set_default_dtype(ak.float32)
    torch.set_default_dtype(torch.float32)
    yield torch
    ak.set_default_dtype(ak_before)
    torch.set_default_dtype(torch_before)


def test_integers_with_a_python_float_give_the_default(float32_default):
    # special.xlogy / rel_entr of two int64 arrays: SciPy promotes with `1.0` (force_floating)
    torch = float32_default
    x = ak.asarray([1, 2, 3])
    assert ak.result_type(x, x, 1.0) is ak.float32
    assert str(torch.result_type(torch.tensor([1, 2, 3]), 1.0)) == "torch.float32"
    assert (x * 1.0).dtype is ak.float32


def test_a_0d_float64_array_widens_float32_as_in_numpy(float32_default):
    # spatial test_from_exp_coords: xp.asarray(np.deg2rad(30.0)) * xp.asarray([...])
    scale = np.deg2rad(30.0)
    values = [0.0, 1.0, 3.37, -3.37]
    got = ak.asarray(scale) * ak.asarray(values)
    want = np.asarray(scale) * np.asarray(values, dtype=np.float32)
    assert ak.asarray(scale).dtype is ak.float64
    assert got.dtype is ak.float64 and want.dtype == np.float64
    np.testing.assert_array_equal(got.numpy(), want)


def test_python_complex_values_take_the_default_complex(float32_default):
    # signal TestConvolve / TestConvolve2d: the expected arrays are Python complex literals
    torch = float32_default
    assert ak.asarray([[62.0 + 24j, 80.0 + 30j]]).dtype is ak.complex64
    assert torch.asarray([[62.0 + 24j, 80.0 + 30j]]).dtype == torch.complex64


def test_the_phase_of_exp_of_float32_pi_is_minus_pi(float32_default):
    # signal vectorstrength: angle(exp(2j * (pi / 1 * 0.5))) in float32; float32's pi
    # exceeds pi, so the imaginary part is -8.7e-8 and the phase is -pi in NumPy and PyTorch
    torch = float32_default
    periods = [1.0, 2.0, 5.0]
    events = [[0.5]]

    def phase(xp):
        period = xp.asarray([periods])
        vectors = xp.exp(2j * (xp.pi / period.T @ xp.asarray(events)))
        mean = xp.mean(vectors, axis=1)
        return xp.atan2(xp.imag(mean), xp.real(mean))

    got = phase(ak)
    assert got.dtype is ak.float32
    np.testing.assert_array_equal(got.numpy(), phase(torch).numpy())
    z = np.exp(np.complex64(2j) * (np.float32(np.pi) / np.float32(periods[0]) * np.float32(0.5)))
    assert z.imag < 0  # NumPy's complex64 has the same negative imaginary part
    np.testing.assert_allclose(got.numpy()[0], -np.pi, rtol=1e-7)
