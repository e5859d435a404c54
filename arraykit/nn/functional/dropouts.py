"""Dropout with keys from arraykit's generators."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ...kernels.launch import apply
from .arguments import _floating

__all__ = ["alpha_dropout", "dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout"]


def _dropout_mask(key, x, keep):
    mask = jax.random.bernoulli(key, keep, x.shape)
    return jnp.where(mask, x / keep, jnp.zeros((), x.dtype))


def _dropout_body(x, key, keep):
    return _dropout_mask(jax.random.wrap_key_data(key), x, keep)


def dropout(input, p=0.5, training=True, inplace=False, *, key=None, generator=None):
    """Zero elements with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    The mask comes from ``key``, a JAX PRNG key (``jax.random.key(seed)``), when
    given; otherwise from ``generator`` (an :class:`arraykit.Generator`; default:
    the default generator of the input's device), whose state advances in place.
    """
    x = _floating(input, "dropout")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        out = x * 0
    elif key is None:
        from ...random import draw

        out = draw(_dropout_mask, (x,), (1.0 - float(p),), generator,
                   x.device if generator is None else None)
    else:
        from ...api.creation import asarray

        data = asarray(np.asarray(jax.random.key_data(key)), device=x.device)
        out = apply(_dropout_body, (x, data), (1.0 - float(p),))
    return input.copy_(out) if inplace else out


def _check_p(p):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _feature_mask(key, x, keep, batched):
    """Whole channels kept with probability ``keep``: one draw per (sample, channel)."""
    lead = 2 if batched else 1
    shape = x.shape[:lead] + (1,) * (x.ndim - lead)
    return jax.random.bernoulli(key, keep, shape)


def _feature_dropout_body(key, x, keep, batched):
    mask = _feature_mask(key, x, keep, batched)
    return jnp.where(mask, x / jnp.asarray(keep, x.dtype), jnp.zeros((), x.dtype))


def _alpha_dropout_body(key, x, keep, feature, batched):
    p = 1.0 - keep
    alpha = 1.7580993408473766
    a = (1.0 / np.sqrt((alpha * alpha * p + 1) * keep))
    if feature:
        mask = _feature_mask(key, x, keep, batched)
    else:
        mask = jax.random.bernoulli(key, keep, x.shape)
    kept = mask.astype(x.dtype)
    b = (kept - 1) * (alpha * a) + alpha * a * p
    return x * (kept * a) + b


def _randomized(body, input, name, p, training, inplace, static):
    """``body(key, input, *static)`` with a fresh key from the input device's generator
    (written into ``input`` when ``inplace``); the identity when not training or ``p == 0``."""
    from ...random import draw

    x = _floating(input, name)
    _check_p(p)
    if not training or p == 0.0:
        return x
    out = draw(body, (x,), static, None, x.device)
    return input.copy_(out) if inplace else out


def _feature_dropout(input, p, training, inplace, name, batched):
    """Channel-wise dropout: channels on dimension 1 (``batched``) or 0."""
    x = _floating(input, name)
    if x.ndim < (2 if batched else 1):
        raise RuntimeError(f"{name}: expected an input with a channel dimension, got shape {x.shape}")
    if p == 1.0 and training:
        _check_p(p)
        out = x * 0
        return input.copy_(out) if inplace else out
    return _randomized(_feature_dropout_body, x, name, p, training, inplace,
                       (1.0 - float(p), bool(batched)))


def _unusual_rank(name, ndim, expected):
    warnings.warn(
        f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in "
        f"an error in a future release; expected {expected}", UserWarning, stacklevel=3)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) inputs with probability ``p``, scaling the
    rest by ``1 / (1 - p)``."""
    x = _floating(input, "dropout1d")
    if x.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {x.ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
            "a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs)."
        )
    return _feature_dropout(input, p, training, inplace, "dropout1d", x.ndim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (dimension 1) of (N, C, H, W) inputs with probability ``p``,
    scaling the rest by ``1 / (1 - p)``; a 3-D input is taken as (N, C, L), as PyTorch does
    (with its warning)."""
    x = _floating(input, "dropout2d")
    if x.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L)",
            UserWarning, stacklevel=2)
    elif x.ndim != 4:
        _unusual_rank("dropout2d", x.ndim, "3D or 4D")
    return _feature_dropout(input, p, training, inplace, "dropout2d", True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability
    ``p``, scaling the rest by ``1 / (1 - p)``."""
    x = _floating(input, "dropout3d")
    if x.ndim not in (4, 5):
        _unusual_rank("dropout3d", x.ndim, "4D or 5D")
    return _feature_dropout(input, p, training, inplace, "dropout3d", x.ndim == 5)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's self-normalising mean and variance: dropped elements
    take SELU's negative saturation value, then an affine map restores the moments."""
    if p == 1.0 and training:
        return dropout(input, 1.0, True, inplace)
    return _randomized(_alpha_dropout_body, input, "alpha_dropout", p, training, inplace,
                       (1.0 - float(p), False, True))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """:func:`~arraykit.nn.functional.alpha_dropout` of whole channels (dimension 1)."""
    if p == 1.0 and training:
        return dropout(input, 1.0, True, inplace)
    x = _floating(input, "feature_alpha_dropout")
    return _randomized(_alpha_dropout_body, x, "feature_alpha_dropout", p, training, inplace,
                       (1.0 - float(p), True, x.ndim > 1))
