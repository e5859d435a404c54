"""Names of kernels that mean the same program in every process.

The persistent compilation cache (:mod:`.compilation_cache`) can find an eager
kernel's executable by what identifies the kernel in the launcher's cache (its body
function, static arguments, operand layouts and dtypes) instead of by its lowered
text, which costs a trace and a lowering to make. That key only names the same
program in another process when each part of it is written the same way there:
:func:`stable_text` writes it, or says it cannot (None), in which case the program
is found by its lowered text as before.

Functions and classes are named by module and qualified name, and only those of
arraykit (whose source is part of the cache key), JAX, NumPy and Python's
standard modules ``math`` and ``operator`` (whose versions are): a user's function
may change between two processes under the same name.
"""

from __future__ import annotations

import enum
import sys

import numpy as np

from ..core import dtypes as D
from ..core import layout as L

_SCALARS = (bool, int, float, complex, str, bytes, type(None))
_NAMED_MODULES = ("arraykit", "jax", "jaxlib", "numpy", "math", "operator", "builtins")


def stable_text(value):
    """A text that names ``value`` the same way in every process running the same
    arraykit, JAX and NumPy, or None when there is none (a lambda, a closure, an
    object named only by its address, a user's function)."""
    parts = []
    return "".join(parts) if _write(value, parts) else None


def _write(value, parts):
    kind = type(value)
    if kind in _SCALARS or isinstance(value, np.generic):
        parts.append(f"{kind.__name__}:{value!r}")
        return True
    if kind in (tuple, list):
        parts.append("(" if kind is tuple else "[")
        for item in value:
            if not _write(item, parts):
                return False
            parts.append(",")
        parts.append(")" if kind is tuple else "]")
        return True
    if kind is slice:
        parts.append("slice")
        return _write((value.start, value.stop, value.step), parts)
    if value is Ellipsis:
        parts.append("...")
        return True
    if isinstance(value, np.dtype):
        parts.append(f"np.dtype:{value.str}")
        return True
    if kind is L.Layout:
        parts.append(f"layout:{value.shape}/{value.strides}/{value.offset}")
        return True
    if kind is D.DType:
        parts.append(f"dtype:{value.name}")
        return True
    if isinstance(value, enum.Enum):  # jax.lax.Precision.HIGHEST and the like
        name = _qualified_name(kind)
        if name is not None:
            parts.append(f"{name}.{value.name}")
        return name is not None
    name = _qualified_name(value)
    if name is not None:
        parts.append(name)
        return True
    return False


def _qualified_name(value):
    """``module:qualname`` of a function or class that its module holds under that
    name (so a lambda, a closure or a rebound name has none), from a module whose
    code the cache key pins; else None."""
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)) or "<" in qualname:
        return None
    if module.split(".")[0] not in _NAMED_MODULES or module not in sys.modules:
        return None
    found = sys.modules[module]
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if found is not value:
        return None
    return f"{module}:{qualname}"
