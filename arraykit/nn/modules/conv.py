"""Convolution layers on :mod:`arraykit.nn.functional.conv`: ``Conv1d/2d/3d`` and
``ConvTranspose1d/2d/3d``, PyTorch's parameters, padding modes and initialisation."""


from __future__ import annotations

import math

from .. import functional as F
from .. import init
from ..functional._windows import _ntuple
from ..module import Module
from ..parameter import Parameter
from .allocation import _empty
from .lazy import LazyModuleMixin

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """What every convolution layer shares: checks, parameters (``weight`` of shape
    (out, in / groups, *kernel), or (in, out / groups, *kernel) when transposed, and
    ``bias``), the default initialisation and the summary."""

    _DIMS = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device, dtype):
        super().__init__()
        name, n = type(self).__name__, self._DIMS
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of ('same', 'valid')")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n, "stride", name)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {set(_PADDING_MODES)}, but got padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n, "kernel_size", name)
        self.stride = _ntuple(stride, n, "stride", name)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n, "padding", name)
        self.dilation = _ntuple(dilation, n, "dilation", name)
        self.transposed = transposed
        self.output_padding = _ntuple(output_padding, n, "output_padding", name)
        self.groups = groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = self._explicit_padding()
        channels = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(_empty(channels + self.kernel_size, device, dtype))
        self.bias = Parameter(_empty((out_channels,), device, dtype)) if bias else None
        self.reset_parameters()

    def _explicit_padding(self):
        """``F.pad``'s amounts (last dimension first) for the non-zero padding modes."""
        if self.padding == "valid":
            return (0, 0) * self._DIMS
        if self.padding == "same":
            amounts = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = d * (k - 1)
                amounts += [total // 2, total - total // 2]
            return tuple(amounts)
        return tuple(p for p in reversed(self.padding) for _ in range(2))

    def reset_parameters(self):
        """Draw the weight and bias again (PyTorch's default initialisation:
        ``kaiming_uniform_(a=sqrt(5))``, bias uniform in ``±1/sqrt(fan_in)``)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        """PyTorch's summary: channels, kernel_size, stride and the non-default options."""
        n = self._DIMS
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    FUNCTION = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0,
                         groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        """The convolution of ``input`` with ``weight`` and ``bias`` under this layer's
        settings (after ``F.pad`` in a non-zero padding mode): PyTorch's hook, which
        :meth:`forward` calls, so a subclass overriding it (to cast dtypes, to use
        another weight) is called as in PyTorch."""
        conv = type(self).FUNCTION
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        """``self._conv_forward(input, self.weight, self.bias)``, as in PyTorch."""
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C, L) or (C, L) inputs, as ``torch.nn.Conv1d``."""

    _DIMS = 1
    FUNCTION = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C, H, W) or (C, H, W) inputs (channels-last inputs stay
    channels-last), as ``torch.nn.Conv2d``."""

    _DIMS = 2
    FUNCTION = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C, D, H, W) or (C, D, H, W) inputs, as ``torch.nn.Conv3d``."""

    _DIMS = 3
    FUNCTION = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    FUNCTION = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of ints, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size,
                        num_spatial_dims, dilation=None):
        """The output padding that gives ``output_size`` for these ``stride``,
        ``padding``, ``kernel_size`` and ``dilation`` (PyTorch's hook, signature and
        rule), or the layer's own when ``output_size`` is None."""
        if output_size is None:
            return self.output_padding
        n = num_spatial_dims
        dilation = (1,) * n if dilation is None else dilation
        leading = 2 if input.ndim == n + 2 else 1
        output_size = tuple(output_size)
        if len(output_size) == leading + n:
            output_size = output_size[leading:]
        if len(output_size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or "
                f"{leading + n} elements (got {len(output_size)})"
            )
        smallest = [(input.shape[leading + d] - 1) * stride[d] - 2 * padding[d]
                    + dilation[d] * (kernel_size[d] - 1) + 1 for d in range(n)]
        largest = [s + stride[d] - 1 for d, s in enumerate(smallest)]
        if any(not lo <= size <= hi for size, lo, hi in zip(output_size, smallest, largest)):
            raise ValueError(
                f"requested an output size of {list(output_size)}, but valid sizes range from "
                f"{smallest} to {largest} (for an input of {list(input.shape[leading:])})"
            )
        return tuple(size - lo for size, lo in zip(output_size, smallest))

    def forward(self, input, output_size=None):
        """The transposed convolution with this layer's parameters; ``output_size``
        picks the output padding that gives that size (through ``_output_padding``,
        called with PyTorch's arguments)."""
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, self._DIMS, self.dilation)
        return type(self).FUNCTION(input, self.weight, self.bias, self.stride, self.padding,
                                   output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution over (N, C, L) or (C, L) inputs, as
    ``torch.nn.ConvTranspose1d``; weight of shape (in, out / groups, k)."""

    _DIMS = 1
    FUNCTION = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution over (N, C, H, W) or (C, H, W) inputs, as
    ``torch.nn.ConvTranspose2d``; weight of shape (in, out / groups, kH, kW)."""

    _DIMS = 2
    FUNCTION = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution over (N, C, D, H, W) or (C, D, H, W) inputs, as
    ``torch.nn.ConvTranspose3d``."""

    _DIMS = 3
    FUNCTION = staticmethod(F.conv_transpose3d)


class _LazyConv(LazyModuleMixin):
    """A convolution whose ``in_channels`` is read from its first input (dimension 1, or
    0 unbatched): ``LazyConvNd(out_channels, kernel_size, ...)``."""

    def _input_size(self, input):
        return input.shape[0 if input.ndim == self.cls_to_become._DIMS + 1 else 1]


class LazyConv1d(_LazyConv, Conv1d):
    """:class:`Conv1d` with ``in_channels`` from the first input."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """:class:`Conv2d` with ``in_channels`` from the first input."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """:class:`Conv3d` with ``in_channels`` from the first input."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConv, ConvTranspose1d):
    """:class:`ConvTranspose1d` with ``in_channels`` from the first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConv, ConvTranspose2d):
    """:class:`ConvTranspose2d` with ``in_channels`` from the first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConv, ConvTranspose3d):
    """:class:`ConvTranspose3d` with ``in_channels`` from the first input."""

    cls_to_become = ConvTranspose3d
