"""The one way the tensor layer reaches the namespace above it.

``Tensor``'s operators (``x + y``, ``x += y``, ``x @ y``), its writes of Python
scalars and ``x.__array_namespace__()`` call functions that the namespace
(:mod:`arraykit.api`) defines. The tensor layer never imports the namespace;
the namespace modules register what the operators need here when they are
imported, and the operators look it up when they are called.
"""

from __future__ import annotations

elementwise = None  # arraykit.api.elementwise: the operator functions and inplace
matmul = None  # arraykit.api.matrix_products.matmul
namespace = None  # the package arraykit (the 2025.12 namespace)
versions = None  # {"2023.12": namespace, "2024.12": namespace}
selected = None  # what x.__array_namespace__() returns (None: namespace); set_array_api_version

_NAMES = ("elementwise", "matmul", "namespace", "versions", "selected")


def register(**entries):
    """Install entries (``elementwise=``, ``matmul=``, ``namespace=``, ``versions=``,
    ``selected=``)."""
    for name, value in entries.items():
        if name not in _NAMES:
            raise KeyError(f"unknown namespace registry entry {name!r}; known: {_NAMES}")
        globals()[name] = value
