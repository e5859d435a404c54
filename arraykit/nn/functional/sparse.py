"""Embedding lookups."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ...kernels.launch import apply
from ...tensors.tensor_type import is_traced, require_tensor
from .arguments import _check_indices

__all__ = ["embedding", "embedding_bag", "one_hot"]


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


def _one_hot_body(idx, classes):
    return (idx[..., None] == jnp.arange(classes, dtype=idx.dtype)).astype(jnp.int64)


def one_hot(tensor, num_classes=-1):
    """``tensor``'s class indices as int64 one-hot vectors of ``num_classes`` (-1: one
    more than the largest index, which reads the values)."""
    from ...core import dtypes as D

    require_tensor(tensor, "one_hot")
    if tensor.dtype.kind not in ("int", "uint"):
        raise RuntimeError(f"one_hot is only applicable to index tensor, got {tensor.dtype}")
    if num_classes == -1:
        if is_traced(tensor):
            raise RuntimeError("one_hot: num_classes=-1 reads the indices; give num_classes "
                               "explicitly under arraykit.jit")
        if not tensor.size:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor._values().max()) + 1
    elif num_classes < 1 and tensor.size:
        raise RuntimeError(f"one_hot: num_classes should be positive, got {num_classes}")
    if not is_traced(tensor) and tensor.size:
        values = tensor._values()
        if values.min() < 0:
            raise RuntimeError(f"one_hot: class values must be non-negative, got {values.min()}")
        if values.max() >= num_classes:
            raise RuntimeError(
                f"one_hot: class values must be smaller than num_classes {num_classes}, got "
                f"{values.max()}")
    out = apply(_one_hot_body, (tensor,), (int(num_classes),))
    return out if out.dtype == D.int64 else out.astype(D.int64)


_BAG_MODES = ("sum", "mean", "max")


def _bag_segments(n, offsets, bags, include_last):
    """The bag of each of the ``n`` flat positions, from the bags' start ``offsets``."""
    starts = offsets[:bags] if include_last else offsets
    positions = jnp.arange(n)
    return jnp.searchsorted(starts, positions, side="right") - 1


def _embedding_bag_body(w, idx, offsets, *rest):
    *per_sample, (mode, bags, include_last, padding_idx, scale_grad) = rest
    n = idx.shape[0]
    rows = jnp.take(w, idx, axis=0, mode="fill")
    if scale_grad:  # each occurrence's gradient divided by its index's count
        counts = jnp.zeros((w.shape[0],), w.dtype).at[idx].add(1)[idx][:, None]
        rows = rows / counts + jax.lax.stop_gradient(rows - rows / counts)
    if per_sample:
        rows = rows * per_sample[0][:, None].astype(rows.dtype)
    seg = _bag_segments(n, offsets, bags, include_last)
    keep = jnp.ones((n,), bool) if padding_idx is None else idx != padding_idx
    seg = jnp.where(keep & (seg >= 0), seg, bags)  # dropped entries go to a spare segment
    if mode == "max":
        out = jax.ops.segment_max(rows, seg, num_segments=bags + 1)[:bags]
        filled = jax.ops.segment_sum(jnp.ones((n,), rows.dtype), seg, num_segments=bags + 1)[:bags]
        return jnp.where(filled[:, None] > 0, out, jnp.zeros((), rows.dtype))
    total = jax.ops.segment_sum(rows, seg, num_segments=bags + 1)[:bags]
    if mode == "sum":
        return total
    count = jax.ops.segment_sum(jnp.ones((n,), rows.dtype), seg, num_segments=bags + 1)[:bags]
    return total / jnp.maximum(count, 1)[:, None]


def _renorm_rows(w, idx, max_norm, norm_type):
    used = jnp.zeros((w.shape[0],), bool).at[idx].set(True)
    norms = jnp.linalg.vector_norm(w, ord=norm_type, axis=1, keepdims=True)
    scale = jnp.where(used[:, None] & (norms > max_norm), max_norm / (norms + 1e-7), 1)
    return w * scale.astype(w.dtype)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxima of bags of rows of ``weight``: ``input`` (B, L) holds B bags
    of L indices, or ``input`` (N,) with ``offsets`` (B,) the bags' starts
    (``include_last_offset``: B + 1 offsets, the last one the end). ``per_sample_weights``
    (mode ``sum``) scales each index's row; ``padding_idx`` entries are left out (and get no
    gradient); ``max_norm`` renormalises the used rows of ``weight`` in place first;
    ``scale_grad_by_freq`` divides each row's gradient by its index's count in the batch.
    Empty bags give zeros. Gradients are dense (``sparse`` is accepted for compatibility)."""
    from ...api.creation import arange
    from ...autograd.mode import no_grad

    require_tensor(input, "embedding_bag")
    require_tensor(weight, "embedding_bag")
    if mode not in _BAG_MODES:
        raise ValueError(f"embedding_bag: mode has to be one of sum, mean or max, got {mode!r}")
    if input.dtype.kind not in ("int", "uint"):
        raise TypeError(f"embedding_bag: indices must be integers, got {input.dtype}")
    if weight.ndim != 2:
        raise ValueError(f"embedding_bag: weight has to be a 2D tensor, got shape {weight.shape}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}')")
        if per_sample_weights.shape != input.shape:
            raise ValueError(
                f"embedding_bag: per_sample_weights shape {per_sample_weights.shape} must match "
                f"the input's {input.shape}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: if input is 2D, then offsets has to be None, as input "
                             "is treated is a mini-batch of fixed length sequences")
        bags, length = input.shape
        offsets = arange(0, bags * length, max(length, 1), dtype=input.dtype, device=input.device)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        include_last_offset = False
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("embedding_bag: offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError(f"embedding_bag: offsets has to be a 1D Tensor, got shape {offsets.shape}")
        bags = offsets.shape[0] - (1 if include_last_offset else 0)
    else:
        raise ValueError(f"embedding_bag: input has to be 1D or 2D Tensor, but got Tensor of "
                         f"dimension {input.ndim}")
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise ValueError(f"embedding_bag: padding_idx {padding_idx} must be within the number "
                             f"of embeddings {rows}")
        padding_idx %= rows
    if not is_traced(input) and input.size:
        _check_indices(input, rows, None, lambda bad: IndexError(
            f"embedding_bag: index {bad} is out of range for {rows} embeddings"))
    if max_norm is not None:
        from ...kernels.launch import apply_inplace

        with no_grad():
            apply_inplace(_renorm_rows, weight, (input,), (float(max_norm), float(norm_type)))
    options = (mode, int(bags), bool(include_last_offset), padding_idx, bool(scale_grad_by_freq))
    operands = (weight, input, offsets.to(input.dtype))
    if per_sample_weights is not None:
        operands += (per_sample_weights,)
    return apply(_embedding_bag_body, operands, (options,))
