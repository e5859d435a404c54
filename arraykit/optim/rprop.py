"""Rprop (resilient backpropagation) with PyTorch's update rule: each entry keeps its
own step size, grown by ``etaplus`` while the gradient keeps its sign and shrunk by
``etaminus`` when it flips (the step after a flip skips that entry).

Per parameter, one kernel updates the state storage (``step``, ``prev``,
``step_size``, laid out flat in that order) and one moves the parameter by
``-sign(prev) · step_size``."""

from __future__ import annotations

import jax.numpy as jnp

from ..autograd.mode import no_grad
from .optimizer import Optimizer, check_hyperparameter, refuse_unsupported, whole

__all__ = ["Rprop"]

# The hyperparameter tensor: (lr, etaminus, etaplus, step_size_min, step_size_max).


def _rprop_state(flat, grad, h, maximize):
    n = (flat.size - 1) // 2
    g = grad.reshape(-1).astype(flat.dtype)
    g = -g if maximize else g
    prev, step_size = flat[1:1 + n], flat[1 + n:]
    etaminus, etaplus = h[1].astype(flat.dtype), h[2].astype(flat.dtype)
    sign = jnp.sign(g * prev)
    factor = jnp.where(sign > 0, etaplus, jnp.where(sign < 0, etaminus, jnp.ones_like(sign)))
    step_size = jnp.clip(step_size * factor, h[3].astype(flat.dtype), h[4].astype(flat.dtype))
    g = jnp.where(factor == etaminus, jnp.zeros_like(g), g)
    return jnp.concatenate([flat[:1] + 1, g, step_size])


def _rprop_param(param, flat):
    n = (flat.size - 1) // 2
    update = -jnp.sign(flat[1:1 + n]) * flat[1 + n:]
    return (param + update.reshape(param.shape).astype(param.dtype)).astype(param.dtype)


class Rprop(Optimizer):
    """``Rprop(params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False)``:
    PyTorch's rule; each entry's step size starts at ``lr``."""

    _real_floating_only = True

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
                 foreach=None, maximize=False, differentiable=False):
        check_hyperparameter(lr, "learning rate")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        refuse_unsupported("Rprop", differentiable=differentiable, capturable=capturable)
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach,
                        maximize=maximize, differentiable=False, capturable=False)
        super().__init__(params, defaults)

    def _hyper_values(self, group):
        (etaminus, etaplus), (smallest, largest) = group["etas"], group["step_sizes"]
        return tuple(map(float, (group["lr"], etaminus, etaplus, smallest, largest)))

    def _slots(self, group):
        return [("step", True), ("prev", False), ("step_size", False)]

    def _initialize(self, state, group):
        with no_grad():
            state["step_size"].fill_(group["lr"])

    _batched = True

    def _update(self, p, grad, state, hyper, group, fresh):
        flat = whole(state["step"])
        self._write(_rprop_state, flat, (grad, hyper), (bool(group["maximize"]),))
        self._write(_rprop_param, p, (flat,))
