"""In-place writes into outputs that an op's gradient reads, against PyTorch.

``y = x.exp(); y.add_(1); y.sum().backward()`` raises in PyTorch ("one of the
variables needed for gradient computation has been modified by an inplace
operation"): exp's gradient is its result. Each case runs the same program on both
libraries, writing through the output itself or a view of its storage: where
torch raises, arraykit raises the same error (``backward()``,
``autograd.grad``, and a ``backward()`` inside ``arraykit.jit``); where torch
allows the write (the op's gradient does not read its output), arraykit gives
torch's gradient. ``arraykit.grad`` (JAX's transform of the whole program) has no
saved tensors: it gives the exact derivative of the program as written.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import arraykit as ak
import arraykit.nn.functional as F

X = np.array([[0.5, 1.0, 2.0], [0.25, 3.0, 1.5]])
MESSAGE = "modified by an inplace operation"


def same(call):
    return call, call


# (id, (arraykit fn, torch fn)): outputs of at least one dimension
SAVES_OUTPUT = [
    ("exp", same(lambda x: x.exp())),
    ("tanh", same(lambda x: x.tanh())),
    ("sqrt", same(lambda x: x.sqrt())),
    ("reciprocal", same(lambda x: x.reciprocal())),
    ("expm1", same(lambda x: x.expm1())),
    ("pow_tensor_exponent", (lambda x: ak.pow(x, x), lambda x: torch.pow(x, x))),
    ("pow_scalar_base", same(lambda x: 2.0 ** x)),
    ("relu", (F.relu, TF.relu)),
    ("sigmoid", (F.sigmoid, torch.sigmoid)),
    ("softmax", (lambda x: F.softmax(x, dim=1), lambda x: TF.softmax(x, dim=1))),
    ("log_softmax", (lambda x: F.log_softmax(x, dim=1), lambda x: TF.log_softmax(x, dim=1))),
    ("logsumexp", (lambda x: F.logsumexp(x, dim=1), lambda x: torch.logsumexp(x, dim=1))),
    ("amax", (lambda x: ak.max(x, axis=1), lambda x: torch.amax(x, dim=1))),
    ("amin", (lambda x: ak.min(x, axis=0), lambda x: torch.amin(x, dim=0))),
    ("vector_norm", (lambda x: ak.linalg.vector_norm(x, axis=1),
                     lambda x: torch.linalg.vector_norm(x, dim=1))),
    ("vector_norm_inf", (lambda x: ak.linalg.vector_norm(x, axis=0, ord=float("inf")),
                         lambda x: torch.linalg.vector_norm(x, dim=0, ord=float("inf")))),
    ("std", (lambda x: ak.std(x, axis=1), lambda x: torch.std(x, 1, correction=0))),
    ("hypot", (lambda x: ak.hypot(x, x + 1), lambda x: torch.hypot(x, x + 1))),
    ("copysign", (lambda x: ak.copysign(x, x - 1), lambda x: torch.copysign(x, x - 1))),
]

NO_SAVED_OUTPUT = [
    ("add", same(lambda x: x + 1)),
    ("mul", same(lambda x: x * 2)),
    ("sin", same(lambda x: x.sin())),
    ("log", same(lambda x: x.log())),
    ("abs", same(lambda x: x.abs())),
    ("clamp", same(lambda x: x.clamp(0.3, 2.0))),
    ("square", (ak.square, torch.square)),
    ("pow_scalar_exponent", same(lambda x: x ** 2.5)),
    ("maximum", (lambda x: ak.maximum(x, x * 0 + 1), lambda x: torch.maximum(x, x * 0 + 1))),
    ("max_dim_values", same(lambda x: x.max(1).values)),
    ("sort", (lambda x: ak.sort(x, axis=1), lambda x: torch.sort(x, dim=1).values)),
    ("logaddexp", (lambda x: ak.logaddexp(x, x * 2), lambda x: torch.logaddexp(x, x * 2))),
    ("atan2", (lambda x: ak.atan2(x, x + 1), lambda x: torch.atan2(x, x + 1))),
    ("where", (lambda x: ak.where(x > 1, x, x * 2), lambda x: torch.where(x > 1, x, x * 2))),
    ("cumulative_sum", (lambda x: ak.cumulative_sum(x, axis=1), lambda x: torch.cumsum(x, 1))),
    ("hardtanh", (F.hardtanh, TF.hardtanh)),
    ("leaky_relu", (F.leaky_relu, TF.leaky_relu)),
    ("elu", (F.elu, TF.elu)),
    ("softplus", (F.softplus, TF.softplus)),
    ("hardswish", (F.hardswish, TF.hardswish)),
    ("gelu", (F.gelu, TF.gelu)),
    ("silu", (F.silu, TF.silu)),
    ("matmul", same(lambda x: x @ x.T)),
    ("cross_entropy_none", (lambda x: F.cross_entropy(x, ak.asarray([0, 2]), reduction="none"),
                            lambda x: TF.cross_entropy(x, torch.tensor([0, 2]), reduction="none"))),
]

BY_NAME = {c[0]: c for c in SAVES_OUTPUT + NO_SAVED_OUTPUT}

# writes into the output: itself, a row (a view), a flat view of its tail
WRITES = {
    "output": lambda y: y.add_(1),
    "row_view": lambda y: y[0].mul_(2),
    "flat_view": lambda y: y.view(-1)[1:].add_(1),
}


def _run(lib, fn, write, how):
    """The program on ``lib`` (ak or torch); the gradient of x, or the RuntimeError."""
    x = lib.asarray(X.copy(), dtype=lib.float32) if lib is ak else torch.tensor(X, dtype=torch.float32)
    x.requires_grad_()
    try:
        y = fn(x)
        write(y)
        loss = (y * y).sum()
        if how == "autograd.grad":
            (g,) = lib.autograd.grad(loss, x)
            return np.asarray(g.detach().tolist())
        loss.backward()
        return np.asarray(x.grad.tolist())
    except RuntimeError as e:
        return e


def _torch_and_ours(case, write, how):
    """PyTorch's result (the oracle) and arraykit's for ``case`` with the write ``write``,
    differentiated by ``how``: a gradient, or the RuntimeError raised."""
    _, (fn, tfn) = case
    return _run(torch, tfn, WRITES[write], how), _run(ak, fn, WRITES[write], how)


def _jitted_backward(fn, write):
    """The program as one ``arraykit.jit`` step with ``backward()`` inside."""
    x = ak.asarray(X.copy(), dtype=ak.float32).requires_grad_()

    @ak.jit
    def step(x):
        y = fn(x)
        write(y)
        (y * y).sum().backward()
        return x.grad

    try:
        return np.asarray(step(x).tolist())
    except RuntimeError as e:
        return e


@pytest.mark.parametrize("how", ["backward", "autograd.grad"])
@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
@pytest.mark.parametrize("case", SAVES_OUTPUT, ids=[c[0] for c in SAVES_OUTPUT])
def test_write_into_a_saved_output_raises_as_in_torch(case, write, how):
    expected, got = _torch_and_ours(case, write, how)
    assert isinstance(expected, RuntimeError) and MESSAGE in str(expected)  # the oracle
    assert isinstance(got, RuntimeError), f"no error; gradient {got}"
    assert MESSAGE in str(got)


@pytest.mark.parametrize("how", ["backward", "autograd.grad"])
@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
@pytest.mark.parametrize("case", NO_SAVED_OUTPUT, ids=[c[0] for c in NO_SAVED_OUTPUT])
def test_write_into_an_unsaved_output_gives_torchs_gradient(case, write, how):
    expected, got = _torch_and_ours(case, write, how)
    assert not isinstance(expected, Exception), expected  # the oracle allows the write
    assert not isinstance(got, Exception), got
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", [BY_NAME[n] for n in ("exp", "softmax", "sin")],
                         ids=["exp", "softmax", "sin"])
def test_write_inside_jit_with_backward(case):
    _, (fn, tfn) = case
    expected = _run(torch, tfn, WRITES["row_view"], "backward")
    got = _jitted_backward(fn, WRITES["row_view"])
    if isinstance(expected, RuntimeError):
        assert isinstance(got, RuntimeError) and MESSAGE in str(got)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
@pytest.mark.parametrize("case", SAVES_OUTPUT[:6], ids=[c[0] for c in SAVES_OUTPUT[:6]])
def test_functional_grad_differentiates_the_program_as_written(case, write):
    """``arraykit.grad`` traces the whole program: the write is part of it. Torch's
    gradient of the same program with the write made on a clone is the oracle."""
    _, (fn, tfn) = case

    def loss(x):
        y = fn(x)
        WRITES[write](y)
        return (y * y).sum()

    x = torch.tensor(X, dtype=torch.float32, requires_grad=True)
    y = tfn(x).clone()
    WRITES[write](y)
    (y * y).sum().backward()
    got = ak.grad(loss)(ak.asarray(X, dtype=ak.float32))
    np.testing.assert_allclose(np.asarray(got), x.grad.numpy(), rtol=1e-5, atol=1e-6)


class _ExpSavingOutput:
    """The same custom Function on both libraries: exp, saving its output."""

    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out


class _SquareSavingInput:
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def _function(lib, body):
    base = ak.autograd.Function if lib is ak else torch.autograd.Function
    return type(body.__name__, (base,), {"forward": body.forward, "backward": body.backward})


@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
@pytest.mark.parametrize("body", [_ExpSavingOutput, _SquareSavingInput], ids=["saves_output", "saves_input"])
def test_custom_function_saving_its_output(body, write):
    ak_fn, torch_fn = _function(ak, body), _function(torch, body)
    expected = _run(torch, lambda x: torch_fn.apply(x * 1), WRITES[write], "backward")
    got = _run(ak, lambda x: ak_fn.apply(x * 1), WRITES[write], "backward")
    if isinstance(expected, RuntimeError):
        assert isinstance(got, RuntimeError) and MESSAGE in str(got)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_write_after_backward_and_an_outputs_death_are_harmless():
    """Version checks happen at backward only, and a dead output cannot have been written."""
    x = ak.asarray(X, dtype=ak.float32).requires_grad_()
    y = x.exp()
    loss = y.sum()
    loss.backward()
    y.add_(1)  # after backward: nothing to check
    np.testing.assert_allclose(np.asarray(x.grad), np.exp(X), rtol=1e-6)
    x.grad = None
    loss = x.exp().sum()  # exp's output storage dies here
    loss.backward()
    np.testing.assert_allclose(np.asarray(x.grad), np.exp(X), rtol=1e-6)


@pytest.mark.parametrize("name", ["exp", "sqrt", "tanh", "reciprocal"])
def test_complex_outputs_are_checked_too(name):
    for lib in (torch, ak):
        z = lib.asarray(X + 1j, dtype=lib.complex64) if lib is ak else torch.tensor(X + 1j)
        z.requires_grad_()
        y = getattr(z * 1, name)()
        y.add_(1)
        with pytest.raises(RuntimeError, match=MESSAGE):
            lib.real(y * y).sum().backward()


def test_error_names_the_op_and_the_output():
    x = ak.asarray(X, dtype=ak.float32).requires_grad_()
    y = x.tanh()
    y[1, 2] = 0.0
    with pytest.raises(RuntimeError, match="output 0 of TanhBackward0.* at version 1; expected version 0"):
        y.sum().backward()
