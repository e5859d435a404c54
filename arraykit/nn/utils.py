"""``arraykit.nn.utils``: gradient clipping and flattening parameters, with PyTorch's names.

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

from ..api.creation import zeros
from ..core import dtypes as D
from ..kernels.multi_write import apply_inplace_many
from ..tensors.tensor_type import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


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


def _parameter_list(parameters, name):
    if isinstance(parameters, Tensor):
        raise TypeError(f"{name}: expected an iterable of tensors, got a Tensor")
    params = list(parameters)
    for p in params:
        if not isinstance(p, Tensor):
            raise TypeError(f"{name}: parameters must be tensors, got {type(p).__name__}")
    return params


def parameters_to_vector(parameters):
    """The values of ``parameters`` (an iterable of tensors) flattened and concatenated
    into one 1-D tensor (differentiable)."""
    from ..api.manipulation import concat

    params = _parameter_list(parameters, "parameters_to_vector")
    devices = {p.device for p in params}
    if len(devices) > 1:
        raise TypeError(f"parameters_to_vector: parameters on several devices {sorted(map(str, devices))}")
    return concat([p.reshape(-1) for p in params])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D tensor ``vec`` into ``parameters`` (in place,
    without recording gradients), as many elements as each has."""
    from ..autograd.mode import no_grad

    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    if vec.ndim != 1:
        raise ValueError(f"vector_to_parameters: vec must be 1-D, got shape {vec.shape}")
    params = _parameter_list(parameters, "vector_to_parameters")
    total = sum(p.numel() for p in params)
    if total != vec.shape[0]:
        raise ValueError(f"vector_to_parameters: vec has {vec.shape[0]} elements, the parameters {total}")
    start = 0
    with no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[start:start + n].reshape(p.shape))
            start += n
