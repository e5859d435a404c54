"""``Embedding``."""


from __future__ import annotations

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .allocation import _empty

__all__ = ["Embedding"]


class Embedding(Module):
    """A lookup table of ``num_embeddings`` vectors of size ``embedding_dim``, drawn
    from N(0, 1) (the ``padding_idx`` row zero and without gradient)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, device=None, dtype=None):
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Padding_idx {padding_idx} must be within num_embeddings {num_embeddings}")
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.weight = Parameter(_empty((num_embeddings, embedding_dim), device, dtype))
        self.reset_parameters()

    def reset_parameters(self):
        """Draw the table again from N(0, 1); zero the padding row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            init.zeros_(self.weight[self.padding_idx])

    def forward(self, input):
        """The rows at the indices ``input`` (shape ``input.shape + (embedding_dim,)``)."""
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self):
        """``num_embeddings, embedding_dim`` (and ``padding_idx``)."""
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s if self.padding_idx is None else s + f", padding_idx={self.padding_idx}"
