"""``interpolate`` / ``upsample``: nearest, nearest-exact, (bi/tri)linear, bicubic and
area resampling of 1 to 3 spatial dimensions.

Each resampled dimension is a gather of a few source positions (1 for nearest, 2 for
linear, 4 for bicubic) weighted and summed, the positions and weights computed on the
host by PyTorch's formulas in the operation's arithmetic precision (float32 for
float32 and lower, float64 for float64), so the JAX VJP of the gathers gives PyTorch's
gradient (each output's gradient spread back onto its sources with the same weights).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from ...kernels.launch import apply
from ...tensors.tensor_type import require_tensor
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}
_AREA = {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d, 3: adaptive_avg_pool3d}
_CUBIC_A = -0.75


def _scale(n, o, align_corners, factor, real):
    """PyTorch's source-per-destination step along one dimension."""
    if align_corners:
        return real((n - 1) / (o - 1)) if o > 1 else real(0)
    return real(1.0 / factor) if factor is not None and factor > 0 else real(n / o)


def _taps(mode, n, o, align_corners, factor, real):
    """``(indices, weights)``, each (taps, o): the source positions of every output
    position along one dimension and their weights."""
    dst = np.arange(o).astype(real)
    scale = _scale(n, o, align_corners if mode in _LINEAR else False, factor, real)
    if mode in ("nearest", "nearest-exact"):
        shift = real(0.5) if mode == "nearest-exact" else real(0)
        index = np.minimum(np.floor((dst + shift) * scale).astype(np.int64), n - 1)
        return index[None], np.ones((1, o), real)
    src = scale * dst if align_corners else scale * (dst + real(0.5)) - real(0.5)
    if mode == "bicubic":
        base = np.minimum(np.floor(src), n - 1)
        t = np.clip(src - base, 0, 1).astype(real)
        a = real(_CUBIC_A)

        def near(x):
            return ((a + 2) * x - (a + 3)) * x * x + 1

        def far(x):
            return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

        weights = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)]).astype(real)
        index = np.clip(base.astype(np.int64)[None] + np.arange(-1, 3)[:, None], 0, n - 1)
        return index, weights
    src = np.maximum(src, real(0)).astype(real)
    low = np.minimum(src.astype(np.int64), n - 1)
    high = low + (low < n - 1)
    frac = np.clip(src - low, 0, 1).astype(real)
    return np.stack([low, high]), np.stack([real(1) - frac, frac]).astype(real)


def _resample_body(x, mode, out, align_corners, factors):
    # PyTorch computes nearest positions in float32, linear ones in the op's precision
    real = np.float64 if x.dtype == jnp.float64 and mode not in ("nearest", "nearest-exact") else np.float32
    nd = len(out)
    for axis in reversed(range(nd)):  # the last dimension first, as PyTorch's kernels
        index, weights = _taps(mode, x.shape[2 + axis], out[axis], align_corners, factors[axis], real)
        trailing = (1,) * (nd - 1 - axis)
        if len(index) == 1:
            x = jnp.take(x, index[0], axis=2 + axis)
            continue
        total = None
        for idx, w in zip(index, weights):
            term = jnp.take(x, idx, axis=2 + axis) * jnp.asarray(w.reshape((-1,) + trailing), x.dtype)
            total = term if total is None else total + term
        x = total
    return x


def _per_dim(value, nd, name):
    if isinstance(value, (tuple, list)):
        if len(value) != nd:
            raise ValueError(
                f"Input and {name} must have the same number of spatial dimensions, but got "
                f"{nd} spatial dimensions and {name}={list(value)}"
            )
        return tuple(value)
    return (value,) * nd


def _output_sizes(x, nd, size, scale_factor, recompute_scale_factor):
    """(output sizes, the scale factors the kernel uses, None where it uses in / out)."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError(
                "recompute_scale_factor is not meaningful with an explicit size."
            )
        if isinstance(size, (tuple, list)) and len(size) != nd:
            raise ValueError(
                "Input and output must have the same number of spatial dimensions, but got input "
                f"with spatial dimensions of {list(x.shape[2:])} and output size of {list(size)}. "
                "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                "(o1, o2, ...,oK) format."
            )
        sizes = tuple(int(s) for s in _per_dim(size, nd, "size"))
        return sizes, (None,) * nd
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    factors = tuple(float(f) for f in _per_dim(scale_factor, nd, "scale_factor"))
    sizes = tuple(math.floor(n * f) for n, f in zip(x.shape[2:], factors))
    return sizes, (None,) * nd if recompute_scale_factor else factors


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None):
    """Resample the spatial dimensions of ``(N, C, *spatial)`` ``input`` to ``size`` or by
    ``scale_factor``, as ``torch.nn.functional.interpolate``.

    ``mode``: ``'nearest'``, ``'nearest-exact'``, ``'linear'`` (3-D input),
    ``'bilinear'``/``'bicubic'`` (4-D), ``'trilinear'`` (5-D) or ``'area'`` (adaptive
    average pooling). ``align_corners`` (linear and cubic modes, default False) maps
    the corner pixels' centres onto each other. With ``scale_factor`` and no
    ``recompute_scale_factor``, source positions step by ``1 / scale_factor``, as
    PyTorch's.
    """
    x = require_tensor(input, "interpolate")
    nd = x.ndim - 2
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: "
            "linear | bilinear | bicubic | trilinear"
        )
    if nd not in (1, 2, 3) or (mode not in _LINEAR and mode not in ("nearest", "nearest-exact", "area")):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the "
            f"modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact "
            f"(got {mode})"
        )
    wanted = _LINEAR.get(mode)
    if wanted is not None and nd != wanted:
        raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {wanted + 2}D input")
    out, factors = _output_sizes(x, nd, size, scale_factor, recompute_scale_factor)
    if any(o < 1 for o in out) or any(n < 1 for n in x.shape[2:]):
        raise RuntimeError(
            f"interpolate: input {list(x.shape)} and output {list(out)} sizes should be greater than 0"
        )
    if mode == "area":
        return _AREA[nd](x, out)
    if mode not in ("nearest", "nearest-exact") and x.dtype.kind != "float":
        raise RuntimeError(f"interpolate: {mode} mode expects a floating-point input, got {x.dtype}")
    corners = bool(align_corners) if mode in _LINEAR else False
    return apply(_resample_body, (x,), (mode, out, corners, factors))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """``interpolate`` under its older name (``torch.nn.functional.upsample``)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Nearest-neighbour upsampling: ``interpolate(..., mode='nearest')``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Bilinear upsampling with ``align_corners=True``, as
    ``torch.nn.functional.upsample_bilinear``."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
