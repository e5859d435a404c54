"""``linear``: ``input @ weight.T + bias``."""

from __future__ import annotations

from ...api.autocasting import coerce

__all__ = ["linear"]


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    from ...api.matrix_products import matmul

    input, weight, bias = coerce("linear", input, weight, bias)
    out = matmul(input, weight.mT)
    return out if bias is None else out + bias
