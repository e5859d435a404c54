"""Namespaces for earlier versions of the array API standard.

``arraykit`` itself is the 2025.12 namespace. ``Tensor.__array_namespace__``
with ``api_version="2023.12"`` or ``"2024.12"`` returns a module that shares
every function with it except where the standard changed a return type in
2025.12: ``meshgrid`` and ``broadcast_arrays`` return lists and
``__array_namespace_info__().devices()`` a list, as those versions specify. The
modules are importable as ``arraykit.api_2023_12`` and ``arraykit.api_2024_12``.

:func:`set_array_api_version` selects, for the whole process, the namespace that
``x.__array_namespace__()`` returns without ``api_version`` (as
``array_api_strict.set_array_api_strict_flags(api_version=...)``): libraries that
ask no version and were written for an earlier one (SciPy 1.17's test suite adds
``+ [None]`` to ``devices()``) get that version's namespace.
"""

from __future__ import annotations

import sys
import types

from ..tensors import namespace_registry
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


def set_array_api_version(version):
    """Make ``x.__array_namespace__()`` (no ``api_version``) return the namespace of
    ``version`` ("2023.12", "2024.12" or "2025.12", the default) for the whole
    process; the namespaces themselves (``arraykit``, ``arraykit.api_2024_12``) are
    unchanged. ValueError for other versions."""
    if version == LATEST:
        chosen = namespace_registry.namespace
    elif version in LEGACY:
        chosen = namespace_registry.versions[version]
    else:
        raise ValueError(
            f"unsupported array API version {version!r}; arraykit implements "
            f"{', '.join(LEGACY + (LATEST,))}"
        )
    namespace_registry.register(selected=chosen)


def get_array_api_version():
    """The version :func:`set_array_api_version` selected ("2025.12" by default)."""
    chosen = namespace_registry.selected or namespace_registry.namespace
    return chosen.__array_api_version__


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
