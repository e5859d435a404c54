"""Normalization layers."""


from __future__ import annotations

from ...api import creation as C
from ...core import dtypes as D
from .. import functional as F
from ..module import Module
from ..parameter import Parameter

__all__ = ["LayerNorm"]


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dimensions; an elementwise
    affine weight (ones) and bias (zeros) when ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(C.ones(self.normalized_shape, device=device, dtype=dtype or D.float32))
            self.bias = (Parameter(C.zeros(self.normalized_shape, device=device, dtype=dtype or D.float32))
                         if bias else None)
        else:
            self.weight = None
            self.bias = None
        self._has_bias = bias

    def forward(self, input):
        """``F.layer_norm`` with this layer's shape, parameters and eps."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        """``normalized_shape, eps=..., elementwise_affine=..., bias=...``."""
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self._has_bias}")
