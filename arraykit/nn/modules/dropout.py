"""Dropout layers."""


from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """Zero elements with probability ``p`` while training (scaling the rest by 1/(1-p));
    the identity in eval mode."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        """``F.dropout`` with a fresh random key while training."""
        if not self.training or self.p == 0.0:
            return input
        return F.dropout(input, self.p, True, self.inplace)

    def extra_repr(self):
        """``p=..., inplace=...``."""
        return f"p={self.p}, inplace={self.inplace}"
