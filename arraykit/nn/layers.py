"""PyTorch's layers, containers and losses over :mod:`arraykit.nn.functional`, with
PyTorch's default initialisations (:mod:`arraykit.nn.init`)."""

from __future__ import annotations

import math
import operator

from ..api import creation as C
from ..core import dtypes as D
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = [
    "Linear", "Conv2d", "ReLU", "GELU", "SiLU", "Dropout", "Flatten", "Embedding", "LayerNorm",
    "Sequential", "ModuleList", "ModuleDict", "CrossEntropyLoss", "MSELoss",
]


def _empty(shape, device, dtype):
    return C.empty(shape, device=device, dtype=dtype if dtype is not None else D.float32)


class Linear(Module):
    """``y = x @ weight.T + bias``; weight (out, in) kaiming-uniform(a=√5), bias
    ``U(-1/√in, 1/√in)``, as in PyTorch."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_empty((out_features, in_features), device, dtype))
        self.bias = Parameter(_empty((out_features,), device, dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """Draw the weight and bias again (PyTorch's default initialisation)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        """``F.linear(input, weight, bias)``."""
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        """``in_features=..., out_features=..., bias=...``."""
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


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


class Dropout(Module):
    """Zero elements with probability ``p`` while training (scaling the rest by 1/(1-p));
    the identity in eval mode."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        """``F.dropout`` with a fresh random key while training."""
        if not self.training or self.p == 0.0:
            return input
        return F.dropout(input, self.p, True, self.inplace)

    def extra_repr(self):
        """``p=..., inplace=...``."""
        return f"p={self.p}, inplace={self.inplace}"


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


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dimensions; an elementwise
    affine weight (ones) and bias (zeros) when ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(C.ones(self.normalized_shape, device=device, dtype=dtype or D.float32))
            self.bias = (Parameter(C.zeros(self.normalized_shape, device=device, dtype=dtype or D.float32))
                         if bias else None)
        else:
            self.weight = None
            self.bias = None
        self._has_bias = bias

    def forward(self, input):
        """``F.layer_norm`` with this layer's shape, parameters and eps."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        """``normalized_shape, eps=..., elementwise_affine=..., bias=...``."""
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self._has_bias}")


# ---------------------------------------------------------------------- containers


def _position(idx, n):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for a container of {n} modules")
    return idx % n


class _NumberedModules(Module):
    """What :class:`Sequential` and :class:`ModuleList` share: submodules in order,
    indexed by position (negative positions count from the end)."""

    def _index(self, idx):
        return _position(idx, len(self._modules))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class Sequential(_NumberedModules):
    """Modules called one after the other: ``Sequential(m0, m1, ...)`` (named ``"0"``,
    ``"1"``...) or ``Sequential(OrderedDict(name=module, ...))``."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], dict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx):
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return type(self)(dict(items[idx]))
        return items[self._index(idx)][1]

    def __setitem__(self, idx, module):
        name = list(self._modules)[self._index(idx)]
        self.add_module(name, module)

    def __delitem__(self, idx):
        names = list(self._modules)
        for name in names[idx] if isinstance(idx, slice) else [names[self._index(idx)]]:
            del self._modules[name]

    def forward(self, input):
        """Pass ``input`` through every module in order."""
        for module in self._modules.values():
            input = module(input)
        return input

    def append(self, module):
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self


class ModuleList(_NumberedModules):
    """A list of submodules, registered as ``"0"``, ``"1"``... (no ``forward``)."""

    def __init__(self, modules=None):
        super().__init__()
        self.extend(() if modules is None else modules)

    def __getitem__(self, idx):
        modules = list(self._modules.values())
        if isinstance(idx, slice):
            return type(self)(modules[idx])
        return modules[self._index(idx)]

    def __setitem__(self, idx, module):
        self.add_module(str(self._index(idx)), module)

    def __delitem__(self, idx):
        modules = list(self._modules.values())
        del modules[idx if isinstance(idx, slice) else self._index(idx)]
        self._modules.clear()
        self.extend(modules)

    def append(self, module):
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Append every module of the iterable ``modules``; returns self."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        """Insert ``module`` before position ``index``."""
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        self.extend(modules)


class ModuleDict(Module):
    """A dict of submodules under their keys (no ``forward``)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        """The keys, in insertion order."""
        return self._modules.keys()

    def values(self):
        """The modules, in insertion order."""
        return self._modules.values()

    def items(self):
        """``(key, module)`` pairs, in insertion order."""
        return self._modules.items()

    def pop(self, key):
        """Remove ``key`` and return its module."""
        return self._modules.pop(key)

    def update(self, modules):
        """Add the modules of a mapping or of an iterable of ``(key, module)`` pairs."""
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, module in pairs:
            self[key] = module


# ---------------------------------------------------------------------- losses


class CrossEntropyLoss(Module):
    """``F.cross_entropy`` with fixed options (``weight`` is a buffer)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__()
        if size_average is not None or reduce is not None:
            raise TypeError("CrossEntropyLoss: size_average and reduce are deprecated; use reduction=")
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.reduction = reduction
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        """The loss of logits ``input`` against ``target``."""
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class MSELoss(Module):
    """``F.mse_loss`` with a fixed ``reduction``."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            raise TypeError("MSELoss: size_average and reduce are deprecated; use reduction=")
        self.reduction = reduction

    def forward(self, input, target):
        """The mean (or sum, or elementwise) squared error."""
        return F.mse_loss(input, target, reduction=self.reduction)
