"""``affine_grid`` and ``grid_sample`` against torch 2.13: values and gradients (with
respect to the input, the grid and theta) for every mode, padding mode and
``align_corners``, 4-D and 5-D, with grid points outside ``[-1, 1]`` and on pixel
centres; torch's ATen spellings (``grid_sampler``, ``affine_grid_generator``)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import arraykit as ak
import arraykit.nn.functional as F

RNG = np.random.default_rng(11)
IMAGE = RNG.standard_normal((2, 3, 5, 6))
VOLUME = RNG.standard_normal((2, 2, 3, 4, 5))
# Points spread over [-1.6, 1.6]: inside, on the borders and outside (every padding
# mode's branch), kept off the exact pixel positions where the weights have kinks.
GRID = RNG.uniform(-1.6, 1.6, (2, 4, 7, 2))
GRID3 = RNG.uniform(-1.4, 1.4, (2, 3, 2, 4, 3))
WEIGHTS = RNG.standard_normal((2, 3, 4, 7))
WEIGHTS3 = RNG.standard_normal((2, 2, 3, 2, 4))


def _both(image, grid, weights, dtype, **options):
    """Values and gradients (input, grid) of torch's and arraykit's grid_sample."""
    out = []
    for lib, fn in ((torch, TF.grid_sample), (ak, F.grid_sample)):
        x = lib.asarray(image, dtype=getattr(lib, dtype)).requires_grad_()
        g = lib.asarray(grid, dtype=getattr(lib, dtype)).requires_grad_()
        y = fn(x, g, **options)
        (y * lib.asarray(weights, dtype=getattr(lib, dtype))).sum().backward()
        out.append([t.detach().numpy() if lib is torch else t.numpy()
                    for t in (y, x.grad, g.grad)])
    return out


# Bilinear and nearest in every padding mode by default; the rest of the product
# (bicubic, and 3-D beyond two cases) in the slow run.
def _cases(modes, in_default):
    return [pytest.param(*case, marks=() if in_default(case) else pytest.mark.slow)
            for case in itertools.product(modes, ("zeros", "border", "reflection"), (False, True))]


@pytest.mark.parametrize("mode,padding_mode,align_corners",
                         _cases(("bilinear", "nearest", "bicubic"), lambda case: case[0] != "bicubic" or case in {
                             ("bicubic", "zeros", False), ("bicubic", "reflection", True)}))
def test_grid_sample_2d_against_torch(mode, padding_mode, align_corners):
    want, got = _both(IMAGE, GRID, WEIGHTS, "float64", mode=mode, padding_mode=padding_mode,
                      align_corners=align_corners)
    for name, g, w in zip(("values", "input grad", "grid grad"), got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("mode,padding_mode,align_corners",
                         _cases(("bilinear", "nearest"), lambda case: case in {
                             ("bilinear", "reflection", False), ("nearest", "border", True)}))
def test_grid_sample_3d_against_torch(mode, padding_mode, align_corners):
    want, got = _both(VOLUME, GRID3, WEIGHTS3, "float64", mode=mode, padding_mode=padding_mode,
                      align_corners=align_corners)
    for name, g, w in zip(("values", "input grad", "grid grad"), got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, err_msg=name)


def test_grid_sample_float32_and_the_default_align_corners_warns():
    with pytest.warns(UserWarning, match="align_corners=False"):
        want, got = _both(IMAGE, GRID, WEIGHTS, "float32")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("align_corners", (False, True))
def test_affine_grid_against_torch(align_corners):
    theta = RNG.standard_normal((2, 2, 3))
    theta3 = RNG.standard_normal((2, 3, 4))
    for th, size, w in ((theta, (2, 3, 4, 5), (2, 4, 5, 2)), (theta3, (2, 1, 3, 4, 2), (2, 3, 4, 2, 3)),
                        (theta, (2, 1, 1, 3), (2, 1, 3, 2))):
        weights = RNG.standard_normal(w)
        results = []
        for lib, fn in ((torch, TF.affine_grid), (ak, F.affine_grid)):
            t = lib.asarray(th).requires_grad_()
            grid = fn(t, size, align_corners=align_corners)
            (grid * lib.asarray(weights)).sum().backward()
            results.append((grid.detach().numpy() if lib is torch else grid.numpy(),
                            t.grad.numpy()))
        (want, want_grad), (got, got_grad) = results
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got_grad, want_grad, rtol=1e-10, atol=1e-10)


def test_a_spatial_transformer_step_against_torch():
    """theta -> affine_grid -> grid_sample, differentiated end to end (a rotation and
    shift of an image batch), as a spatial transformer network trains it."""
    angle = 0.3
    theta = np.array([[[np.cos(angle), -np.sin(angle), 0.1], [np.sin(angle), np.cos(angle), -0.2]]] * 2)
    results = []
    for lib, fns in ((torch, TF), (ak, F)):
        t = lib.asarray(theta).requires_grad_()
        x = lib.asarray(IMAGE).requires_grad_()
        grid = fns.affine_grid(t, (2, 3, 4, 4), align_corners=False)
        y = fns.grid_sample(x, grid, align_corners=False, padding_mode="border")
        (y ** 2).sum().backward()
        results.append([a.detach().numpy() for a in (y, t.grad, x.grad)])
    for g, w in zip(results[1], results[0]):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10)


def test_aten_spellings_against_torch():
    x, g = ak.asarray(IMAGE), ak.asarray(GRID)
    tx, tg = torch.from_numpy(IMAGE), torch.from_numpy(GRID)
    for mode, padding in ((0, 0), (1, 1), (2, 2), (0, 2)):
        for fn in ("grid_sampler", "grid_sampler_2d"):
            np.testing.assert_allclose(getattr(ak, fn)(x, g, mode, padding, True).numpy(),
                                       getattr(torch, fn)(tx, tg, mode, padding, True).numpy(),
                                       rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        ak.grid_sampler_3d(ak.asarray(VOLUME), ak.asarray(GRID3), 1, 2, False).numpy(),
        torch.grid_sampler_3d(torch.from_numpy(VOLUME), torch.from_numpy(GRID3), 1, 2, False).numpy())
    theta = RNG.standard_normal((2, 2, 3))
    np.testing.assert_allclose(ak.affine_grid_generator(ak.asarray(theta), (2, 1, 3, 4), True).numpy(),
                               torch.affine_grid_generator(torch.from_numpy(theta), (2, 1, 3, 4),
                                                           True).numpy(), rtol=1e-12)


def test_bad_arguments_name_the_values():
    x, g = ak.asarray(IMAGE), ak.asarray(GRID)
    with pytest.raises(ValueError, match="but got: 'linear'"):
        F.grid_sample(x, g, mode="linear", align_corners=False)
    with pytest.raises(ValueError, match="but got: 'wrap'"):
        F.grid_sample(x, g, padding_mode="wrap", align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(ak.asarray(VOLUME), ak.asarray(GRID3), mode="bicubic", align_corners=False)
    with pytest.raises(RuntimeError, match=r"same batch size, but got input with sizes "
                                           r"\(2, 3, 5, 6\) and grid with sizes \(1, 4, 7, 2\)"):
        F.grid_sample(x, g[:1], align_corners=False)
    with pytest.raises(RuntimeError, match="size 2 in last dimension"):
        F.grid_sample(x, ak.asarray(GRID3[:, 0]), align_corners=False)
    with pytest.raises(ValueError, match=r"shape Nx2x3 for size \(2, 3, 4, 5\). Got \(2, 3, 4\)"):
        F.affine_grid(ak.asarray(RNG.standard_normal((2, 3, 4))), (2, 3, 4, 5), align_corners=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.affine_grid(ak.asarray(RNG.standard_normal((2, 2, 3))), (2, 3, 4, 5), align_corners=True)
