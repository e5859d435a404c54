"""``Linear``: ``y = x @ W.T + b``; ``Bilinear``: ``y = x1ᵀ A x2 + b``; ``LazyLinear``."""


from __future__ import annotations

import math

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .allocation import _empty
from .lazy import LazyModuleMixin

__all__ = ["Bilinear", "Identity", "LazyLinear", "Linear"]


class Linear(Module):
    """``y = x @ weight.T + bias``; weight (out, in) kaiming-uniform(a=√5), bias
    ``U(-1/√in, 1/√in)``, as in PyTorch."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_empty((out_features, in_features), device, dtype))
        self.bias = Parameter(_empty((out_features,), device, dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """Draw the weight and bias again (PyTorch's default initialisation)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        """``F.linear(input, weight, bias)``."""
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        """``in_features=..., out_features=..., bias=...``."""
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored, as PyTorch)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        """``input`` itself."""
        return input


class Bilinear(Module):
    """``y = x1ᵀ A x2 + b``; weight (out, in1, in2) and bias uniform in ``±1/√in1``, as
    ``torch.nn.Bilinear``."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(_empty((out_features, in1_features, in2_features), device, dtype))
        self.bias = Parameter(_empty((out_features,), device, dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """Draw the weight and bias again (PyTorch's default initialisation)."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        """``F.bilinear(input1, input2, weight, bias)``."""
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        """``in1_features=..., in2_features=..., out_features=..., bias=...``."""
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A :class:`Linear` whose ``in_features`` is the last dimension of its first input:
    ``LazyLinear(out_features, bias=True)``."""

    cls_to_become = Linear

    def _input_size(self, input):
        return input.shape[-1]
