"""Convolutions against PyTorch: F.conv1d/2d/3d and F.conv_transpose1d/2d/3d (values in
float32 and float64, gradients of input, weight and bias), the Conv and ConvTranspose
layers (padding modes, 'same', output_size, state_dict, loading PyTorch's weights,
summaries, initialisation, errors), channels-last inputs and arraykit.jit."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn
from arraykit.nn import functional as F

TF = torch.nn.functional
TOL = {np.float32: 2e-5, np.float64: 1e-11}


def _run_both(fa, ft, arrays, *args, rng, **kwargs):
    """Outputs and gradients (of sum(out * g)) of ``fa`` on arraykit tensors and ``ft``
    on PyTorch tensors made from the same arrays (None passes through)."""
    a_in = [None if v is None else ak.asarray(v).requires_grad_() for v in arrays]
    t_in = [None if v is None else torch.tensor(v, requires_grad=True) for v in arrays]
    out, tout = fa(*a_in, *args, **kwargs), ft(*t_in, *args, **kwargs)
    g = rng.standard_normal(tuple(tout.shape)).astype(arrays[0].dtype)
    (out * ak.asarray(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    return out, tout, a_in, t_in


def _compare(out, tout, a_in, t_in, tol):
    assert out.shape == tuple(tout.shape) and out.dtype.name == str(tout.dtype).split(".")[1]
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    for a, t in zip(a_in, t_in):
        if a is not None:
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


CONV_CASES = [  # nd, options, groups
    (1, dict(stride=2, padding=1), 1),
    (1, dict(padding="same", dilation=2), 2),
    (2, dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2)), 1),
    (2, dict(padding="valid"), 2),
    (2, dict(padding="same"), 1),
    (3, dict(stride=(1, 2, 1), padding=1), 2),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nd,options,groups", CONV_CASES)
def test_conv_functional_matches_torch(nd, options, groups, dtype):
    rng = np.random.default_rng(nd * 10 + groups)
    batch = (2,) if dtype == np.float32 else ()  # unbatched in float64
    x = rng.standard_normal(batch + (4,) + (6, 5, 4)[:nd]).astype(dtype)
    w = rng.standard_normal((6, 4 // groups) + (3, 2, 3)[:nd]).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    name = f"conv{nd}d"
    _compare(*_run_both(getattr(F, name), getattr(TF, name), [x, w, b], groups=groups, rng=rng, **options),
             TOL[dtype])


TRANSPOSED_CASES = [  # nd, stride, padding, output_padding, groups, dilation
    (1, 2, 1, 1, 1, 1),
    (1, 3, 0, 0, 2, 2),
    (2, (2, 1), (1, 0), (1, 0), 1, 1),
    (2, 2, 2, 1, 2, (2, 1)),
    (2, 2, (3, 1), 0, 1, 1),  # padding beyond the kernel: the output is cropped
    (3, 2, 1, (1, 0, 1), 2, 1),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nd,stride,padding,output_padding,groups,dilation", TRANSPOSED_CASES)
def test_conv_transpose_functional_matches_torch(nd, stride, padding, output_padding, groups, dilation,
                                                 dtype):
    rng = np.random.default_rng(nd + groups)
    x = rng.standard_normal((2, 4) + (5, 4, 3)[:nd]).astype(dtype)
    w = rng.standard_normal((4, 6 // groups) + (3, 2, 3)[:nd]).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    name = f"conv_transpose{nd}d"
    _compare(*_run_both(getattr(F, name), getattr(TF, name), [x, w, b], stride, padding, output_padding,
                        groups, dilation, rng=rng), TOL[dtype])
    if dtype == np.float64:  # unbatched and without bias
        _compare(*_run_both(getattr(F, name), getattr(TF, name), [x[0], w, None], stride, padding,
                            output_padding, groups, dilation, rng=rng), TOL[dtype])


def test_conv_functional_errors():
    x, w = ak.zeros((1, 3, 5, 5)), ak.zeros((6, 4, 3, 3))
    with pytest.raises(RuntimeError, match=r"expected input\[1, 3, 5, 5\] to have 4 channels, but got 3"):
        F.conv2d(x, w)
    with pytest.raises(RuntimeError, match=r"Given transposed=1, weight of size \[6, 4, 3, 3\].*6 channels, "
                                           "but got 3"):
        F.conv_transpose2d(x, w)
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(ak.zeros((1, 6, 5, 5)), w, stride=2, output_padding=2)
    with pytest.raises(ValueError, match="strided"):
        F.conv1d(ak.zeros((1, 4, 5)), ak.zeros((2, 4, 3)), stride=2, padding="same")
    with pytest.raises(ValueError, match="invalid padding string"):
        F.conv1d(ak.zeros((1, 4, 5)), ak.zeros((2, 4, 3)), padding="full")
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv2d(ak.zeros((1, 4, 2, 2)), w)
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\) input"):
        F.conv2d(ak.zeros((4, 5)), w)
    with pytest.raises(RuntimeError, match="bias"):
        F.conv2d(ak.zeros((1, 4, 5, 5)), w, ak.zeros(5))
    with pytest.raises(TypeError, match="floating-point"):
        F.conv2d(ak.zeros((1, 4, 5, 5), dtype=ak.int64), w)


MODULES = [
    ("Conv1d", dict(in_channels=4, out_channels=6, kernel_size=3, padding=2, padding_mode="reflect")),
    ("Conv1d", dict(in_channels=4, out_channels=6, kernel_size=4, padding="same", padding_mode="circular",
                    dilation=2, groups=2)),
    ("Conv2d", dict(in_channels=4, out_channels=6, kernel_size=(3, 2), stride=2, padding=(1, 2),
                    padding_mode="replicate")),
    ("Conv2d", dict(in_channels=4, out_channels=6, kernel_size=3, padding=1, padding_mode="circular",
                    bias=False)),
    ("Conv3d", dict(in_channels=4, out_channels=2, kernel_size=2, padding="same", padding_mode="zeros")),
    ("ConvTranspose1d", dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1,
                             output_padding=1, groups=2)),
    ("ConvTranspose2d", dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, dilation=2, bias=False)),
    ("ConvTranspose3d", dict(in_channels=4, out_channels=2, kernel_size=(2, 3, 2), stride=(2, 1, 1))),
]


def _copy_from_torch(module, tmodule):
    module.load_state_dict({k: v.detach().numpy() for k, v in tmodule.state_dict().items()})


@pytest.mark.parametrize("name,options", MODULES)
def test_conv_modules_match_torch(name, options):
    module, tmodule = getattr(nn, name)(**options), getattr(torch.nn, name)(**options)
    assert repr(module) == repr(tmodule)
    assert {k: tuple(v.shape) for k, v in module.state_dict().items()} == {
        k: tuple(v.shape) for k, v in tmodule.state_dict().items()}
    _copy_from_torch(module, tmodule)
    nd = int(name[-2])
    x = np.random.default_rng(0).standard_normal((2, 4) + (7, 6, 5)[:nd]).astype(np.float32)
    xa, xt = ak.asarray(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    out, tout = module(xa), tmodule(xt)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=2e-5, atol=2e-5)
    g = np.random.default_rng(1).standard_normal(tuple(tout.shape)).astype(np.float32)
    (out * ak.asarray(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(xa.grad.numpy(), xt.grad.numpy(), rtol=2e-5, atol=2e-5)
    tparams = dict(tmodule.named_parameters())
    for pname, p in module.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tparams[pname].grad.numpy(), rtol=1e-4, atol=1e-4)
    unbatched = module(ak.asarray(x[0]))
    np.testing.assert_allclose(unbatched.numpy(), tmodule(torch.tensor(x[0])).detach().numpy(),
                               rtol=2e-5, atol=2e-5)


def test_conv_transpose_output_size():
    module = nn.ConvTranspose2d(3, 2, 3, stride=3, padding=1)
    tmodule = torch.nn.ConvTranspose2d(3, 2, 3, stride=3, padding=1)
    _copy_from_torch(module, tmodule)
    x = np.random.default_rng(2).standard_normal((1, 3, 4, 4)).astype(np.float32)
    for size in [(10, 12), [1, 2, 11, 10]]:
        out, tout = module(ak.asarray(x), output_size=size), tmodule(torch.tensor(x), output_size=size)
        np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=2e-5, atol=2e-5)
    with pytest.raises(ValueError, match=r"requested an output size of \[13, 10\], but valid sizes range "
                                         r"from \[10, 10\] to \[12, 12\]"):
        module(ak.asarray(x), output_size=(13, 10))


def test_conv_module_errors_and_init():
    with pytest.raises(ValueError, match="^in_channels must be divisible by groups$"):
        nn.Conv2d(3, 6, 3, groups=2)
    with pytest.raises(ValueError, match="^out_channels must be divisible by groups$"):
        nn.Conv1d(4, 6, 3, groups=4)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv3d(4, 6, 3, groups=0)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(4, 6, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose1d'):
        nn.ConvTranspose1d(4, 6, 3, padding_mode="reflect")
    with pytest.raises(RuntimeError, match=r"expected input\[2, 3, 5\] to have 4 channels, but got 3"):
        nn.Conv1d(4, 6, 3)(ak.zeros((2, 3, 5)))
    # PyTorch's default initialisation: kaiming_uniform(a=sqrt(5)) -> U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    for module, fan_in in [(nn.Conv1d(6, 8, 3, groups=2), 9), (nn.ConvTranspose2d(4, 6, 3, groups=2), 27)]:
        bound = 1 / math.sqrt(fan_in)
        for p in (module.weight, module.bias):
            values = p.numpy()
            assert np.abs(values).max() <= bound and np.abs(values).max() > 0.5 * bound
    assert nn.ConvTranspose2d(4, 6, 3, groups=2).weight.shape == (4, 3, 3, 3)


def test_channels_last_and_strided_inputs():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((6, 4, 3, 2, 2)).astype(np.float32)
    x = rng.standard_normal((2, 4, 5, 6, 4)).astype(np.float32)
    expected = TF.conv3d(torch.tensor(x), torch.tensor(w), padding=1).numpy()
    cl = ak.asarray(x).contiguous(memory_format=ak.channels_last_3d)
    assert not cl.is_contiguous()
    out = F.conv3d(cl, ak.asarray(w), padding=1)
    assert out.is_contiguous(memory_format=ak.channels_last_3d)
    np.testing.assert_allclose(out.numpy(), expected, rtol=2e-5, atol=2e-5)
    # a transposed (non-contiguous) input of a transposed convolution
    xt = rng.standard_normal((2, 5, 4, 6)).astype(np.float32)
    wt = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    strided = ak.asarray(xt).permute(0, 2, 1, 3)
    expected = TF.conv_transpose2d(torch.tensor(xt).permute(0, 2, 1, 3), torch.tensor(wt), stride=2).numpy()
    np.testing.assert_allclose(F.conv_transpose2d(strided, ak.asarray(wt), stride=2).numpy(), expected,
                               rtol=2e-5, atol=2e-5)


def test_conv_layers_under_jit():
    rng = np.random.default_rng(4)
    model = nn.Sequential(nn.Conv1d(3, 4, 3, padding=1, padding_mode="reflect"),
                          nn.ConvTranspose1d(4, 2, 2, stride=2))
    tmodel = torch.nn.Sequential(torch.nn.Conv1d(3, 4, 3, padding=1, padding_mode="reflect"),
                                 torch.nn.ConvTranspose1d(4, 2, 2, stride=2))
    _copy_from_torch(model, tmodel)
    x = rng.standard_normal((2, 3, 6)).astype(np.float32)

    @ak.jit
    def step(m, x):
        loss = (m(x) ** 2).sum()
        loss.backward()
        return loss

    loss = step(model, ak.asarray(x))
    tloss = (tmodel(torch.tensor(x)) ** 2).sum()
    tloss.backward()
    np.testing.assert_allclose(loss.numpy(), tloss.detach().numpy(), rtol=2e-5)
    for (name, p), tp in zip(model.named_parameters(), tmodel.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=name)
