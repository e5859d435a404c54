"""Stochastic gradient descent with PyTorch's update rule (momentum, dampening,
Nesterov, weight decay, maximize)."""

from __future__ import annotations

from .optimizer import Optimizer

__all__ = ["SGD"]

# The hyperparameter tensor: (lr, momentum, dampening, weight_decay).


def _direction(grad, p, h, maximize, decay):
    d = -grad if maximize else grad
    if decay:
        d = d + h[3].astype(d.dtype) * p
    return d


def _sgd_buffer(buf, grad, *rest):
    """The new momentum buffer: ``d`` itself at the first step, else ``m·buf + (1-dampening)·d``."""
    *p, h, maximize, decay, first = rest
    d = _direction(grad, p[0] if decay else None, h, maximize, decay).astype(buf.dtype)
    if first:
        return d
    return buf * h[1].astype(buf.dtype) + (1 - h[2]).astype(buf.dtype) * d


def _sgd_param(p, *rest):
    """``p - lr·d``; ``d`` from the gradient (no momentum), the buffer, or both (Nesterov)."""
    *operands, h, (maximize, decay, momentum, nesterov) = rest
    if momentum and not nesterov:
        d = operands[0].astype(p.dtype)
    else:
        d = _direction(operands[0], p, h, maximize, decay)
        if nesterov:
            d = d + h[1].astype(d.dtype) * operands[1]
    return p + (-h[0]).astype(p.dtype) * d


class SGD(Optimizer):
    """``SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
    maximize=False)``: PyTorch's rule, one fused kernel for the parameter and one for
    its momentum buffer."""

    def _hyper_values(self, group):
        return tuple(float(group[k]) for k in ("lr", "momentum", "dampening", "weight_decay"))

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        for name, value in (("learning rate", lr), ("momentum value", momentum),
                            ("weight_decay value", weight_decay)):
            if value < 0.0:
                raise ValueError(f"Invalid {name}: {value}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        if differentiable or fused:
            raise NotImplementedError("SGD: differentiable and fused are not supported")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=False, fused=None)
        super().__init__(params, defaults)

    _batched = True

    def _slots(self, group):
        return [("momentum_buffer", False)] if group["momentum"] != 0 else []

    def _update(self, p, grad, state, hyper, group, fresh):
        maximize, decay = bool(group["maximize"]), group["weight_decay"] != 0
        if group["momentum"] == 0:
            self._write(_sgd_param, p, (grad, hyper), ((maximize, decay, False, False),))
            return
        buf = state["momentum_buffer"]
        operands = (grad, p, hyper) if decay else (grad, hyper)
        # the first step's buffer is the direction itself; with no dampening the general
        # rule gives that from the zeroed buffer, and one kernel serves every step
        first = fresh and group["dampening"] != 0
        self._write(_sgd_buffer, buf, operands, (maximize, decay, first))
        nesterov = bool(group["nesterov"])
        operands = (grad, buf, hyper) if nesterov else (buf, hyper)
        self._write(_sgd_param, p, operands, ((maximize, decay, True, nesterov),))
