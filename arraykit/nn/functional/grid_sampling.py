"""``affine_grid`` and ``grid_sample``: spatial transformer sampling of 4-D and 5-D
inputs, as PyTorch's.

``affine_grid`` maps the normalized output coordinates (``-1`` to ``1``, the corner
pixels' centres with ``align_corners=True``, their outer edges otherwise) through the
affine matrices ``theta``. ``grid_sample`` reads ``input`` at the grid's normalized
``(x, y[, z])`` points: ``"bilinear"`` (trilinear for 5-D inputs), ``"nearest"`` (half
to even, as PyTorch's ``nearbyint``) or ``"bicubic"`` (4-D inputs, PyTorch's cubic
convolution with ``A = -0.75``); points outside are zeros (``"zeros"``), the nearest
border value (``"border"``) or reflected back inside (``"reflection"``).

Each is one kernel: the source coordinates, their padding transform and the
weighted gathers are JAX operations, so the gradients with respect to ``input``
(scattered back with the same weights) and ``grid`` (through the weights and the
coordinate transform; none in nearest mode) are JAX's VJP of PyTorch's formulas. The
clip of ``"border"`` passes no gradient at or beyond a border, as PyTorch's.
"""

from __future__ import annotations

import itertools
import warnings

import jax.numpy as jnp
from jax import lax

from ...kernels.launch import apply
from ...tensors.tensor_type import require_tensor

__all__ = ["affine_grid", "grid_sample"]

MODES = ("bilinear", "nearest", "bicubic")  # PyTorch's interpolation codes 0, 1, 2
PADDINGS = ("zeros", "border", "reflection")  # its padding codes 0, 1, 2
_CUBIC_A = -0.75


def _default_align_corners(align_corners, name):
    if align_corners is None:
        warnings.warn(f"Default {name} behavior has changed to align_corners=False since "
                      "1.3.0. Please specify align_corners=True if the old behavior is "
                      "desired. See the documentation of grid_sample for details.",
                      UserWarning, stacklevel=3)
        return False
    return bool(align_corners)


# ----------------------------------------------------------------------------- affine_grid


def _base_coordinates(n, align_corners, dtype):
    if n <= 1:
        return jnp.zeros((n,), dtype)
    steps = jnp.linspace(-1.0, 1.0, n, dtype=dtype)
    return steps if align_corners else steps * jnp.asarray((n - 1) / n, dtype)


def _affine_grid(theta, spatial, align_corners):
    dtype = theta.dtype
    axes = [_base_coordinates(n, align_corners, dtype) for n in reversed(spatial)]  # x, y[, z]
    mesh = jnp.meshgrid(*reversed(axes), indexing="ij")  # in the order of the dimensions
    points = jnp.stack([*reversed(mesh), jnp.ones(tuple(spatial), dtype)], axis=-1)
    grid = jnp.einsum("...k,njk->n...j", points, theta,
                      precision=lax.Precision.HIGHEST)
    return grid.astype(dtype)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of the affine maps ``theta`` for an output of ``size``:
    ``theta`` ``(N, 2, 3)`` and ``size`` ``(N, C, H, W)`` give ``(N, H, W, 2)``;
    ``theta`` ``(N, 3, 4)`` and ``size`` ``(N, C, D, H, W)`` give ``(N, D, H, W, 3)``."""
    require_tensor(theta, "affine_grid")
    align_corners = _default_align_corners(align_corners, "affine_grid")
    if theta._dtype.kind != "float":
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    k = len(size) - 2
    if theta.ndim != 3 or theta.shape[1:] != (k, k + 1):
        raise ValueError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for "
                         f"size {size}. Got {theta.shape}.")
    if theta.shape[0] != size[0]:
        raise ValueError(f"affine_grid: theta holds {theta.shape[0]} matrices but size asks "
                         f"for a batch of {size[0]}")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return apply(_affine_grid, (theta,), (size[2:], align_corners))


# ----------------------------------------------------------------------------- grid_sample


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _clip(coord, size):
    """``coord`` clipped into ``[0, size - 1]``, no gradient where clipped (PyTorch's)."""
    high = jnp.asarray(size - 1, coord.dtype)
    zero = jnp.zeros((), coord.dtype)
    return jnp.where(coord <= 0, zero, jnp.where(coord >= high, high, coord))


def _reflect(coord, twice_low, twice_high):
    """``coord`` reflected into ``[twice_low / 2, twice_high / 2]`` (PyTorch's)."""
    if twice_low == twice_high:
        return jnp.zeros_like(coord)
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    shifted = coord - low
    distance = jnp.where(shifted < 0, -shifted, shifted)
    extra = jnp.fmod(distance, span)
    flips = jnp.floor(distance / span)
    return jnp.where(jnp.fmod(flips, 2) == 0, extra + low, span - extra + low)


def _pad_coordinate(coord, size, padding, align_corners):
    if padding == "border":
        return _clip(coord, size)
    if padding == "reflection":
        if align_corners:
            reflected = _reflect(coord, 0, 2 * (size - 1))
        else:
            reflected = _reflect(coord, -1, 2 * size - 1)
        return _clip(reflected, size)
    return coord


def _gather(image, indices, spatial):
    """``image[n, :, *indices]`` for every grid point: ``(N, C, *grid)`` from ``(N, C,
    *spatial)``, indices clipped into range (the caller masks what was outside)."""
    n = image.shape[0]
    clipped = [jnp.clip(i, 0, s - 1) for i, s in zip(indices, spatial)]
    batch = jnp.arange(n).reshape((n,) + (1,) * (indices[0].ndim - 1))
    values = jnp.moveaxis(image, 1, -1)[(batch, *clipped)]  # (N, *grid, C)
    return jnp.moveaxis(values, -1, 1)


def _inside(indices, spatial):
    inside = True
    for i, s in zip(indices, spatial):
        inside = inside & (i >= 0) & (i <= s - 1)
    return inside


def _cubic_weights(t):
    a = _CUBIC_A

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _grid_sample(image, grid, mode, padding, align_corners):
    spatial = image.shape[2:]
    k = len(spatial)
    dtype = image.dtype
    grid = grid.astype(dtype)
    # grid's last axis is (x, y[, z]): x indexes the last spatial dimension.
    coords = [_unnormalize(grid[..., k - 1 - d], spatial[d], align_corners) for d in range(k)]
    out = jnp.zeros((image.shape[0], image.shape[1]) + grid.shape[1:-1], dtype)
    if mode == "bicubic":
        bases = [jnp.floor(c) for c in coords]
        weights = [_cubic_weights(c - b) for c, b in zip(coords, bases)]
        for taps in itertools.product(range(4), repeat=k):
            positions = [_pad_coordinate(b + (t - 1), s, padding, align_corners)
                         for b, t, s in zip(bases, taps, spatial)]
            indices = [p.astype(jnp.int32) for p in positions]
            weight = 1
            for w, t in zip(weights, taps):
                weight = weight * w[t]
            mask = _inside(indices, spatial) if padding == "zeros" else True
            out = out + _gather(image, indices, spatial) * jnp.expand_dims(
                jnp.where(mask, weight, 0), 1)
        return out
    coords = [_pad_coordinate(c, s, padding, align_corners) for c, s in zip(coords, spatial)]
    if mode == "nearest":
        indices = [jnp.round(c).astype(jnp.int32) for c in coords]  # half to even
        mask = _inside(indices, spatial)
        return jnp.where(jnp.expand_dims(mask, 1), _gather(image, indices, spatial), 0)
    lows = [jnp.floor(c) for c in coords]
    for corner in itertools.product((0, 1), repeat=k):
        indices = [(low + bit).astype(jnp.int32) for low, bit in zip(lows, corner)]
        weight = 1
        for c, low, bit in zip(coords, lows, corner):
            weight = weight * ((c - low) if bit else (low + 1 - c))
        mask = _inside(indices, spatial)
        out = out + _gather(image, indices, spatial) * jnp.expand_dims(
            jnp.where(mask, weight, 0), 1)
    return out


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):  # noqa: A002
    """``input`` ``(N, C, H, W)`` (or ``(N, C, D, H, W)``) sampled at the normalized
    points of ``grid`` ``(N, H_out, W_out, 2)`` (or ``(N, D_out, H_out, W_out, 3)``),
    which hold ``(x, y[, z])`` in ``[-1, 1]``: ``mode`` ``"bilinear"``, ``"nearest"`` or
    ``"bicubic"`` (4-D only); ``padding_mode`` ``"zeros"``, ``"border"`` or
    ``"reflection"``. The result is ``(N, C, H_out, W_out)`` (or 5-D)."""
    require_tensor(input, "grid_sample")
    require_tensor(grid, "grid_sample")
    if mode not in MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in PADDINGS:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    align_corners = _default_align_corners(align_corners, "grid_sample")
    if input.ndim not in (4, 5):
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same "
                           f"number of dimensions, but got input with sizes {input.shape} and "
                           f"grid with sizes {grid.shape}")
    k = input.ndim - 2
    if grid.ndim != input.ndim or grid.shape[-1] != k:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {k} in last dimension "
                           f"and {input.ndim} dimensions like input, but got grid with sizes "
                           f"{grid.shape}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {input.shape} and grid with sizes "
                           f"{grid.shape}")
    if mode == "bicubic" and k != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input._dtype.kind != "float" or grid._dtype is not input._dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same "
                           f"floating-point dtype, but input has {input.dtype} and grid has "
                           f"{grid.dtype}")
    if 0 in input.shape[2:]:
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                           f"dimensions, but input has sizes {input.shape}")
    return apply(_grid_sample, (input, grid), (mode, padding_mode, align_corners))
