"""Activations: softmax family (hand-written gradients from the output) and the element-wise activations."""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp

from ...api.autocasting import coerce
from ...api.elementwise import tanh
from ...api.torch_keywords import into
from ...autograd.function import Function
from ...autograd.mode import is_grad_enabled
from ...core import layout as L
from ...kernels import derivatives as DV
from ...kernels.launch import apply, apply_inplace
from ...tensors.tensor_type import require_tensor
from .. import activations as A
from .. import loss_kernels as K
from .arguments import _dim, _floating

__all__ = [
    "celu",
    "celu_",
    "elu",
    "elu_",
    "gelu",
    "glu",
    "gumbel_softmax",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "leaky_relu",
    "leaky_relu_",
    "log_softmax",
    "logsigmoid",
    "logsumexp",
    "mish",
    "prelu",
    "relu",
    "relu6",
    "relu_",
    "rrelu",
    "rrelu_",
    "selu",
    "selu_",
    "sigmoid",
    "silu",
    "softmax",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
    "threshold_",
]


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


def logsumexp(input, dim, keepdim=False, *, out=None):
    """``log(sum(exp(input)))`` over ``dim`` (an int or a tuple), computed stably;
    ``out=`` as ``torch.logsumexp``."""
    (x,) = coerce("logsumexp", _floating(input, "logsumexp"))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    dims = tuple(sorted(L.normalize_dim(operator.index(d), x.ndim) for d in dims))
    result = _LogSumExp.apply(x, dims, bool(keepdim))
    return result if out is None else into("logsumexp", result, out)



def _relu_body(x):
    return DV.relu(x) if jnp.issubdtype(x.dtype, jnp.floating) else jnp.maximum(x, 0)


def relu(input, inplace=False):
    """``max(x, 0)`` (``inplace``: written into ``input``, differentiated through the
    result, as PyTorch)."""
    x = require_tensor(input, "relu")
    return apply_inplace(_relu_body, x, ()) if inplace else apply(_relu_body, (x,))


def _activation(body, input, name, static=(), inplace=False, operands=()):
    """A piecewise activation of :mod:`arraykit.nn.activations` (a kernel of ``input``,
    ``operands`` and ``static``), written into ``input`` by one in-place kernel when
    ``inplace`` (recorded as a new version of its storage, as PyTorch's in-place forms)."""
    x = _floating(input, name)
    if x.dtype.kind == "complex":
        raise TypeError(f"{name}: expected a real floating-point tensor, got {x.dtype}")
    if inplace:
        return apply_inplace(body, x, tuple(operands), tuple(static))
    return apply(body, (x, *operands), tuple(static))


def _result_saving(body, from_result, input, name, static, inplace, coefficient, what):
    """An activation whose in-place form PyTorch differentiates through its result
    (``from_result``), which needs ``coefficient >= 0``: with a negative one, backward
    through the in-place form raises PyTorch's error."""
    if not inplace:
        return _activation(body, input, name, static)
    out = _activation(from_result, input, name, static, True)
    if coefficient < 0 and out.requires_grad and is_grad_enabled():
        def refuse(grad):
            raise RuntimeError(
                f"In-place {name} backward calculation is triggered with a negative {what} "
                f"({coefficient}), which is not supported; call the out-of-place version instead"
            )
        out.register_hook(refuse)
    return out


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
    slope = float(negative_slope)
    return _result_saving(A.leaky_relu, A.leaky_relu_from_result, input, "leaky_relu", (slope,),
                          inplace, slope, "slope")


def _elu_family(input, name, alpha, scale, input_scale, inplace):
    static = (float(alpha), float(scale), float(input_scale))
    return _result_saving(A.elu, A.elu_from_result, input, name, static, inplace, float(alpha),
                          "alpha")


def elu(input, alpha=1.0, inplace=False):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""
    return _elu_family(input, "elu", alpha, 1.0, 1.0, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    return _activation(A.softplus, input, "softplus", (float(beta), float(threshold)))


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6``."""
    return _activation(A.hardsigmoid, input, "hardsigmoid", (), inplace)


def hardswish(input, inplace=False):
    """``x * relu6(x + 3) / 6``."""
    return _activation(A.hardswish, input, "hardswish", (), inplace)


def sigmoid(input, *, out=None):
    """``1 / (1 + exp(-x))``; ``out=`` as ``torch.sigmoid``."""
    result = _activation(A.sigmoid, input, "sigmoid")
    return result if out is None else into("sigmoid", result, out)


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
    return _activation(_silu_body, input, "silu", (), inplace)


# ---------------------------------------------------------------------- more element-wise


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """``scale * elu(x, alpha)`` with SELU's fixed ``alpha`` and ``scale``."""
    return _elu_family(input, "selu", _SELU_ALPHA, _SELU_SCALE, 1.0, inplace)


def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0 (the input is divided by it)")
    return _elu_family(input, "celu", alpha, 1.0, 1.0 / float(alpha), inplace)


def _mish_body(x):
    return x * jnp.tanh(jax.nn.softplus(x))


def mish(input, inplace=False):
    """``x * tanh(softplus(x))``."""
    return _activation(_mish_body, input, "mish", (), inplace)


def _logsigmoid_body(x):
    return jax.nn.log_sigmoid(x)


def logsigmoid(input):
    """``log(sigmoid(x))``, computed stably."""
    return _activation(_logsigmoid_body, input, "logsigmoid")


def _softsign_body(x):
    return x / (1 + jnp.abs(x))


def softsign(input):
    """``x / (1 + |x|)``."""
    return _activation(_softsign_body, input, "softsign")


def _tanhshrink_body(x):
    return x - jnp.tanh(x)


def tanhshrink(input):
    """``x - tanh(x)``."""
    return _activation(_tanhshrink_body, input, "tanhshrink")


def _softshrink_body(x, lambd):
    low, high = jnp.asarray(-lambd, x.dtype), jnp.asarray(lambd, x.dtype)
    return jnp.where(x > high, x - high, jnp.where(x < low, x - low, jnp.zeros((), x.dtype)))


def softshrink(input, lambd=0.5):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be greater or equal to 0, but found to be {lambd}")
    return _activation(_softshrink_body, input, "softshrink", (float(lambd),))


def _hardshrink_body(x, lambd):
    keep = (x > jnp.asarray(lambd, x.dtype)) | (x < jnp.asarray(-lambd, x.dtype))
    return jnp.where(keep, x, jnp.zeros((), x.dtype))


def hardshrink(input, lambd=0.5):
    """``x`` where ``|x| > lambd``, else 0."""
    return _activation(_hardshrink_body, input, "hardshrink", (float(lambd),))


def threshold(input, threshold, value, inplace=False):
    """``x`` where ``x > threshold``, else ``value``."""
    x = require_tensor(input, "threshold")
    static = (float(threshold), float(value)) if x.dtype.kind in ("float", "complex") else (
        threshold, value)
    if x.dtype.kind == "complex":
        raise TypeError(f"threshold: expected a real tensor, got {x.dtype}")
    if inplace:
        return apply_inplace(A.threshold, x, (), static)
    return apply(A.threshold, (x,), static)


def _glu_body(x, dim):
    a, b = jnp.split(x, 2, axis=dim)
    return a * jax.nn.sigmoid(b)


def glu(input, dim=-1):
    """``a * sigmoid(b)`` with ``a``, ``b`` the two halves of ``input`` along ``dim``."""
    x = _floating(input, "glu")
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _dim(dim, x.ndim, "glu")
    if x.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {x.shape[d]}")
    return apply(_glu_body, (x,), (d,))


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-input)`` along ``dim``."""
    x = _floating(input if dtype is None else input.to(dtype), "softmin")
    return softmax(-x, dim)


def _prelu_body(x, w):
    if w.size != 1 and x.ndim >= 2:
        w = w.reshape((-1,) + (1,) * (x.ndim - 2))
    elif w.size == 1:
        w = w.reshape(())
    return jnp.where(x > 0, x, w.astype(x.dtype) * x)


def prelu(input, weight):
    """``x`` where positive, else ``weight * x``; ``weight`` one value or one per
    channel (dimension 1)."""
    x = _floating(input, "prelu")
    w = _floating(weight, "prelu")
    channels = x.shape[1] if x.ndim >= 2 else 1
    if w.size != 1 and (w.ndim != 1 or w.shape[0] != channels):
        raise RuntimeError(
            f"prelu: mismatch of parameter numbers and input channel size: weight has "
            f"{w.size} elements, input {x.shape} has {channels} channels"
        )
    return apply(_prelu_body, (x, w))


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: while ``training``, each negative element is multiplied
    by a slope drawn uniformly from ``[lower, upper]`` (arraykit's generator);
    otherwise ``leaky_relu`` with slope ``(lower + upper) / 2``."""
    x = _floating(input, "rrelu")
    if lower > upper:
        raise ValueError(f"rrelu: lower bound {lower} must not exceed upper bound {upper}")
    if not training:
        slope = (float(lower) + float(upper)) / 2
        return _result_saving(A.leaky_relu, A.leaky_relu_from_result, x, "rrelu", (slope,),
                              inplace, slope, "slope")
    from ...random import uniform

    noise = uniform(float(lower), float(upper), x.shape, dtype=x.dtype, device=x.device)
    body = A.rrelu_with_noise_from_result if inplace else A.rrelu_with_noise
    return _activation(body, x, "rrelu", (), inplace, (noise,))


def _gumbel_noise(key, x):
    return -jnp.log(jax.random.exponential(key, x.shape, x.dtype))


def _straight_through(y, dim):
    index = jnp.argmax(y, axis=dim, keepdims=True)
    positions = jax.lax.broadcasted_iota(index.dtype, y.shape, dim)
    hard = (positions == index).astype(y.dtype)
    return hard - jax.lax.stop_gradient(y) + y


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """``softmax((logits + g) / tau)`` with Gumbel(0, 1) noise ``g`` drawn by arraykit's
    generator; ``hard``: the one-hot of its argmax, with the soft sample's gradient
    (straight-through)."""
    from ...random import draw

    x = _floating(logits, "gumbel_softmax")
    d = _dim(dim, x.ndim, "gumbel_softmax")
    gumbels = draw(_gumbel_noise, (x,), (), None, x.device)
    y = softmax((x + gumbels) / tau, d)
    return apply(_straight_through, (y,), (d,)) if hard else y


def _inplace_form(function):
    """PyTorch's ``name_`` form of an activation: ``function(input, ..., inplace=True)``."""

    def inplace(input, *args, **kwargs):
        return function(input, *args, **kwargs, inplace=True)

    inplace.__name__ = inplace.__qualname__ = function.__name__ + "_"
    inplace.__doc__ = f"``{function.__name__}(input, ..., inplace=True)``: written into ``input``."
    return inplace


relu_ = _inplace_form(relu)
elu_ = _inplace_form(elu)
leaky_relu_ = _inplace_form(leaky_relu)
hardtanh_ = _inplace_form(hardtanh)
threshold_ = _inplace_form(threshold)
rrelu_ = _inplace_form(rrelu)
celu_ = _inplace_form(celu)
selu_ = _inplace_form(selu)
