"""Losses: cross-entropy (fused kernels, hand-written gradient), NLL, BCE with logits, MSE and the fused linear cross-entropy."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ...api.autocasting import coerce
from ...autograd.function import Function
from ...autograd.mode import is_grad_enabled
from ...core import deferred_checks
from ...core import layout as L
from ...kernels import derivatives as DV
from ...kernels.launch import apply
from ...tensors.tensor_type import is_traced, require_tensor
from .. import linear_ce_kernels as LCE
from .. import loss_kernels as K
from . import distance as D
from .arguments import _check_indices, _floating, _reduction
from .dense import linear

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cosine_embedding_loss",
    "cross_entropy",
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "linear_cross_entropy",
    "margin_ranking_loss",
    "mse_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "nll_loss",
    "poisson_nll_loss",
    "smooth_l1_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]


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
    reduction = _legacy_reduction(size_average, reduce, reduction)
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
    reduction = _legacy_reduction(size_average, reduce, reduction)
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
    reduction = _legacy_reduction(size_average, reduce, reduction)
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


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (or its sum, or the elementwise squares); ``weight`` (the
    input's shape) scales each term, and the weighted mean divides by its sum."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        return _weighted_pointwise(_squared_error, "mse_loss", input, target, weight, reduction)
    x, target = _broadcast_pair("mse_loss", input, target)
    return apply(_mse_body, (x, target), (reduction,))



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


# ---------------------------------------------------------------------- legacy options, checks


def _legacy_reduction(size_average, reduce, reduction):
    """``reduction``, or PyTorch's reading of the deprecated ``size_average``/``reduce``
    (either given: ``mean`` if both are true or None, ``sum`` if only ``reduce``, else ``none``)."""
    if size_average is None and reduce is None:
        return _reduction(reduction)
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='"
                  "...' instead.", UserWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def _broadcast_pair(name, input, target):
    """``input`` and ``target`` coerced to one dtype and broadcast (PyTorch warns when
    their shapes differ)."""
    x, target = coerce(name, _floating(input, name), require_tensor(target, name))
    if target.shape != x.shape:
        warnings.warn(
            f"{name}: using a target size ({target.shape}) that is different to the input size "
            f"({x.shape}); they are broadcast, which is likely not what you want",
            UserWarning, stacklevel=3)
        shape = L.broadcast_shapes(x.shape, target.shape)
        x, target = x.broadcast_to(shape), target.broadcast_to(shape)
    return x, target


def _same_shape(name, x, target):
    if target.shape != x.shape:
        raise ValueError(
            f"{name}: using a target size ({target.shape}) that is different to the input size "
            f"({x.shape}) is not supported; please ensure they have the same size"
        )


def _outside(values, low, high):
    flat = values.reshape(-1)
    bad = (flat < low) | (flat > high) | jnp.isnan(flat)
    return jnp.stack([jnp.any(bad).astype(flat.dtype), flat[jnp.argmax(bad)]])


def _check_range(x, low, high, error):
    """Raise ``error(value)`` for an element of the concrete ``x`` outside ``[low, high]``:
    at once on the host, or where the host next reads values on a deferring device."""
    if is_traced(x) or not x.size:
        return
    if deferred_checks.deferring(x._storage.device):
        found = apply(_outside, (x,), (low, high))._storage.buffer
        deferred_checks.defer(found, lambda host: error(float(host[1])) if host[0] else None)
        return
    values = x._values()
    bad = values[(values < low) | (values > high) | np.isnan(values)]
    if bad.size:
        raise error(float(bad[0]))


# ---------------------------------------------------------------------- pointwise losses


def _pointwise_kernel(*args):
    """``rows(*arrays, *static)`` reduced: ``args`` are the arrays, then ``rows``,
    ``static`` and the reduction."""
    *arrays, rows, static, reduction = args
    return _reduced(rows(*arrays, *static), reduction)


def _pointwise(rows, operands, static, reduction):
    return apply(_pointwise_kernel, tuple(operands), (rows, tuple(static), reduction))


def _weighted_kernel(x, y, w, rows, static, reduction):
    terms = rows(x, y, *static) * w
    if reduction == "mean" and rows is not _huber_rows:
        return jnp.sum(terms) / jnp.sum(w)
    return _reduced(terms, reduction)


def _weighted_pointwise(rows, name, input, target, weight, reduction, static=()):
    """A pointwise loss with a ``weight`` of the input's shape (PyTorch's weighted forms:
    the weighted mean of l1/mse divides by ``sum(weight)``, huber's by the count)."""
    x, target = _broadcast_pair(name, input, target)
    (weight,) = coerce(name, weight)
    if weight.shape != x.shape:
        raise ValueError(f"{name}: weights and input must have the same size, got {weight.shape} "
                         f"and {x.shape}")
    return apply(_weighted_kernel, (x, target, weight.to(x.dtype)), (rows, tuple(static), reduction))


def _squared_error(x, y):
    return jnp.square(x - y)


def _absolute_error(x, y):
    return DV.abs(x - y)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error (or its sum, or the elementwise terms); ``weight`` as
    :func:`~arraykit.nn.functional.mse_loss`'s. The gradient is ``sign(input - target)``, 0 at a tie."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        return _weighted_pointwise(_absolute_error, "l1_loss", input, target, weight, reduction)
    return _pointwise(_absolute_error, _broadcast_pair("l1_loss", input, target), (), reduction)


def _smooth_l1_rows(x, y, beta):
    d = x - y
    if beta == 0:
        return DV.abs(d)
    a = DV.abs(d)
    return jnp.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d² / beta`` where ``|d| < beta``, else ``|d| - beta / 2`` (``d = input - target``)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss does not support negative values for beta, got {beta}")
    x, target = _broadcast_pair("smooth_l1_loss", input, target)
    return _pointwise(_smooth_l1_rows, (x, target), (float(beta),), reduction)


def _huber_rows(x, y, delta):
    d = x - y
    a = DV.abs(d)
    return jnp.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d²`` where ``|d| < delta``, else ``delta (|d| - delta / 2)``; ``weight``
    scales each term (the weighted mean divides by the count, as PyTorch)."""
    reduction = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta, got {delta}")
    if weight is not None:
        return _weighted_pointwise(_huber_rows, "huber_loss", input, target, weight, reduction,
                                   (float(delta),))
    x, target = _broadcast_pair("huber_loss", input, target)
    return _pointwise(_huber_rows, (x, target), (float(delta),), reduction)


def _bce_terms(x, y):
    log_x = jnp.maximum(jnp.log(x), -100)
    log_1mx = jnp.maximum(jnp.log1p(-x), -100)
    return -(y * log_x + (1 - y) * log_1mx)


_BCE_EPS = 9.999999960041972e-13  # PyTorch's 1e-12, a float32 constant


@DV.with_jvp(
    lambda p, out, dx: (p[0] - p[1]) / jnp.maximum((1 - p[0]) * p[0], _BCE_EPS) * dx,
    lambda p, out, dy: (jnp.maximum(jnp.log1p(-p[0]), -100) - jnp.maximum(jnp.log(p[0]), -100)) * dy,
)
def _bce_rows(x, y):
    """Binary cross-entropy terms, logs clamped at -100; PyTorch's derivative
    ``(x - y) / max(x (1 - x), 1e-12)``."""
    return _bce_terms(x, y)


def _bce_kernel(x, y, *rest):
    *weight, reduction = rest
    rows = _bce_rows(x, y)
    if weight:
        rows = rows * weight[0]
    return _reduced(rows, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """Binary cross-entropy between probabilities ``input`` and ``target`` (logs clamped
    at -100, as PyTorch); ``weight`` rescales each element (broadcast)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x = _floating(input, "binary_cross_entropy")
    x, target, weight = coerce("binary_cross_entropy", x, require_tensor(target, "binary_cross_entropy"),
                               weight)
    _same_shape("binary_cross_entropy", x, target)
    _check_range(x, 0.0, 1.0, lambda v: RuntimeError(
        f"binary_cross_entropy: all elements of input should be between 0 and 1, got {v}"))
    operands = (x, target.to(x.dtype))
    if weight is not None:
        operands += (weight.to(x.dtype).broadcast_to(x.shape),)
    return apply(_bce_kernel, operands, (reduction,))


def _kl_kernel(x, t, reduction, log_target):
    if log_target:
        rows = jnp.exp(t) * (t - x)
    else:
        rows = jax.scipy.special.xlogy(t, t) - t * x
    if reduction == "batchmean":
        return jnp.sum(rows) / (x.shape[0] if x.ndim else 1)
    return _reduced(rows, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence ``target * (log(target) - input)`` of log-probabilities
    ``input`` (``log_target``: the target given as log-probabilities too); reduction
    ``batchmean`` divides the sum by the batch size (``mean``: by the element count)."""
    if reduction != "batchmean" or size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size. 'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.", UserWarning, stacklevel=2)
    x, target = _broadcast_pair("kl_div", input, target)
    return apply(_kl_kernel, (x, target), (reduction, bool(log_target)))


def _cosine_embedding_rows(x1, x2, y, margin):
    dim = x1.ndim - 1
    dot = jnp.sum(x1 * x2, axis=dim)
    squares1 = jnp.sum(x1 * x1, axis=dim) + 1e-12
    squares2 = jnp.sum(x2 * x2, axis=dim) + 1e-12
    cos = dot / jnp.sqrt(squares1 * squares2)
    zero = jnp.zeros((), cos.dtype)
    positive = jnp.where(y == 1, 1 - cos, zero)
    negative = jnp.where(y == -1, DV.clip_min(cos - margin, zero), zero)
    return positive + negative


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target`` is 1, ``max(0, cos(x1, x2) - margin)`` where -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    name = "cosine_embedding_loss"
    x1, x2 = coerce(name, _floating(input1, name), _floating(input2, name))
    require_tensor(target, name)
    if x1.shape != x2.shape or x1.ndim not in (1, 2) or target.shape != x1.shape[:-1]:
        raise RuntimeError(
            f"{name}: expected inputs of one shape (N, D) or (D,) and target (N,) or (), got "
            f"{x1.shape}, {x2.shape} and {target.shape}"
        )
    return _pointwise(_cosine_embedding_rows, (x1, x2, target), (float(margin),), reduction)


def _margin_ranking_rows(x1, x2, y, margin):
    v = -y.astype(x1.dtype) * (x1 - x2) + margin
    return DV.clip_min(v, jnp.zeros((), v.dtype))


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    name = "margin_ranking_loss"
    x1, x2, y = coerce(name, _floating(input1, name), _floating(input2, name), require_tensor(target, name))
    if not (x1.ndim == x2.ndim == y.ndim):
        raise RuntimeError(
            f"{name}: all input tensors should have the same number of dimensions, got "
            f"{x1.shape}, {x2.shape} and {y.shape}"
        )
    shape = L.broadcast_shapes(x1.shape, x2.shape, y.shape)
    operands = (x1.broadcast_to(shape), x2.broadcast_to(shape), y.broadcast_to(shape))
    return _pointwise(_margin_ranking_rows, operands, (float(margin),), reduction)


def _triplet_rows(a, pos, neg, margin, p, eps, swap):
    def distance(u, v):
        return D.vector_norm(u - v + jnp.asarray(eps, u.dtype), (u.ndim - 1,), False, p, True)

    d_pos = distance(a, pos)
    d_neg = distance(a, neg)
    if swap:
        d_neg = DV.minimum(d_neg, distance(pos, neg))
    v = margin + d_pos - d_neg
    return DV.clip_min(v, jnp.zeros((), v.dtype))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with ``d`` the
    ``p``-norm distance (``eps`` added to the difference); ``swap`` uses
    ``min(d(a, n), d(p, n))`` as the negative distance."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    name = "triplet_margin_loss"
    a, pos, neg = coerce(name, _floating(anchor, name), _floating(positive, name), _floating(negative, name))
    if not (a.ndim == pos.ndim == neg.ndim) or a.ndim not in (1, 2):
        raise RuntimeError(
            f"{name}: the anchor, positive and negative tensors are expected to have the same "
            f"number of dimensions (1 or 2), got {a.shape}, {pos.shape} and {neg.shape}"
        )
    if margin <= 0:
        raise ValueError(f"{name}: expected margin to be greater than 0, got {margin} instead")
    return _pointwise(_triplet_rows, (a, pos, neg),
                      (float(margin), float(p), float(eps), bool(swap)), reduction)


def _poisson_rows(x, y, log_input, full, eps):
    if log_input:
        rows = jnp.exp(x) - y * x
    else:
        rows = x - y * jnp.log(x + eps)
    if full:
        safe = jnp.where(y > 1, y, jnp.ones((), y.dtype))
        stirling = safe * jnp.log(safe) - safe + 0.5 * jnp.log(2 * jnp.pi * safe)
        rows = rows + jnp.where(y > 1, stirling, jnp.zeros((), y.dtype))
    return rows


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Poisson negative log-likelihood: ``exp(input) - target * input`` (``log_input``)
    or ``input - target * log(input + eps)``; ``full`` adds Stirling's term where ``target > 1``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x, target = _broadcast_pair("poisson_nll_loss", input, target)
    return _pointwise(_poisson_rows, (x, target), (bool(log_input), bool(full), float(eps)), reduction)


def _clamped_below(v, eps):
    """``max(v, eps)`` with the gradient of ``v`` (PyTorch clamps the variance without grad)."""
    return v + jax.lax.stop_gradient(jnp.maximum(v, eps) - v)


def _gaussian_rows(x, y, var, full, eps):
    var = _clamped_below(var, jnp.asarray(eps, var.dtype))
    rows = 0.5 * (jnp.log(var) + jnp.square(x - y) / var)
    return rows + 0.5 * jnp.log(2 * jnp.pi) if full else rows


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log-likelihood ``0.5 (log(var) + (input - target)² / var)`` with
    ``var`` clamped below at ``eps`` (its gradient unclamped, as PyTorch); ``var`` has the
    input's shape, or one dimension of size 1 less or at the end, or is a number."""
    name = "gaussian_nll_loss"
    reduction = _reduction(reduction)
    x, target = _broadcast_pair(name, input, target)
    if not hasattr(var, "shape"):
        if var < 0:
            raise ValueError(f"{name}: var has negative entry/entries ({var})")
        var = full(x.shape, float(var), dtype=x.dtype, device=x.device)
    (var,) = coerce(name, var)
    if var.shape != x.shape:
        if x.shape[:-1] == var.shape:
            var = var.reshape(var.shape + (1,))
        elif not (x.shape[:-1] == var.shape[:-1] and var.ndim and var.shape[-1] == 1):
            raise ValueError(f"{name}: var is of incorrect size {var.shape} for input {x.shape}")
        var = var.broadcast_to(x.shape)
    _check_range(var, 0.0, float("inf"), lambda v: ValueError(f"{name}: var has negative entry/entries ({v})"))
    return _pointwise(_gaussian_rows, (x, target, var.to(x.dtype)), (bool(full), float(eps)), reduction)


def _multilabel_rows(x, y, *weight):
    y = y.astype(x.dtype)
    rows = -(y * jax.nn.log_sigmoid(x) + (1 - y) * jax.nn.log_sigmoid(-x))
    if weight:
        rows = rows * weight[0]
    return jnp.mean(rows, axis=-1)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """One-versus-all logistic loss over the classes (last dimension), averaged over them;
    ``weight`` rescales the classes."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    name = "multilabel_soft_margin_loss"
    x, target, weight = coerce(name, _floating(input, name), require_tensor(target, name), weight)
    _same_shape(name, x, target)
    operands = (x, target) if weight is None else (x, target, weight.to(x.dtype).broadcast_to(x.shape))
    return _pointwise(_multilabel_rows, operands, (), reduction)


def _hinge_rows(x, y, margin):
    zero = jnp.zeros((), x.dtype)
    pushed = jnp.where(y != 1, DV.clip_min(margin - x, zero), zero)
    return pushed + jnp.where(y != -1, x, zero)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where -1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x, target = _broadcast_pair("hinge_embedding_loss", input, target)
    return _pointwise(_hinge_rows, (x, target), (float(margin),), reduction)


def _soft_margin_rows(x, y):
    return jnp.logaddexp(jnp.zeros((), x.dtype), -y.astype(x.dtype) * x)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Two-class logistic loss ``log(1 + exp(-target * input))``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x, target = _broadcast_pair("soft_margin_loss", input, target)
    return _pointwise(_soft_margin_rows, (x, target), (), reduction)


def _multi_margin_rows(x, y, *rest):
    *weight, p, margin = rest
    picked = jnp.take_along_axis(x, y[..., None], axis=-1)
    v = DV.clip_min(margin - picked + x, jnp.zeros((), x.dtype))
    terms = v if p == 1 else v * v
    if weight:
        terms = terms * weight[0][y][..., None]
    others = jnp.arange(x.shape[-1]) != y[..., None]
    return jnp.sum(jnp.where(others, terms, jnp.zeros((), x.dtype)), axis=-1) / x.shape[-1]


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Multi-class hinge loss: ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C`` per
    sample (``p`` 1 or 2), scaled by ``weight[y]``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    name = "multi_margin_loss"
    if p not in (1, 2):
        raise ValueError(f"{name}: only p == 1 and p == 2 supported, got {p}")
    x, weight = coerce(name, _floating(input, name), weight)
    require_tensor(target, name)
    if x.ndim not in (1, 2) or target.shape != x.shape[:-1]:
        raise RuntimeError(f"{name}: inconsistent target size {target.shape} for input of size {x.shape}")
    if target.dtype.kind not in ("int", "uint"):
        raise TypeError(f"{name}: class-index targets must be integers, got {target.dtype}")
    _check_class_indices(target.reshape(-1), x.shape[-1], None, name)
    operands = (x, target) if weight is None else (x, target, weight.to(x.dtype))
    return _pointwise(_multi_margin_rows, operands, (int(p), float(margin)), reduction)


def _multilabel_margin_rows(x, target):
    """Per sample: ``sum_j sum_{i not a target} max(0, 1 - x[y_j] + x[i]) / C`` over the
    targets ``y_j`` before the first ``-1``."""
    classes = x.shape[-1]
    valid = jnp.cumprod(target != -1, axis=-1).astype(bool)
    safe = jnp.where(valid, target, 0)
    is_target = jnp.any(valid[..., :, None] & (safe[..., :, None] == jnp.arange(classes)), axis=-2)
    picked = jnp.take_along_axis(x, safe, axis=-1)
    hinge = jnp.maximum(0, 1 - picked[..., :, None] + x[..., None, :])
    hinge = jnp.where(valid[..., :, None] & ~is_target[..., None, :], hinge, jnp.zeros((), x.dtype))
    return jnp.sum(hinge, axis=(-2, -1)) / classes


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-class multi-label hinge loss of ``input`` (C) or (N, C) against ``target`` of
    the same shape holding class indices, ended by the first ``-1``, as
    ``torch.nn.functional.multilabel_margin_loss``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    name = "multilabel_margin_loss"
    x = _floating(input, name)
    target = require_tensor(target, name)
    if target.dtype.kind not in ("int", "uint"):
        raise TypeError(f"{name}: target must be an integer tensor, got {target.dtype}")
    if x.ndim not in (1, 2) or target.shape != x.shape:
        raise ValueError(f"{name}: expected input of 1 or 2 dimensions and a target of its shape, got "
                         f"{tuple(x.shape)} and {tuple(target.shape)}")
    if x.size and not is_traced(target):
        _check_indices(target, x.shape[-1], -1, lambda bad: IndexError(
            f"{name}: target {bad} is out of bounds for {x.shape[-1]} classes"))
    return _pointwise(_multilabel_margin_rows, (x, target), (), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with ``d`` the given
    ``distance_function`` (default :func:`pairwise_distance`); ``swap`` uses
    ``min(d(a, n), d(p, n))`` as the negative distance, as
    ``torch.nn.functional.triplet_margin_with_distance_loss``."""
    reduction = _reduction(reduction)
    name = "triplet_margin_with_distance_loss"
    if margin <= 0:
        raise ValueError(f"{name}: expected margin to be greater than 0, got {margin} instead")
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(f"{name}: the anchor, positive and negative tensors are expected to have the "
                           f"same number of dimensions, got {anchor.ndim}, {positive.ndim} and {negative.ndim}")
    distance = D.pairwise_distance if distance_function is None else distance_function
    to_positive = distance(anchor, positive)
    to_negative = distance(anchor, negative)
    if swap:
        to_negative = to_negative.minimum(distance(positive, negative))
    loss = (to_positive - to_negative + margin).clamp(min=0)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()
