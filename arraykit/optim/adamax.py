"""Adamax (Adam with the infinity norm) with PyTorch's update rule (weight decay,
maximize): one kernel for the state storage (``step``, ``exp_avg``, ``exp_inf``),
one for the parameter."""

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

__all__ = ["Adamax"]

# The hyperparameter tensor: (lr, beta1, beta2, eps, weight_decay).


def _adamax_state(flat, grad, *rest):
    *p, h, maximize = rest
    n = (flat.size - 1) // 2
    g, exp_avg = adam_direction_and_average(grad, p[0] if p else None, flat, 1, n, h, maximize)
    exp_inf = jnp.maximum(flat[1 + n:] * h[2].astype(flat.dtype), jnp.abs(g) + h[3].astype(flat.dtype))
    return jnp.concatenate([flat[:1] + 1, exp_avg, exp_inf])


def _adamax_param(param, flat, h):
    n = (flat.size - 1) // 2
    clr = h[0] / (1 - h[1] ** flat[0].astype(h.dtype))
    update = (-clr).astype(flat.dtype) * flat[1:1 + n] / flat[1 + n:]
    return (param + update.reshape(param.shape).astype(param.dtype)).astype(param.dtype)


class Adamax(Optimizer):
    """``Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    maximize=False)``: PyTorch's rule."""

    _real_floating_only = True

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        check_adam_hyperparameters(lr, betas, eps, weight_decay)
        refuse_unsupported("Adamax", differentiable=differentiable, capturable=capturable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=False, capturable=False)
        super().__init__(params, defaults)

    def _hyper_values(self, group):
        return adam_hyper_values(group)

    def _slots(self, group):
        return [("step", True), ("exp_avg", False), ("exp_inf", False)]

    _batched = True

    def _update(self, p, grad, state, hyper, group, fresh):
        flat = whole(state["step"])
        decayed = (p,) if group["weight_decay"] != 0 else ()
        self._write(_adamax_state, flat, (grad,) + decayed + (hyper,), (bool(group["maximize"]),))
        self._write(_adamax_param, p, (flat, hyper))
