"""Dropout with keys from arraykit's generators."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ...kernels.launch import apply
from .arguments import _floating

__all__ = ["dropout"]


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
