"""``linear``: ``input @ weight.T + bias``; ``bilinear``: ``x1ᵀ A x2 + b``."""

from __future__ import annotations

from ...api.autocasting import coerce

__all__ = ["bilinear", "linear"]


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    from ...api.matrix_products import matmul

    input, weight, bias = coerce("linear", input, weight, bias)
    out = matmul(input, weight.mT)
    return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
    """``y_k = input1 @ weight[k] @ input2 + bias[k]`` over the last dimensions, as
    ``torch.nn.functional.bilinear`` (``weight`` (out, in1, in2))."""
    from ...api.torch_products import einsum

    x1, x2, weight, bias = coerce("bilinear", input1, input2, weight, bias)
    if weight.ndim != 3 or x1.shape[-1] != weight.shape[1] or x2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear: expected weight (out, {x1.shape[-1]}, {x2.shape[-1]}) for inputs of "
                           f"shapes {tuple(x1.shape)} and {tuple(x2.shape)}, got weight {tuple(weight.shape)}")
    out = einsum("...i,kij,...j->...k", x1, weight, x2)
    return out if bias is None else out + bias
