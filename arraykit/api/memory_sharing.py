"""Aliasing queries between tensors (NumPy's shares_memory / may_share_memory)."""

from __future__ import annotations

from ..core import layout as L


def shares_memory(a, b, /):
    """Whether ``a`` and ``b`` address at least one common storage element (exact)."""
    return a._storage is b._storage and L.overlap(a._layout, b._layout)


def may_share_memory(a, b, /):
    """Whether ``a`` and ``b`` might share memory (same storage, intersecting extents)."""
    return a._storage is b._storage and L.may_overlap(a._layout, b._layout)
