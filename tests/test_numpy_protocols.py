"""NumPy's ufuncs and SciPy's compiled ufuncs on CPU tensors return tensors
(``Tensor.__array_wrap__``), as they return PyTorch tensors: checked against torch.

conftest.py sets ``SCIPY_ARRAY_API=1``, under which ``scipy.special`` converts
arraykit tensors itself (through the array API, its result on the default device)
before its ufuncs see them; SciPy's plain path, the one users get by default, where
its ufuncs meet the tensors, runs in a subprocess without it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import arraykit as ak

torch = pytest.importorskip("torch")
pytest.importorskip("scipy.special")

RNG = np.random.default_rng(0)
X = RNG.uniform(0.5, 3.0, (3, 4)).astype(np.float32)
E = np.arange(12, dtype=np.int32).reshape(3, 4) % 5
I = np.arange(12, dtype=np.int64).reshape(3, 4)

# (id, function of (x, e, i) -> result); x float32, e int32, i int64, all 3x4
CASES = [
    ("exp", lambda x, e, i: np.exp(x)),
    ("add scalar", lambda x, e, i: np.add(x, 1)),
    ("add scalar first", lambda x, e, i: np.add(2.5, x)),
    ("add ndarray first", lambda x, e, i: np.add(np.ones(4), x)),
    ("multiply tensors", lambda x, e, i: np.multiply(x, x)),
    ("sqrt of int64", lambda x, e, i: np.sqrt(i)),
    ("isnan", lambda x, e, i: np.isnan(x)),
    ("greater", lambda x, e, i: np.greater(x, 1.5)),
    ("divmod", lambda x, e, i: np.divmod(x, 2)),
    ("frexp", lambda x, e, i: np.frexp(x)),
    ("ldexp", lambda x, e, i: np.ldexp(x, e)),
    ("add.reduce", lambda x, e, i: np.add.reduce(x)),
    ("add.reduce axis", lambda x, e, i: np.add.reduce(x, axis=1)),
    ("add.accumulate", lambda x, e, i: np.add.accumulate(x, axis=0)),
    ("cumsum", lambda x, e, i: np.cumsum(x)),
    ("argmax", lambda x, e, i: np.argmax(x)),
    ("matmul", lambda x, e, i: np.matmul(x, x.T)),
    ("exp of 0-d", lambda x, e, i: np.exp(x[0, 0])),
    ("multiply.outer", lambda x, e, i: np.multiply.outer(x[0], x[1])),
]


def _flat(result):
    return list(result) if isinstance(result, tuple) else [result]


def _dtype_name(r):
    return str(r.dtype).removeprefix("torch.").removeprefix("arraykit.")


@pytest.mark.parametrize("fn", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_ufuncs_return_what_they_return_for_torch(fn):
    expected = fn(torch.tensor(X), torch.tensor(E), torch.tensor(I))
    got = fn(ak.asarray(X, device="cpu"), ak.asarray(E, device="cpu"), ak.asarray(I, device="cpu"))
    assert isinstance(got, tuple) == isinstance(expected, tuple)
    assert len(_flat(got)) == len(_flat(expected))
    for g, t in zip(_flat(got), _flat(expected)):
        if isinstance(t, torch.Tensor):
            assert type(g) is ak.Tensor, type(g)
            assert g.device.platform == "cpu"
            # PyTorch turns a boolean result into uint8 (it once had no bool); arraykit keeps bool
            want = "bool" if t.dtype == torch.uint8 and g.dtype == ak.bool else _dtype_name(t)
            assert _dtype_name(g) == want
            t = t.numpy()
        else:
            assert type(g) is type(t), (type(g), type(t))
        assert tuple(g.shape) == tuple(t.shape)
        np.testing.assert_allclose(np.asarray(g).astype(np.float64), np.asarray(t).astype(np.float64),
                                   rtol=1e-6)


def test_result_is_a_new_tensor_not_an_alias_of_the_input():
    x = ak.asarray(X, device="cpu")
    y = np.exp(x)
    y[0, 0] = 0.0
    assert float(x[0, 0]) == X[0, 0]
    np.testing.assert_allclose(np.asarray(y)[0, 1:], np.exp(X[0, 1:]), rtol=1e-6)
    assert np.asarray(x * 2).flags.writeable  # the ordinary operators are untouched
    assert type(np.ones(4) + x[0]) is ak.Tensor


def test_results_take_part_in_arraykit_code():
    x = ak.asarray(X, device="cpu")
    y = np.tanh(x) + ak.ones((3, 4), device="cpu")
    z = ak.sum(np.exp(x) * y, axis=1)
    np.testing.assert_allclose(np.asarray(z), (np.exp(X) * (np.tanh(X) + 1)).sum(1), rtol=1e-5)


def test_a_tensor_that_requires_grad_raises_as_in_torch():
    with pytest.raises(RuntimeError, match="grad"):
        np.exp(torch.tensor(X, requires_grad=True))
    x = ak.asarray(X, device="cpu").requires_grad_()
    with pytest.raises(RuntimeError, match=r"exp: NumPy cannot record the gradient.*t\.detach\(\)"):
        np.exp(x)
    with pytest.raises(RuntimeError, match="multiply"):
        np.multiply(ak.asarray(X, device="cpu"), x * 2)
    assert type(np.exp(x.detach())) is ak.Tensor


def test_numpy_reductions_with_numpy_keywords():
    """``np.sum`` calls ``t.sum(axis=, dtype=, out=)``: arraykit's sum takes NumPy's
    keywords and returns a tensor (PyTorch's sum takes no ``axis`` and raises)."""
    x = ak.asarray(X, device="cpu")
    got = np.sum(x, axis=0)
    assert type(got) is ak.Tensor
    np.testing.assert_allclose(np.asarray(got), X.sum(0), rtol=1e-6)
    assert type(np.sum(x)) is ak.Tensor and np.sum(x).shape == ()


SCIPY_WITHOUT_ARRAY_API = """
import numpy as np, scipy.special as special, torch
import arraykit as ak
x = np.linspace(0.5, 3.0, 12, dtype=np.float32).reshape(3, 4)
for f in (special.erf, special.gammaln, special.i0, special.expit):
    expected, got = f(torch.tensor(x)), f(ak.asarray(x, device="cpu"))
    assert type(expected) is torch.Tensor and type(got) is ak.Tensor, (f, type(got))
    assert got.device.platform == "cpu" and str(got.dtype) == "arraykit.float32", got.dtype
    np.testing.assert_allclose(np.asarray(got), expected.numpy(), rtol=1e-6)
got, expected = special.xlogy(ak.asarray(x, device="cpu"), 2.0), special.xlogy(torch.tensor(x), 2.0)
assert type(got) is ak.Tensor and str(got.dtype)[9:] == str(expected.dtype)[6:], (got.dtype, expected.dtype)
np.testing.assert_allclose(np.asarray(got), expected.numpy(), rtol=1e-6)
try:
    special.erf(ak.asarray(x, device="cpu").requires_grad_())
except RuntimeError as e:
    assert "erf: NumPy cannot record the gradient" in str(e), e
else:
    raise AssertionError("no error for a tensor that requires grad")
print("ok")
"""


def test_scipy_special_ufuncs_without_scipy_array_api():
    env = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"}
    done = subprocess.run([sys.executable, "-c", SCIPY_WITHOUT_ARRAY_API], capture_output=True, text=True,
                          timeout=300, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"


def _accelerators():
    return [d for d in jax.devices() if d.platform != "cpu"]


@pytest.mark.skipif(not _accelerators(), reason="needs a GPU")
def test_a_gpu_tensor_raises_as_torch_cuda_tensors_do():
    x = ak.asarray(X, device=_accelerators()[0])
    with pytest.raises(TypeError, match=r"NumPy cannot compute on a tensor on .*t\.cpu\(\)"):
        np.exp(x)
    with pytest.raises(TypeError, match="NumPy cannot compute"):
        np.sqrt(x[0])
    with pytest.raises(TypeError, match="NumPy cannot compute"):
        np.add(ak.asarray(X, device="cpu"), x)
