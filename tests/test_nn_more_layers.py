"""The pooling, loss and layer families added to complete PyTorch's nn.functional and nn
(fractional max pooling, max unpooling, 3-D adaptive max and power pooling, CTC,
multi-label margin and distance-triplet losses, bilinear, channel shuffle, lazy
layers, ...) against torch 2.13: values, indices and gradients on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import arraykit as ak
import arraykit.nn.functional as F
from arraykit import nn
from device_checks import raises_checked


def _pair(x):
    a = ak.asarray(x)
    a.requires_grad_(True)
    return a, torch.tensor(x, requires_grad=True)


def _close(ours, theirs, tol=1e-12):
    np.testing.assert_allclose(np.asarray(ours.detach().numpy()), theirs.detach().numpy(), rtol=tol, atol=tol)


def _grads_match(ours_out, theirs_out, ours_in, theirs_in, seed=1, tol=1e-12):
    w = np.random.default_rng(seed).standard_normal(tuple(theirs_out.shape))
    (ours_out * ak.asarray(w)).sum().backward()
    (theirs_out * torch.tensor(w)).sum().backward()
    for a, t in zip(ours_in, theirs_in):
        _close(a.grad, t.grad, tol)


@pytest.mark.parametrize("nd, shape", [(2, (2, 3, 9, 10)), (2, (3, 9, 9)), (3, (1, 2, 7, 8, 9))])
def test_fractional_max_pool_matches_torch_given_the_samples(nd, shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    batch = shape[:2] if len(shape) == nd + 2 else (1, shape[0])
    samples = rng.random(batch + (nd,))
    a, t = _pair(x)
    ours = getattr(F, f"fractional_max_pool{nd}d")(a, 2, output_size=(4,) * nd, return_indices=True,
                                                   _random_samples=ak.asarray(samples))
    theirs = getattr(TF, f"fractional_max_pool{nd}d")(t, 2, output_size=(4,) * nd, return_indices=True,
                                                      _random_samples=torch.tensor(samples))
    _close(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
    _grads_match(ours[0], theirs[0], [a], [t])


def test_fractional_max_pool_output_ratio_and_module_draws_its_own_samples():
    x = ak.asarray(np.random.default_rng(0).standard_normal((2, 3, 10, 10)))
    values, index = nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)(x)
    assert values.shape == (2, 3, 5, 5)
    flat = x.numpy().reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, index.numpy().reshape(2, 3, -1), -1),
                                  values.numpy().reshape(2, 3, -1))
    with pytest.raises(ValueError, match="output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_inverts_max_pool_as_torch(nd):
    rng = np.random.default_rng(nd)
    x = rng.standard_normal((2, 3) + (6,) * nd)
    values, index = getattr(TF, f"max_pool{nd}d")(torch.tensor(x), 2, return_indices=True)
    a, t = _pair(values.numpy())
    ours = getattr(F, f"max_unpool{nd}d")(a, ak.asarray(index.numpy()), 2)
    theirs = getattr(TF, f"max_unpool{nd}d")(t, index, 2)
    _close(ours, theirs)
    _grads_match(ours, theirs, [a], [t])
    module = getattr(nn, f"MaxUnpool{nd}d")(2)
    _close(module(a, ak.asarray(index.numpy()), output_size=(7,) * nd),
           getattr(torch.nn, f"MaxUnpool{nd}d")(2)(t, index, output_size=(7,) * nd))


def test_max_unpool_refuses_an_index_outside_the_output():
    index = ak.asarray(np.array([[[0, 9]]]))
    with raises_checked(RuntimeError, match="invalid max index 9"):  # deferred on a GPU
        F.max_unpool1d(ak.ones((1, 1, 2)), index, 2, output_size=(4,))


def test_with_indices_spellings_adaptive_max_pool3d_and_lp_pool3d():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 6, 7, 5))
    a, t = _pair(x)
    ours, theirs = F.adaptive_max_pool3d_with_indices(a, (3, 2, 4)), TF.adaptive_max_pool3d_with_indices(t, (3, 2, 4))
    _close(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
    _close(nn.AdaptiveMaxPool3d(2)(a), torch.nn.AdaptiveMaxPool3d(2)(t))
    for nd in (1, 2, 3):
        sub = (slice(None),) * 2 + (0,) * (3 - nd)
        v, i = getattr(F, f"max_pool{nd}d_with_indices")(a[sub], 2)
        tv, ti = getattr(TF, f"max_pool{nd}d_with_indices")(t[sub], 2)
        _close(v, tv)
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
    for nd in (1, 2):
        sub = (slice(None),) * 2 + (0,) * (3 - nd)
        v, i = getattr(F, f"adaptive_max_pool{nd}d_with_indices")(a[sub], 3)
        tv, ti = getattr(TF, f"adaptive_max_pool{nd}d_with_indices")(t[sub], 3)
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
    positive = np.abs(x) + 0.1
    p, tp = _pair(positive)
    ours, theirs = nn.LPPool3d(2, 2)(p), torch.nn.LPPool3d(2, 2)(tp)
    _close(ours, theirs)
    _grads_match(ours, theirs, [p], [tp])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_matches_torch_through_log_softmax(reduction):
    rng = np.random.default_rng(0)
    steps, batch, classes = 12, 3, 5
    logits = rng.standard_normal((steps, batch, classes))
    targets = rng.integers(1, classes, (batch, 4))
    input_lengths, target_lengths = [12, 10, 7], [4, 2, 3]
    a, t = _pair(logits)
    ours = F.ctc_loss(F.log_softmax(a, dim=2), ak.asarray(targets), input_lengths, target_lengths,
                      reduction=reduction)
    theirs = TF.ctc_loss(t.log_softmax(2), torch.tensor(targets), input_lengths, target_lengths,
                         reduction=reduction)
    _close(ours, theirs, 1e-10)
    _grads_match(ours, theirs, [a], [t], tol=1e-10)
    flat = np.concatenate([targets[n, :s] for n, s in enumerate(target_lengths)])
    module = nn.CTCLoss(reduction=reduction)(F.log_softmax(a, dim=2), ak.asarray(flat), ak.asarray(input_lengths),
                                             ak.asarray(target_lengths))
    _close(module, theirs, 1e-10)


def test_ctc_loss_impossible_alignment_is_inf_or_zero():
    rng = np.random.default_rng(1)
    lp = torch.tensor(rng.standard_normal((6, 2, 4))).log_softmax(2)
    targets = np.array([[1, 2, 1], [3, 3, 0]])
    args = ([2, 6], [3, 2])
    ours = F.ctc_loss(ak.asarray(lp.numpy()), ak.asarray(targets), *args, reduction="none")
    theirs = TF.ctc_loss(lp, torch.tensor(targets), *args, reduction="none")
    assert np.isinf(ours.numpy()[0]) and np.isinf(theirs.numpy()[0])
    _close(ours[1], theirs[1], 1e-10)
    _close(F.ctc_loss(ak.asarray(lp.numpy()), ak.asarray(targets), *args, zero_infinity=True),
           TF.ctc_loss(lp, torch.tensor(targets), *args, zero_infinity=True), 1e-10)
    with pytest.raises(ValueError, match="blank"):
        F.ctc_loss(ak.asarray(lp.numpy()), ak.asarray(np.array([[0, 1, 1], [1, 1, 1]])), *args)


def test_multilabel_margin_loss_matches_torch():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 6))
    y = np.array([[3, 0, -1, 1, 2, 2], [1, 2, 3, -1, -1, -1], [-1, 0, 0, 0, 0, 0], [5, 4, 3, 2, 1, 0]])
    for reduction in ("none", "mean", "sum"):
        a, t = _pair(x)
        ours = nn.MultiLabelMarginLoss(reduction=reduction)(a, ak.asarray(y))
        theirs = torch.nn.MultiLabelMarginLoss(reduction=reduction)(t, torch.tensor(y))
        _close(ours, theirs)
        _grads_match(ours, theirs, [a], [t])
    _close(F.multilabel_margin_loss(ak.asarray(x[0]), ak.asarray(y[0])),
           TF.multilabel_margin_loss(torch.tensor(x[0]), torch.tensor(y[0])))
    with raises_checked(IndexError, match="target 6"):  # deferred on a GPU
        F.multilabel_margin_loss(ak.asarray(x), ak.asarray(np.full((4, 6), 6)))


@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_with_distance_loss_matches_torch(swap):
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((5, 3)) for _ in range(3)]
    pairs = [_pair(x) for x in arrays]
    ours = nn.TripletMarginWithDistanceLoss(swap=swap, margin=2.0)(*(p[0] for p in pairs))
    theirs = torch.nn.TripletMarginWithDistanceLoss(swap=swap, margin=2.0)(*(p[1] for p in pairs))
    _close(ours, theirs)
    _grads_match(ours, theirs, [p[0] for p in pairs], [p[1] for p in pairs])

    def cosine(x, y):
        return 1 - F.cosine_similarity(x, y)

    ours = F.triplet_margin_with_distance_loss(*(p[0] for p in pairs), distance_function=cosine, reduction="none")
    theirs = TF.triplet_margin_with_distance_loss(*(p[1] for p in pairs), distance_function=lambda x, y: 1 - TF.cosine_similarity(x, y), reduction="none")
    _close(ours, theirs)


def test_bilinear_matches_torch():
    rng = np.random.default_rng(5)
    layer, reference = nn.Bilinear(3, 4, 2), torch.nn.Bilinear(3, 4, 2).double()
    reference.weight.data = torch.tensor(layer.weight.numpy()).double()
    reference.bias.data = torch.tensor(layer.bias.numpy()).double()
    x1, x2 = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    a1, t1 = _pair(x1)
    a2, t2 = _pair(x2)
    ours = F.bilinear(a1, a2, ak.asarray(layer.weight.numpy().astype(np.float64)),
                      ak.asarray(layer.bias.numpy().astype(np.float64)))
    theirs = reference(t1, t2)
    _close(ours, theirs, 1e-6)
    _grads_match(ours, theirs, [a1, a2], [t1, t2], tol=1e-6)
    assert layer(ak.asarray(x1.astype(np.float32)), ak.asarray(x2.astype(np.float32))).shape == (5, 2)
    bound = 1 / np.sqrt(3)
    assert np.abs(layer.weight.numpy()).max() <= bound


def test_channel_shuffle_softmax2d_cross_map_lrn_and_nll_loss2d():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 6, 3, 4))
    a, t = _pair(x)
    _close(nn.ChannelShuffle(3)(a), torch.nn.ChannelShuffle(3)(t))
    _close(F.channel_shuffle(a, 2), TF.channel_shuffle(t, 2))
    _close(nn.Softmax2d()(a), torch.nn.Softmax2d()(t))
    _close(nn.CrossMapLRN2d(3, alpha=0.1, beta=0.5, k=2.0)(a),
           torch.nn.CrossMapLRN2d(3, alpha=0.1, beta=0.5, k=2.0)(t), 1e-7)
    target = rng.integers(0, 6, (2, 3, 4))
    _close(nn.NLLLoss2d()(a, ak.asarray(target)), torch.nn.NLLLoss(reduction="mean")(t, torch.tensor(target)))
    with pytest.raises(ValueError, match="divisible"):
        F.channel_shuffle(a, 4)


@pytest.mark.parametrize("lazy, eager, shape, args", [
    ("LazyLinear", "Linear", (4, 7), (3,)),
    ("LazyConv1d", "Conv1d", (2, 5, 9), (4, 3)),
    ("LazyConv2d", "Conv2d", (5, 9, 9), (4, 3)),
    ("LazyConv3d", "Conv3d", (1, 2, 5, 5, 5), (3, 2)),
    ("LazyConvTranspose1d", "ConvTranspose1d", (2, 5, 9), (4, 3)),
    ("LazyConvTranspose2d", "ConvTranspose2d", (2, 5, 6, 6), (4, 3)),
    ("LazyConvTranspose3d", "ConvTranspose3d", (1, 2, 4, 4, 4), (3, 2)),
    ("LazyBatchNorm1d", "BatchNorm1d", (4, 5), ()),
    ("LazyBatchNorm2d", "BatchNorm2d", (4, 5, 3, 3), ()),
    ("LazyBatchNorm3d", "BatchNorm3d", (2, 5, 3, 3, 3), ()),
    ("LazyInstanceNorm1d", "InstanceNorm1d", (5, 8), ()),
    ("LazyInstanceNorm2d", "InstanceNorm2d", (2, 5, 4, 4), ()),
    ("LazyInstanceNorm3d", "InstanceNorm3d", (2, 5, 3, 3, 3), ()),
])
def test_lazy_layers_become_their_layer_at_the_first_call(lazy, eager, shape, args):
    ak.manual_seed(0)
    layer = getattr(nn, lazy)(*args)
    assert layer.has_uninitialized_params() and not list(layer.parameters())
    x = ak.asarray(np.random.default_rng(7).standard_normal(shape).astype(np.float32))
    out = layer(x)
    assert type(layer) is getattr(nn, eager)
    size = getattr(layer, "in_features", None) or getattr(layer, "in_channels", None) or layer.num_features
    assert size == {"Linear": 7, "Conv2d": 5, "InstanceNorm1d": 5}.get(eager, shape[1])
    reference = getattr(torch.nn, eager)(size, *args)
    reference.load_state_dict({k: torch.tensor(np.asarray(v.numpy())) for k, v in layer.state_dict().items()})
    _close(out, reference(torch.tensor(x.numpy())), 1e-5)
    assert set(layer.state_dict()) == set(reference.state_dict())


def test_data_parallel_and_container_wrap_modules_as_torch():
    inner = nn.Linear(3, 2)
    wrapped = nn.DataParallel(inner)
    x = ak.ones((4, 3))
    np.testing.assert_array_equal(wrapped(x).numpy(), inner(x).numpy())
    assert set(wrapped.state_dict()) == set(torch.nn.DataParallel(torch.nn.Linear(3, 2)).state_dict())
    with pytest.warns(DeprecationWarning):
        container = nn.Container(first=nn.Linear(2, 2))
    assert list(dict(container.named_children())) == ["first"]
