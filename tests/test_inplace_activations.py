"""In-place activations on tensors that autograd records, against PyTorch.

``y = x * 2; F.relu(y, inplace=True)`` rewrites ``y``'s storage; PyTorch's in-place
forms save either their result (``relu_``, ``leaky_relu_``, ``elu_``, ``celu_``,
``selu_``, ``rrelu_``: a later in-place write into the result makes backward raise)
or the original input (``hardtanh_``, ``silu``, ``mish``, ``hardswish``...: a later
write is fine). Each program runs on both libraries; where torch raises, arraykit
raises, else the gradients agree.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import arraykit as ak
import arraykit.nn.functional as F
from arraykit import nn

X = np.array([[-1.5, 0.0, 2.0, -0.25], [0.5, -3.0, 0.0, 1.25], [4.0, -0.5, 3.0, 6.5]])
MESSAGE = "modified by an inplace operation"


def both(name, **kw):
    return getattr(F, name), getattr(TF, name), kw


CASES = {
    "relu": both("relu"),
    "relu_fn": (F.relu_, torch.relu_, {}),
    "leaky_relu": both("leaky_relu", negative_slope=0.1),
    "leaky_relu_0": both("leaky_relu", negative_slope=0.0),
    "elu": both("elu", alpha=0.7),
    "celu": both("celu", alpha=1.5),
    "selu": both("selu"),
    "rrelu_eval": both("rrelu", training=False),
    "hardtanh": both("hardtanh", min_val=-1.0, max_val=2.0),
    "relu6": both("relu6"),
    "silu": both("silu"),
    "mish": both("mish"),
    "hardsigmoid": both("hardsigmoid"),
    "hardswish": both("hardswish"),
    "threshold": both("threshold", threshold=0.5, value=-2.0),
    "elu_negative_alpha": both("elu", alpha=-0.5),
    "leaky_relu_negative_slope": both("leaky_relu", negative_slope=-0.2),
}


def _make(lib, dtype):
    if lib is ak:
        return ak.asarray(X, dtype=getattr(ak, dtype)).requires_grad_()
    return torch.tensor(X, dtype=getattr(torch, dtype), requires_grad=True)


def _program(lib, fn, kw, scenario, dtype="float32"):
    """The gradient of ``x`` (NumPy), or the RuntimeError raised."""
    x = _make(lib, dtype)
    try:
        y = x * 2
        if scenario == "view":  # a strided view of the recorded storage
            z = _call_inplace(fn, y.T[1:], kw)
            loss = (y * y).sum() + z.sum()
        else:
            w = y * y if scenario == "saved_input" else None
            z = _call_inplace(fn, y, kw)
            if scenario == "write_after":
                y.mul_(3)
            loss = (z * z).sum() + (0 if w is None else w.sum())
        loss.backward()
        return np.asarray(x.grad.tolist())
    except RuntimeError as e:
        return e


def _name(fn):
    return getattr(fn, "__name__", "")


def _call_inplace(fn, y, kw):
    return fn(y, **kw) if _name(fn).endswith("_") else fn(y, **kw, inplace=True)


@pytest.mark.parametrize("scenario", ["plain", "write_after", "saved_input", "view"])
@pytest.mark.parametrize("name", list(CASES))
def test_inplace_activation_matches_torch(name, scenario):
    fn, tfn, kw = CASES[name]
    expected = _program(torch, tfn, kw, scenario)
    got = _program(ak, fn, kw, scenario)
    if isinstance(expected, RuntimeError):
        assert isinstance(got, RuntimeError), f"torch raised {expected}; arraykit gave {got}"
    else:
        assert not isinstance(got, Exception), got
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_the_oracle_distinguishes_result_and_input_saving():
    """The table above is not vacuous: torch raises for some programs and not others."""
    raised = {n: isinstance(_program(torch, *CASES[n][1:], "write_after"), RuntimeError)
              for n in ("relu", "elu", "hardtanh", "silu")}
    assert raised == {"relu": True, "elu": True, "hardtanh": False, "silu": False}


def test_write_after_raises_the_version_error():
    x = ak.asarray(X, dtype=ak.float32).requires_grad_()
    y = x * 2
    F.relu(y, inplace=True)
    y.add_(1)
    with pytest.raises(RuntimeError, match=MESSAGE):
        y.sum().backward()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_modules_inplace_on_non_leaf_float64(dtype):
    for module, tmodule in [(nn.ReLU(inplace=True), torch.nn.ReLU(inplace=True)),
                            (nn.SiLU(inplace=True), torch.nn.SiLU(inplace=True)),
                            (nn.LeakyReLU(0.2, inplace=True), torch.nn.LeakyReLU(0.2, inplace=True)),
                            (nn.ELU(inplace=True), torch.nn.ELU(inplace=True))]:
        grads = []
        for lib, m in ((ak, module), (torch, tmodule)):
            x = _make(lib, dtype)
            y = x * 2
            out = m(y)
            assert out is y
            (out * out).sum().backward()
            grads.append(np.asarray(x.grad.tolist()))
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def test_inplace_on_a_leaf_that_requires_grad_raises():
    x = ak.asarray(X, dtype=ak.float32).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf"):
        F.relu(x, inplace=True)
    with pytest.raises(RuntimeError, match="leaf"):
        F.elu(x, inplace=True)


def test_inplace_without_grad_writes_the_values():
    for name, (fn, tfn, kw) in CASES.items():
        a = ak.asarray(X, dtype=ak.float32)
        t = torch.tensor(X, dtype=torch.float32)
        out = _call_inplace(fn, a, kw)
        _call_inplace(tfn, t, kw)
        assert out is a
        np.testing.assert_allclose(np.asarray(a.tolist()), t.numpy(), rtol=1e-6, err_msg=name)


def _jit_program(lib, functional, x, write_after):
    y = x * 2
    z = functional.relu(y, inplace=True)
    u = functional.elu(z * 3 - 1, inplace=True)
    if write_after:
        functional.hardtanh(z, inplace=True)  # rewrites relu's saved result
    (u * u).sum().backward()
    return x.grad


@pytest.mark.parametrize("write_after", [False, True])
def test_inplace_activations_inside_jit_step(write_after):
    step = ak.jit(lambda x: _jit_program(ak, F, x, write_after))
    x = torch.tensor(X, dtype=torch.float32, requires_grad=True)
    try:
        expected = _jit_program(torch, TF, x, write_after).numpy()
    except RuntimeError as e:
        expected = e
    try:
        got = np.asarray(step(ak.asarray(X, dtype=ak.float32).requires_grad_()).tolist())
    except RuntimeError as e:
        got = e
    if isinstance(expected, RuntimeError):
        assert isinstance(got, RuntimeError) and MESSAGE in str(got)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_inplace_rrelu_training_uses_drawn_slopes_in_range():
    x = ak.asarray(-np.abs(X) - 0.1, dtype=ak.float64).requires_grad_()
    y = x * 1
    F.rrelu(y, lower=0.1, upper=0.3, training=True, inplace=True)
    slopes = np.asarray(y.tolist()) / np.asarray(x.tolist())
    assert np.all((slopes >= 0.1) & (slopes <= 0.3)) and np.ptp(slopes) > 0
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad.tolist()), slopes, rtol=1e-12)
