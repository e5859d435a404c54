"""Normalization layers' functions."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ...api.autocasting import coerce
from ...kernels.bodies import at_least_float32
from ...kernels.launch import apply
from .arguments import _floating

__all__ = ["layer_norm"]


def _layer_norm_body(x, *rest):
    *affine, (dims, eps, has_weight) = rest
    compute = at_least_float32(x.dtype)
    y = x.astype(compute)
    mean = jnp.mean(y, axis=dims, keepdims=True)
    var = jnp.mean(jnp.square(y - mean), axis=dims, keepdims=True)
    y = (y - mean) * jax.lax.rsqrt(var + eps)
    affine = iter(affine)
    if has_weight:
        y = y * next(affine)
    for b in affine:
        y = y + b
    return y.astype(x.dtype)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dimensions (mean 0, biased
    variance 1), then scale by ``weight`` and shift by ``bias``."""
    x = _floating(input, "layer_norm")
    x, weight, bias = coerce("layer_norm", x, weight, bias)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if len(shape) > x.ndim or x.shape[x.ndim - len(shape):] != shape:
        raise ValueError(
            f"layer_norm: normalized_shape {list(shape)} does not match the trailing dimensions "
            f"of the input of shape {x.shape}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.shape != shape:
            raise ValueError(f"layer_norm: {name} must have shape {shape}, got {t.shape}")
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    operands = (x,) + tuple(t for t in (weight, bias) if t is not None)
    return apply(_layer_norm_body, operands, ((dims, float(eps), weight is not None),))
