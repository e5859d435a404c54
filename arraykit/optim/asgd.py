"""Averaged SGD with PyTorch's update rule (decay term ``lambd``, averaging from step
``t0``, weight decay, maximize). The parameter moves first (with the step size
``eta`` of the previous step), then one kernel updates the state storage
(``step``, ``eta``, ``mu``, ``ax``, the average) from the new parameter.
``eta`` is kept in the state's dtype (PyTorch keeps it in float32)."""

from __future__ import annotations

import jax.numpy as jnp

from ..autograd.mode import no_grad
from .optimizer import Optimizer, check_hyperparameter, gradient_term, whole

__all__ = ["ASGD"]

# The hyperparameter tensor: (lr, lambd, alpha, t0, weight_decay).


def _asgd_param(param, flat, grad, h, maximize, decay):
    g = gradient_term(grad, param if decay else None, h[4], maximize)
    eta = flat[1].astype(param.dtype)
    return (param * (1 - h[1].astype(param.dtype) * eta) - eta * g.astype(param.dtype)).astype(param.dtype)


def _asgd_state(flat, param, h):
    dtype = flat.dtype
    step = flat[0] + 1
    mu, ax = flat[2], flat[3:]
    p = param.reshape(-1).astype(dtype)
    ax = jnp.where(mu == 1, p, ax + (p - ax) * mu)
    step64 = step.astype(h.dtype)
    eta = h[0] / (1 + h[1] * h[0] * step64) ** h[2]
    new_mu = 1 / jnp.maximum(1.0, step64 - h[3])
    return jnp.concatenate([jnp.stack([step, eta.astype(dtype), new_mu.astype(dtype)]), ax])


class ASGD(Optimizer):
    """``ASGD(params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
    maximize=False)``: PyTorch's rule; ``state['ax']`` is the averaged parameter."""

    _real_floating_only = True

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        check_hyperparameter(lr, "learning rate")
        check_hyperparameter(weight_decay, "weight_decay value")
        if differentiable or capturable:
            raise NotImplementedError("ASGD: differentiable and capturable are not supported")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=False, capturable=False)
        super().__init__(params, defaults)

    def _hyper_values(self, group):
        return tuple(float(group[k]) for k in ("lr", "lambd", "alpha", "t0", "weight_decay"))

    def _slots(self, group):
        return [("step", True), ("eta", True), ("mu", True), ("ax", False)]

    def _initialize(self, state, group):
        with no_grad():
            state["eta"].fill_(group["lr"])
            state["mu"].fill_(1.0)

    _batched = True

    def _update(self, p, grad, state, hyper, group, fresh):
        flat = whole(state["step"])
        self._write(_asgd_param, p, (flat, grad, hyper), (bool(group["maximize"]), group["weight_decay"] != 0))
        self._write(_asgd_state, flat, (p, hyper))
