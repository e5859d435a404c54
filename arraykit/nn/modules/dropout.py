"""Dropout layers."""


from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]


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


class _DropoutWith(Dropout):
    """A dropout layer calling ``FUNCTION(input, p, training, inplace)``."""

    FUNCTION = None

    def forward(self, input):
        """The dropout of ``input`` while training; the identity in eval mode."""
        return type(self).FUNCTION(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutWith):
    """Zero whole channels of (N, C, L) or (C, L) inputs while training."""

    FUNCTION = staticmethod(F.dropout1d)


class Dropout2d(_DropoutWith):
    """Zero whole channels of (N, C, H, W) inputs while training."""

    FUNCTION = staticmethod(F.dropout2d)


class Dropout3d(_DropoutWith):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs while training."""

    FUNCTION = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutWith):
    """SELU-preserving dropout while training (:func:`arraykit.nn.functional.alpha_dropout`)."""

    FUNCTION = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutWith):
    """SELU-preserving dropout of whole channels while training."""

    FUNCTION = staticmethod(F.feature_alpha_dropout)
