"""Activation layers."""


from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = ["ReLU", "GELU", "SiLU"]


class _InplaceActivation(Module):
    """An element-wise activation ``FUNCTION(input, inplace=...)`` with PyTorch's
    ``inplace`` option."""

    FUNCTION = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """The activation of ``input``."""
        return type(self).FUNCTION(input, inplace=self.inplace)

    def extra_repr(self):
        """``inplace=True`` when set."""
        return "inplace=True" if self.inplace else ""


class ReLU(_InplaceActivation):
    """``max(x, 0)``."""

    FUNCTION = staticmethod(F.relu)


class GELU(Module):
    """Gaussian error linear unit (exact, or ``approximate='tanh'``)."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        """``F.gelu(input, approximate)``."""
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        """``approximate='...'``."""
        return f"approximate={self.approximate!r}"


class SiLU(_InplaceActivation):
    """``x * sigmoid(x)``."""

    FUNCTION = staticmethod(F.silu)
