"""``Fold`` and ``Unfold`` on :mod:`arraykit.nn.functional.folding`."""


from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """Sum sliding-block columns back into an image of ``output_size``, as ``torch.nn.Fold``."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        """``F.fold`` with this layer's options."""
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        """``output_size=..., kernel_size=..., dilation=..., padding=..., stride=...``."""
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Sliding blocks of an image as columns (im2col), as ``torch.nn.Unfold``."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        """``F.unfold`` with this layer's options."""
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        """``kernel_size=..., dilation=..., padding=..., stride=...``."""
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")
