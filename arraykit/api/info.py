"""The array API inspection namespace: ``arraykit.__array_namespace_info__()``."""

from __future__ import annotations

from ..core import dtypes as D
from ..core.devices import all_devices, as_device, default_device

__all__ = ["__array_namespace_info__"]


class Info:
    """Capabilities, devices and data types of arraykit (the array API's ``Info``)."""

    __slots__ = ()

    def capabilities(self):
        """Boolean indexing and data-dependent shapes are supported; at most 64 dims."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        """The device tensors are created on when no ``device`` is given."""
        return default_device()

    def devices(self):
        """Every device tensors can be placed on (JAX devices)."""
        return all_devices()

    def default_dtypes(self, *, device=None):
        """Default dtypes per kind (the same on every device)."""
        as_device(device)
        return {
            "real floating": D.DEFAULT_FLOAT,
            "complex floating": D.DEFAULT_COMPLEX,
            "integral": D.DEFAULT_INT,
            "indexing": D.DEFAULT_INDEX,
        }

    def dtypes(self, *, device=None, kind=None):
        """Supported dtypes by canonical name, optionally only those of ``kind``.

        ``kind`` is a kind name ('bool', 'signed integer', 'unsigned integer',
        'integral', 'real floating', 'complex floating', 'numeric') or a tuple of them.
        """
        as_device(device)
        if kind is None:
            return {d.name: d for d in D.ALL}
        kinds = kind if isinstance(kind, tuple) else (kind,)
        for k in kinds:
            if not isinstance(k, str):
                raise TypeError(f"dtypes: kind must be a str or a tuple of str, got {k!r}")
        return {d.name: d for d in D.ALL if D.isdtype(d, kinds)}

    def __repr__(self):
        return "arraykit.__array_namespace_info__()"


_INFO = Info()


def __array_namespace_info__():
    """The inspection namespace (capabilities, devices, dtypes and their defaults)."""
    return _INFO
