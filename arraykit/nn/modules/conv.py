"""Convolution layers on :mod:`arraykit.nn.functional.conv`."""


from __future__ import annotations

import math

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .allocation import _empty

__all__ = ["Conv2d"]


def _pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


class Conv2d(Module):
    """2-D convolution over (N, C, H, W) inputs (channels-last inputs stay channels-last);
    PyTorch's parameters and default initialisation."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(
                f"Conv2d: groups={groups} must be positive and divide in_channels={in_channels} "
                f"and out_channels={out_channels}"
            )
        if padding_mode != "zeros":
            raise NotImplementedError(f"Conv2d: padding_mode={padding_mode!r}; only 'zeros' is supported")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of ('valid', 'same')")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _pair(kernel_size)
        self.stride = _pair(stride)
        self.padding = padding if isinstance(padding, str) else _pair(padding)
        if padding == "same" and self.stride != (1, 1):
            raise ValueError("padding='same' is not supported for strided convolutions")
        self.dilation = _pair(dilation)
        self.groups = groups
        self.padding_mode = padding_mode
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(_empty(shape, device, dtype))
        self.bias = Parameter(_empty((out_channels,), device, dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """Draw the weight and bias again (PyTorch's default initialisation)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * self.kernel_size[0] * self.kernel_size[1]
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        """``F.conv2d`` with this layer's parameters."""
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        """PyTorch's summary: channels, kernel_size, stride and the non-default options."""
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0, 0):
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) else f", padding={self.padding}"
        if self.dilation != (1, 1):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s
