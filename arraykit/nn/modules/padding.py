"""Padding layers on :func:`arraykit.nn.functional.pad`: zero, constant, reflection,
replication and circular padding of 1 to 3 trailing dimensions."""


from __future__ import annotations

from .. import functional as F
from ..functional._windows import _ntuple
from ..module import Module

__all__ = [
    "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
]


class _PadNd(Module):
    """``padding``: an int (every side) or ``(left, right, top, bottom, front, back)``
    up to the layer's number of dimensions."""

    MODE = "constant"
    _DIMS = 0

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2 * self._DIMS, "padding", type(self).__name__)

    def forward(self, input):
        """``F.pad`` with this layer's amounts and mode."""
        return F.pad(input, self.padding, self.MODE)

    def extra_repr(self):
        """The amounts, as PyTorch prints them."""
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        """``F.pad`` with this layer's amounts and fill value."""
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        """``padding=..., value=...``."""
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dimension with ``value``, as ``torch.nn.ConstantPad1d``."""

    _DIMS = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dimensions with ``value``, as ``torch.nn.ConstantPad2d``."""

    _DIMS = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dimensions with ``value``, as ``torch.nn.ConstantPad3d``."""

    _DIMS = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        """The amounts, as PyTorch prints them."""
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last dimension with zeros, as ``torch.nn.ZeroPad1d``."""

    _DIMS = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last two dimensions with zeros, as ``torch.nn.ZeroPad2d``."""

    _DIMS = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last three dimensions with zeros, as ``torch.nn.ZeroPad3d``."""

    _DIMS = 3


class ReflectionPad1d(_PadNd):
    """Mirror the last dimension at its edges (edge not repeated), as ``torch.nn.ReflectionPad1d``."""

    MODE, _DIMS = "reflect", 1


class ReflectionPad2d(_PadNd):
    """Mirror the last two dimensions at their edges, as ``torch.nn.ReflectionPad2d``."""

    MODE, _DIMS = "reflect", 2


class ReflectionPad3d(_PadNd):
    """Mirror the last three dimensions at their edges, as ``torch.nn.ReflectionPad3d``."""

    MODE, _DIMS = "reflect", 3


class ReplicationPad1d(_PadNd):
    """Repeat the edge values of the last dimension, as ``torch.nn.ReplicationPad1d``."""

    MODE, _DIMS = "replicate", 1


class ReplicationPad2d(_PadNd):
    """Repeat the edge values of the last two dimensions, as ``torch.nn.ReplicationPad2d``."""

    MODE, _DIMS = "replicate", 2


class ReplicationPad3d(_PadNd):
    """Repeat the edge values of the last three dimensions, as ``torch.nn.ReplicationPad3d``."""

    MODE, _DIMS = "replicate", 3


class CircularPad1d(_PadNd):
    """Wrap the last dimension around, as ``torch.nn.CircularPad1d``."""

    MODE, _DIMS = "circular", 1


class CircularPad2d(_PadNd):
    """Wrap the last two dimensions around, as ``torch.nn.CircularPad2d``."""

    MODE, _DIMS = "circular", 2


class CircularPad3d(_PadNd):
    """Wrap the last three dimensions around, as ``torch.nn.CircularPad3d``."""

    MODE, _DIMS = "circular", 3
