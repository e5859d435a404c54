"""Namespaces for earlier versions of the array API standard.

``arraykit`` itself is the 2025.12 namespace. ``Tensor.__array_namespace__``
with ``api_version="2023.12"`` or ``"2024.12"`` returns a module that shares
every function with it except where the standard changed a return type in
2025.12: ``meshgrid`` and ``broadcast_arrays`` return lists and
``__array_namespace_info__().devices()`` a list, as those versions specify. The
modules are importable as ``arraykit.api_2023_12`` and ``arraykit.api_2024_12``.
"""

from __future__ import annotations

import sys
import types

from . import creation, info, manipulation

LATEST = "2025.12"
LEGACY = ("2023.12", "2024.12")


def meshgrid(*arrays, indexing="xy"):
    """Coordinate grids from 1-D tensors, as a list (array API before 2025.12)."""
    return list(creation.meshgrid(*arrays, indexing=indexing))


def broadcast_arrays(*arrays):
    """Views of ``arrays`` broadcast against one another, as a list (before 2025.12)."""
    return list(manipulation.broadcast_arrays(*arrays))


class _ListDevicesInfo(info.Info):
    """Inspection namespace whose ``devices()`` is a list (before 2025.12)."""

    __slots__ = ()

    def devices(self):
        """Every device tensors can be placed on (JAX devices), as a list."""
        return list(super().devices())


_LEGACY_INFO = _ListDevicesInfo()


def __array_namespace_info__():
    """The inspection namespace of the earlier versions (``devices()`` is a list)."""
    return _LEGACY_INFO


_OVERRIDES = {
    "meshgrid": meshgrid,
    "broadcast_arrays": broadcast_arrays,
    "__array_namespace_info__": __array_namespace_info__,
}


def build(package, version):
    """The namespace module of ``version`` built from the 2025.12 ``package``."""
    name = f"{package.__name__}.api_{version.replace('.', '_')}"
    module = types.ModuleType(name, f"The array API {version} namespace of arraykit.")
    for key in package.__all__:
        setattr(module, key, getattr(package, key))
    for key, value in _OVERRIDES.items():
        setattr(module, key, value)
    module.__array_api_version__ = version
    module.__all__ = list(package.__all__) + ["__array_namespace_info__"]
    sys.modules[name] = module
    return module
