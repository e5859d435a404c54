"""``set_default_dtype`` / ``get_default_dtype``: PyTorch's process-wide default float dtype.

Every default follows it (creation, ``asarray`` of Python floats and complex numbers,
random draws, float results of integer inputs, ``default_dtypes()``), compared with
PyTorch under ``torch.set_default_dtype``; ``arraykit.jit`` programs that baked the
default are traced again after a change.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arraykit as ak


@pytest.fixture(params=["float32", "float64"])
def default(request):
    """Both arraykit and PyTorch switched to the parametrized default, restored afterwards."""
    ak_before, torch_before = ak.get_default_dtype(), torch.get_default_dtype()
    ak.set_default_dtype(getattr(ak, request.param))
    torch.set_default_dtype(getattr(torch, request.param))
    yield request.param
    ak.set_default_dtype(ak_before)
    torch.set_default_dtype(torch_before)


def _name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


CREATIONS = {
    "zeros": (lambda m: m.zeros(2, 3)),
    "ones": (lambda m: m.ones(3)),
    "empty": (lambda m: m.empty(2)),
    "full float": (lambda m: m.full((2,), 1.5)),
    "full complex": (lambda m: m.full((2,), 1.5j)),
    "arange float": (lambda m: m.arange(0.0, 3.0)),
    "arange int": (lambda m: m.arange(3)),
    "linspace": (lambda m: m.linspace(0, 1, 5)),
    "eye": (lambda m: m.eye(3)),
    "tensor float": (lambda m: m.tensor(1.5)),
    "tensor list": (lambda m: m.tensor([1.0, 2.0])),
    "tensor complex": (lambda m: m.tensor([1j, 2.0])),
    "tensor int": (lambda m: m.tensor([1, 2])),
    "exp of int": (lambda m: m.exp(m.tensor([1, 2]))),
    "sqrt of bool": (lambda m: m.sqrt(m.tensor([True, False]))),
    "sin of int8": (lambda m: m.sin(m.tensor([1, 2], dtype=m.int8))),
    "mean of int": (lambda m: m.mean(m.tensor([1, 2, 4]).float())),
    "float()": (lambda m: m.tensor([1, 2]).float()),
    "rand": (lambda m: m.rand(3)),
    "randn": (lambda m: m.randn(2, 2)),
    "int scalar op": (lambda m: m.tensor([1, 2]) * 1.5),
}


@pytest.mark.parametrize("name", sorted(CREATIONS))
def test_defaults_follow_like_pytorch(default, name):
    make = CREATIONS[name]
    got, want = make(ak), make(torch)
    assert _name(got.dtype) == _name(want.dtype), name
    assert got.shape == tuple(want.shape)
    if name not in ("empty", "rand", "randn"):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_namespace_defaults_and_asarray(default):
    dtype = getattr(ak, default)
    complex_of = {"float32": ak.complex64, "float64": ak.complex128}[default]
    assert ak.get_default_dtype() is dtype
    info = ak.__array_namespace_info__().default_dtypes()
    assert info["real floating"] is dtype and info["complex floating"] is complex_of
    assert info["integral"] is ak.int64 and info["indexing"] is ak.int64
    assert ak.asarray(1.5).dtype is dtype
    assert ak.asarray([[1.0, 2]]).dtype is dtype
    assert ak.asarray(1j).dtype is complex_of
    assert ak.asarray([1, 2]).dtype is ak.int64
    assert ak.asarray(1.5, dtype=float).dtype is dtype  # float means the default, as in asarray
    assert ak.random.uniform(0, 1, (3,)).dtype is dtype
    assert ak.mean(ak.asarray([1, 2, 4])).dtype is dtype  # integers average in the default float
    x = ak.asarray([1.0, 2.0], dtype=ak.float32)
    assert (x + 1.5).dtype is ak.float32  # a Python scalar never widens a tensor


def test_float64_values_are_float64(default):
    value = 0.1 + 2 ** -40  # not representable in float32
    assert ak.asarray(value).item() == (value if default == "float64" else float(np.float32(value)))
    assert ak.full((), value).item() == torch.full((), value).item()


def test_only_float32_and_float64():
    before = ak.get_default_dtype()
    for bad in (ak.int32, ak.complex64, ak.bool, ak.float16):
        with pytest.raises(TypeError, match="float32 and float64"):
            ak.set_default_dtype(bad)
    with pytest.raises(TypeError):
        torch.set_default_dtype(torch.int32)  # the oracle raises TypeError too
    assert ak.get_default_dtype() is before


def test_jit_retraces_after_a_change():
    before = ak.get_default_dtype()
    step = ak.jit(lambda x: x + ak.ones(3))
    try:
        ak.set_default_dtype(ak.float64)
        assert step(ak.zeros(3, dtype=ak.float32)).dtype is ak.float64
        ak.set_default_dtype(ak.float32)
        assert step(ak.zeros(3, dtype=ak.float32)).dtype is ak.float32
        ak.set_default_dtype(ak.float64)
        out = step(ak.zeros(3, dtype=ak.float32))
        assert out.dtype is ak.float64
        np.testing.assert_array_equal(out.numpy(), np.ones(3))
    finally:
        ak.set_default_dtype(before)


def test_eager_kernels_are_not_reused_across_defaults():
    """The same eager call (a kernel that casts integers to the default float) gives
    each default's dtype in turn: the dtype is part of the kernel's cache key."""
    before = ak.get_default_dtype()
    x = ak.asarray([1, 2, 3])
    try:
        for dtype in (ak.float32, ak.float64, ak.float32):
            ak.set_default_dtype(dtype)
            assert ak.exp(x).dtype is dtype
            assert ak.mean(x).dtype is dtype
            np.testing.assert_allclose(ak.exp(x).numpy(), np.exp([1, 2, 3]), rtol=1e-6)
    finally:
        ak.set_default_dtype(before)
