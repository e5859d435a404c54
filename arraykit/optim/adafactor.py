"""Adafactor with PyTorch's update rule (``torch.optim.Adafactor``): the second moment of
a matrix parameter is kept factored, as a row mean (``row_var``, shape ``(..., m, 1)``)
and a column mean (``col_var``, shape ``(..., 1, n)``); a vector or scalar parameter
keeps a full ``variance``. The step size is relative to the parameter's RMS and the
update is clipped by its own RMS over ``d``.

Per parameter, one kernel updates the state storage (``step`` then the variances,
laid out flat) and one the parameter."""

from __future__ import annotations

import math

import jax.numpy as jnp

from ..api.creation import zeros
from ..core.devices import fitted
from ..kernels.launch import apply_inplace
from .optimizer import Optimizer, lerp, segments, state_dtype, whole

__all__ = ["Adafactor"]

# The hyperparameter tensor: (lr, beta2_decay, eps1 (NaN: the dtype's machine epsilon),
# eps2, d, weight_decay).


def _factored_shapes(shape):
    """The shapes of ``row_var`` and ``col_var`` for a parameter of ``shape`` (ndim ≥ 2)."""
    return shape[:-1] + (1,), shape[:-2] + (1, shape[-1])


def _eps1(h, dtype):
    return jnp.where(jnp.isnan(h[2]), jnp.finfo(dtype).eps, h[2]).astype(dtype)


def _estimate(variances, h, shape):
    """The second-moment estimate from the (already averaged) variances."""
    if len(shape) > 1:
        row_shape, col_shape = _factored_shapes(shape)
        row_var, col_var = variances[0].reshape(row_shape), variances[1].reshape(col_shape)
        floor = _eps1(h, row_var.dtype)
        return (row_var @ col_var) / jnp.maximum(jnp.mean(row_var, axis=-2, keepdims=True), floor)
    return variances[0].reshape(shape)


def _adafactor_state(flat, grad, h, sizes, shape, maximize):
    step, *variances = segments(flat, sizes)
    weight = ((step[0].astype(h.dtype) + 1) ** h[1]).astype(flat.dtype)
    g = grad.astype(flat.dtype)
    if len(shape) > 1:
        row_shape, col_shape = _factored_shapes(shape)
        variances = [lerp(variances[0], jnp.mean(g * g, axis=-1, keepdims=True).reshape(-1), weight),
                     lerp(variances[1], jnp.mean(g * g, axis=-2, keepdims=True).reshape(-1), weight)]
    else:
        variances = [lerp(variances[0], (g * g).reshape(-1), weight)]
    return jnp.concatenate([step + 1] + variances)


def _adafactor_param(param, flat, grad, h, sizes, shape, maximize):
    dtype = flat.dtype
    step, *variances = segments(flat, sizes)
    rho = jnp.minimum(h[0], 1 / jnp.sqrt(step[0].astype(h.dtype)))
    p = param.astype(dtype)
    rms_p = jnp.sqrt(jnp.sum(p * p)).astype(h.dtype) / math.sqrt(max(param.size, 1))
    alpha = jnp.maximum(h[3], rms_p) * rho
    floor = _eps1(h, dtype)
    g = (-grad if maximize else grad).astype(dtype)
    update = g / jnp.sqrt(jnp.maximum(_estimate(variances, h, shape), floor * floor))
    rms_update = jnp.sqrt(jnp.sum(update * update)).astype(h.dtype) / (math.sqrt(max(update.size, 1)) * h[4])
    p = p * (1 - h[0] * h[5]).astype(dtype)
    return (p - (alpha / jnp.maximum(1.0, rms_update)).astype(dtype) * update).astype(param.dtype)


class Adafactor(Optimizer):
    """``Adafactor(params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
    weight_decay=0.0, maximize=False)``: PyTorch's rule (``eps[0]`` None: the
    parameter dtype's machine epsilon)."""

    _real_floating_only = True

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def _hyper_values(self, group):
        eps1, eps2 = group["eps"]
        return tuple(map(float, (group["lr"], group["beta2_decay"], math.nan if eps1 is None else eps1, eps2,
                                 group["d"], group["weight_decay"])))

    def _entries(self, p):
        """``(name, shape)`` of ``p``'s state entries, in their flat order."""
        if p.ndim > 1:
            row_shape, col_shape = _factored_shapes(tuple(p.shape))
            return [("step", ()), ("row_var", row_shape), ("col_var", col_shape)]
        return [("step", ()), ("variance", tuple(p.shape))]

    def _new_state(self, p, group):
        entries = self._entries(p)
        sizes = [math.prod(shape) for _, shape in entries]
        flat = zeros((sum(sizes),), dtype=state_dtype(p), device=fitted(p.device, (sum(sizes),)))
        return {name: view.reshape(shape) for (name, shape), view in zip(entries, segments(flat, sizes))}

    def _update(self, p, grad, state, hyper, group, fresh):
        flat = whole(state["step"])
        sizes = tuple(math.prod(shape) for _, shape in self._entries(p))
        static = (sizes, tuple(p.shape), bool(group["maximize"]))
        apply_inplace(_adafactor_state, flat, (grad, hyper), static)
        apply_inplace(_adafactor_param, p, (flat, grad, hyper), static)
