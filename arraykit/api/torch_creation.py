"""PyTorch's creation functions beside the standard's: ``logspace``, ``tril_indices``,
``triu_indices``, ``as_tensor`` (which is :func:`arraykit.asarray`: no copy when
``data`` already has the dtype and device)."""

from __future__ import annotations

import numpy as np

from ..core import dtypes as D
from . import creation as C
from . import torch_keywords as T
from .elementwise import pow as _pow

__all__ = ["as_tensor", "logspace", "tril_indices", "triu_indices"]

as_tensor = C.asarray


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``steps`` values ``base ** t`` for ``t`` evenly spaced from ``start`` to ``end``
    (computed in float64, then rounded to ``dtype``, float32 by default)."""
    if out is not None:
        def make(dtype, device):
            return logspace(start, end, steps, base, dtype=dtype, device=device)
        return T.created_into("logspace", make, out, dtype, device)
    if steps < 0:
        raise RuntimeError(f"number of steps must be non-negative, got {steps}")
    dtype = D.DEFAULT_FLOAT if dtype is None else D.as_dtype(dtype)
    exponents = C.linspace(float(start), float(end), steps, dtype=D.float64, device=device)
    result = _pow(float(base), exponents).to(dtype)
    return result.requires_grad_() if requires_grad else result


def _triangle_indices(row, col, offset, upper, dtype, device, name):
    rows, cols = np.triu_indices(row, offset, col) if upper else np.tril_indices(row, offset, col)
    dtype = D.int64 if dtype is None else D.as_dtype(dtype)
    if dtype not in (D.int32, D.int64):
        raise RuntimeError(f"{name}: dtype must be int32 or int64, got {dtype}")
    return C.asarray(np.stack([rows, cols]).astype(dtype.np), device=device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The ``(2, n)`` row and column indices of the lower triangle of a ``row x col``
    matrix (on and below diagonal ``offset``), row by row."""
    return _triangle_indices(row, col, offset, False, dtype, device, "tril_indices")


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The ``(2, n)`` indices of the upper triangle (on and above diagonal ``offset``)."""
    return _triangle_indices(row, col, offset, True, dtype, device, "triu_indices")
