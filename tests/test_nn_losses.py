"""nn.functional losses against torch.nn.functional: values and gradients of every
differentiable operand, each reduction, weights, the deprecated size_average/reduce,
ties at the hinges, errors, arraykit.jit."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import arraykit as ak
import arraykit.nn.functional as F
from device_checks import raises_checked

RNG = np.random.default_rng(0)
N, C = 4, 3
X = RNG.standard_normal((N, C))
Y = RNG.standard_normal((N, C))
X[0, 0] = Y[0, 0]  # a tie: |d| = 0
X[1, 1] = Y[1, 1] + 1.0  # on smooth-l1's / huber's corner
PROB = 1 / (1 + np.exp(-X))
TARGET01 = (RNG.random((N, C)) > 0.5).astype(float)
SIGN = np.where(RNG.random(N) > 0.5, 1.0, -1.0)
SIGNS = np.where(RNG.random((N, C)) > 0.5, 1.0, -1.0)
WEIGHT = RNG.random((N, C)) + 0.5
CLASS_W = np.array([0.5, 2.0, 1.0])
LOGP = X - np.log(np.exp(X).sum(1, keepdims=True))
P = np.exp(Y) / np.exp(Y).sum(1, keepdims=True)
COUNTS = RNG.integers(0, 5, (N, C)).astype(float)
VAR = RNG.random((N, C)) + 0.1
CLASSES = np.array([0, 2, 1, 2])

# (id, function name, operands (arrays; the first `diff` are differentiated), kwargs)
CASES = [
    ("l1", "l1_loss", (X, Y), 2, {}),
    ("l1_weight", "l1_loss", (X, Y), 1, {"weight": WEIGHT}),
    ("mse_weight", "mse_loss", (X, Y), 2, {"weight": WEIGHT}),
    ("smooth_l1", "smooth_l1_loss", (X, Y), 2, {}),
    ("smooth_l1_beta", "smooth_l1_loss", (X, Y), 2, {"beta": 0.5}),
    ("smooth_l1_beta0", "smooth_l1_loss", (X, Y), 2, {"beta": 0.0}),
    ("huber", "huber_loss", (X, Y), 2, {"delta": 1.0}),
    ("huber_weight", "huber_loss", (X, Y), 1, {"delta": 0.5, "weight": WEIGHT}),
    ("bce", "binary_cross_entropy", (PROB, TARGET01), 1, {}),
    ("bce_soft_target", "binary_cross_entropy", (PROB, P), 2, {"weight": WEIGHT}),
    ("bce_logits_pos_weight", "binary_cross_entropy_with_logits", (X, TARGET01), 1,
     {"pos_weight": np.array([1.0, 2.0, 0.5])}),
    ("kl", "kl_div", (LOGP, P), 2, {}),
    ("kl_log_target", "kl_div", (LOGP, np.log(P)), 2, {"log_target": True}),
    ("cosine_embedding", "cosine_embedding_loss", (X, Y, SIGN), 2, {"margin": 0.1}),
    ("margin_ranking", "margin_ranking_loss", (X[:, 0], Y[:, 0], SIGN), 2, {"margin": 0.2}),
    ("triplet", "triplet_margin_loss", (X, Y, Y[::-1].copy()), 3, {}),
    ("triplet_swap_p1", "triplet_margin_loss", (X, Y, Y[::-1].copy()), 3,
     {"swap": True, "p": 1, "margin": 2.0}),
    ("poisson", "poisson_nll_loss", (X, COUNTS), 1, {}),
    ("poisson_full", "poisson_nll_loss", (np.abs(X) + 0.1, COUNTS), 1,
     {"log_input": False, "full": True}),
    ("gaussian", "gaussian_nll_loss", (X, Y, VAR), 3, {}),
    ("gaussian_full_small_var", "gaussian_nll_loss", (X, Y, VAR * 1e-6), 3, {"full": True}),
    ("gaussian_var_one_less_dim", "gaussian_nll_loss", (X, Y, VAR[:, 0]), 3, {}),
    ("multilabel_soft_margin", "multilabel_soft_margin_loss", (X, TARGET01), 1,
     {"weight": CLASS_W}),
    ("hinge_embedding", "hinge_embedding_loss", (X, SIGNS), 1, {"margin": 0.5}),
    ("soft_margin", "soft_margin_loss", (X, SIGNS), 1, {}),
    ("multi_margin", "multi_margin_loss", (X, CLASSES), 1, {}),
    ("multi_margin_p2_weight", "multi_margin_loss", (X, CLASSES), 1,
     {"p": 2, "margin": 0.5, "weight": CLASS_W}),
    ("nll_weight", "nll_loss", (LOGP, CLASSES), 1, {"weight": CLASS_W}),
]


def _operands(lib, arrays, diff, dtype):
    out = []
    for i, a in enumerate(arrays):
        integer = a.dtype.kind == "i"
        if lib is ak:
            t = ak.asarray(a, dtype=ak.int64 if integer else getattr(ak, dtype))
            if i < diff:
                t.requires_grad_()
        else:
            t = torch.tensor(a, dtype=torch.int64 if integer else getattr(torch, dtype),
                             requires_grad=i < diff)
        out.append(t)
    return out


def _kwargs(lib, kw, dtype):
    return {k: (ak.asarray(v, dtype=getattr(ak, dtype)) if lib is ak else
                torch.tensor(v, dtype=getattr(torch, dtype))) if isinstance(v, np.ndarray) else v
            for k, v in kw.items()}


def _run(lib, name, arrays, diff, kw, reduction, dtype):
    ops = _operands(lib, arrays, diff, dtype)
    fn = getattr(F if lib is ak else TF, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(*ops, **_kwargs(lib, kw, dtype), reduction=reduction)
    g = np.linspace(0.5, 1.5, int(np.prod(tuple(out.shape)))).reshape(tuple(out.shape))
    (out * (ak.asarray(g, dtype=out.dtype) if lib is ak else torch.tensor(g, dtype=out.dtype))).sum().backward()
    value = np.asarray(out.detach().tolist())
    return value, [np.asarray(o.grad.tolist()) for o in ops[:diff]]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_loss_matches_torch(case, reduction):
    _, name, arrays, diff, kw = case
    expected, expected_grads = _run(torch, name, arrays, diff, kw, reduction, "float64")
    got, grads = _run(ak, name, arrays, diff, kw, reduction, "float64")
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    for g, e in zip(grads, expected_grads):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("case", CASES[::3], ids=[c[0] for c in CASES[::3]])
def test_loss_float32(case):
    _, name, arrays, diff, kw = case
    expected, expected_grads = _run(torch, name, arrays, diff, kw, "mean", "float32")
    got, grads = _run(ak, name, arrays, diff, kw, "mean", "float32")
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-6)
    for g, e in zip(grads, expected_grads):
        np.testing.assert_allclose(g, e, rtol=2e-4, atol=1e-5)


def test_kl_div_batchmean():
    a, t = ak.asarray(LOGP).requires_grad_(), torch.tensor(LOGP, requires_grad=True)
    F.kl_div(a, ak.asarray(P), reduction="batchmean").backward()
    expected = TF.kl_div(t, torch.tensor(P), reduction="batchmean")
    expected.backward()
    np.testing.assert_allclose(np.asarray(a.grad.tolist()), t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("size_average,reduce", [(False, None), (None, False), (True, True), (False, True)])
def test_deprecated_size_average_and_reduce(size_average, reduce):
    for name in ("l1_loss", "mse_loss", "soft_margin_loss"):
        with pytest.warns(UserWarning):
            got = getattr(F, name)(ak.asarray(X), ak.asarray(SIGNS), size_average, reduce)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = getattr(TF, name)(torch.tensor(X), torch.tensor(SIGNS), size_average, reduce)
        np.testing.assert_allclose(np.asarray(got.tolist()), expected.numpy(), rtol=1e-12)


def test_bce_at_the_bounds_matches_torch():
    x = np.array([0.0, 1.0, 0.5, 1e-30])
    y = np.array([1.0, 0.0, 1.0, 0.0])
    a, t = ak.asarray(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    F.binary_cross_entropy(a, ak.asarray(y), reduction="sum").backward()
    out = TF.binary_cross_entropy(t, torch.tensor(y), reduction="sum")
    out.backward()
    np.testing.assert_allclose(np.asarray(a.grad.tolist()), t.grad.numpy(), rtol=1e-12)


def test_loss_errors_match_torch():
    with raises_checked(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(ak.asarray([0.5, 1.5]), ak.asarray([1.0, 0.0]))
    with pytest.raises(ValueError, match="target size"):
        F.binary_cross_entropy(ak.asarray([0.5, 0.5]), ak.asarray([[1.0, 0.0]]))
    with pytest.raises(RuntimeError, match="negative values for beta"):
        F.smooth_l1_loss(ak.asarray(X), ak.asarray(Y), beta=-1.0)
    with raises_checked(ValueError, match="negative"):
        F.gaussian_nll_loss(ak.asarray(X), ak.asarray(Y), ak.asarray(-VAR))
    with pytest.raises(ValueError, match="incorrect size"):
        F.gaussian_nll_loss(ak.asarray(X), ak.asarray(Y), ak.asarray(VAR[:2]))
    with pytest.raises(ValueError, match="reduction"):
        F.l1_loss(ak.asarray(X), ak.asarray(Y), reduction="avg")
    with pytest.raises(ValueError, match="margin"):
        F.triplet_margin_loss(ak.asarray(X), ak.asarray(X), ak.asarray(X), margin=0.0)
    with raises_checked(IndexError, match="out of bounds"):
        F.multi_margin_loss(ak.asarray(X), ak.asarray([0, 1, 2, 3]))


def test_losses_under_jit():
    @ak.jit
    def f(x, y):
        return (F.huber_loss(x, y) + F.kl_div(x, y.softmax(1) if hasattr(y, "softmax") else
                                                F.softmax(y, 1), reduction="batchmean")
                + F.triplet_margin_loss(x, y, y * 2))

    t, u = torch.tensor(X), torch.tensor(Y)
    expected = (TF.huber_loss(t, u) + TF.kl_div(t, u.softmax(1), reduction="batchmean")
                + TF.triplet_margin_loss(t, u, u * 2))
    np.testing.assert_allclose(float(f(ak.asarray(X), ak.asarray(Y))), expected.item(), rtol=1e-12)
