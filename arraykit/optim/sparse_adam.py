"""SparseAdam with PyTorch's update rule: Adam's lazy variant, which moves the
moments and the parameter only at the entries the gradient holds.

arraykit's gradients are dense (``nn.Embedding(sparse=True)`` included), so the
entries a gradient holds are its nonzero entries: the same set PyTorch's sparse
gradient ``grad.to_sparse()`` stores. Per parameter, one kernel updates the moments
(``step``, ``exp_avg``, ``exp_avg_sq``, one storage) and one the parameter;
``step`` is a 0-d tensor where PyTorch keeps a Python int (loading PyTorch's state
reads either)."""

from __future__ import annotations

import jax.numpy as jnp

from ..kernels.launch import apply_inplace
from .optimizer import Optimizer, check_hyperparameter, whole

__all__ = ["SparseAdam"]

# The hyperparameter tensor: (lr, beta1, beta2, eps).


def _moments(flat, grad, h, maximize):
    n = (flat.size - 1) // 2
    g = grad.reshape(-1).astype(flat.dtype)
    g = -g if maximize else g
    held = g != 0
    exp_avg, exp_avg_sq = flat[1:1 + n], flat[1 + n:]
    exp_avg = jnp.where(held, exp_avg + (g - exp_avg) * (1 - h[1]).astype(flat.dtype), exp_avg)
    exp_avg_sq = jnp.where(held, exp_avg_sq + (g * g - exp_avg_sq) * (1 - h[2]).astype(flat.dtype), exp_avg_sq)
    return jnp.concatenate([flat[:1] + 1, exp_avg, exp_avg_sq])


def _sparse_adam_param(param, flat, grad, h):
    n = (flat.size - 1) // 2
    held = grad.reshape(-1) != 0
    step = flat[0].astype(h.dtype)
    step_size = h[0] * jnp.sqrt(1 - h[2] ** step) / (1 - h[1] ** step)
    update = (-step_size).astype(flat.dtype) * flat[1:1 + n] / (jnp.sqrt(flat[1 + n:]) + h[3].astype(flat.dtype))
    update = jnp.where(held, update, jnp.zeros_like(update))
    return (param + update.reshape(param.shape).astype(param.dtype)).astype(param.dtype)


class SparseAdam(Optimizer):
    """``SparseAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False)``:
    PyTorch's lazy Adam, updating only the entries where the gradient is nonzero."""

    _real_floating_only = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        check_hyperparameter(lr, "learning rate")
        check_hyperparameter(eps, "epsilon value", 0.0 < eps)
        for i, beta in enumerate(betas):
            check_hyperparameter(beta, f"beta parameter at index {i}", 0.0 <= beta < 1.0)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, maximize=maximize)
        super().__init__(params, defaults)

    def _hyper_values(self, group):
        beta1, beta2 = group["betas"]
        return tuple(map(float, (group["lr"], beta1, beta2, group["eps"])))

    def _slots(self, group):
        return [("step", True), ("exp_avg", False), ("exp_avg_sq", False)]

    def _update(self, p, grad, state, hyper, group, fresh):
        flat = whole(state["step"])
        apply_inplace(_moments, flat, (grad, hyper), (bool(group["maximize"]),))
        apply_inplace(_sparse_adam_param, p, (flat, grad, hyper))
