"""Padding, resampling, fold/unfold, pixel shuffle and Unflatten against PyTorch: values
and gradients, negative padding, errors, the layers' summaries, strided inputs and
arraykit.jit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn
from arraykit.nn import functional as F

TF = torch.nn.functional


def _check(name, x, *args, tol=1e-12, **kwargs):
    """Same values and the same input gradient of sum(out * g) as PyTorch's."""
    xa, xt = ak.asarray(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    out, tout = getattr(F, name)(xa, *args, **kwargs), getattr(TF, name)(xt, *args, **kwargs)
    assert out.shape == tuple(tout.shape) and out.dtype.name == str(tout.dtype).split(".")[1]
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    g = np.random.default_rng(0).standard_normal(tuple(tout.shape)).astype(x.dtype)
    (out * ak.asarray(g)).sum().backward()
    (tout * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(xa.grad.numpy(), xt.grad.numpy(), rtol=10 * tol, atol=10 * tol)


PADS = [
    ((2, 3, 5), (1, 2), "reflect"),
    ((2, 3, 5), (-2, 4), "reflect"),  # negative: cropped after reflecting
    ((3, 5), (5, 5), "circular"),
    ((2, 3, 5), (-1, 2), "circular"),  # negative: cropped before wrapping
    ((2, 3, 5, 4), (1, 2, 3, 0), "replicate"),
    ((2, 3, 5, 4), (1, -2, 3, 1), "circular"),
    ((1, 2, 3, 4, 5), (1, 1, 2, 0, 1, 2), "reflect"),
    ((2, 3, 4, 5), (2, 1, 0, 1, 1, 2), "replicate"),
    ((2, 3, 4), (1, -1, 2, 0, 1, 2), "constant"),
]


@pytest.mark.parametrize("shape,pad,mode", PADS)
def test_pad_matches_torch(shape, pad, mode):
    x = np.random.default_rng(1).standard_normal(shape)
    _check("pad", x, pad, mode)


def test_pad_values_dtypes_and_errors():
    ints = np.arange(5).reshape(1, 1, 5)
    for value in (2.5, -1):
        np.testing.assert_array_equal(F.pad(ak.asarray(ints), (1, 1), value=value).numpy(),
                                      TF.pad(torch.tensor(ints), (1, 1), value=value).numpy())
    assert F.pad(ak.ones((1, 2), dtype=ak.bool), (1, 0), value=0.5).numpy().all()
    _check("pad", np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32), (1, 2), "constant",
           value=-3.0, tol=1e-7)
    x = ak.zeros((1, 3, 5, 5))
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(x, (1, 1, 1))
    with pytest.raises(RuntimeError, match="padding length 10 and input of dimension 4"):
        F.pad(x, (1,) * 10)
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D input tensor"):
        F.pad(x, (1, 1), mode="reflect")
    with pytest.raises(RuntimeError, match=r"padding \(5, 5\) at dimension 3 of input \[1, 3, 5, 5\]"):
        F.pad(x, (5, 5, 1, 1), mode="reflect")
    with pytest.raises(RuntimeError, match="wrapping around more than once"):
        F.pad(x, (6, 6, 1, 1), mode="circular")
    with pytest.raises(RuntimeError, match="doesn't take in value argument"):
        F.pad(x, (1, 1, 1, 1), mode="reflect", value=2)
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        F.pad(x, (1, 1), mode="foo")


PAD_LAYERS = [
    ("ZeroPad1d", ((1, 2),)), ("ZeroPad2d", (2,)), ("ZeroPad3d", (1,)),
    ("ConstantPad1d", (2, 3.5)), ("ConstantPad2d", ((1, 0, 2, 1), -1.0)), ("ConstantPad3d", (1, 0.0)),
    ("ReflectionPad1d", (2,)), ("ReflectionPad2d", ((1, 2, 3, 0),)), ("ReflectionPad3d", (1,)),
    ("ReplicationPad1d", (2,)), ("ReplicationPad2d", (1,)), ("ReplicationPad3d", ((1, 0, 2, 1, 0, 1),)),
    ("CircularPad1d", (2,)), ("CircularPad2d", (1,)), ("CircularPad3d", (1,)),
]


@pytest.mark.parametrize("name,args", PAD_LAYERS)
def test_padding_layers_match_torch(name, args):
    layer, tlayer = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(layer) == repr(tlayer)
    x = np.random.default_rng(3).standard_normal((2, 3, 4, 5, 6)[:int(name[-2]) + 2]).astype(np.float32)
    np.testing.assert_array_equal(layer(ak.asarray(x)).numpy(), tlayer(torch.tensor(x)).numpy())


RESAMPLE = [  # mode, spatial dims, options
    ("nearest", 2, dict(scale_factor=2)),
    ("nearest", 1, dict(scale_factor=0.7)),
    ("nearest", 3, dict(size=(4, 2, 5))),
    ("nearest-exact", 2, dict(scale_factor=(1.5, 0.5))),
    ("linear", 1, dict(size=9, align_corners=True)),
    ("linear", 1, dict(scale_factor=1.7, recompute_scale_factor=True)),
    ("bilinear", 2, dict(scale_factor=2, align_corners=False)),
    ("bilinear", 2, dict(size=(4, 11), align_corners=True)),
    ("bilinear", 2, dict(scale_factor=(1.5, 0.6))),
    ("bicubic", 2, dict(scale_factor=2, align_corners=False)),
    ("bicubic", 2, dict(size=(3, 9), align_corners=True)),
    ("trilinear", 3, dict(scale_factor=(1.5, 2, 0.5), align_corners=False)),
    ("area", 2, dict(size=(3, 4))),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode,nd,options", RESAMPLE)
def test_interpolate_matches_torch(mode, nd, options, dtype):
    x = np.random.default_rng(4).standard_normal((2, 3, 5, 7, 4)[:nd + 2]).astype(dtype)
    tol = 1e-12 if dtype == np.float64 else (2e-5 if mode == "bicubic" else 1e-6)
    _check("interpolate", x, mode=mode, tol=tol, **options)


def test_interpolate_errors_and_layers():
    x = ak.zeros((1, 3, 4, 4))
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D input"):
        F.interpolate(x, size=3, mode="linear")
    for layer, tlayer in [
        (nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2)),
        (nn.Upsample(size=(3, 5), mode="bilinear"), torch.nn.Upsample(size=(3, 5), mode="bilinear")),
        (nn.UpsamplingNearest2d(size=6), torch.nn.UpsamplingNearest2d(size=6)),
        (nn.UpsamplingBilinear2d(scale_factor=1.5), torch.nn.UpsamplingBilinear2d(scale_factor=1.5)),
    ]:
        assert repr(layer) == repr(tlayer)
        xs = np.random.default_rng(5).standard_normal((1, 2, 4, 5)).astype(np.float32)
        np.testing.assert_allclose(layer(ak.asarray(xs)).numpy(), tlayer(torch.tensor(xs)).numpy(),
                                   rtol=1e-6, atol=1e-6)


FOLDS = [
    dict(kernel_size=2),
    dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(2, 1)),
    dict(kernel_size=3, stride=2, padding=1),
]


@pytest.mark.parametrize("options", FOLDS)
def test_unfold_and_fold_match_torch(options):
    x = np.random.default_rng(6).standard_normal((2, 3, 7, 6))
    _check("unfold", x, **options)
    _check("unfold", x[0], **options)
    columns = TF.unfold(torch.tensor(x), **options).numpy()
    _check("fold", columns, (7, 6), **options)
    _check("fold", columns[0], (7, 6), **options)
    layer, tlayer = nn.Fold((7, 6), **options), torch.nn.Fold((7, 6), **options)
    assert repr(layer) == repr(tlayer) and repr(nn.Unfold(**options)) == repr(torch.nn.Unfold(**options))
    np.testing.assert_allclose(layer(ak.asarray(columns)).numpy(), tlayer(torch.tensor(columns)).numpy(),
                               rtol=1e-12)


def test_fold_errors():
    with pytest.raises(RuntimeError, match=r"input.size\(1\)=10 and kernel_size=\(2, 2\)"):
        F.fold(ak.zeros((2, 10, 9)), (4, 4), 2)
    with pytest.raises(RuntimeError, match=r"sliding blocks 3 \* 3 = 9, but got input.size\(2\)=8"):
        F.fold(ak.zeros((2, 12, 8)), (4, 4), 2)
    with pytest.raises(RuntimeError, match=r"calculated shape of the array of sliding blocks as \(-1, 0\)"):
        F.unfold(ak.zeros((2, 3, 4, 5)), 6)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.unfold(ak.zeros((2, 3, 4, 5, 6)), 2)


def test_pixel_shuffle_unshuffle_and_unflatten():
    rng = np.random.default_rng(7)
    _check("pixel_shuffle", rng.standard_normal((2, 2, 8, 3, 4)), 2)
    _check("pixel_shuffle", rng.standard_normal((9, 3, 4)), 3)
    _check("pixel_unshuffle", rng.standard_normal((2, 3, 4, 6)), 2)
    assert repr(nn.PixelShuffle(2)) == repr(torch.nn.PixelShuffle(2))
    assert repr(nn.PixelUnshuffle(3)) == repr(torch.nn.PixelUnshuffle(3))
    with pytest.raises(RuntimeError, match=r"input.size\(-3\)=3 is not divisible by 4"):
        F.pixel_shuffle(ak.zeros((1, 3, 2, 2)), 2)
    with pytest.raises(RuntimeError, match=r"input.size\(-2\)=5 is not divisible by 2"):
        F.pixel_unshuffle(ak.zeros((4, 5, 4)), 2)
    x = rng.standard_normal((2, 12, 3))
    for dim, sizes in [(1, (3, 4)), (-1, (1, -1)), (1, [2, -1, 2])]:
        layer, tlayer = nn.Unflatten(dim, sizes), torch.nn.Unflatten(dim, sizes)
        assert repr(layer) == repr(tlayer)
        np.testing.assert_array_equal(layer(ak.asarray(x)).numpy(), tlayer(torch.tensor(x)).numpy())
    with pytest.raises(RuntimeError, match="don't multiply up to the size of dim 1"):
        nn.Unflatten(1, (5, 2))(ak.asarray(x))


def test_resampling_under_jit_on_strided_input():
    x = np.random.default_rng(8).standard_normal((2, 5, 4, 3)).astype(np.float32)
    model = nn.Sequential(nn.ReflectionPad2d(1), nn.Upsample(scale_factor=2, mode="bilinear"),
                          nn.PixelUnshuffle(2), nn.Unfold(2))
    tmodel = torch.nn.Sequential(torch.nn.ReflectionPad2d(1), torch.nn.Upsample(scale_factor=2, mode="bilinear"),
                                 torch.nn.PixelUnshuffle(2), torch.nn.Unfold(2))

    @ak.jit
    def step(x):
        loss = (model(x) ** 2).sum()
        loss.backward()
        return loss

    base = ak.asarray(x).requires_grad_()
    loss = step(base.permute(0, 3, 1, 2))  # a non-contiguous view
    tbase = torch.tensor(x, requires_grad=True)
    tloss = (tmodel(tbase.permute(0, 3, 1, 2)) ** 2).sum()
    tloss.backward()
    np.testing.assert_allclose(loss.numpy(), tloss.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(base.grad.numpy(), tbase.grad.numpy(), rtol=1e-5, atol=1e-5)
