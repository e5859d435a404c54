"""NAdam (Adam with Nesterov momentum) with PyTorch's update rule (momentum decay,
L2 or decoupled weight decay, maximize): one kernel for the state storage
(``step``, ``mu_product``, ``exp_avg``, ``exp_avg_sq``), one for the parameter.
``mu_product`` is kept in the state's dtype (PyTorch keeps it in float32)."""

from __future__ import annotations

import jax.numpy as jnp

from ..autograd.mode import no_grad
from .optimizer import (
    Optimizer,
    adam_direction_and_average,
    adam_hyper_values,
    check_adam_hyperparameters,
    check_hyperparameter,
    gradient_term,
    refuse_unsupported,
    whole,
)

__all__ = ["NAdam"]

# The hyperparameter tensor: (lr, beta1, beta2, eps, weight_decay, momentum_decay).


def _mu(step, h):
    """The momentum coefficient of step ``step``."""
    return h[1] * (1.0 - 0.5 * 0.96 ** (step * h[5]))


def _nadam_state(flat, grad, *rest):
    *p, h, maximize = rest
    n = (flat.size - 2) // 2
    g, exp_avg = adam_direction_and_average(grad, p[0] if p else None, flat, 2, n, h, maximize)
    step = flat[:1] + 1
    mu_product = flat[1:2] * _mu(step.astype(h.dtype), h).astype(flat.dtype)
    exp_avg_sq = flat[2 + n:] * h[2].astype(flat.dtype) + (1 - h[2]).astype(flat.dtype) * g * g
    return jnp.concatenate([step, mu_product, exp_avg, exp_avg_sq])


def _nadam_param(param, flat, grad, h, maximize, l2, decoupled):
    n = (flat.size - 2) // 2
    dtype = flat.dtype
    g = gradient_term(grad, param if l2 else None, h[4], maximize).reshape(-1).astype(dtype)
    if decoupled:
        param = param * (1 - h[0] * h[4]).astype(param.dtype)
    step = flat[0].astype(h.dtype)
    mu, mu_next = _mu(step, h), _mu(step + 1, h)
    mu_product = flat[1].astype(h.dtype)
    denom = jnp.sqrt(flat[2 + n:] / (1 - h[2] ** step).astype(dtype)) + h[3].astype(dtype)
    grad_step = (-h[0] * (1.0 - mu) / (1.0 - mu_product)).astype(dtype)
    avg_step = (-h[0] * mu_next / (1.0 - mu_product * mu_next)).astype(dtype)
    new = param.reshape(-1).astype(dtype) + grad_step * g / denom
    new = new + avg_step * flat[2:2 + n] / denom
    return new.reshape(param.shape).astype(param.dtype)


class NAdam(Optimizer):
    """``NAdam(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False)``: PyTorch's rule."""

    _real_floating_only = True

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        check_adam_hyperparameters(lr, betas, eps, weight_decay)
        check_hyperparameter(momentum_decay, "momentum_decay value")
        refuse_unsupported("NAdam", differentiable=differentiable, capturable=capturable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                        maximize=maximize, foreach=foreach, capturable=False, differentiable=False)
        super().__init__(params, defaults)

    def _hyper_values(self, group):
        return adam_hyper_values(group) + (float(group["momentum_decay"]),)

    def _slots(self, group):
        return [("step", True), ("mu_product", True), ("exp_avg", False), ("exp_avg_sq", False)]

    def _initialize(self, state, group):
        with no_grad():
            state["mu_product"].fill_(1.0)

    _batched = True

    def _update(self, p, grad, state, hyper, group, fresh):
        flat = whole(state["step"])
        maximize = bool(group["maximize"])
        decay = group["weight_decay"] != 0
        decoupled = decay and bool(group["decoupled_weight_decay"])
        l2 = decay and not decoupled
        self._write(_nadam_state, flat, (grad,) + ((p,) if l2 else ()) + (hyper,), (maximize,))
        self._write(_nadam_param, p, (flat, grad, hyper), (maximize, l2, decoupled))
