"""``PixelShuffle`` and ``PixelUnshuffle`` on :mod:`arraykit.nn.functional.pixelshuffle`."""


from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = ["ChannelShuffle", "PixelShuffle", "PixelUnshuffle"]


class PixelShuffle(Module):
    """(*, C * r², H, W) to (*, C, H * r, W * r), as ``torch.nn.PixelShuffle``."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        """``F.pixel_shuffle(input, upscale_factor)``."""
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        """``upscale_factor=...``."""
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H * r, W * r) to (*, C * r², H, W), as ``torch.nn.PixelUnshuffle``."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        """``F.pixel_unshuffle(input, downscale_factor)``."""
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        """``downscale_factor=...``."""
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """``F.channel_shuffle`` with a fixed number of ``groups``, as ``torch.nn.ChannelShuffle``."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        """The channels of ``input`` shuffled across ``groups``."""
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        """``groups=...``."""
        return f"groups={self.groups}"
