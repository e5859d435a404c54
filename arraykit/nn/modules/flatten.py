"""``Flatten``."""


from __future__ import annotations

from ..module import Module

__all__ = ["Flatten"]


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
