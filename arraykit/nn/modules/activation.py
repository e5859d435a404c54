"""Activation layers."""


from __future__ import annotations

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from .allocation import _empty

__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "SELU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "PReLU",
    "RReLU",
    "ReLU",
    "ReLU6",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softmax2d",
    "Softmin",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Tanh",
    "Tanhshrink",
    "Threshold",
]


class _InplaceActivation(Module):
    """An element-wise activation ``FUNCTION(input, inplace=...)`` with PyTorch's
    ``inplace`` option."""

    FUNCTION = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """The activation of ``input``."""
        return type(self).FUNCTION(input, inplace=self.inplace)

    def extra_repr(self):
        """``inplace=True`` when set."""
        return "inplace=True" if self.inplace else ""


class ReLU(_InplaceActivation):
    """``max(x, 0)``."""

    FUNCTION = staticmethod(F.relu)


class GELU(Module):
    """Gaussian error linear unit (exact, or ``approximate='tanh'``)."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        """``F.gelu(input, approximate)``."""
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        """``approximate='...'``."""
        return f"approximate={self.approximate!r}"


class SiLU(_InplaceActivation):
    """``x * sigmoid(x)``."""

    FUNCTION = staticmethod(F.silu)


class Mish(_InplaceActivation):
    """``x * tanh(softplus(x))``."""

    FUNCTION = staticmethod(F.mish)


class Hardswish(_InplaceActivation):
    """``x * relu6(x + 3) / 6``."""

    FUNCTION = staticmethod(F.hardswish)


class Hardsigmoid(_InplaceActivation):
    """``relu6(x + 3) / 6``."""

    FUNCTION = staticmethod(F.hardsigmoid)


class SELU(_InplaceActivation):
    """``scale * elu(x, alpha)`` with SELU's constants."""

    FUNCTION = staticmethod(F.selu)


class _Stateless(Module):
    """An element-wise activation without options: ``FUNCTION(input)``."""

    FUNCTION = None

    def forward(self, input):
        """The activation of ``input``."""
        return type(self).FUNCTION(input)


class Tanh(_Stateless):
    """``tanh(x)``."""

    FUNCTION = staticmethod(F.tanh)


class Sigmoid(_Stateless):
    """``1 / (1 + exp(-x))``."""

    FUNCTION = staticmethod(F.sigmoid)


class LogSigmoid(_Stateless):
    """``log(sigmoid(x))``."""

    FUNCTION = staticmethod(F.logsigmoid)


class Softsign(_Stateless):
    """``x / (1 + |x|)``."""

    FUNCTION = staticmethod(F.softsign)


class Tanhshrink(_Stateless):
    """``x - tanh(x)``."""

    FUNCTION = staticmethod(F.tanhshrink)


class _AlongDim(Module):
    """A normalising activation along ``dim``: ``FUNCTION(input, dim)``."""

    FUNCTION = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """The activation of ``input`` along ``dim``."""
        return type(self).FUNCTION(input, self.dim)

    def extra_repr(self):
        """``dim=...``."""
        return f"dim={self.dim}"


class Softmax(_AlongDim):
    """``softmax(x)`` along ``dim``."""

    FUNCTION = staticmethod(F.softmax)


class LogSoftmax(_AlongDim):
    """``log_softmax(x)`` along ``dim``."""

    FUNCTION = staticmethod(F.log_softmax)


class Softmin(_AlongDim):
    """``softmax(-x)`` along ``dim``."""

    FUNCTION = staticmethod(F.softmin)


class GLU(_AlongDim):
    """``a * sigmoid(b)`` of the two halves of the input along ``dim``."""

    FUNCTION = staticmethod(F.glu)

    def __init__(self, dim=-1):
        super().__init__(dim)


def _with_inplace(text, inplace):
    return text + (", inplace=True" if inplace else "")


class LeakyReLU(Module):
    """``x`` where positive, else ``negative_slope * x``."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        """``F.leaky_relu``."""
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        """``negative_slope=...`` (and ``inplace=True``)."""
        return _with_inplace(f"negative_slope={self.negative_slope}", self.inplace)


class ELU(Module):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""

    FUNCTION = staticmethod(F.elu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        """The activation with this layer's ``alpha``."""
        return type(self).FUNCTION(input, self.alpha, self.inplace)

    def extra_repr(self):
        """``alpha=...`` (and ``inplace=True``)."""
        return _with_inplace(f"alpha={self.alpha}", self.inplace)


class CELU(ELU):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    FUNCTION = staticmethod(F.celu)


class PReLU(Module):
    """``x`` where positive, else ``weight * x``: one learnable slope, or one per channel
    (``num_parameters``), all starting at ``init``."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(_empty((num_parameters,), device, dtype))
        self.reset_parameters()

    def reset_parameters(self):
        """Set every slope to ``init``."""
        init.constant_(self.weight, self.init)

    def forward(self, input):
        """``F.prelu(input, weight)``."""
        return F.prelu(input, self.weight)

    def extra_repr(self):
        """``num_parameters=...``."""
        return f"num_parameters={self.num_parameters}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        """``F.softplus``."""
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        """``beta=..., threshold=...``."""
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)`` (``min_value``/``max_value``: PyTorch's deprecated names)."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            min_val = min_value
        if max_value is not None:
            max_val = max_value
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val {min_val} must not exceed max_val {max_val}")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        """``F.hardtanh``."""
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        """``min_val=..., max_val=...`` (and ``inplace=True``)."""
        return _with_inplace(f"min_val={self.min_val}, max_val={self.max_val}", self.inplace)


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        """``inplace=True`` when set."""
        return "inplace=True" if self.inplace else ""


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        """``F.threshold``."""
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        """``threshold=..., value=...`` (and ``inplace=True``)."""
        return _with_inplace(f"threshold={self.threshold}, value={self.value}", self.inplace)


class _Shrink(Module):
    FUNCTION = None

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        """The shrinkage of ``input`` by ``lambd``."""
        return type(self).FUNCTION(input, self.lambd)

    def extra_repr(self):
        """``lambd``."""
        return str(self.lambd)


class Softshrink(_Shrink):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""

    FUNCTION = staticmethod(F.softshrink)


class Hardshrink(_Shrink):
    """``x`` where ``|x| > lambd``, else 0."""

    FUNCTION = staticmethod(F.hardshrink)


class RReLU(Module):
    """Randomized leaky ReLU: random slopes in ``[lower, upper]`` while training, their
    mean in eval mode."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        """``F.rrelu`` in this module's mode."""
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        """``lower=..., upper=...`` (and ``inplace=True``)."""
        return _with_inplace(f"lower={self.lower}, upper={self.upper}", self.inplace)


class Softmax2d(Module):
    """``softmax`` over the channels of (N, C, H, W) or (C, H, W) inputs, as
    ``torch.nn.Softmax2d``."""

    def forward(self, input):
        """``F.softmax(input, dim=-3)``."""
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input of 3 or 4 dimensions, got shape {tuple(input.shape)}")
        return F.softmax(input, -3)
