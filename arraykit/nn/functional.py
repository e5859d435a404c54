"""``arraykit.nn.functional``: activations and losses with PyTorch's signatures.

Most are one kernel each (a pure JAX function launched on the operands), so their
gradients are JAX's VJP of that kernel. ``softmax``, ``log_softmax``,
``logsumexp`` and ``cross_entropy`` have hand-written gradients through
:class:`arraykit.autograd.Function`; cross-entropy is one fused forward kernel and
one fused backward kernel (see :mod:`arraykit.nn.loss_kernels`).
"""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from ..autograd.function import Function
from ..autograd.mode import is_grad_enabled
from ..core import layout as L
from ..kernels.launch import apply
from ..tensors.tensor_type import channels_last, is_traced, require_tensor
from . import loss_kernels as K

__all__ = [
    "softmax", "log_softmax", "logsumexp", "nll_loss", "cross_entropy",
    "binary_cross_entropy_with_logits", "mse_loss", "relu", "gelu", "silu", "linear", "dropout",
    "conv2d", "embedding", "layer_norm",
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
    return _LogSoftmax.apply(x, _dim(dim, x.ndim, "log_softmax"))


def softmax(input, dim=None, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably."""
    x = _floating(input if dtype is None else input.to(dtype), "softmax")
    return _Softmax.apply(x, _dim(dim, x.ndim, "softmax"))


def logsumexp(input, dim, keepdim=False):
    """``log(sum(exp(input)))`` over ``dim`` (an int or a tuple), computed stably."""
    x = _floating(input, "logsumexp")
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
    if is_traced(target) or not target.size:
        return
    values = target._values()  # a snapshot: numpy() would move the storage to NumPy memory
    bad = values[((values < 0) | (values >= x.shape[1])) & (values != ignore_index)]
    if bad.size:
        raise IndexError(f"{name}: target {int(bad[0])} is out of bounds for {x.shape[1]} classes")


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
    x = _floating(input, "mse_loss")
    if target.shape != x.shape:
        shape = L.broadcast_shapes(x.shape, target.shape)
        x, target = x.broadcast_to(shape), target.broadcast_to(shape)
    return apply(_mse_body, (x, target), (_reduction(reduction),))


def _relu_body(x):
    return jnp.maximum(x, 0)


def relu(input, inplace=False):
    """``max(x, 0)``."""
    out = apply(_relu_body, (require_tensor(input, "relu"),))
    return input.copy_(out) if inplace else out


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
    *bias, (stride, padding, dilation, groups, channels_last) = rest
    spec = ("NHWC", "OIHW", "NHWC") if channels_last else ("NCHW", "OIHW", "NCHW")
    dtype = jnp.result_type(x, w)
    out = jax.lax.conv_general_dilated(
        x.astype(dtype), w.astype(dtype), stride, padding, rhs_dilation=dilation,
        dimension_numbers=spec, feature_group_count=groups, precision=jax.lax.Precision.HIGHEST,
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
    out = apply(_conv2d_body, operands, ((stride, pads, dilation, groups, nhwc),))
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
        values = input._values()  # a snapshot (numpy() shares memory)
        bad = values[(values < 0) | (values >= rows)]
        if bad.size:
            raise IndexError(f"embedding: index {int(bad[0])} is out of range for {rows} embeddings")
    return apply(_embedding_body, (weight, input), (padding_idx,))


def _layer_norm_body(x, *rest):
    *affine, (dims, eps, has_weight) = rest
    compute = jnp.promote_types(x.dtype, jnp.float32)
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
