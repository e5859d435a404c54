"""RMSprop with PyTorch's update rule (weight decay, momentum, centered, maximize).

Per parameter, one kernel updates the state storage (``step``, ``square_avg``, then
``momentum_buffer`` and ``grad_avg`` when used, laid out flat in that order) and one
updates the parameter from it.
"""

from __future__ import annotations

import jax.numpy as jnp

from .optimizer import (
    Optimizer,
    check_hyperparameter,
    gradient_term,
    lerp,
    refuse_unsupported,
    segments,
    slot_sizes,
    whole,
)

__all__ = ["RMSprop"]

# The hyperparameter tensor: (lr, alpha, eps, weight_decay, momentum).


def _direction(grad, p, h, maximize, dtype):
    return gradient_term(grad, p, h[3], maximize).reshape(-1).astype(dtype)


def _denominator(square_avg, grad_avg, h):
    """``sqrt(square_avg - grad_avg²) + eps`` (centered) or ``sqrt(square_avg) + eps``."""
    dtype = square_avg.dtype
    if grad_avg is not None:
        square_avg = square_avg + (-1.0) * grad_avg * grad_avg
    return jnp.sqrt(square_avg) + h[2].astype(dtype)


def _rmsprop_state(flat, grad, *rest):
    *p, h, (maximize, sizes, momentum, centered) = rest
    g = _direction(grad, p[0] if p else None, h, maximize, flat.dtype)
    step, square_avg, *others = segments(flat, sizes)
    alpha = h[1].astype(flat.dtype)
    square_avg = square_avg * alpha + (1 - h[1]).astype(flat.dtype) * g * g
    new = [step + 1, square_avg]
    grad_avg = None
    if centered:
        grad_avg = lerp(others[-1], g, (1 - h[1]).astype(flat.dtype))
    if momentum:
        new.append(others[0] * h[4].astype(flat.dtype) + g / _denominator(square_avg, grad_avg, h))
    if centered:
        new.append(grad_avg)
    return jnp.concatenate(new)


def _rmsprop_param(param, flat, grad, h, options, decay):
    maximize, sizes, momentum, centered = options
    _, square_avg, *others = segments(flat, sizes)
    lr = (-h[0]).astype(flat.dtype)
    if momentum:
        update = lr * others[0]
    else:
        g = _direction(grad, param if decay else None, h, maximize, flat.dtype)
        update = lr * g / _denominator(square_avg, others[-1] if centered else None, h)
    return (param + update.reshape(param.shape).astype(param.dtype)).astype(param.dtype)


class RMSprop(Optimizer):
    """``RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
    centered=False, maximize=False)``: PyTorch's rule."""

    _real_floating_only = True

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_hyperparameter(lr, "learning rate")
        check_hyperparameter(eps, "epsilon value")
        check_hyperparameter(momentum, "momentum value")
        check_hyperparameter(weight_decay, "weight_decay value")
        check_hyperparameter(alpha, "alpha value")
        refuse_unsupported("RMSprop", differentiable=differentiable, capturable=capturable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=False, foreach=foreach, maximize=maximize,
                        differentiable=False)
        super().__init__(params, defaults)

    def _hyper_values(self, group):
        return tuple(float(group[k]) for k in ("lr", "alpha", "eps", "weight_decay", "momentum"))

    def _slots(self, group):
        slots = [("step", True), ("square_avg", False)]
        if group["momentum"] > 0:
            slots.append(("momentum_buffer", False))
        if group["centered"]:
            slots.append(("grad_avg", False))
        return slots

    _batched = True

    def _update(self, p, grad, state, hyper, group, fresh):
        flat = whole(state["step"])
        sizes = slot_sizes(self._slots(group), p.numel())
        options = (bool(group["maximize"]), sizes, group["momentum"] > 0, bool(group["centered"]))
        decayed = (p,) if group["weight_decay"] != 0 else ()
        self._write(_rmsprop_state, flat, (grad,) + decayed + (hyper,), (options,))
        self._write(_rmsprop_param, p, (flat, grad, hyper), (options, bool(decayed)))
