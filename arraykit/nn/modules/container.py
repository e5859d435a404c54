"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``."""


from __future__ import annotations

import operator
import warnings

from ..module import Module
from ..parameter import Parameter

__all__ = ["Container", "ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]


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


def _as_parameter(value):
    """A Parameter from ``value`` (a tensor becomes a Parameter, as PyTorch's containers do)."""
    return value if value is None or isinstance(value, Parameter) else Parameter(value)


def _describe(p):
    return (f"Parameter containing: [{p.dtype} of size {'x'.join(map(str, p.shape))}"
            f"{'' if p.device is None else f' ({p.device})'}]")


class ParameterList(Module):
    """A list of parameters, registered as ``"0"``, ``"1"``... (tensors are made Parameters)."""

    def __init__(self, values=None):
        super().__init__()
        self.extend(() if values is None else values)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __getitem__(self, idx):
        values = list(self._parameters.values())
        if isinstance(idx, slice):
            return type(self)(values[idx])
        return values[_position(idx, len(values))]

    def __setitem__(self, idx, value):
        self.register_parameter(str(_position(idx, len(self))), _as_parameter(value))

    def append(self, value):
        """Add ``value`` at the end; returns self."""
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values):
        """Append every value of the iterable ``values``; returns self."""
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        """One line per parameter: ``(i): Parameter containing: [dtype of size ...]``."""
        return "\n".join(f"({k}): {_describe(p)}" for k, p in self._parameters.items())


class ParameterDict(Module):
    """A dict of parameters under their keys (tensors are made Parameters)."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        """The keys, in insertion order."""
        return self._parameters.keys()

    def values(self):
        """The parameters, in insertion order."""
        return self._parameters.values()

    def items(self):
        """``(key, parameter)`` pairs, in insertion order."""
        return self._parameters.items()

    def get(self, key, default=None):
        """The parameter under ``key``, or ``default``."""
        return self._parameters.get(key, default)

    def pop(self, key):
        """Remove ``key`` and return its parameter."""
        return self._parameters.pop(key)

    def update(self, parameters):
        """Add the parameters of a mapping or of an iterable of ``(key, value)`` pairs."""
        pairs = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in pairs:
            self[key] = value

    def extra_repr(self):
        """One line per parameter: ``(key): Parameter containing: [dtype of size ...]``."""
        return "\n".join(f"({k}): {_describe(p)}" for k, p in self._parameters.items())


class Container(Module):
    """PyTorch's deprecated ``nn.Container``: a :class:`Module` whose keyword arguments
    become its submodules (it warns, as PyTorch's does)."""

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn("nn.Container is deprecated. All of it's functionality is now implemented in nn.Module. "
                      "Subclass that instead.", DeprecationWarning, stacklevel=2)
        for name, module in kwargs.items():
            self.add_module(name, module)
