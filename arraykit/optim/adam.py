"""Adam and AdamW with PyTorch's update rules (weight decay, AMSGrad, maximize).

Per parameter, two fused kernels: one updates the state storage (``step``,
``exp_avg``, ``exp_avg_sq`` and ``max_exp_avg_sq``, laid out flat in that order),
one updates the parameter from it. Bias corrections are computed in float64 from
the step count and the hyperparameter tensor, as PyTorch computes them in Python.
"""

from __future__ import annotations

import jax.numpy as jnp

from .optimizer import (
    Optimizer,
    adam_hyper_values,
    check_adam_hyperparameters,
    lerp,
    refuse_unsupported,
    whole,
)

__all__ = ["Adam", "AdamW"]

# The hyperparameter tensor: (lr, beta1, beta2, eps, weight_decay).


def _moments(flat, n, amsgrad):
    parts = [flat[1 + k * n:1 + (k + 1) * n] for k in range(3 if amsgrad else 2)]
    return flat[0], parts


def _adam_state(flat, grad, *rest):
    *p, h, (maximize, l2, amsgrad) = rest
    g = -grad if maximize else grad
    if l2:
        g = g + h[4].astype(g.dtype) * p[0]
    g = g.reshape(-1).astype(flat.dtype)
    step, parts = _moments(flat, g.size, amsgrad)
    m = lerp(parts[0], g, (1 - h[1]).astype(flat.dtype))
    v = parts[1] * h[2].astype(flat.dtype) + (1 - h[2]).astype(flat.dtype) * g * g
    new = [(step + 1)[None], m, v]
    if amsgrad:
        new.append(jnp.maximum(parts[2], v))
    return jnp.concatenate(new)


def _adam_param(p, flat, h, decoupled, amsgrad):
    step, parts = _moments(flat, p.size, amsgrad)
    step = step.astype(h.dtype)
    lr, beta1, beta2, eps, wd = h[0], h[1], h[2], h[3], h[4]
    if decoupled:
        p = p * (1 - lr * wd).astype(p.dtype)
    step_size = lr / (1 - beta1**step)
    bias_correction2_sqrt = jnp.sqrt(1 - beta2**step)
    dtype = flat.dtype
    denom = jnp.sqrt(parts[-1]) / bias_correction2_sqrt.astype(dtype) + eps.astype(dtype)
    update = (-step_size).astype(dtype) * parts[0] / denom
    return (p + update.reshape(p.shape).astype(p.dtype)).astype(p.dtype)


class Adam(Optimizer):
    """``Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False,
    maximize=False, decoupled_weight_decay=False)``: PyTorch's rule (L2 weight decay
    added to the gradient; decoupled, AdamW's, with ``decoupled_weight_decay``)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        check_adam_hyperparameters(lr, betas, eps, weight_decay)
        refuse_unsupported(type(self).__name__, differentiable=differentiable, capturable=capturable,
                           fused=fused)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=False, differentiable=False,
                        fused=None, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    _real_floating_only = True

    def _hyper_values(self, group):
        return adam_hyper_values(group)

    _batched = True

    def _slots(self, group):
        slots = [("step", True), ("exp_avg", False), ("exp_avg_sq", False)]
        return slots + [("max_exp_avg_sq", False)] if group["amsgrad"] else slots

    def _update(self, p, grad, state, hyper, group, fresh):
        flat = whole(state["step"])
        amsgrad = bool(group["amsgrad"])
        decoupled = bool(group["decoupled_weight_decay"])
        l2 = group["weight_decay"] != 0 and not decoupled
        operands = (grad, p, hyper) if l2 else (grad, hyper)
        self._write(_adam_state, flat, operands, ((bool(group["maximize"]), l2, amsgrad),))
        self._write(_adam_param, p, (flat, hyper), (decoupled, amsgrad))


class AdamW(Adam):
    """Adam with decoupled weight decay (default 1e-2): ``p ← p·(1 - lr·wd)`` before the
    Adam step, as ``torch.optim.AdamW``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False,
                 *, maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
