"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``."""


from __future__ import annotations

import operator

from ..module import Module

__all__ = ["Sequential", "ModuleList", "ModuleDict"]


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
