"""Adadelta with PyTorch's update rule (weight decay, maximize).

The parameter's change depends on the accumulated update before this step, so it
is computed first (one kernel), then the state storage (``step``, ``square_avg``,
``acc_delta``) and the parameter are updated from it.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..kernels.launch import apply, apply_inplace
from .optimizer import Optimizer, check_hyperparameter, gradient_term, whole

__all__ = ["Adadelta"]

# The hyperparameter tensor: (lr, rho, eps, weight_decay).


def _pieces(flat, grad, p, h, maximize):
    n = (flat.size - 1) // 2
    g = gradient_term(grad, p, h[3], maximize).reshape(-1).astype(flat.dtype)
    rho = h[1].astype(flat.dtype)
    square_avg = flat[1:1 + n] * rho + (1 - h[1]).astype(flat.dtype) * g * g
    return g, square_avg, flat[1 + n:]


def _adadelta_delta(flat, grad, *rest):
    *p, h, maximize = rest
    g, square_avg, acc_delta = _pieces(flat, grad, p[0] if p else None, h, maximize)
    eps = h[2].astype(flat.dtype)
    return jnp.sqrt(acc_delta + eps) / jnp.sqrt(square_avg + eps) * g


def _adadelta_state(flat, grad, delta, *rest):
    *p, h, maximize = rest
    _, square_avg, acc_delta = _pieces(flat, grad, p[0] if p else None, h, maximize)
    rho = h[1].astype(flat.dtype)
    acc_delta = acc_delta * rho + (1 - h[1]).astype(flat.dtype) * delta * delta
    return jnp.concatenate([flat[:1] + 1, square_avg, acc_delta])


def _adadelta_param(param, delta, h):
    return (param + ((-h[0]).astype(delta.dtype) * delta).reshape(param.shape).astype(param.dtype)).astype(
        param.dtype)


class Adadelta(Optimizer):
    """``Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False)``:
    PyTorch's rule."""

    _real_floating_only = True

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        check_hyperparameter(lr, "learning rate")
        check_hyperparameter(rho, "rho value", 0.0 <= rho <= 1.0)
        check_hyperparameter(eps, "epsilon value")
        check_hyperparameter(weight_decay, "weight_decay value")
        if differentiable or capturable:
            raise NotImplementedError("Adadelta: differentiable and capturable are not supported")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=False, foreach=foreach, differentiable=False)
        super().__init__(params, defaults)

    def _hyper_values(self, group):
        return tuple(float(group[k]) for k in ("lr", "rho", "eps", "weight_decay"))

    def _slots(self, group):
        return [("step", True), ("square_avg", False), ("acc_delta", False)]

    def _update(self, p, grad, state, hyper, group, fresh):
        flat = whole(state["step"])
        maximize = bool(group["maximize"])
        operands = (flat, grad) + ((p,) if group["weight_decay"] != 0 else ()) + (hyper,)
        delta = apply(_adadelta_delta, operands, (maximize,))
        apply_inplace(_adadelta_state, flat, operands[1:2] + (delta,) + operands[2:], (maximize,))
        apply_inplace(_adadelta_param, p, (delta, hyper))
