"""``arraykit.nn.functional``: activations and losses with PyTorch's signatures.

Most are one kernel each (a pure JAX function launched on the operands), so their
gradients are JAX's VJP of that kernel. ``softmax``, ``log_softmax``,
``logsumexp`` and ``cross_entropy`` have hand-written gradients through
:class:`arraykit.autograd.Function`; cross-entropy is one fused forward kernel and
one fused backward kernel (see :mod:`arraykit.nn.loss_kernels`), and
``linear_cross_entropy`` fuses the output projection into it without the logits
(see :mod:`arraykit.nn.linear_ce_kernels`). ``scaled_dot_product_attention`` is
one kernel (see :mod:`arraykit.nn.attention_kernels`).
"""

from __future__ import annotations

import math
import operator

import jax
import jax.numpy as jnp
import numpy as np

from ..autograd.function import Function
from ..autograd.mode import is_grad_enabled
from ..api.autocasting import coerce
from ..core import deferred_checks
from ..core import dtypes as D
from ..core import layout as L
from ..core import precision as P
from ..kernels import derivatives as DV
from ..kernels.bodies import at_least_float32
from ..kernels.launch import apply
from ..tensors.tensor_type import channels_last, is_traced, require_tensor
from . import activations as A
from . import attention_kernels as AK
from . import linear_ce_kernels as LCE
from . import loss_kernels as K

__all__ = [
    "softmax", "log_softmax", "logsumexp", "nll_loss", "cross_entropy",
    "binary_cross_entropy_with_logits", "mse_loss", "relu", "relu6", "hardtanh", "leaky_relu",
    "elu", "softplus", "hardsigmoid", "hardswish", "sigmoid", "gelu", "silu", "linear", "dropout",
    "conv2d", "embedding", "layer_norm", "scaled_dot_product_attention", "linear_cross_entropy",
]

_REDUCTIONS = ("none", "mean", "sum")


def _dim(dim, ndim, name):
    if dim is None:
        raise TypeError(f"{name}: dim must be given (an int)")
    return L.normalize_dim(operator.index(dim), ndim)


def _reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction!r} is not a valid value for reduction; expected one of {_REDUCTIONS}")
    return reduction


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


def _floating(x, name):
    require_tensor(x, name)
    if x.dtype.kind not in ("float", "complex"):
        raise TypeError(f"{name}: expected a floating-point tensor, got {x.dtype}")
    return x


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


# ---------------------------------------------------------------------- cross-entropy


class _CrossEntropy(Function):
    @staticmethod
    def forward(ctx, x, target, weight, options):
        operands = (x, target) if weight is None else (x, target, weight)
        loss, lse = apply(_ce_forward, operands, (options,), multiple=True)
        ctx.save_for_backward(x, target, weight, lse)
        ctx.options = options
        ctx.mark_non_differentiable(lse)
        return loss

    @staticmethod
    def backward(ctx, grad):
        x, target, weight, lse = ctx.saved_tensors
        if is_grad_enabled() and x.requires_grad:
            # create_graph: the saved log-sum-exp is a constant; recompute it as a recorded
            # function of x so that the gradient can be differentiated again
            lse = apply(_ce_lse, (x,))
        operands = (x, target, lse, grad) if weight is None else (x, target, weight, lse, grad)
        return apply(_ce_backward, operands, (ctx.options,)), None, None, None


def _ce_lse(x):
    return K.row_logsumexp(x)


def _ce_forward(x, target, *rest):
    *weight, options = rest
    return K.cross_entropy_forward(x, target, weight[0] if weight else None, options)


def _ce_backward(x, target, *rest):
    *weight, lse, grad, options = rest
    return K.cross_entropy_backward(x, target, weight[0] if weight else None, lse, grad, options)


def _check_targets(x, target, by_index, ignore_index, name):
    """Shape and dtype of ``target`` against ``x``; class indices in range (when concrete)."""
    batch = (x.shape[0],) + x.shape[2:]
    if not by_index:
        if target.shape != x.shape:
            raise ValueError(
                f"{name}: probability targets must have the input's shape {x.shape}, got {target.shape}"
            )
        return
    if target.dtype.kind not in ("int", "uint"):
        raise TypeError(f"{name}: class-index targets must be integers, got {target.dtype}")
    if target.shape != batch:
        raise ValueError(
            f"{name}: expected target of shape {batch} for input of shape {x.shape}, got {target.shape}"
        )
    _check_class_indices(target, x.shape[1], ignore_index, name)


def _check_class_indices(target, classes, ignore_index, name):
    """Every class index in ``[0, classes)`` or ``ignore_index`` (when concrete)."""
    if is_traced(target) or not target.size:
        return
    _check_indices(target, classes, ignore_index, lambda bad: IndexError(
        f"{name}: target {bad} is out of bounds for {classes} classes"))


def _first_outside(values, size, ignore):
    """``[found, value]``: whether an element of ``values`` lies outside ``[0, size)``
    other than ``ignore`` (None: no exception), and the first such element."""
    flat = values.reshape(-1)
    bad = (flat < 0) | (flat >= size)
    if ignore is not None:
        bad &= flat != ignore
    return jnp.stack([jnp.any(bad).astype(flat.dtype), flat[jnp.argmax(bad)]])


def _check_indices(indices, size, ignore, error):
    """Raise ``error(value)`` for an element of the concrete ``indices`` outside
    ``[0, size)`` (``ignore`` excepted, unless None): at once on the host, or, on a device that defers
    its checks, from a kernel read where the host next reads values
    (:mod:`arraykit.core.deferred_checks`)."""
    if deferred_checks.deferring(indices._storage.device):
        found = apply(_first_outside, (indices,), (size, ignore))._storage.buffer
        deferred_checks.defer(found, lambda host: error(int(host[1])) if host[0] else None)
        return
    values = indices._values()  # a snapshot: numpy() would move the storage to NumPy memory
    outside = (values < 0) | (values >= size)
    bad = values[outside if ignore is None else outside & (values != ignore)]
    if bad.size:
        raise error(int(bad[0]))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross-entropy between logits ``input`` (N, C) or (N, C, d1, ...) (or (C,)) and
    class indices or class probabilities ``target``, as ``torch.nn.functional.cross_entropy``.

    ``weight`` rescales classes; ``ignore_index`` drops targets (class indices only);
    ``reduction='mean'`` divides by the summed weights of the kept targets (PyTorch's
    weighted mean); ``label_smoothing`` mixes the target with the uniform distribution.
    """
    if size_average is not None or reduce is not None:
        raise TypeError("cross_entropy: size_average and reduce are deprecated; use reduction=")
    x = _floating(input, "cross_entropy")
    require_tensor(target, "cross_entropy")
    x, target, weight = coerce("cross_entropy", x, target, weight)
    unbatched = x.ndim == 1
    if unbatched:
        x = x.reshape(1, -1)
        target = target.reshape(1) if target.ndim == 0 else target.reshape(1, -1)
    by_index = target.dtype.kind in ("int", "uint", "bool")
    _check_targets(x, target, by_index, ignore_index, "cross_entropy")
    if weight is not None and weight.shape != (x.shape[1],):
        raise ValueError(
            f"cross_entropy: weight must have shape ({x.shape[1]},), got {weight.shape}"
        )
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    options = (by_index, weight is not None, int(ignore_index), float(label_smoothing),
               _reduction(reduction))
    loss = _CrossEntropy.apply(x, target, weight, options)
    return loss.reshape(()) if unbatched and reduction == "none" else loss


def _nll_body(logp, target, *rest):
    *weight, (ignore_index, reduction) = rest
    logp = K._rows_last(logp)
    classes = logp.shape[-1]
    w = weight[0].astype(logp.dtype) if weight else jnp.ones((classes,), logp.dtype)
    valid = target != ignore_index
    safe = jnp.where(valid, target, 0)
    w_target = jnp.where(valid, w[safe], 0)
    picked = jnp.take_along_axis(logp, safe[..., None], axis=-1)[..., 0]
    rows = -w_target * picked
    if reduction == "none":
        return rows
    if reduction == "sum":
        return jnp.sum(rows)
    return jnp.sum(rows) / jnp.sum(w_target)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of class indices ``target`` under log-probabilities ``input``."""
    if size_average is not None or reduce is not None:
        raise TypeError("nll_loss: size_average and reduce are deprecated; use reduction=")
    x = _floating(input, "nll_loss")
    require_tensor(target, "nll_loss")
    x, weight = coerce("nll_loss", x, weight)
    if x.ndim == 1:
        x, target = x.reshape(1, -1), target.reshape(1)
    _check_targets(x, target, True, ignore_index, "nll_loss")
    operands = (x, target) if weight is None else (x, target, weight)
    return apply(_nll_body, operands, ((int(ignore_index), _reduction(reduction)),))


def _reduced(rows, reduction):
    if reduction == "none":
        return rows
    return jnp.sum(rows) if reduction == "sum" else jnp.mean(rows)


def _bce_logits_body(x, y, *rest):
    *extra, (has_weight, has_pos_weight, reduction) = rest
    extra = iter(extra)
    weight = next(extra) if has_weight else None
    pos_weight = next(extra) if has_pos_weight else None
    log_sig = jax.nn.log_sigmoid(x)
    log_one_minus = jax.nn.log_sigmoid(-x)
    if pos_weight is not None:
        rows = -(pos_weight * y * log_sig + (1 - y) * log_one_minus)
    else:
        rows = -(y * log_sig + (1 - y) * log_one_minus)
    if weight is not None:
        rows = rows * weight
    return _reduced(rows, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Binary cross-entropy of ``sigmoid(input)`` against ``target``, computed stably."""
    if size_average is not None or reduce is not None:
        raise TypeError("binary_cross_entropy_with_logits: use reduction=")
    x = _floating(input, "binary_cross_entropy_with_logits")
    x, target, weight, pos_weight = coerce(
        "binary_cross_entropy_with_logits", x, target, weight, pos_weight)
    if target.shape != x.shape:
        raise ValueError(
            f"binary_cross_entropy_with_logits: target size {target.shape} must be the same as "
            f"input size {x.shape}"
        )
    operands = [x, target] + [t for t in (weight, pos_weight) if t is not None]
    options = (weight is not None, pos_weight is not None, _reduction(reduction))
    return apply(_bce_logits_body, tuple(operands), (options,))


def _mse_body(x, y, reduction):
    return _reduced(jnp.square(x - y), reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Mean squared error (or its sum, or the elementwise squares)."""
    if size_average is not None or reduce is not None:
        raise TypeError("mse_loss: use reduction=")
    x, target = coerce("mse_loss", _floating(input, "mse_loss"), target)
    if target.shape != x.shape:
        shape = L.broadcast_shapes(x.shape, target.shape)
        x, target = x.broadcast_to(shape), target.broadcast_to(shape)
    return apply(_mse_body, (x, target), (_reduction(reduction),))


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


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    from ..api.matrix_products import matmul

    input, weight, bias = coerce("linear", input, weight, bias)
    out = matmul(input, weight.mT)
    return out if bias is None else out + bias


def _dropout_mask(key, x, keep):
    mask = jax.random.bernoulli(key, keep, x.shape)
    return jnp.where(mask, x / keep, jnp.zeros((), x.dtype))


def _dropout_body(x, key, keep):
    return _dropout_mask(jax.random.wrap_key_data(key), x, keep)


def dropout(input, p=0.5, training=True, inplace=False, *, key=None, generator=None):
    """Zero elements with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    The mask comes from ``key``, a JAX PRNG key (``jax.random.key(seed)``), when
    given; otherwise from ``generator`` (an :class:`arraykit.Generator`; default:
    the default generator of the input's device), whose state advances in place.
    """
    x = _floating(input, "dropout")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        out = x * 0
    elif key is None:
        from ..random import draw

        out = draw(_dropout_mask, (x,), (1.0 - float(p),), generator,
                   x.device if generator is None else None)
    else:
        from ..api.creation import asarray

        data = asarray(np.asarray(jax.random.key_data(key)), device=x.device)
        out = apply(_dropout_body, (x, data), (1.0 - float(p),))
    return input.copy_(out) if inplace else out


# ---------------------------------------------------------------------- layers


def _pair(value, name):
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise ValueError(f"conv2d: {name} must be an int or a pair of ints, got {value!r}")
    return value


def _conv2d_body(x, w, *rest):
    *bias, (stride, padding, dilation, groups, channels_last, precision) = rest
    spec = ("NHWC", "OIHW", "NHWC") if channels_last else ("NCHW", "OIHW", "NCHW")
    dtype = jnp.result_type(x, w)
    out = jax.lax.conv_general_dilated(
        x.astype(dtype), w.astype(dtype), stride, padding, rhs_dilation=dilation,
        dimension_numbers=spec, feature_group_count=groups, precision=precision,
    )
    if bias:
        out = out + (bias[0] if channels_last else bias[0][:, None, None]).astype(dtype)
    return out


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of ``input`` (N, C, H, W) or (C, H, W) with
    ``weight`` (O, C / groups, kH, kW), as ``torch.nn.functional.conv2d``.

    ``padding`` is an int, a pair, ``'valid'`` (none) or ``'same'`` (stride 1 only).
    A channels-last input (``x.is_contiguous(memory_format=arraykit.channels_last)``)
    is read as NHWC in place (no transposing copy) and gives a channels-last result.
    """
    x = _floating(input, "conv2d")
    require_tensor(weight, "conv2d")
    x, weight, bias = coerce("conv2d", x, weight, bias)
    unbatched = x.ndim == 3
    if unbatched:
        x = x.unsqueeze(0)
    if x.ndim != 4 or weight.ndim != 4:
        raise ValueError(
            f"conv2d: expected a 3-D or 4-D input and a 4-D weight, got input shape "
            f"{input.shape} and weight shape {weight.shape}"
        )
    if groups < 1 or weight.shape[0] % groups:
        raise ValueError(
            f"conv2d: groups={groups} must be positive and divide the {weight.shape[0]} output channels"
        )
    if x.shape[1] != weight.shape[1] * groups:
        raise ValueError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {weight.shape[1] * groups} channels, but got "
            f"{x.shape[1]} channels instead"
        )
    if bias is not None and bias.shape != (weight.shape[0],):
        raise ValueError(f"conv2d: bias must have shape ({weight.shape[0]},), got {bias.shape}")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    if padding == "valid":
        pads = ((0, 0), (0, 0))
    elif padding == "same":
        if stride != (1, 1):
            raise ValueError("padding='same' is not supported for strided convolutions")
        totals = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
        pads = tuple((t // 2, t - t // 2) for t in totals)
    elif isinstance(padding, str):
        raise ValueError(f"conv2d: invalid padding string {padding!r}, should be one of 'valid', 'same'")
    else:
        pads = tuple((p, p) for p in _pair(padding, "padding"))
    nhwc = x.shape[1] > 1 and x.is_contiguous(memory_format=channels_last) and not x.is_contiguous()
    operands = (x.permute(0, 2, 3, 1) if nhwc else x, weight)
    if bias is not None:
        operands += (bias,)
    precision = P.dot_precision(D.promote(x._dtype, weight._dtype).np, x._storage.device, "conv")
    out = apply(_conv2d_body, operands, ((stride, pads, dilation, groups, nhwc, precision),))
    if nhwc:
        out = out.permute(0, 3, 1, 2)
    return out.squeeze(0) if unbatched else out


def _embedding_body(w, idx, padding_idx):
    if padding_idx is not None:  # that row gets no gradient (PyTorch)
        row = jnp.arange(w.shape[0])[:, None] == padding_idx
        w = jnp.where(row, jax.lax.stop_gradient(w), w)
    return jnp.take(w, idx, axis=0, mode="fill")


def embedding(input, weight, padding_idx=None):
    """Rows of ``weight`` (num_embeddings, dim) at the integer indices ``input``;
    the row ``padding_idx`` receives no gradient."""
    require_tensor(input, "embedding")
    require_tensor(weight, "embedding")
    if input.dtype.kind not in ("int", "uint"):
        raise TypeError(f"embedding: indices must be integers, got {input.dtype}")
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise ValueError(f"embedding: padding_idx {padding_idx} must be within num_embeddings {rows}")
        padding_idx %= rows
    if not is_traced(input) and input.size:
        _check_indices(input, rows, None, lambda bad: IndexError(
            f"embedding: index {bad} is out of range for {rows} embeddings"))
    return apply(_embedding_body, (weight, input), (padding_idx,))


def _layer_norm_body(x, *rest):
    *affine, (dims, eps, has_weight) = rest
    compute = at_least_float32(x.dtype)
    y = x.astype(compute)
    mean = jnp.mean(y, axis=dims, keepdims=True)
    var = jnp.mean(jnp.square(y - mean), axis=dims, keepdims=True)
    y = (y - mean) * jax.lax.rsqrt(var + eps)
    affine = iter(affine)
    if has_weight:
        y = y * next(affine)
    for b in affine:
        y = y + b
    return y.astype(x.dtype)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dimensions (mean 0, biased
    variance 1), then scale by ``weight`` and shift by ``bias``."""
    x = _floating(input, "layer_norm")
    x, weight, bias = coerce("layer_norm", x, weight, bias)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if len(shape) > x.ndim or x.shape[x.ndim - len(shape):] != shape:
        raise ValueError(
            f"layer_norm: normalized_shape {list(shape)} does not match the trailing dimensions "
            f"of the input of shape {x.shape}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.shape != shape:
            raise ValueError(f"layer_norm: {name} must have shape {shape}, got {t.shape}")
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    operands = (x,) + tuple(t for t in (weight, bias) if t is not None)
    return apply(_layer_norm_body, operands, ((dims, float(eps), weight is not None),))


# ---------------------------------------------------------------------- attention


def _scaled_dot_product_attention(q, k, v, *rest):
    *mask, options = rest
    return AK.attention(q, k, v, mask[0] if mask else None, options)


def _scaled_dot_product_attention_math(q, k, v, *rest):
    *mask, options = rest
    return AK.attention_math(q, k, v, mask[0] if mask else None, None, options)


def _scaled_dot_product_attention_dropout(key, q, k, v, *rest):
    *mask, options = rest
    return AK.attention_math(q, k, v, mask[0] if mask else None, key, options)


def _attention_shapes(q, k, v, enable_gqa):
    """(query heads per key/value head, batch shape of the output); errors as PyTorch's."""
    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise ValueError(
            "scaled_dot_product_attention: query, key and value need at least 2 dimensions "
            f"(..., L or S, E), got shapes {q.shape}, {k.shape} and {v.shape}"
        )
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(
            f"scaled_dot_product_attention: query's last dimension {q.shape[-1]} must equal "
            f"key's {k.shape[-1]} (query {q.shape}, key {k.shape})"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"scaled_dot_product_attention: key and value must have the same length S, got "
            f"key {k.shape} and value {v.shape}"
        )
    kb, vb = k.shape[:-2], v.shape[:-2]
    groups = 1
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        hq, hk = q.shape[-3], k.shape[-3]
        if v.ndim < 3 or v.shape[-3] != hk or hq % hk:
            raise ValueError(
                "scaled_dot_product_attention: enable_gqa needs the query heads (dimension -3) "
                "to be a multiple of the key/value heads, and key and value to have as many "
                f"heads, got query {q.shape}, key {k.shape}, value {v.shape}"
            )
        groups = hq // hk
        kb, vb = kb[:-1] + (hq,), vb[:-1] + (hq,)
    try:
        batch = L.broadcast_shapes(q.shape[:-2], kb, vb)
    except ValueError as e:
        raise ValueError(
            f"scaled_dot_product_attention: the batch dimensions of query {q.shape}, key "
            f"{k.shape} and value {v.shape} do not broadcast ({e}); for fewer key/value heads "
            "than query heads pass enable_gqa=True"
        ) from None
    return groups, batch


def _fused_attention_fits(q, k, v, mask):
    """Whether ``jax.nn.dot_product_attention`` takes these operands as they are (its
    softmax runs in float32: float64 inputs take the plain form)."""
    rank = q.ndim
    if q.dtype.np.itemsize > 4:
        return False
    if rank < 3 or k.ndim != rank or v.ndim != rank or v.shape[-1] != q.shape[-1]:
        return False
    if not q.shape[:-3] == k.shape[:-3] == v.shape[:-3] or k.shape[-3] != v.shape[-3]:
        return False
    if q.shape[-3] % k.shape[-3]:
        return False
    return mask is None or mask.ndim < 3 or (mask.ndim <= rank and mask.shape[-3] in (1, q.shape[-3]))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    """``softmax(query @ key.mT * scale + mask) @ value`` as
    ``torch.nn.functional.scaled_dot_product_attention``.

    query ``(..., Hq, L, E)``, key ``(..., H, S, E)``, value ``(..., H, S, Ev)``.
    ``attn_mask`` is boolean (True takes part) or floating (added to the scores),
    broadcastable to ``(..., Hq, L, S)``; ``is_causal`` masks column ``j > i`` of row
    ``i`` (not together with ``attn_mask``); ``scale`` defaults to ``1 / sqrt(E)``;
    ``dropout_p`` drops attention weights with masks from the default generator of
    the query's device (rescaling the rest by ``1 / (1 - p)``); ``enable_gqa`` lets
    ``Hq`` be a multiple of ``H``, query head ``n`` reading key/value head
    ``n // (Hq // H)``. A row with every score masked gives zeros. Lowers to
    ``jax.nn.dot_product_attention`` without dropout (on a GPU, cuDNN's fused kernel
    for 16-bit inputs without a mask and with ``L == S``, when cuDNN takes the shapes;
    JAX's XLA form for the rest), and to plain XLA for dropout, float64, ``Ev != E``
    and batch dimensions that broadcast.
    """
    q = _floating(query, "scaled_dot_product_attention")
    k = _floating(key, "scaled_dot_product_attention")
    v = _floating(value, "scaled_dot_product_attention")
    q, k, v = coerce("attention", q, k, v)
    if not q.dtype == k.dtype == v.dtype:
        raise ValueError(
            "scaled_dot_product_attention: expected query, key and value to have the same dtype, "
            f"got query {q.dtype}, key {k.dtype} and value {v.dtype}"
        )
    groups, batch = _attention_shapes(q, k, v, enable_gqa)
    scores_shape = batch + (q.shape[-2], k.shape[-2])
    kind = None
    if attn_mask is not None:
        require_tensor(attn_mask, "scaled_dot_product_attention")
        if is_causal:
            raise RuntimeError(
                "scaled_dot_product_attention: attn_mask should not be given together with "
                "is_causal=True (PyTorch's reference backend refuses it too); include the "
                "causal mask in attn_mask instead"
            )
        if attn_mask.dtype.kind == "bool":
            kind = "bool"
        elif attn_mask.dtype.kind == "float":
            kind = "float"
        else:
            raise TypeError(
                f"scaled_dot_product_attention: attn_mask must be boolean or floating, got "
                f"{attn_mask.dtype}"
            )
        if L.broadcast_shapes(attn_mask.shape, scores_shape) != scores_shape:
            raise ValueError(
                f"scaled_dot_product_attention: attn_mask of shape {attn_mask.shape} does not "
                f"broadcast to the attention weights' shape {scores_shape}"
            )
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1], got {dropout_p}")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    options = (kind, bool(is_causal), scale, groups, 1.0 - float(dropout_p))
    operands = (q, k, v) if attn_mask is None else (q, k, v, attn_mask)
    if dropout_p > 0:
        from ..random import draw

        return draw(_scaled_dot_product_attention_dropout, operands, (options,), None, q.device)
    if _fused_attention_fits(q, k, v, attn_mask):
        # cuDNN: 16-bit, no mask, and L == S (where top-left and bottom-right causal agree)
        cudnn = (q.device.platform == "gpu" and kind is None and q.shape[-2] == k.shape[-2]
                 and q.dtype.np in (jnp.bfloat16, jnp.float16))
        return apply(_scaled_dot_product_attention, operands,
                     (options + ("cudnn" if cudnn else None,),))
    return apply(_scaled_dot_product_attention_math, operands, (options,))


# ---------------------------------------------------------------------- linear cross-entropy

_LCE_BLOCK_ELEMENTS = {"gpu": 1 << 24}
"""Elements of one (tokens x vocabulary) block of logits, per platform (others: the CPU's)."""
_LCE_CPU_BLOCK_ELEMENTS = 1 << 21
_LCE_TOKENS = 8192
"""Most tokens in one chunk."""


def _lce_chunks(n, vocab, platform):
    """(tokens, vocabulary rows) per chunk: a block of logits of about the platform's size."""
    tokens = min(n, _LCE_TOKENS)
    block = _LCE_BLOCK_ELEMENTS.get(platform, _LCE_CPU_BLOCK_ELEMENTS)
    rows = max(128, block // tokens // 128 * 128)
    return tokens, min(vocab, rows)


def _lce_forward(x, w, target, *rest):
    *bias, options = rest
    return LCE.forward(x, w, bias[0] if bias else None, target, options)


def _lce_backward(x, w, target, lse, grad, *rest):
    *bias, options = rest
    dx, dw, db = LCE.backward(x, w, bias[0] if bias else None, target, lse, grad, options)
    return (dx, dw) if db is None else (dx, dw, db)


def _lce_backward_recomputed(x, w, target, grad, *rest):
    *bias, options = rest
    b = bias[0] if bias else None
    lse = LCE.forward(x, w, b, target, options)[1]
    dx, dw, db = LCE.backward(x, w, b, target, lse, grad, options)
    return (dx, dw) if db is None else (dx, dw, db)


class _LinearCrossEntropy(Function):
    @staticmethod
    def forward(ctx, x, w, target, b, options):
        operands = (x, w, target) if b is None else (x, w, target, b)
        loss, lse = apply(_lce_forward, operands, (options,), multiple=True)
        ctx.save_for_backward(x, w, target, b, lse)
        ctx.options = options
        ctx.mark_non_differentiable(lse)
        return loss

    @staticmethod
    def backward(ctx, grad):
        x, w, target, b, lse = ctx.saved_tensors
        bias = () if b is None else (b,)
        if is_grad_enabled() and any(t.requires_grad for t in (x, w, *bias)):
            # create_graph: the gradient as a recorded function of x, w and b, the
            # log-sum-exp recomputed from them (the saved one is a constant)
            grads = apply(_lce_backward_recomputed, (x, w, target, grad, *bias), (ctx.options,),
                          multiple=True)
        else:
            grads = apply(_lce_backward, (x, w, target, lse, grad, *bias), (ctx.options,),
                          multiple=True)
        db = grads[2] if b is not None else None
        return grads[0], grads[1], None, db, None


def linear_cross_entropy(input, weight, target, bias=None, ignore_index=-100, reduction="mean",
                         label_smoothing=0.0):
    """``cross_entropy(linear(input, weight, bias), target, ...)`` without the N x V logits.

    ``input`` (N, d) or (B, T, d), ``weight`` (V, d), ``bias`` (V,), ``target`` the class
    indices (N,) or (B, T); ``ignore_index``, ``reduction`` and ``label_smoothing`` as
    :func:`cross_entropy`. Tokens and vocabulary are processed in chunks: the forward
    carries each row's log-sum-exp across vocabulary chunks, the backward recomputes
    each chunk's logits for the gradients of ``input``, ``weight`` and ``bias`` (see
    :mod:`arraykit.nn.linear_ce_kernels`). Logits are accumulated in float32 for
    16-bit inputs; the loss has the input's dtype.
    """
    x = _floating(input, "linear_cross_entropy")
    w = _floating(weight, "linear_cross_entropy")
    require_tensor(target, "linear_cross_entropy")
    x, w, bias = coerce("linear_cross_entropy", x, w, bias)
    if x.ndim < 2 or w.ndim != 2 or x.shape[-1] != w.shape[1]:
        raise ValueError(
            "linear_cross_entropy: expected input (..., d) with at least 2 dimensions and weight "
            f"(V, d), got input {x.shape} and weight {w.shape}"
        )
    if bias is not None and bias.shape != (w.shape[0],):
        raise ValueError(f"linear_cross_entropy: bias must have shape ({w.shape[0]},), got {bias.shape}")
    if x.dtype != w.dtype or (bias is not None and bias.dtype != x.dtype):
        raise TypeError(
            "linear_cross_entropy: input, weight and bias must have one dtype, got "
            f"{x.dtype}, {w.dtype}" + ("" if bias is None else f" and {bias.dtype}")
        )
    if target.dtype.kind not in ("int", "uint"):
        raise TypeError(f"linear_cross_entropy: class-index targets must be integers, got {target.dtype}")
    if target.shape != x.shape[:-1]:
        raise ValueError(
            f"linear_cross_entropy: expected target of shape {x.shape[:-1]} for input of shape "
            f"{x.shape}, got {target.shape}"
        )
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"linear_cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    reduction = _reduction(reduction)
    rows = x.reshape(-1, x.shape[-1])
    flat = target.reshape(-1)
    _check_class_indices(flat, w.shape[0], ignore_index, "linear_cross_entropy")
    n = rows.shape[0]
    if n == 0:  # nothing to chunk: the unfused form gives PyTorch's empty results
        loss = cross_entropy(linear(rows, w, bias), flat, ignore_index=ignore_index,
                             reduction=reduction, label_smoothing=label_smoothing)
        return loss.reshape(target.shape) if reduction == "none" else loss
    tokens, vocab = _lce_chunks(n, w.shape[0], x.device.platform)
    options = (bias is not None, int(ignore_index), float(label_smoothing), reduction, tokens, vocab)
    loss = _LinearCrossEntropy.apply(rows, w, flat, bias, options)
    return loss.reshape(target.shape) if reduction == "none" else loss
