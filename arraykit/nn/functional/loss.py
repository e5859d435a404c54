"""Losses: cross-entropy (fused kernels, hand-written gradient), NLL, BCE with logits, MSE and the fused linear cross-entropy."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ...api.autocasting import coerce
from ...autograd.function import Function
from ...autograd.mode import is_grad_enabled
from ...core import layout as L
from ...kernels.launch import apply
from ...tensors.tensor_type import is_traced, require_tensor
from .. import linear_ce_kernels as LCE
from .. import loss_kernels as K
from .arguments import _check_indices, _floating, _reduction
from .dense import linear

__all__ = ["nll_loss", "cross_entropy", "binary_cross_entropy_with_logits", "mse_loss", "linear_cross_entropy"]


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
