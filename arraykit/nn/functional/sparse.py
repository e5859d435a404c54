"""Embedding lookups."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ...kernels.launch import apply
from ...tensors.tensor_type import is_traced, require_tensor
from .arguments import _check_indices

__all__ = ["embedding"]


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
