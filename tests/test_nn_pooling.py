"""Pooling against PyTorch: max pooling (values, indices, gradients at ties and NaN,
ceil_mode edges, dilation, integers), average pooling (count_include_pad, ceil_mode,
divisor_override), adaptive and power-average pooling, the layers (summaries,
errors), strided inputs and arraykit.jit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn
from arraykit.nn import functional as F

TF = torch.nn.functional


def _check(name, x, *args, grad=True, tol=1e-12, **kwargs):
    """Same values (and indices) and the same input gradient of sum(out * g)."""
    xa = ak.asarray(x).requires_grad_(grad)
    xt = torch.tensor(x, requires_grad=grad)
    out, tout = getattr(F, name)(xa, *args, **kwargs), getattr(TF, name)(xt, *args, **kwargs)
    if isinstance(tout, tuple):
        assert out[1].dtype == ak.int64
        np.testing.assert_array_equal(out[1].numpy(), tout[1].numpy())
        out, tout = out[0], tout[0]
    assert out.shape == tuple(tout.shape) and out.dtype.name == str(tout.dtype).split(".")[1]
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    if grad:
        g = np.random.default_rng(0).standard_normal(tuple(tout.shape)).astype(x.dtype)
        (out * ak.asarray(g)).sum().backward()
        (tout * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(xa.grad.numpy(), xt.grad.numpy(), rtol=tol, atol=tol)


# small integers as floats: many ties in every window
TIES = np.random.default_rng(1).integers(0, 3, size=(2, 3, 7, 6)).astype(np.float64)

MAX_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False),
    (3, 2, 1, 1, False),
    (3, 2, 1, 1, True),  # the last window starts inside the input
    (2, 2, 1, 1, True),  # a window that would start in the padding is dropped
    (3, 2, 1, 2, True),
    ((2, 3), (1, 2), (1, 0), (2, 1), False),
    (3, 3, 1, 1, True),
]


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", MAX_CASES)
def test_max_pool_ties_indices_and_gradients(kernel, stride, padding, dilation, ceil_mode):
    _check("max_pool2d", TIES, kernel, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=True)
    first = lambda v: v if isinstance(v, int) or v is None else v[0]  # noqa: E731
    _check("max_pool1d", TIES[0], first(kernel), first(stride), first(padding), first(dilation),
           ceil_mode=ceil_mode, return_indices=True)


def test_max_pool_3d_float32_unbatched_and_strided():
    x = np.random.default_rng(2).integers(0, 3, size=(2, 5, 6, 4)).astype(np.float32)
    _check("max_pool3d", x, 3, 2, 1, ceil_mode=True, return_indices=True, tol=1e-6)
    _check("max_pool3d", x[None], (2, 3, 2), 1, (1, 1, 0), dilation=(1, 2, 1), return_indices=True, tol=1e-6)
    # a channels-last (non-contiguous) input
    x4 = np.random.default_rng(3).standard_normal((2, 3, 6, 5)).astype(np.float32)
    cl = ak.asarray(x4).contiguous(memory_format=ak.channels_last)
    out, idx = F.max_pool2d(cl, 3, 2, 1, return_indices=True)
    tout, tidx = TF.max_pool2d(torch.tensor(x4).contiguous(memory_format=torch.channels_last), 3, 2, 1,
                               return_indices=True)
    np.testing.assert_array_equal(out.numpy(), tout.numpy())
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())


def test_max_pool_nan_infinity_and_integers():
    x = np.random.default_rng(4).standard_normal((2, 2, 6, 6))
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = np.nan  # two NaNs in one window: PyTorch keeps the last
    x[1, 1, :3, :3] = -np.inf  # a window of -inf next to the padding
    _check("max_pool2d", x, 3, 2, 1, return_indices=True, grad=False)
    xi = np.random.default_rng(5).integers(-5, 5, size=(2, 3, 7, 6))
    _check("max_pool2d", xi, 3, 2, 1, return_indices=True, grad=False)
    _check("avg_pool2d", xi, 3, 2, 1, grad=False)  # truncating division, as PyTorch's


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("divisor_override", [None, 3])
def test_avg_pool_matches_torch(ceil_mode, count_include_pad, divisor_override):
    x = np.random.default_rng(6).standard_normal((2, 3, 7, 6))
    options = dict(ceil_mode=ceil_mode, count_include_pad=count_include_pad)
    _check("avg_pool2d", x, (3, 2), (2, 1), (1, 1), divisor_override=divisor_override, **options)
    _check("avg_pool3d", x, 3, 2, 1, divisor_override=divisor_override, **options)  # unbatched
    if divisor_override is None:
        _check("avg_pool1d", x[0], 3, 2, 1, **options)
    _check("avg_pool2d", x.astype(np.float32), 2, 2, 1, tol=1e-6, divisor_override=divisor_override, **options)


@pytest.mark.parametrize("size", [1, 2, 3, (4, 5), (None, 4), (7, 6), (10, 11)])
def test_adaptive_pools_match_torch(size):
    _check("adaptive_max_pool2d", TIES, size, return_indices=True)
    _check("adaptive_avg_pool2d", TIES, size)
    one = size if isinstance(size, int) else size[1]
    _check("adaptive_max_pool1d", TIES[0], one, return_indices=True)
    _check("adaptive_avg_pool1d", TIES[0], one)


def test_adaptive_avg_3d_and_lp_pools():
    x = np.random.default_rng(7).standard_normal((1, 2, 5, 6, 4))
    _check("adaptive_avg_pool3d", x, (2, 3, 3))
    _check("adaptive_avg_pool3d", x[0], 1)
    pos = np.abs(x[0]) + 0.5
    _check("lp_pool2d", pos, 2, 3, 2)
    _check("lp_pool1d", pos[0], 3.0, 2, ceil_mode=True)


def test_pool_errors():
    x = ak.zeros((1, 3, 5, 5))
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size, but got "
                                           "pad=2, kernel_size=3 and dilation=1"):
        F.max_pool2d(x, 3, padding=2)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.avg_pool2d(x, 3, padding=2)
    with pytest.raises(RuntimeError, match=r"Given input size: \(3x5x5\). Calculated output size: "
                                           r"\(3x0x0\). Output size is too small"):
        F.max_pool2d(x, 6)
    with pytest.raises(RuntimeError, match="stride should not be zero"):
        F.max_pool2d(x, 2, stride=0)
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\) input"):
        F.max_pool2d(ak.zeros((5, 5)), 2)
    with pytest.raises(TypeError, match="bool"):
        F.max_pool2d(ak.zeros((1, 1, 4, 4), dtype=ak.bool), 2)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x, 2, divisor_override=0)


LAYERS = [
    ("MaxPool1d", (3, 2, 1), dict(ceil_mode=True), 1),
    ("MaxPool2d", (2,), {}, 2),
    ("MaxPool2d", (3, 2, 1), dict(return_indices=True), 2),
    ("MaxPool3d", (2,), dict(dilation=1), 3),
    ("AvgPool1d", (2,), {}, 1),
    ("AvgPool2d", (3, 2, 1), dict(count_include_pad=False), 2),
    ("AvgPool3d", (2,), dict(divisor_override=3), 3),
    ("AdaptiveAvgPool1d", (3,), {}, 1),
    ("AdaptiveAvgPool2d", ((2, None),), {}, 2),
    ("AdaptiveAvgPool3d", (1,), {}, 3),
    ("AdaptiveMaxPool1d", (3,), {}, 1),
    ("AdaptiveMaxPool2d", (3, True), {}, 2),
    ("LPPool1d", (2, 3), {}, 1),
    ("LPPool2d", (2, 3), dict(stride=1), 2),
]


@pytest.mark.parametrize("name,args,kwargs,nd", LAYERS)
def test_pool_layers_match_torch(name, args, kwargs, nd):
    layer, tlayer = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(layer) == repr(tlayer)
    assert layer.state_dict() == {} and list(layer.parameters()) == []
    x = np.abs(np.random.default_rng(8).standard_normal((2, 3, 6, 5, 4)[:nd + 2])).astype(np.float32)
    out, tout = layer(ak.asarray(x)), tlayer(torch.tensor(x))
    if isinstance(tout, tuple):
        np.testing.assert_array_equal(out[1].numpy(), tout[1].numpy())
        out, tout = out[0], tout[0]
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-6, atol=1e-6)


def test_pooling_under_jit_sends_tie_gradients_as_torch():
    model = nn.Sequential(nn.MaxPool2d(2, ceil_mode=True), nn.AvgPool2d(2, padding=1), nn.AdaptiveAvgPool2d(1))

    @ak.jit
    def step(x):
        loss = (model(x) ** 2).sum()
        loss.backward()
        return loss

    xa = ak.asarray(TIES).requires_grad_()
    loss = step(xa)
    xt = torch.tensor(TIES, requires_grad=True)
    tmodel = torch.nn.Sequential(torch.nn.MaxPool2d(2, ceil_mode=True), torch.nn.AvgPool2d(2, padding=1),
                                 torch.nn.AdaptiveAvgPool2d(1))
    tloss = (tmodel(xt) ** 2).sum()
    tloss.backward()
    np.testing.assert_allclose(loss.numpy(), tloss.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(xa.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)
