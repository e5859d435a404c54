"""Gradients at kinks, ties and removable singularities against PyTorch.

Every case evaluates at the exact point where a one-sided derivative changes (relu
at 0, clamp at its bounds, tied maxima, norms at zero ...) and compares the value
and the gradient of ``sum(f(x) * w)`` (``w`` distinct weights, so a gradient sent to
the wrong tied element shows) with torch's, in float32 and float64, through eager
``backward()``, ``arraykit.grad`` and ``arraykit.jit``; second derivatives where
PyTorch defines them. docs/pytorch.md lists the points where arraykit deliberately
differs (``HYPOT_ORIGIN``, ``LOGADDEXP_INFINITE_TIES``).
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import arraykit as ak
import arraykit.nn.functional as F

INF = math.inf
Z = [-1.0, 0.0, 1.0]
ROWS = [[1.0, 3.0, 3.0], [2.0, 2.0, 2.0], [-1.0, 0.0, -1.0]]


def both(name):
    """(arraykit function, torch function) of the same name on the namespaces."""
    return getattr(ak, name), getattr(torch, name)


def method(call):
    """The same method call on either library's tensor."""
    return call, call


def _clamped_tail(y):
    """``y`` after clamping its last three elements in place through a view."""
    y[2:].clamp_(-1.0, 1.0)
    return y


def norm(kind, **kw):
    ak_kw = {("axis" if k == "dim" else "keepdims" if k == "keepdim" else k): v for k, v in kw.items()}
    fn = getattr(ak.linalg, kind)
    tfn = getattr(torch.linalg, kind)
    return (lambda x: fn(x, **ak_kw)), (lambda x: tfn(x, **kw))


# (id, (arraykit fn, torch fn), inputs); every input is differentiated
CASES = [
    ("relu", (F.relu, TF.relu), [Z]),
    ("abs", both("abs"), [Z]),
    ("sign", both("sign"), [Z]),
    ("floor", both("floor"), [[-1.0, 0.0, 1.5]]),
    ("ceil", both("ceil"), [[-1.0, 0.0, 1.5]]),
    ("round", both("round"), [[-1.5, 0.5, 2.5]]),
    ("trunc", both("trunc"), [[-1.0, 0.0, 1.5]]),
    ("sqrt_at_0", both("sqrt"), [[0.0, 1.0]]),
    ("reciprocal_at_0", both("reciprocal"), [[0.0, 1.0]]),
    ("clip_both_bounds", (lambda x: ak.clip(x, -1.0, 1.0), lambda x: torch.clamp(x, -1.0, 1.0)),
     [[-2.0, -1.0, 0.0, 1.0, 2.0]]),
    ("clip_min", (lambda x: ak.clip(x, min=0.0), lambda x: torch.clamp(x, min=0.0)), [Z]),
    ("clip_max", (lambda x: ak.clip(x, max=0.0), lambda x: torch.clamp(x, max=0.0)), [Z]),
    ("clamp_method", method(lambda x: x.clamp(-1.0, 1.0)), [[-2.0, -1.0, 0.0, 1.0, 2.0]]),
    ("clip_min_above_max", (lambda x: ak.clip(x, 1.0, 0.0), lambda x: torch.clamp(x, 1.0, 0.0)),
     [[-1.0, 0.0, 0.5, 1.0, 2.0]]),
    ("clip_tensor_bounds", (ak.clip, torch.clamp),
     [[-2.0, -1.0, 0.0, 1.0, 2.0], [-1.0] * 5, [1.0] * 5]),
    ("clip_tensor_bounds_equal", (ak.clip, torch.clamp), [[-1.0, 0.0, 1.0], [0.0] * 3, [0.0] * 3]),
    ("clip_tensor_min_above_max", (ak.clip, torch.clamp),
     [[-1.0, 0.0, 1.0, 2.0], [1.0] * 4, [0.0] * 4]),
    ("clip_tensor_min_only", (lambda x, lo: ak.clip(x, lo), lambda x, lo: torch.clamp(x, lo)),
     [Z, [0.0] * 3]),
    ("clip_tensor_max_only", (lambda x, hi: ak.clip(x, max=hi), lambda x, hi: torch.clamp(x, max=hi)),
     [Z, [0.0] * 3]),
    ("clamp_namespace", both("clamp"), [[-2.0, -1.0, 0.0, 1.0, 2.0], [-1.0] * 5, [1.0] * 5]),
    ("clamp_min_namespace", both("clamp_min"), [Z, [0.0] * 3]),
    ("clamp_max_namespace", both("clamp_max"), [Z, [0.0] * 3]),
    ("clip_method", method(lambda x: x.clip(-1.0, 1.0)), [[-2.0, -1.0, 0.0, 1.0, 2.0]]),
    ("clamp_min_method", method(lambda x: x.clamp_min(0.0)), [Z]),
    ("clamp_max_method", method(lambda x: x.clamp_max(0.0)), [Z]),
    # in place, on a non-leaf copy: the written version's gradient, as the out-of-place one
    ("clamp_inplace", method(lambda x: (x * 1).clamp_(-1.0, 1.0)), [[-2.0, -1.0, 0.0, 1.0, 2.0]]),
    ("clamp_inplace_int_bounds", method(lambda x: (x * 1).clamp_(0, 1)), [[[3.0, 1.0], [1.0, -2.0]]]),
    ("clamp_inplace_min_only", method(lambda x: (x * 1).clamp_(min=0.0)), [Z]),
    ("clamp_inplace_max_only", method(lambda x: (x * 1).clamp_(max=0.0)), [Z]),
    ("clamp_inplace_min_above_max", method(lambda x: (x * 1).clamp_(1.0, 0.0)),
     [[-1.0, 0.0, 0.5, 1.0, 2.0]]),
    ("clip_inplace", method(lambda x: (x * 1).clip_(-1.0, 1.0)), [[-2.0, -1.0, 0.0, 1.0, 2.0]]),
    ("clamp_min_inplace", method(lambda x: (x * 1).clamp_min_(0.0)), [Z]),
    ("clamp_max_inplace", method(lambda x: (x * 1).clamp_max_(0.0)), [Z]),
    ("clamp_inplace_namespace", (lambda x: ak.clamp_(x * 1, -1.0, 1.0),
                                 lambda x: torch.clamp_(x * 1, -1.0, 1.0)), [[-2.0, -1.0, 0.0, 1.0, 2.0]]),
    ("clamp_inplace_tensor_bounds", (lambda x, lo, hi: (x * 1).clamp_(lo, hi),
                                     lambda x, lo, hi: (x * 1).clamp_(lo, hi)),
     [[-2.0, -1.0, 0.0, 1.0, 2.0], [-1.0] * 5, [1.0] * 5]),
    ("clamp_inplace_tensor_bounds_equal", (lambda x, lo, hi: (x * 1).clamp_(lo, hi),
                                           lambda x, lo, hi: (x * 1).clamp_(lo, hi)),
     [[-1.0, 0.0, 1.0], [0.0] * 3, [0.0] * 3]),
    ("clamp_min_inplace_tensor", (lambda x, lo: (x * 1).clamp_min_(lo),
                                  lambda x, lo: (x * 1).clamp_min_(lo)), [Z, [0.0] * 3]),
    ("clamp_max_inplace_tensor", (lambda x, hi: (x * 1).clamp_max_(hi),
                                  lambda x, hi: (x * 1).clamp_max_(hi)), [Z, [0.0] * 3]),
    ("clamp_inplace_view", method(lambda x: _clamped_tail(x * 1)), [[-2.0, -1.0, 0.0, 1.0, 2.0]]),
    ("maximum_tie", both("maximum"), [Z, [0.0] * 3]),
    ("minimum_tie", both("minimum"), [Z, [0.0] * 3]),
    ("maximum_same_tensor", (lambda x: ak.maximum(x, x), lambda x: torch.maximum(x, x)), [Z]),
    ("max_all_tied", (ak.max, torch.amax), [[1.0, 3.0, 3.0, 2.0]]),
    ("min_all_tied", (ak.min, torch.amin), [[1.0, 1.0, 3.0, 2.0]]),
    ("max_axis_tied", (lambda x: ak.max(x, axis=1), lambda x: torch.amax(x, dim=1)), [ROWS]),
    ("min_axis0_keepdims", (lambda x: ak.min(x, axis=0, keepdims=True),
                            lambda x: torch.amin(x, dim=0, keepdim=True)), [ROWS]),
    ("max_axes_tuple", (lambda x: ak.max(x, axis=(0, 1)), lambda x: torch.amax(x, dim=(0, 1))), [ROWS]),
    ("max_method_all", method(lambda x: x.max()), [ROWS]),
    ("max_method_dim", method(lambda x: x.max(1).values), [ROWS]),
    ("min_method_dim_keepdim", method(lambda x: x.min(0, keepdim=True).values), [ROWS]),
    ("max_method_negative_dim", method(lambda x: x.max(-1).values), [ROWS]),
    ("sort_ties", (ak.sort, lambda x: torch.sort(x, stable=True).values), [[2.0, 1.0, 2.0, 1.0, 2.0]]),
    ("sort_descending_ties", (lambda x: ak.sort(x, descending=True),
                              lambda x: torch.sort(x, descending=True, stable=True).values),
     [[2.0, 1.0, 2.0, 1.0, 2.0]]),
    ("sort_method_ties", method(lambda x: x.sort().values), [[[2.0, 1.0, 2.0], [0.0, 0.0, 0.0]]]),
    ("where_equal_branches", (lambda a, b: ak.where(ak.asarray([True, False, True]), a, b),
                              lambda a, b: torch.where(torch.tensor([True, False, True]), a, b)),
     [Z, Z]),
    ("pow_square_at_0", method(lambda x: x ** 2), [Z]),
    ("pow_zero_exponent", method(lambda x: x ** 0), [Z]),
    ("pow_half_at_0", method(lambda x: x ** 0.5), [[0.0, 1.0]]),
    ("pow_minus_one_at_0", method(lambda x: x ** -1), [[0.0, 1.0]]),
    ("pow_tensors_at_0", both("pow"), [[0.0, 0.0, 0.0, 2.0, -1.0], [0.0, 1.0, 2.0, 0.0, 2.0]]),
    ("pow_tensors_negative_exponent", both("pow"), [[0.0, 0.0, 4.0], [-1.0, 0.5, -0.5]]),
    ("rpow_at_0", method(lambda x: 0.0 ** x), [[0.0, 1.0, 2.0]]),
    ("copysign_at_0", both("copysign"), [[0.0, -0.0, 1.0, -1.0], [1.0, -1.0, -1.0, 1.0]]),
    ("remainder_jumps", both("remainder"), [[3.0, -3.0, 2.0, 0.0, 1.0], [1.5, 1.5, 2.0, 1.0, 0.75]]),
    ("atan2_origin", both("atan2"), [[0.0, 1.0], [0.0, 1.0]]),
    ("logaddexp_tie", both("logaddexp"), [[0.0, 1.0, -3.0], [0.0, 1.0, -3.0]]),
    ("logaddexp_infinite_one_side", both("logaddexp"), [[-INF, INF, 1.0], [1.0, 1.0, INF]]),
    ("hypot_axes", both("hypot"), [[0.0, 3.0], [2.0, 0.0]]),
    ("prod_one_zero", (ak.prod, torch.prod), [[0.0, 2.0, 3.0]]),
    ("prod_two_zeros", (ak.prod, torch.prod), [[0.0, 2.0, 0.0]]),
    ("prod_axis_zeros", (lambda x: ak.prod(x, axis=1), lambda x: torch.prod(x, 1)),
     [[[0.0, 2.0, 3.0], [0.0, 0.0, 1.0]]]),
    ("cumulative_prod_zeros", (ak.cumulative_prod, lambda x: torch.cumprod(x, 0)),
     [[2.0, 0.0, 3.0, 0.0, 4.0]]),
    ("std_constant", (ak.std, lambda x: torch.std(x, correction=0)), [[1.0, 1.0, 1.0]]),
    ("std_axis_constant_row", (lambda x: ak.std(x, axis=1, correction=1),
                               lambda x: torch.std(x, 1, correction=1)), [[[1.0, 1.0], [1.0, 3.0]]]),
    ("var_constant", (ak.var, lambda x: torch.var(x, correction=0)), [[1.0, 1.0, 1.0]]),
    ("vector_norm_2_zero", norm("vector_norm"), [[0.0, 0.0, 0.0]]),
    ("vector_norm_2_zero_row", norm("vector_norm", dim=1), [[[0.0, 0.0], [3.0, 4.0]]]),
    ("vector_norm_2_keepdims", norm("vector_norm", dim=0, keepdim=True), [[[0.0, 1.0], [0.0, 4.0]]]),
    ("vector_norm_1", norm("vector_norm", ord=1), [[0.0, -2.0, 1.0]]),
    ("vector_norm_inf_tie", norm("vector_norm", ord=INF), [[0.0, -2.0, 2.0]]),
    ("vector_norm_inf_zero", norm("vector_norm", ord=INF), [[0.0, 0.0, 0.0]]),
    ("vector_norm_minus_inf", norm("vector_norm", ord=-INF), [[1.0, -1.0, 2.0]]),
    ("vector_norm_0", norm("vector_norm", ord=0), [[0.0, 1.0, 2.0]]),
    ("vector_norm_3_zero", norm("vector_norm", ord=3), [[0.0, 0.0, 0.0]]),
    ("vector_norm_3_partly_zero", norm("vector_norm", ord=3), [[0.0, 1.0, -2.0]]),
    ("vector_norm_half_zero", norm("vector_norm", ord=0.5), [[0.0, 0.0, 0.0]]),
    ("vector_norm_half_partly_zero", norm("vector_norm", ord=0.5), [[0.0, 1.0, 2.0]]),
    ("vector_norm_minus_one", norm("vector_norm", ord=-1), [[0.0, 1.0, 2.0]]),
    ("vector_norm_1_5_zero", norm("vector_norm", ord=1.5), [[[0.0, 0.0], [1.0, -2.0]]]),
    ("matrix_norm_fro_zero", norm("matrix_norm"), [[[0.0, 0.0], [0.0, 0.0]]]),
    ("matrix_norm_fro_keepdims", norm("matrix_norm", keepdim=True), [[[[0.0, 0.0], [0.0, 0.0]]] * 2]),
    ("matrix_norm_1_zero", norm("matrix_norm", ord=1), [[[0.0, 0.0], [0.0, 0.0]]]),
    ("matrix_norm_1_tie", norm("matrix_norm", ord=1), [[[1.0, -1.0], [0.0, 1.0]]]),
    ("matrix_norm_inf_tie", norm("matrix_norm", ord=INF), [[[1.0, -1.0], [2.0, 0.0]]]),
    ("matrix_norm_minus_inf", norm("matrix_norm", ord=-INF), [[[1.0, -1.0], [2.0, 0.0]]]),
    ("matrix_norm_minus_one", norm("matrix_norm", ord=-1), [[[1.0, 0.0], [0.0, 1.0]]]),
    ("matrix_norm_2", norm("matrix_norm", ord=2), [[[2.0, 0.0], [0.0, 1.0]]]),
    ("matrix_norm_nuc", norm("matrix_norm", ord="nuc"), [[[2.0, 0.0], [0.0, 1.0]]]),
    ("log_at_0", both("log"), [[0.0, 1.0]]),
    ("relu6", (F.relu6, TF.relu6), [[-1.0, 0.0, 3.0, 6.0, 7.0]]),
    ("hardtanh", (F.hardtanh, TF.hardtanh), [[-2.0, -1.0, 0.0, 1.0, 2.0]]),
    ("hardtanh_bounds", (lambda x: F.hardtanh(x, 0.0, 3.0), lambda x: TF.hardtanh(x, 0.0, 3.0)),
     [[-1.0, 0.0, 3.0, 4.0]]),
    ("leaky_relu", (F.leaky_relu, TF.leaky_relu), [Z]),
    ("leaky_relu_slope", (lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2)), [Z]),
    ("elu", (F.elu, TF.elu), [Z]),
    ("elu_alpha", (lambda x: F.elu(x, 2.0), lambda x: TF.elu(x, 2.0)), [Z]),
    ("softplus_threshold", (F.softplus, TF.softplus), [[-1.0, 0.0, 20.0, 21.0]]),
    ("softplus_beta", (lambda x: F.softplus(x, 2.0, 6.0), lambda x: TF.softplus(x, 2.0, 6.0)),
     [[0.0, 3.0, 4.0]]),
    ("hardsigmoid", (F.hardsigmoid, TF.hardsigmoid), [[-4.0, -3.0, 0.0, 3.0, 4.0]]),
    ("hardswish", (F.hardswish, TF.hardswish), [[-4.0, -3.0, 0.0, 3.0, 4.0]]),
    ("sigmoid", (F.sigmoid, torch.sigmoid), [Z]),
    ("gelu", (F.gelu, TF.gelu), [Z]),
    ("silu", (F.silu, TF.silu), [Z]),
    ("softmax_minus_inf", (lambda x: F.softmax(x, dim=0), lambda x: TF.softmax(x, dim=0)),
     [[0.0, -INF, 1.0]]),
    ("log_softmax_tie", (lambda x: F.log_softmax(x, dim=0), lambda x: TF.log_softmax(x, dim=0)),
     [[1.0, 1.0, 1.0]]),
    ("mse_zero_error", (F.mse_loss, TF.mse_loss), [Z, Z]),
]

# Points where arraykit deliberately differs from PyTorch (docs/pytorch.md): the
# expected gradients, written out.
HYPOT_ORIGIN = ([[0.0, 3.0], [0.0, 4.0]], [[0.0, 0.6], [0.0, 0.8]])  # torch: NaN at (0, 0)
LOGADDEXP_INFINITE_TIES = ([[-INF, INF], [-INF, INF]], [[0.5, 0.5], [0.5, 0.5]])  # torch: NaN


def _weights(shape, dtype):
    size = int(np.prod(shape))
    return np.arange(1, size + 1, dtype=dtype).reshape(shape)


def _torch_reference(tfn, inputs, dtype):
    xs = [torch.tensor(np.asarray(v, dtype=dtype), requires_grad=True) for v in inputs]
    out = tfn(*xs)
    w = _weights(tuple(out.shape), dtype)
    (out * torch.tensor(w)).sum().backward()
    # torch leaves .grad None where no gradient flows (ord=0 norms): that is zeros
    return out.detach().numpy(), w, [np.zeros_like(x.detach().numpy()) if x.grad is None
                                     else x.grad.numpy() for x in xs]


def _loss(fn, w):
    def loss(*xs):
        return (fn(*xs) * ak.asarray(w)).sum()
    return loss


def _ak_grads(fn, inputs, w, dtype, mode):
    """Value and gradients of ``sum(fn(*inputs) * w)`` in one of the three modes."""
    xs = [ak.asarray(np.asarray(v, dtype=dtype)) for v in inputs]
    argnums = tuple(range(len(xs)))
    if mode == "backward":
        xs = [x.requires_grad_() for x in xs]
        out = fn(*xs)
        (out * ak.asarray(w)).sum().backward()
        return out.detach(), [x.grad for x in xs]
    if mode == "autograd.grad":
        xs = [x.requires_grad_() for x in xs]
        out = fn(*xs)
        return out.detach(), list(ak.autograd.grad((out * ak.asarray(w)).sum(), xs))
    grad = ak.grad(_loss(fn, w), argnums=argnums)
    if mode == "jit":
        grad = ak.jit(grad)
    return fn(*xs), list(grad(*xs))


# torch computes hardsigmoid's 1/6 in float32 for float64 inputs
FLOAT64_TOLERANCE = {"hardsigmoid": 1e-7}


def _close(actual, expected, dtype, loose=None):
    tol = 1e-5 if dtype == "float32" else loose or 1e-12
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_value_and_gradient_match_torch(case, dtype):
    name, (fn, tfn), inputs = case
    value, w, expected = _torch_reference(tfn, inputs, dtype)
    out, grads = _ak_grads(fn, inputs, w, dtype, "backward")
    _close(out, value, dtype)
    for g, e in zip(grads, expected):
        assert g is not None and g.dtype == getattr(ak, dtype)
        _close(g, e, dtype, FLOAT64_TOLERANCE.get(name))


# the default run checks these in every mode, the slow run all cases
EVERY_MODE = {
    "relu", "abs", "clip_both_bounds", "clip_tensor_bounds_equal", "maximum_tie", "max_axis_tied",
    "clamp_inplace", "clamp_inplace_tensor_bounds", "clamp_min_inplace", "clamp_inplace_view",
    "min_axis0_keepdims", "max_method_dim", "sort_ties", "pow_tensors_at_0", "copysign_at_0",
    "remainder_jumps", "atan2_origin", "std_axis_constant_row", "vector_norm_2_zero_row",
    "vector_norm_inf_tie", "vector_norm_half_partly_zero", "matrix_norm_fro_zero",
    "softmax_minus_inf", "hardtanh", "leaky_relu", "elu_alpha", "hardswish",
}
MODE_CASES = [
    pytest.param(c, id=c[0], marks=() if c[0] in EVERY_MODE else pytest.mark.slow) for c in CASES
]


@pytest.mark.parametrize("mode", ["autograd.grad", "functional", "jit"])
@pytest.mark.parametrize("case", MODE_CASES)
def test_gradient_in_every_mode_matches_torch(case, mode):
    _, (fn, tfn), inputs = case
    _, w, expected = _torch_reference(tfn, inputs, "float32")
    _, grads = _ak_grads(fn, inputs, w, "float32", mode)
    for g, e in zip(grads, expected):
        _close(g, e, "float32")


@pytest.mark.parametrize("mode", ["backward", "functional", "jit"])
@pytest.mark.parametrize("fn, inputs, expected", [
    (ak.hypot, *HYPOT_ORIGIN), (ak.logaddexp, *LOGADDEXP_INFINITE_TIES),
], ids=["hypot_origin", "logaddexp_infinite_ties"])
def test_documented_differences(fn, inputs, expected, mode):
    _, grads = _ak_grads(fn, inputs, np.ones(2, "float32"), "float32", mode)
    for g, e in zip(grads, expected):
        _close(g, e, "float32")


# ------------------------------------------------------------------ second derivatives

SECOND = [
    ("relu", (F.relu, TF.relu), Z),
    ("elu", (F.elu, TF.elu), Z),
    ("leaky_relu", (F.leaky_relu, TF.leaky_relu), Z),
    ("hardswish", (F.hardswish, TF.hardswish), [-3.0, 0.0, 3.0]),
    ("softplus", (lambda x: F.softplus(x, 2.0, 1.0), lambda x: TF.softplus(x, 2.0, 1.0)), [0.0, 0.5, 1.0]),
    ("abs", both("abs"), Z),
    ("clamp", method(lambda x: x.clamp(-1.0, 1.0)), [-2.0, -1.0, 0.0, 1.0, 2.0]),
    ("clamp_inplace", method(lambda x: (x * 1).clamp_(-1.0, 1.0)), [-2.0, -1.0, 0.0, 1.0, 2.0]),
    ("maximum_tie", (lambda x: ak.maximum(x, x * 0), lambda x: torch.maximum(x, x * 0)), Z),
    ("pow_cube", method(lambda x: x ** 3), Z),
    ("pow_self", (lambda x: ak.pow(x + 2, x), lambda x: torch.pow(x + 2, x)), Z),
    ("rpow", method(lambda x: 2.0 ** x), Z),
    ("remainder", (lambda x: ak.remainder(x * x, x + 3), lambda x: torch.remainder(x * x, x + 3)), Z),
    ("copysign", (lambda x: ak.copysign(x * x, x), lambda x: torch.copysign(x * x, x)), [-1.0, 0.5, 1.0]),
    ("atan2", (lambda x: ak.atan2(x, x + 2), lambda x: torch.atan2(x, x + 2)), Z),
    ("logaddexp", (lambda x: ak.logaddexp(x, x * x), lambda x: torch.logaddexp(x, x * x)), Z),
    ("hypot", (lambda x: ak.hypot(x, x + 2), lambda x: torch.hypot(x, x + 2)), Z),
    ("max_tied", (lambda x: ak.max(x * x), lambda x: torch.amax(x * x)), Z),
    ("vector_norm", norm("vector_norm"), Z),
    ("vector_norm_3", norm("vector_norm", ord=3), Z),
    ("std", (ak.std, lambda x: torch.std(x, correction=0)), Z),
    ("reciprocal", both("reciprocal"), [1.0, 2.0, -0.5]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", SECOND, ids=[c[0] for c in SECOND])
def test_second_derivative_matches_torch(case, dtype):
    """d/dx of (d sum(f(x) * w) / dx) . v, through create_graph and nested arraykit.grad."""
    _, (fn, tfn), values = case
    x = torch.tensor(np.asarray(values, dtype=dtype), requires_grad=True)
    out = tfn(x)
    w = _weights(tuple(out.shape), dtype)
    v = np.linspace(0.5, 1.5, x.numel(), dtype=dtype)
    (g,) = torch.autograd.grad((out * torch.tensor(w)).sum(), x, create_graph=True)
    if g.requires_grad:  # else the first derivative is piecewise constant: no second
        (g * torch.tensor(v)).sum().backward()
    second = np.zeros(x.shape, dtype) if x.grad is None else x.grad.numpy(force=True)

    xa = ak.asarray(np.asarray(values, dtype=dtype)).requires_grad_()
    (ga,) = ak.autograd.grad((fn(xa) * ak.asarray(w)).sum(), xa, create_graph=True)
    _close(ga.detach(), g.detach().numpy(), dtype)
    (ga * ak.asarray(v)).sum().backward()
    _close(xa.grad, second, dtype)

    nested = ak.grad(lambda y: (ak.grad(_loss(fn, w))(y) * ak.asarray(v)).sum())
    _close(nested(ak.asarray(np.asarray(values, dtype=dtype))), second, dtype)
