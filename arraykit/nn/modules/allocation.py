"""Uninitialised parameter storage for the layers' constructors."""


from __future__ import annotations

from ...api import creation as C
from ...core import dtypes as D


def _empty(shape, device, dtype):
    return C.empty(shape, device=device, dtype=dtype if dtype is not None else D.float32)
