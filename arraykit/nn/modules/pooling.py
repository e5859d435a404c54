"""Pooling layers on :mod:`arraykit.nn.functional.pooling`, with PyTorch's arguments
and summaries."""


from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = [
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "AdaptiveMaxPool3d", "MaxUnpool1d", "MaxUnpool2d",
    "MaxUnpool3d", "FractionalMaxPool2d", "FractionalMaxPool3d",
]


class _MaxPoolNd(Module):
    _FUNCTION = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        """Max pooling with this layer's options (and the indices, if asked for)."""
        return type(self)._FUNCTION(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                    ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self):
        """``kernel_size=..., stride=..., padding=..., dilation=..., ceil_mode=...``."""
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling, as ``torch.nn.MaxPool1d``."""

    _FUNCTION = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling, as ``torch.nn.MaxPool2d``; the gradient goes to the first
    maximum of each window, as PyTorch's."""

    _FUNCTION = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling, as ``torch.nn.MaxPool3d``."""

    _FUNCTION = staticmethod(F.max_pool3d)


class _AvgPoolNd(Module):
    def __init__(self, kernel_size, stride, padding, ceil_mode, count_include_pad):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self):
        """``kernel_size=..., stride=..., padding=...``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _single(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class AvgPool1d(_AvgPoolNd):
    """1-D average pooling, as ``torch.nn.AvgPool1d`` (sizes kept as 1-tuples, as PyTorch)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__(_single(kernel_size), _single(stride if stride is not None else kernel_size),
                         _single(padding), ceil_mode, count_include_pad)

    def forward(self, input):
        """``F.avg_pool1d`` with this layer's options."""
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class _AvgPoolDivisor(_AvgPoolNd):
    _FUNCTION = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override

    def forward(self, input):
        """Average pooling with this layer's options."""
        return type(self)._FUNCTION(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                    self.count_include_pad, self.divisor_override)


class AvgPool2d(_AvgPoolDivisor):
    """2-D average pooling, as ``torch.nn.AvgPool2d``."""

    _FUNCTION = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolDivisor):
    """3-D average pooling, as ``torch.nn.AvgPool3d``."""

    _FUNCTION = staticmethod(F.avg_pool3d)


class _AdaptiveMaxPoolNd(Module):
    _FUNCTION = None

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input):
        """Adaptive max pooling to ``output_size`` (and the indices, if asked for)."""
        return type(self)._FUNCTION(input, self.output_size, self.return_indices)

    def extra_repr(self):
        """``output_size=...``."""
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Adaptive 1-D max pooling, as ``torch.nn.AdaptiveMaxPool1d``."""

    _FUNCTION = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Adaptive 2-D max pooling, as ``torch.nn.AdaptiveMaxPool2d``."""

    _FUNCTION = staticmethod(F.adaptive_max_pool2d)


class _AdaptiveAvgPoolNd(Module):
    _FUNCTION = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        """Adaptive average pooling to ``output_size``."""
        return type(self)._FUNCTION(input, self.output_size)

    def extra_repr(self):
        """``output_size=...``."""
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Adaptive 1-D average pooling, as ``torch.nn.AdaptiveAvgPool1d``."""

    _FUNCTION = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Adaptive 2-D average pooling, as ``torch.nn.AdaptiveAvgPool2d`` (``(1, 1)``: global
    average pooling)."""

    _FUNCTION = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Adaptive 3-D average pooling, as ``torch.nn.AdaptiveAvgPool3d``."""

    _FUNCTION = staticmethod(F.adaptive_avg_pool3d)


class _LPPoolNd(Module):
    _FUNCTION = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input):
        """Power-average pooling with this layer's options."""
        return type(self)._FUNCTION(input, float(self.norm_type), self.kernel_size, self.stride,
                                    self.ceil_mode)

    def extra_repr(self):
        """``norm_type=..., kernel_size=..., stride=..., ceil_mode=...``."""
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """1-D power-average pooling, as ``torch.nn.LPPool1d``."""

    _FUNCTION = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """2-D power-average pooling, as ``torch.nn.LPPool2d``."""

    _FUNCTION = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """3-D power-average pooling, as ``torch.nn.LPPool3d``."""

    _FUNCTION = staticmethod(F.lp_pool3d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Adaptive 3-D max pooling, as ``torch.nn.AdaptiveMaxPool3d``."""

    _FUNCTION = staticmethod(F.adaptive_max_pool3d)


class _MaxUnpoolNd(Module):
    _FUNCTION = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input, indices, output_size=None):
        """Each value of ``input`` written at its index of a zeroed output."""
        return type(self)._FUNCTION(input, indices, self.kernel_size, self.stride, self.padding,
                                    output_size)

    def extra_repr(self):
        """``kernel_size=..., stride=..., padding=...``."""
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The inverse of :class:`MaxPool1d` given its indices, as ``torch.nn.MaxUnpool1d``."""

    _FUNCTION = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """The inverse of :class:`MaxPool2d` given its indices, as ``torch.nn.MaxUnpool2d``."""

    _FUNCTION = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """The inverse of :class:`MaxPool3d` given its indices, as ``torch.nn.MaxUnpool3d``."""

    _FUNCTION = staticmethod(F.max_unpool3d)


class _FractionalMaxPoolNd(Module):
    _FUNCTION = None

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        if output_size is None and output_ratio is None:
            raise ValueError(f"{type(self).__name__} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        ratios = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,)
        if output_ratio is not None and not all(0 < r < 1 for r in ratios):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")
        self.kernel_size = kernel_size
        self.output_size = output_size
        self.output_ratio = output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input):
        """Fractional max pooling (and the indices, if asked for)."""
        return type(self)._FUNCTION(input, self.kernel_size, self.output_size, self.output_ratio,
                                    self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-D fractional max pooling, as ``torch.nn.FractionalMaxPool2d``."""

    _FUNCTION = staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling, as ``torch.nn.FractionalMaxPool3d``."""

    _FUNCTION = staticmethod(F.fractional_max_pool3d)
