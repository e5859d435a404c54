"""nn.functional against PyTorch (a test-only oracle): values and gradients for
every option of the losses, and the activations."""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest
import torch

import arraykit as ak
import arraykit.nn.functional as F
from device_checks import raises_checked

TF = torch.nn.functional
CE_CASES = [
    c for c in itertools.product(
        [(6, 5), (4, 5, 3), (5,)], ["index", "prob"], [False, True], ["none", "mean", "sum"],
        [0.0, 0.2], [False, True],
    )
    if not (c[1] == "prob" and c[5])
]


def _both(values, requires_grad=False):
    t = torch.tensor(values, requires_grad=requires_grad)
    a = ak.asarray(values)
    return (a.requires_grad_() if requires_grad else a), t


def _backward_both(a_out, t_out, rng):
    g = rng.normal(size=tuple(t_out.shape))
    t_out.backward(torch.tensor(g))
    a_out.backward(ak.asarray(g))


@pytest.mark.parametrize("shape,kind,weighted,reduction,smoothing,ignored", CE_CASES)
def test_cross_entropy_matches_torch(shape, kind, weighted, reduction, smoothing, ignored):
    rng = np.random.default_rng(len(shape) * 7 + weighted)
    x = rng.normal(size=shape) * 3
    classes = shape[1] if len(shape) > 1 else shape[0]
    if kind == "index":
        target = rng.integers(0, classes, size=(shape[0],) + shape[2:] if len(shape) > 1 else ())
        if ignored and target.ndim:
            target.flat[::3] = -100
    else:
        target = rng.random(shape)
        target /= target.sum(axis=1 if len(shape) > 1 else 0, keepdims=True)
    weight = rng.random(classes) + 0.5 if weighted else None
    ax, tx = _both(x, requires_grad=True)
    kwargs = dict(reduction=reduction, label_smoothing=smoothing)
    t_loss = TF.cross_entropy(tx, torch.tensor(target), weight=None if weight is None else torch.tensor(weight), **kwargs)
    a_loss = F.cross_entropy(ax, ak.asarray(target), weight=None if weight is None else ak.asarray(weight), **kwargs)
    assert a_loss.shape == tuple(t_loss.shape)
    np.testing.assert_allclose(a_loss.numpy(), t_loss.detach().numpy(), rtol=1e-10, atol=1e-12)
    _backward_both(a_loss, t_loss, rng)
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_cross_entropy_is_stable_for_huge_logits():
    x = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 5e3]], np.float32)
    ax, tx = _both(x, requires_grad=True)
    target = np.array([1, 1])
    a = F.cross_entropy(ax, ak.asarray(target))
    t = TF.cross_entropy(tx, torch.tensor(target))
    np.testing.assert_allclose(a.numpy(), t.detach().numpy(), rtol=1e-6)
    a.backward()
    t.backward()
    assert np.isfinite(ax.grad.numpy()).all()
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), atol=1e-6)


def test_cross_entropy_errors():
    x = ak.zeros((3, 4))
    with raises_checked(IndexError, match="target 4 is out of bounds for 4 classes"):
        F.cross_entropy(x, ak.asarray([0, 4, 1]))
    with pytest.raises(ValueError, match="expected target of shape"):
        F.cross_entropy(x, ak.asarray([0, 1]))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.cross_entropy(x, ak.asarray([0, 1, 2]), reduction="avg")


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_matches_torch(reduction, weighted):
    rng = np.random.default_rng(3)
    x = np.log(rng.dirichlet(np.ones(4), size=6))
    target = np.array([0, 3, -100, 2, 1, 3])
    weight = rng.random(4) + 0.5 if weighted else None
    ax, tx = _both(x, requires_grad=True)
    t = TF.nll_loss(tx, torch.tensor(target), weight=None if weight is None else torch.tensor(weight), reduction=reduction)
    a = F.nll_loss(ax, ak.asarray(target), weight=None if weight is None else ak.asarray(weight), reduction=reduction)
    np.testing.assert_allclose(a.numpy(), t.detach().numpy(), rtol=1e-12)
    _backward_both(a, t, rng)
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted,pos_weighted", [(False, False), (True, False), (False, True), (True, True)])
def test_bce_with_logits_matches_torch(reduction, weighted, pos_weighted):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(5, 3)) * 4
    y = rng.random((5, 3))
    weight = rng.random((5, 3)) if weighted else None
    pos = rng.random(3) + 0.5 if pos_weighted else None
    ax, tx = _both(x, requires_grad=True)
    opt = lambda conv, w: None if w is None else conv(w)  # noqa: E731
    t = TF.binary_cross_entropy_with_logits(tx, torch.tensor(y), weight=opt(torch.tensor, weight), reduction=reduction, pos_weight=opt(torch.tensor, pos))
    a = F.binary_cross_entropy_with_logits(ax, ak.asarray(y), weight=opt(ak.asarray, weight), reduction=reduction, pos_weight=opt(ak.asarray, pos))
    np.testing.assert_allclose(a.numpy(), t.detach().numpy(), rtol=1e-10)
    _backward_both(a, t, rng)
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("name,kwargs", [
    ("relu", {}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}),
    ("softmax", {"dim": 1}), ("log_softmax", {"dim": 0}), ("mse_loss", {}),
])
def test_activations_match_torch(name, kwargs):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 6)) * 3
    ax, tx = _both(x, requires_grad=True)
    if name == "mse_loss":
        y = rng.normal(size=(4, 6))
        a, t = F.mse_loss(ax, ak.asarray(y)), TF.mse_loss(tx, torch.tensor(y))
    else:
        a, t = getattr(F, name)(ax, **kwargs), getattr(TF, name)(tx, **kwargs)
    np.testing.assert_allclose(a.numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    _backward_both(a, t, rng)
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("loss", [
    lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
    lambda x, t: (F.log_softmax(x, 1) * F.softmax(x, 1)).sum() + F.logsumexp(x, 1).sum(),
])
def test_hand_written_gradients_under_functional_grad(loss):
    """The autograd.Function losses under arraykit.grad (JAX's custom_vjp unflattens
    a tensor over a placeholder leaf: it must not count as memory) match eager."""
    rng = np.random.default_rng(8)
    x = ak.asarray(rng.normal(size=(5, 4)))
    t = ak.asarray(rng.integers(0, 4, 5))
    g = ak.grad(loss)(x, t)
    leaf = x.clone().requires_grad_()
    loss(leaf, t).backward()
    np.testing.assert_allclose(g.numpy(), leaf.grad.numpy(), rtol=1e-12)


def test_logsumexp_and_linear_match_torch():
    rng = np.random.default_rng(6)
    x, w, b = rng.normal(size=(3, 4, 5)), rng.normal(size=(2, 5)), rng.normal(size=2)
    (ax, tx), (aw, tw), (ab, tb) = (_both(v, requires_grad=True) for v in (x, w, b))
    for dim, keep in [(1, False), ((0, 2), True)]:
        np.testing.assert_allclose(F.logsumexp(ax, dim, keep).numpy(),
                                   torch.logsumexp(tx, dim, keep).detach().numpy(), rtol=1e-12)
    a = (F.linear(ax, aw, ab) * F.logsumexp(ax, 2, True)).sum()
    t = (TF.linear(tx, tw, tb) * torch.logsumexp(tx, 2, True)).sum()
    a.backward()
    t.backward()
    for mine, theirs in [(ax, tx), (aw, tw), (ab, tb)]:
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-10)


def test_dropout_uses_the_key_and_scales():
    x = ak.ones((100, 100))
    a = F.dropout(x, 0.25, key=jax.random.key(0))
    b = F.dropout(x, 0.25, key=jax.random.key(0))
    c = F.dropout(x, 0.25, key=jax.random.key(1))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), c.numpy())
    values = a.numpy()
    assert set(np.unique(values)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.2 < (values == 0).mean() < 0.3
    assert F.dropout(x, 0.25, training=False) is x
