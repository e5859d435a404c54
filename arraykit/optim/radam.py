"""RAdam (rectified Adam) with PyTorch's update rule (L2 or decoupled weight decay,
maximize): one kernel for the state storage (``step``, ``exp_avg``,
``exp_avg_sq``), one for the parameter, which picks the rectified or the plain
momentum step from the step count inside the kernel."""

from __future__ import annotations

import jax.numpy as jnp

from .optimizer import (
    Optimizer,
    adam_direction_and_average,
    adam_hyper_values,
    check_adam_hyperparameters,
    refuse_unsupported,
    whole,
)

__all__ = ["RAdam"]

# The hyperparameter tensor: (lr, beta1, beta2, eps, weight_decay).


def _radam_state(flat, grad, *rest):
    *p, h, maximize = rest
    n = (flat.size - 1) // 2
    g, exp_avg = adam_direction_and_average(grad, p[0] if p else None, flat, 1, n, h, maximize)
    exp_avg_sq = flat[1 + n:] * h[2].astype(flat.dtype) + (1 - h[2]).astype(flat.dtype) * g * g
    return jnp.concatenate([flat[:1] + 1, exp_avg, exp_avg_sq])


def _radam_param(param, flat, h, decoupled):
    n = (flat.size - 1) // 2
    dtype = flat.dtype
    if decoupled:
        param = param * (1 - h[0] * h[4]).astype(param.dtype)
    step = flat[0].astype(h.dtype)
    beta2 = h[2]
    bias_correction2 = 1 - beta2 ** step
    corrected = flat[1:1 + n] / (1 - h[1] ** step).astype(dtype)
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
    rectified = rho_t > 5.0
    rect = jnp.sqrt(jnp.where(rectified, (rho_t - 4) * (rho_t - 2) * rho_inf
                              / ((rho_inf - 4) * (rho_inf - 2) * rho_t), 1.0))
    adaptive = jnp.sqrt(bias_correction2).astype(dtype) / (jnp.sqrt(flat[1 + n:]) + h[3].astype(dtype))
    update = corrected * h[0].astype(dtype)
    update = jnp.where(rectified, update * adaptive * rect.astype(dtype), update)
    return (param - update.reshape(param.shape).astype(param.dtype)).astype(param.dtype)


class RAdam(Optimizer):
    """``RAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    decoupled_weight_decay=False, maximize=False)``: PyTorch's rule."""

    _real_floating_only = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        check_adam_hyperparameters(lr, betas, eps, weight_decay)
        refuse_unsupported("RAdam", differentiable=differentiable, capturable=capturable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=False, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=False)
        super().__init__(params, defaults)

    def _hyper_values(self, group):
        return adam_hyper_values(group)

    def _slots(self, group):
        return [("step", True), ("exp_avg", False), ("exp_avg_sq", False)]

    _batched = True

    def _update(self, p, grad, state, hyper, group, fresh):
        flat = whole(state["step"])
        decay = group["weight_decay"] != 0
        decoupled = decay and bool(group["decoupled_weight_decay"])
        l2 = (p,) if decay and not decoupled else ()
        self._write(_radam_state, flat, (grad,) + l2 + (hyper,), (bool(group["maximize"]),))
        self._write(_radam_param, p, (flat, hyper), (decoupled,))
