"""Connectionist temporal classification loss (Graves et al., 2006): the negative log
likelihood of a target sequence summed over all its alignments with the input frames,
by the forward (alpha) recursion in log space, one ``lax.scan`` over time.

The gradient is JAX's VJP of that recursion: the true gradient with respect to
``log_probs``. PyTorch's CTC gradient is instead the one with respect to the logits
before a ``log_softmax`` (``exp(log_probs) - posterior``); the two agree once passed
back through that ``log_softmax``, which is how the loss is used."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ...api.creation import asarray
from ...kernels.launch import apply
from ...tensors.tensor_type import Tensor, require_tensor
from .arguments import _reduction

__all__ = ["ctc_loss"]

_IMPOSSIBLE = -1e30  # a log-probability no path reaches (finite, so that gradients stay finite)


def _lse(*terms):
    stacked = jnp.stack(terms)
    top = jnp.max(stacked, axis=0)
    return top + jnp.log(jnp.sum(jnp.exp(stacked - top), axis=0))


def _ctc_body(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity):
    steps, batch, _ = log_probs.shape
    width = 2 * targets.shape[1] + 1
    labels = jnp.full((batch, width), blank, targets.dtype).at[:, 1::2].set(targets)
    impossible = jnp.asarray(_IMPOSSIBLE, log_probs.dtype)
    shifted = jnp.concatenate([labels[:, :2], labels[:, :-2]], axis=1)
    skip = (labels != blank) & (labels != shifted) & (jnp.arange(width) >= 2)
    emit = jnp.take_along_axis(log_probs, jnp.broadcast_to(labels[None], (steps, batch, width)), axis=2)
    first = jnp.where(jnp.arange(width) < 2, emit[0], impossible)

    def advance(alpha, inputs):
        t, emitted = inputs
        one = jnp.concatenate([jnp.full((batch, 1), impossible), alpha[:, :-1]], axis=1)
        two = jnp.concatenate([jnp.full((batch, 2), impossible), alpha[:, :-2]], axis=1)
        two = jnp.where(skip, two, impossible)
        new = _lse(alpha, one, two) + emitted
        return jnp.where((t < input_lengths)[:, None], new, alpha), None

    alpha, _ = jax.lax.scan(advance, first, (jnp.arange(1, steps), emit[1:]))
    end = 2 * target_lengths
    last = jnp.take_along_axis(alpha, end[:, None], axis=1)[:, 0]
    before = jnp.take_along_axis(alpha, jnp.maximum(end - 1, 0)[:, None], axis=1)[:, 0]
    before = jnp.where(target_lengths > 0, before, impossible)
    nll = -_lse(last, before)
    infinite = (nll > -_IMPOSSIBLE / 2) | (input_lengths == 0)
    nll = jnp.where(infinite, jnp.zeros((), nll.dtype) if zero_infinity else jnp.inf, nll)
    if reduction == "none":
        return nll
    if reduction == "sum":
        return jnp.sum(nll)
    return jnp.mean(nll / jnp.maximum(target_lengths, 1).astype(nll.dtype))


def _lengths(values, batch, name):
    values = values.tolist() if isinstance(values, Tensor) else list(values)
    if len(values) != batch:
        raise ValueError(f"ctc_loss: expected {batch} {name} (one per sequence), got {len(values)}")
    return [int(v) for v in values]


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """CTC loss of ``log_probs`` (T, N, C) or (T, C) (log-softmax outputs) against
    ``targets`` (N, S) padded, or 1-D concatenated, with per-sequence ``input_lengths``
    and ``target_lengths``, as ``torch.nn.functional.ctc_loss``: ``'mean'`` divides each
    loss by its target length, then averages; an impossible alignment gives ``inf``
    (0 with ``zero_infinity``, its gradient then zero)."""
    reduction = _reduction(reduction)
    x = require_tensor(log_probs, "ctc_loss")
    if x.dtype.kind != "float":
        raise TypeError(f"ctc_loss: log_probs must be floating point, got {x.dtype}")
    unbatched = x.ndim == 2
    if unbatched:
        x = x.unsqueeze(1)
    if x.ndim != 3:
        raise ValueError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape {tuple(x.shape)}")
    steps, batch, classes = x.shape
    if not 0 <= blank < classes:
        raise ValueError(f"ctc_loss: blank must be in label range [0, {classes}), got {blank}")
    inputs = _lengths(input_lengths if not isinstance(input_lengths, int) else [input_lengths], batch,
                      "input_lengths")
    lengths = _lengths(target_lengths if not isinstance(target_lengths, int) else [target_lengths], batch,
                       "target_lengths")
    for n, (t, s) in enumerate(zip(inputs, lengths)):
        if not 0 <= t <= steps:
            raise ValueError(f"ctc_loss: input_lengths[{n}] = {t} is outside [0, {steps}]")
        if s < 0:
            raise ValueError(f"ctc_loss: target_lengths[{n}] = {s} is negative")
    labels = np.asarray(require_tensor(targets, "ctc_loss")._values()).astype(np.int64)
    if unbatched and labels.ndim == 1 and labels.size == lengths[0]:
        labels = labels[None]
    longest = max(lengths + [1])
    padded = np.full((batch, longest), blank, np.int64)
    if labels.ndim == 1:  # concatenated targets
        if labels.size != sum(lengths):
            raise ValueError(f"ctc_loss: 1-D targets hold {labels.size} labels, target_lengths sum to {sum(lengths)}")
        starts = np.cumsum([0] + lengths[:-1])
        for n, (start, s) in enumerate(zip(starts, lengths)):
            padded[n, :s] = labels[start:start + s]
    else:
        if labels.shape[0] != batch or any(s > labels.shape[1] for s in lengths):
            raise ValueError(f"ctc_loss: targets of shape {labels.shape} do not hold target_lengths {lengths}")
        for n, s in enumerate(lengths):
            padded[n, :s] = labels[n, :s]
    used = np.concatenate([padded[n, :s] for n, s in enumerate(lengths)] + [np.zeros(0, np.int64)])
    if ((used < 0) | (used >= classes) | (used == blank)).any():
        bad = used[(used < 0) | (used >= classes) | (used == blank)][0]
        raise ValueError(f"ctc_loss: target label {bad} is the blank ({blank}) or outside [0, {classes})")
    device = x.device
    operands = (x, asarray(padded, device=device), asarray(np.array(inputs, np.int64), device=device),
                asarray(np.array(lengths, np.int64), device=device))
    loss = apply(_ctc_body, operands, (int(blank), reduction, bool(zero_infinity)))
    return loss.squeeze(0) if unbatched and reduction == "none" else loss
