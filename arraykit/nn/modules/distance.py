"""Distance layers: ``CosineSimilarity``, ``PairwiseDistance``."""


from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """``F.cosine_similarity(x1, x2, dim, eps)``."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        """The cosine similarity along ``dim``."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """``F.pairwise_distance(x1, x2, p, eps, keepdim)``."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        """The ``p``-norm distance over the last dimension."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
