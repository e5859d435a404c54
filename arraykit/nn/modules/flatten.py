"""``Flatten`` and ``Unflatten``."""


from __future__ import annotations

import operator

from ...core import layout as L
from ..module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flatten dimensions ``start_dim..end_dim`` (default: all but the batch dimension)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        """``input.flatten(start_dim, end_dim)``."""
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        """``start_dim=..., end_dim=...``."""
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dimension ``dim`` into ``unflattened_size`` (one entry may be -1), as
    ``torch.nn.Unflatten``; a view where the layout allows."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be tuple or list, but found type {type(unflattened_size).__name__}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        """``input`` with dimension ``dim`` split into ``unflattened_size``."""
        dim = L.normalize_dim(operator.index(self.dim), input.ndim)
        sizes = tuple(self.unflattened_size)
        known = 1
        for s in sizes:
            known *= s if s != -1 else 1
        if sizes.count(-1) > 1 or (-1 not in sizes and known != input.shape[dim]) or (
                -1 in sizes and (known == 0 or input.shape[dim] % known)):
            raise RuntimeError(
                f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                f"({input.shape[dim]}) in the input tensor"
            )
        return input.reshape(*input.shape[:dim], *sizes, *input.shape[dim + 1:])

    def extra_repr(self):
        """``dim=..., unflattened_size=...``."""
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
