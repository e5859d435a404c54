"""``nn.AdaptiveLogSoftmaxWithLoss`` and ``nn.LinearCrossEntropyLoss`` (new in torch
2.13) against torch 2.13: parameters, state_dict keys, outputs, losses and gradients
with the same weights, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arraykit as ak

RNG = np.random.default_rng(5)


def _copy_parameters(module, torch_module):
    state = {k: ak.asarray(v.detach().numpy()) for k, v in torch_module.state_dict().items()}
    assert sorted(module.state_dict()) == sorted(state)
    for name, value in state.items():
        assert tuple(module.state_dict()[name].shape) == tuple(value.shape), name
    module.load_state_dict(state)


def _gradients(module):
    """``{name: gradient}`` of a torch or an arraykit module's parameters."""
    return {name: p.grad.numpy() for name, p in module.named_parameters()}


@pytest.mark.parametrize("head_bias", (False, True))
def test_adaptive_log_softmax_against_torch(head_bias):
    torch.manual_seed(0)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 9, 15], div_value=2.0,
                                                 head_bias=head_bias).double()
    ours = ak.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 9, 15], div_value=2.0,
                                            head_bias=head_bias, dtype=ak.float64)
    _copy_parameters(ours, theirs)
    x = RNG.standard_normal((7, 8))
    target = np.array([0, 3, 4, 19, 10, 9, 15], np.int64)  # every cluster, the bounds
    tx = torch.from_numpy(x).requires_grad_()
    ax = ak.asarray(x).requires_grad_()
    want = theirs(tx, torch.from_numpy(target))
    got = ours(ax, ak.asarray(target))
    np.testing.assert_allclose(got.output.numpy(), want.output.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(got.loss.numpy(), want.loss.detach().numpy(), rtol=1e-12)
    (want.loss + want.output[2]).backward()
    (got.loss + got.output[2]).backward()
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    theirs_grads = _gradients(theirs)
    for name, grad in _gradients(ours).items():
        np.testing.assert_allclose(grad, theirs_grads[name], rtol=1e-10, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(ours.log_prob(ak.asarray(x)).numpy(),
                               theirs.log_prob(torch.from_numpy(x)).detach().numpy(), rtol=1e-12)
    np.testing.assert_array_equal(ours.predict(ak.asarray(x)).numpy(),
                                  theirs.predict(torch.from_numpy(x)).numpy())
    one = ours(ak.asarray(x[0]), ak.asarray(target[3]))
    their_one = theirs(torch.from_numpy(x[0]), torch.tensor(target[3]))
    assert one.output.shape == () and tuple(their_one.output.shape) == ()
    np.testing.assert_allclose(one.output.numpy(), their_one.output.detach().numpy(), rtol=1e-12)


def test_adaptive_log_softmax_errors_as_torch():
    module = ak.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3, 6])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\], but values in "
                                           r"range \[0, 12\] were found"):
        module(ak.ones((2, 4)), ak.asarray([0, 12]))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        ak.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [6, 3])
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        ak.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3, 10])
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input"):
        module(ak.ones((2, 2, 4)), ak.asarray([0, 1]))
    with pytest.raises(ValueError):
        torch.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [6, 3])


CASES = {
    "indices": dict(kwargs={}, target=lambda: RNG.integers(0, 6, 5)),
    "bias mean": dict(kwargs={"bias": True}, target=lambda: RNG.integers(0, 6, 5)),
    "ignore_index smoothing sum": dict(kwargs={"bias": True, "ignore_index": 2,
                                               "label_smoothing": 0.1, "reduction": "sum"},
                                       target=lambda: np.array([2, 0, 5, 2, 1])),
    "class weights none": dict(kwargs={"weight": True, "reduction": "none"},
                               target=lambda: RNG.integers(0, 6, 5)),
    "out_features": dict(kwargs={"out_features": (2, 3), "bias": True},
                         target=lambda: RNG.integers(0, 6, (5, 2, 3))),
    "probabilities": dict(kwargs={"bias": True, "label_smoothing": 0.2},
                          target=lambda: RNG.dirichlet(np.ones(6), 5)),
}


@pytest.mark.parametrize("name", CASES)
def test_linear_cross_entropy_loss_against_torch(name):
    kwargs = dict(CASES[name]["kwargs"])
    class_weight = RNG.uniform(0.5, 2.0, 6) if kwargs.pop("weight", False) else None
    theirs = torch.nn.LinearCrossEntropyLoss(
        4, 6, dtype=torch.float64,
        weight=None if class_weight is None else torch.from_numpy(class_weight), **kwargs)
    ours = ak.nn.LinearCrossEntropyLoss(
        4, 6, dtype=ak.float64,
        weight=None if class_weight is None else ak.asarray(class_weight), **kwargs)
    _copy_parameters(ours, theirs)
    x = RNG.standard_normal((5, 4))
    target = CASES[name]["target"]()
    tx, ax = torch.from_numpy(x).requires_grad_(), ak.asarray(x).requires_grad_()
    want = theirs(tx, torch.from_numpy(target))
    got = ours(ax, ak.asarray(target))
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    want.sum().backward()
    got.sum().backward()
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-12)
    theirs_grads = _gradients(theirs)
    for key, grad in _gradients(ours).items():
        np.testing.assert_allclose(grad, theirs_grads[key], rtol=1e-8, atol=1e-12, err_msg=key)


def test_linear_cross_entropy_loss_unbatched_and_errors():
    theirs = torch.nn.LinearCrossEntropyLoss(3, 4, dtype=torch.float64)
    ours = ak.nn.LinearCrossEntropyLoss(3, 4, dtype=ak.float64)
    _copy_parameters(ours, theirs)
    x = RNG.standard_normal(3)
    np.testing.assert_allclose(ours(ak.asarray(x), ak.asarray(2)).numpy(),
                               theirs(torch.from_numpy(x), torch.tensor(2)).detach().numpy(),
                               rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"expected weight shape to be \(4,\), got \(3,\)"):
        ak.nn.LinearCrossEntropyLoss(3, 4, weight=ak.ones(3))
    with pytest.raises(RuntimeError, match=r"label_smoothing to be in range \[0, 1\], got 1.5"):
        ak.nn.LinearCrossEntropyLoss(3, 4, label_smoothing=1.5)
    assert "num_classes=4" in repr(ours)
