"""nn.functional activations and distances against torch.nn.functional: values in
float32 and float64, gradients (kinks included), strided inputs, errors, arraykit.jit."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import arraykit as ak
import arraykit.nn.functional as F

# kinks of the piecewise activations sit on the grid: 0, +-0.5, +-1, +-3, 6
GRID = np.array([-6.0, -3.0, -2.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 6.0, 7.5])

ELEMENTWISE = [
    ("selu", {}), ("celu", {"alpha": 0.7}), ("mish", {}), ("logsigmoid", {}), ("softsign", {}),
    ("tanhshrink", {}), ("softshrink", {"lambd": 0.5}), ("hardshrink", {"lambd": 0.5}),
    ("threshold", {"threshold": 0.5, "value": -2.0}), ("rrelu", {"training": False}),
    ("tanh", {}), ("relu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {"alpha": 0.5}),
    ("hardtanh", {}), ("relu6", {}), ("hardsigmoid", {}), ("hardswish", {}), ("silu", {}),
    ("softplus", {"beta": 2.0, "threshold": 3.0}), ("sigmoid", {}),
]

# torch's backward rounds 1 / alpha (celu) and 1 / 6 (hardsigmoid) to float32 even in
# float64; arraykit's gradients are exact
ROUNDED = {"celu", "hardsigmoid"}


def _pair(values, dtype, requires_grad=True):
    a = ak.asarray(values, dtype=getattr(ak, dtype))
    t = torch.tensor(values, dtype=getattr(torch, dtype))
    if requires_grad:
        a.requires_grad_()
        t.requires_grad_()
    return a, t


def _np(x):
    return np.asarray(x.detach().tolist() if hasattr(x, "detach") else x.tolist())


def _check(out, tout, a, t, rtol):
    np.testing.assert_allclose(_np(out), tout.detach().numpy(), rtol=rtol, atol=rtol)
    g = np.linspace(-1.0, 1.0, int(np.prod(tout.shape))).reshape(tout.shape)
    (out * ak.asarray(g, dtype=out.dtype)).sum().backward()
    (tout * torch.tensor(g, dtype=tout.dtype)).sum().backward()
    np.testing.assert_allclose(_np(a.grad), t.grad.numpy(), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", ELEMENTWISE, ids=[n for n, _ in ELEMENTWISE])
def test_elementwise_activation_matches_torch(name, kw, dtype):
    a, t = _pair(GRID, dtype)
    rtol = 1e-6 if dtype == "float32" or name in ROUNDED else 1e-12
    _check(getattr(F, name)(a, **kw), getattr(TF, name)(t, **kw), a, t, rtol)


@pytest.mark.parametrize("name,kw", ELEMENTWISE[:10], ids=[n for n, _ in ELEMENTWISE[:10]])
def test_activation_of_a_strided_view(name, kw):
    base = np.arange(24.0).reshape(4, 6) / 4 - 3
    a, t = _pair(base, "float64")
    _check(getattr(F, name)(a.T[::2], **kw), getattr(TF, name)(t.T[::2], **kw), a, t,
           1e-6 if name in ROUNDED else 1e-12)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_glu_softmin_match_torch(dim):
    x = np.random.default_rng(0).standard_normal((4, 6))
    for name in ("glu", "softmin"):
        a, t = _pair(x, "float64")
        _check(getattr(F, name)(a, dim=dim), getattr(TF, name)(t, dim=dim), a, t, 1e-12)


@pytest.mark.parametrize("weight_shape", [(1,), (3,)])
def test_prelu_matches_torch(weight_shape):
    x = np.random.default_rng(1).standard_normal((2, 3, 4))
    x[0, 0, :2] = 0.0  # the kink
    w = np.array([0.25, -0.5, 2.0])[: weight_shape[0]]
    a, t = _pair(x, "float64")
    wa, wt = _pair(w, "float64")
    _check(F.prelu(a, wa), TF.prelu(t, wt), a, t, 1e-12)
    np.testing.assert_allclose(_np(wa.grad), wt.grad.numpy(), rtol=1e-12)


def test_activation_errors_match_torch():
    x = ak.ones((2, 3))
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(x, dim=1)
    with pytest.raises(RuntimeError):
        TF.glu(torch.ones(2, 3), dim=1)  # the oracle raises too
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(x, -1.0)
    with pytest.raises(RuntimeError, match="channel"):
        F.prelu(x, ak.ones(2))
    with pytest.raises(TypeError, match="floating"):
        F.mish(ak.ones(3, dtype=ak.int32))


def test_rrelu_training_draws_slopes():
    x = ak.asarray(-np.ones(2000))
    y = _np(F.rrelu(x, 0.1, 0.3, training=True))
    assert np.all((-y >= 0.1) & (-y <= 0.3)) and abs(-y.mean() - 0.2) < 0.01
    assert np.array_equal(_np(F.rrelu(ak.asarray(np.ones(5)), training=True)), np.ones(5))


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_samples(hard):
    logits = ak.asarray(np.log([[0.7, 0.2, 0.1]] * 2000)).requires_grad_()
    y = F.gumbel_softmax(logits, tau=0.5, hard=hard)
    values = _np(y)
    np.testing.assert_allclose(values.sum(1), 1.0, rtol=1e-12)
    if hard:
        assert set(np.unique(values)) <= {0.0, 1.0}
        freq = values.mean(0)
        np.testing.assert_allclose(freq, [0.7, 0.2, 0.1], atol=0.04)
    (y[:, 0]).sum().backward()
    assert np.abs(_np(logits.grad)).sum() > 0
    np.testing.assert_allclose(_np(logits.grad).sum(1), 0.0, atol=1e-9)


PAIRS = [
    ("cosine_similarity", {}), ("cosine_similarity", {"dim": 0, "eps": 1e-3}),
    ("pairwise_distance", {}), ("pairwise_distance", {"p": 1.0, "keepdim": True}),
    ("pairwise_distance", {"p": float("inf")}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", PAIRS)
def test_distances_match_torch(name, kw, dtype):
    rng = np.random.default_rng(2)
    x1, x2 = rng.standard_normal((2, 4, 5))
    x1[1] = 0.0  # a zero vector: the norm's gradient is 0 there
    a1, t1 = _pair(x1, dtype)
    a2, t2 = _pair(x2, dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    _check(getattr(F, name)(a1, a2, **kw), getattr(TF, name)(t1, t2, **kw), a1, t1, rtol)
    np.testing.assert_allclose(_np(a2.grad), t2.grad.numpy(), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1)])
def test_normalize_matches_torch(p, dim):
    x = np.random.default_rng(3).standard_normal((3, 4))
    x[0] = 0.0
    a, t = _pair(x, "float64")
    _check(F.normalize(a, p=p, dim=dim), TF.normalize(t, p=p, dim=dim), a, t, 1e-12)


@pytest.mark.parametrize("p", [2, 1, 0.5])
def test_pdist_matches_torch(p):
    x = np.random.default_rng(4).standard_normal((5, 3))
    x[3] = x[1]  # a zero distance
    a, t = _pair(x, "float64")
    _check(F.pdist(a, p), TF.pdist(t, p), a, t, 1e-10)
    with pytest.raises(RuntimeError, match="2D"):
        F.pdist(ak.ones((2, 2, 2)))


def test_activations_under_jit():
    x = np.random.default_rng(5).standard_normal((3, 4))

    @ak.jit
    def f(v):
        return F.mish(v) + F.glu(F.selu(v), dim=1).sum() + F.cosine_similarity(v, v * 2 + 1).sum()

    t = torch.tensor(x)
    expected = TF.mish(t) + TF.glu(TF.selu(t), dim=1).sum() + TF.cosine_similarity(t, t * 2 + 1).sum()
    np.testing.assert_allclose(_np(f(ak.asarray(x))), expected.numpy(), rtol=1e-12)
