"""Losses as modules."""


from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = ["CrossEntropyLoss", "MSELoss"]


class CrossEntropyLoss(Module):
    """``F.cross_entropy`` with fixed options (``weight`` is a buffer)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__()
        if size_average is not None or reduce is not None:
            raise TypeError("CrossEntropyLoss: size_average and reduce are deprecated; use reduction=")
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.reduction = reduction
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        """The loss of logits ``input`` against ``target``."""
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class MSELoss(Module):
    """``F.mse_loss`` with a fixed ``reduction``."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            raise TypeError("MSELoss: size_average and reduce are deprecated; use reduction=")
        self.reduction = reduction

    def forward(self, input, target):
        """The mean (or sum, or elementwise) squared error."""
        return F.mse_loss(input, target, reduction=self.reduction)
