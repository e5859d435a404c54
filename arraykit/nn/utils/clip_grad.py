"""Gradient clipping with PyTorch's names: ``clip_grad_norm_``, ``clip_grad_value_``.

Each function is one kernel for all the gradients (see
:func:`arraykit.kernels.multi_write.apply_inplace_many`): the total norm and the
scaling of every gradient happen in one compiled computation, and the total norm
comes back as a tensor, so nothing waits for the device (unless
``error_if_nonfinite`` asks for the value).
"""

from __future__ import annotations

import functools
import math

import jax.numpy as jnp
import numpy as np

from ...api.creation import zeros
from ...core import dtypes as D
from ...kernels.multi_write import apply_inplace_many
from ...tensors.tensor_type import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters, name):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = []
    for p in parameters:
        if not isinstance(p, Tensor):
            raise TypeError(f"{name}: parameters must be tensors, got {type(p).__name__}")
        if p.grad is not None:
            grads.append(p.grad)
    return grads


def _vector_norm(x, norm_type):
    x = x.reshape(-1)
    if norm_type == math.inf:
        return jnp.max(jnp.abs(x), initial=0)
    if norm_type == -math.inf:
        return jnp.min(jnp.abs(x))
    if norm_type == 0:
        return jnp.sum(x != 0).astype(x.dtype)
    if norm_type == 2:
        return jnp.sqrt(jnp.sum(jnp.square(x)))
    return jnp.sum(jnp.abs(x) ** norm_type) ** (1 / norm_type)


def _clip_norm(grads, values, norm_type):
    (max_norm,) = values
    dtype = max_norm.dtype
    norms = jnp.stack([_vector_norm(g, norm_type).astype(dtype) for g in grads])
    total = _vector_norm(norms, norm_type)
    coef = jnp.minimum(max_norm / (total + jnp.asarray(1e-6, dtype)), jnp.asarray(1, dtype))
    return [g * coef.astype(g.dtype) for g in grads], (total,)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients of ``parameters`` (a tensor or an iterable of tensors) in
    place so that their total ``norm_type``-norm (the norm of the per-gradient
    norms) is at most ``max_norm``; returns the total norm before clipping, a 0-d
    tensor. As ``torch.nn.utils.clip_grad_norm_``: the factor is
    ``min(max_norm / (total + 1e-6), 1)``; ``error_if_nonfinite`` raises when the
    total norm is nan or inf (this reads it, waiting for the device)."""
    grads = _grads(parameters, "clip_grad_norm_")
    norm_type = float(norm_type)
    if not grads:
        return zeros(())
    dtype = functools.reduce(D.promote, [g.dtype for g in grads])
    if dtype.kind != "float":
        raise TypeError(f"clip_grad_norm_: gradients must be floating, got {dtype}")
    devices = {g.device for g in grads}
    if len(devices) > 1:
        raise RuntimeError(f"clip_grad_norm_: gradients on several devices {sorted(map(str, devices))}")
    (total,) = apply_inplace_many(_clip_norm, grads, (dtype.np.type(max_norm),), (norm_type,))
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
            "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
            "norm anyway, set `error_if_nonfinite=False`"
        )
    return total


def _clip_value(grads, values):
    (limit,) = values
    return [jnp.clip(g, -limit.astype(g.dtype), limit.astype(g.dtype)) for g in grads], ()


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp the gradients of ``parameters`` into ``[-clip_value, clip_value]`` in place
    (one kernel for all of them), as ``torch.nn.utils.clip_grad_value_``."""
    grads = _grads(parameters, "clip_grad_value_")
    if grads:
        apply_inplace_many(_clip_value, grads, (np.float64(clip_value),))
