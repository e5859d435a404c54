"""Muon with PyTorch's update rule (``torch.optim.Muon``): momentum (Nesterov by
default), then the update orthogonalized by a quintic Newton–Schulz iteration run in
bfloat16, as PyTorch runs it, with decoupled weight decay and PyTorch's learning-rate
adjustment for the matrix's shape. For 2-D parameters only.

Per parameter, one kernel updates the ``momentum_buffer`` and one the parameter."""

from __future__ import annotations

import math

import jax.numpy as jnp

from ..kernels.launch import apply_inplace
from .optimizer import Optimizer, lerp

__all__ = ["Muon"]

# The hyperparameter tensor: (lr, weight_decay, momentum).


def _momentum(buf, grad, h):
    return lerp(buf, grad.astype(buf.dtype), (1 - h[2]).astype(buf.dtype))


def _bf16_addmm(bias, m1, m2, beta, alpha):
    """PyTorch's bfloat16 ``addmm``: the product accumulated in float32, then rounded."""
    product = jnp.matmul(m1, m2, preferred_element_type=jnp.float32)
    return (beta * bias.astype(jnp.float32) + alpha * product).astype(jnp.bfloat16)


def orthogonalized(update, coefficients, steps, eps):
    """The Newton–Schulz iteration of PyTorch's Muon (in bfloat16); a kernel helper."""
    a, b, c = coefficients
    x = update.astype(jnp.bfloat16)
    tall = update.shape[0] > update.shape[1]
    if tall:
        x = x.T
    norm = jnp.sqrt(jnp.sum(x.astype(jnp.float32) ** 2)).astype(jnp.bfloat16)
    x = x / jnp.maximum(norm, jnp.asarray(eps, jnp.bfloat16))
    for _ in range(steps):
        gram = jnp.matmul(x, x.T, preferred_element_type=jnp.float32).astype(jnp.bfloat16)
        gram_update = _bf16_addmm(gram, gram, gram, b, c)
        x = _bf16_addmm(x, gram_update, x, a, 1.0)
    return x.T if tall else x


def _muon_param(param, buf, grad, h, coefficients, steps, eps, nesterov, lr_ratio):
    dtype = buf.dtype
    update = lerp(grad.astype(dtype), buf, h[2].astype(dtype)) if nesterov else buf
    ortho = orthogonalized(update, coefficients, steps, eps).astype(param.dtype)
    p = param * (1 - h[0] * h[1]).astype(param.dtype)
    return (p - (h[0] * lr_ratio).astype(param.dtype) * ortho).astype(param.dtype)


def _lr_ratio(adjust_lr_fn, shape):
    rows, cols = shape[:2]
    if adjust_lr_fn in (None, "original"):
        return math.sqrt(max(1, rows / cols))
    return 0.2 * math.sqrt(max(rows, cols))


class Muon(Optimizer):
    """``Muon(params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
    ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-7, ns_steps=5, adjust_lr_fn=None)``:
    PyTorch's rule, for 2-D parameters (``adjust_lr_fn``: ``"original"`` or
    ``"match_rms_adamw"``)."""

    _real_floating_only = True

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(3.4445, -4.7750, 2.0315), eps=1e-7, ns_steps=5, adjust_lr_fn=None):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn not in (None, "original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        if ns_steps >= 100:
            raise ValueError("Number of steps must be less than 100 for computational efficiency")
        if len(ns_coefficients) != 3:
            raise ValueError("Coefficients must be a tuple of exactly 3 values")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=tuple(ns_coefficients), eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(
                        f"Muon only supports 2D parameters whereas we found a parameter with size: {tuple(p.shape)}"
                    )

    def _hyper_values(self, group):
        return tuple(map(float, (group["lr"], group["weight_decay"], group["momentum"])))

    def _slots(self, group):
        return [("momentum_buffer", False)]

    def _update(self, p, grad, state, hyper, group, fresh):
        buf = state["momentum_buffer"]
        apply_inplace(_momentum, buf, (grad, hyper))
        static = (tuple(map(float, group["ns_coefficients"])), int(group["ns_steps"]), float(group["eps"]),
                  bool(group["nesterov"]), _lr_ratio(group["adjust_lr_fn"], tuple(p.shape)))
        apply_inplace(_muon_param, p, (buf, grad, hyper), static)
