"""Activations: softmax family (hand-written gradients from the output) and the element-wise activations."""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp

from ...api.autocasting import coerce
from ...autograd.function import Function
from ...core import layout as L
from ...kernels import derivatives as DV
from ...kernels.launch import apply
from ...tensors.tensor_type import require_tensor
from .. import activations as A
from .. import loss_kernels as K
from .arguments import _dim, _floating

__all__ = ["softmax", "log_softmax", "logsumexp", "relu", "relu6", "hardtanh", "leaky_relu", "elu", "softplus", "hardsigmoid", "hardswish", "sigmoid", "gelu", "silu"]


class _FromOutput(Function):
    """A softmax-type operation whose VJP needs only its output: ``KERNELS`` are the
    (forward, backward-from-output) kernels, both taking the class dimension."""

    KERNELS = None

    @classmethod
    def forward(cls, ctx, x, dim):
        out = apply(cls.KERNELS[0], (x,), (dim,))
        ctx.save_for_backward(out)
        ctx.dim = dim
        return out

    @classmethod
    def backward(cls, ctx, grad):
        (out,) = ctx.saved_tensors
        return apply(cls.KERNELS[1], (out, grad), (ctx.dim,)), None


class _LogSoftmax(_FromOutput):
    KERNELS = (K.log_softmax, K.log_softmax_backward)


class _Softmax(_FromOutput):
    KERNELS = (K.softmax, K.softmax_backward)


class _LogSumExp(Function):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        out = apply(K.logsumexp, (x,), (dims, keepdim))
        ctx.save_for_backward(x, out)
        ctx.options = (dims, keepdim)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        return apply(K.logsumexp_backward, (x, out, grad), ctx.options), None, None


def log_softmax(input, dim=None, dtype=None):
    """``log(softmax(input))`` along ``dim``, computed stably."""
    x = _floating(input if dtype is None else input.to(dtype), "log_softmax")
    (x,) = coerce("log_softmax", x)
    return _LogSoftmax.apply(x, _dim(dim, x.ndim, "log_softmax"))


def softmax(input, dim=None, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably."""
    x = _floating(input if dtype is None else input.to(dtype), "softmax")
    (x,) = coerce("softmax", x)
    return _Softmax.apply(x, _dim(dim, x.ndim, "softmax"))


def logsumexp(input, dim, keepdim=False):
    """``log(sum(exp(input)))`` over ``dim`` (an int or a tuple), computed stably."""
    (x,) = coerce("logsumexp", _floating(input, "logsumexp"))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    dims = tuple(sorted(L.normalize_dim(operator.index(d), x.ndim) for d in dims))
    return _LogSumExp.apply(x, dims, bool(keepdim))



def _relu_body(x):
    return DV.relu(x) if jnp.issubdtype(x.dtype, jnp.floating) else jnp.maximum(x, 0)


def relu(input, inplace=False):
    """``max(x, 0)``."""
    out = apply(_relu_body, (require_tensor(input, "relu"),))
    return input.copy_(out) if inplace else out


def _activation(body, input, name, static=(), inplace=False):
    """A piecewise activation of :mod:`arraykit.nn.activations`, written back into
    ``input`` when ``inplace``."""
    x = _floating(input, name)
    if x.dtype.kind == "complex":
        raise TypeError(f"{name}: expected a real floating-point tensor, got {x.dtype}")
    out = apply(body, (x,), tuple(static))
    return input.copy_(out) if inplace else out


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``clamp(x, min_val, max_val)``; no gradient at the bounds, as PyTorch."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val {min_val} must not exceed max_val {max_val}")
    return _activation(A.hardtanh, input, "hardtanh", (float(min_val), float(max_val)), inplace)


def relu6(input, inplace=False):
    """``min(max(x, 0), 6)``; no gradient at 0 and 6."""
    return _activation(A.hardtanh, input, "relu6", (0.0, 6.0), inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``x`` where positive, else ``negative_slope * x``."""
    return _activation(A.leaky_relu, input, "leaky_relu", (float(negative_slope),), inplace)


def elu(input, alpha=1.0, inplace=False):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""
    return _activation(A.elu, input, "elu", (float(alpha),), inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    return _activation(A.softplus, input, "softplus", (float(beta), float(threshold)))


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6``."""
    return _activation(A.hardsigmoid, input, "hardsigmoid", (), inplace)


def hardswish(input, inplace=False):
    """``x * relu6(x + 3) / 6``."""
    return _activation(A.hardswish, input, "hardswish", (), inplace)


def sigmoid(input):
    """``1 / (1 + exp(-x))``."""
    return _activation(A.sigmoid, input, "sigmoid")


def _gelu_body(x, approximate):
    return jax.nn.gelu(x, approximate=approximate)


def gelu(input, approximate="none"):
    """Gaussian error linear unit: exact (erf) or ``approximate='tanh'``."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return apply(_gelu_body, (_floating(input, "gelu"),), (approximate == "tanh",))


def _silu_body(x):
    return jax.nn.silu(x)


def silu(input, inplace=False):
    """``x * sigmoid(x)``."""
    out = apply(_silu_body, (_floating(input, "silu"),))
    return input.copy_(out) if inplace else out
