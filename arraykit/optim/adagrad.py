"""Adagrad with PyTorch's update rule (learning-rate decay, initial accumulator,
weight decay, maximize). Its state exists from construction, as PyTorch's."""

from __future__ import annotations

import jax.numpy as jnp

from ..autograd.mode import no_grad
from .optimizer import Optimizer, check_hyperparameter, gradient_term, refuse_unsupported, whole

__all__ = ["Adagrad"]

# The hyperparameter tensor: (lr, lr_decay, weight_decay, eps).


def _adagrad_state(flat, grad, *rest):
    *p, h, maximize = rest
    g = gradient_term(grad, p[0] if p else None, h[2], maximize).reshape(-1).astype(flat.dtype)
    return jnp.concatenate([flat[:1] + 1, flat[1:] + g * g])


def _adagrad_param(param, flat, grad, h, maximize, decay):
    g = gradient_term(grad, param if decay else None, h[2], maximize).reshape(-1).astype(flat.dtype)
    step = flat[0].astype(h.dtype)
    clr = h[0] / (1 + (step - 1) * h[1])
    std = jnp.sqrt(flat[1:]) + h[3].astype(flat.dtype)
    update = (-clr).astype(flat.dtype) * g / std
    return (param + update.reshape(param.shape).astype(param.dtype)).astype(param.dtype)


class Adagrad(Optimizer):
    """``Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
    eps=1e-10, maximize=False)``: PyTorch's rule; ``state_sum`` starts at
    ``initial_accumulator_value``."""

    _real_floating_only = True

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_hyperparameter(lr, "learning rate")
        check_hyperparameter(lr_decay, "lr_decay value")
        check_hyperparameter(weight_decay, "weight_decay value")
        check_hyperparameter(initial_accumulator_value, "initial_accumulator_value value")
        check_hyperparameter(eps, "epsilon value")
        refuse_unsupported("Adagrad", differentiable=differentiable, fused=fused)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=False, fused=None)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = self._new_state(p, group)

    def _hyper_values(self, group):
        return tuple(float(group[k]) for k in ("lr", "lr_decay", "weight_decay", "eps"))

    def _slots(self, group):
        return [("step", True), ("sum", False)]

    def _initialize(self, state, group):
        with no_grad():
            state["sum"].fill_(group["initial_accumulator_value"])

    _batched = True

    def _update(self, p, grad, state, hyper, group, fresh):
        flat = whole(state["step"])
        maximize, decay = bool(group["maximize"]), group["weight_decay"] != 0
        self._write(_adagrad_state, flat, (grad,) + ((p,) if decay else ()) + (hyper,), (maximize,))
        self._write(_adagrad_param, p, (flat, grad, hyper), (maximize, decay))
