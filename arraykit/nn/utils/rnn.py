"""Helpers for variable-length sequences, as ``torch.nn.utils.rnn``: :func:`pad_sequence`."""

from __future__ import annotations

from ...api import creation as C
from ...api.manipulation import concat, stack
from ...tensors.tensor_type import require_tensor

__all__ = ["pad_sequence"]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes ``(T_i, *)`` into ``(T, B, *)`` (``(B, T, *)`` with
    ``batch_first``), ``T`` the longest length, filling with ``padding_value`` after
    each sequence (before it with ``padding_side='left'``), as
    ``torch.nn.utils.rnn.pad_sequence``. Differentiable in the sequences."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    for s in sequences:
        require_tensor(s, "pad_sequence")
        if s.ndim < 1 or s.shape[1:] != sequences[0].shape[1:]:
            raise RuntimeError(
                "pad_sequence: every sequence needs at least one dimension and the same trailing "
                f"dimensions, got shapes {[tuple(t.shape) for t in sequences]}")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            fill = C.full((missing,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = concat([s, fill] if padding_side == "right" else [fill, s])
        padded.append(s)
    out = stack(padded)
    return out if batch_first else out.transpose(0, 1)
