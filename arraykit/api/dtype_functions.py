"""Data type functions of the array API: astype, can_cast, finfo, iinfo, isdtype, result_type.

Promotion itself lives in :mod:`arraykit.core.dtypes` (the standard's table; mixed kinds
follow NumPy; Python scalars are weak and follow the standard's scalar rules).
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from ..core import dtypes as D
from ..core.devices import as_device
from ..core.dtypes import isdtype
from ..kernels.bodies import elementwise
from ..kernels.launch import apply
from ..tensors.tensor_type import Tensor

__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]


@elementwise  # small CPU casts of new shapes share size-bucket programs
def _cast(x, np_dtype):
    return x.astype(np_dtype)


def astype(x, dtype, /, *, copy=True, device=None):
    """``x`` converted to ``dtype`` (any direction except complex to real; complex to
    bool is ``x != 0``).

    With ``copy=False`` and nothing to change, ``x`` itself is returned. Casting
    complex to a real dtype raises TypeError: take ``real`` or ``imag`` first.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"astype expects an arraykit tensor, got {type(x).__name__}")
    dtype = D.as_dtype(dtype)
    if x._dtype.kind == "complex" and dtype.kind not in ("complex", "bool"):
        raise TypeError(
            f"astype: casting {x._dtype} to the real dtype {dtype} would drop the imaginary "
            "part; use real(x) or imag(x) first"
        )
    target = None if device is None else as_device(device)
    moved = target is not None and target != x.device
    if dtype is x._dtype:
        if moved:
            return x.to_device(target)
        return x.clone() if copy else x
    out = apply(_cast, (x,), (dtype.np,))
    return out.to_device(target) if moved else out


def _dtype_of(value, what):
    if isinstance(value, Tensor):
        return value._dtype
    if isinstance(value, D.DType):
        return value
    try:
        return D.as_dtype(value)
    except TypeError:
        raise TypeError(f"{what}: expected an arraykit dtype or tensor, got {value!r}") from None


def can_cast(from_, to, /):
    """Whether ``from_`` (a dtype or tensor) casts to ``to`` under the promotion rules.

    True exactly when promoting ``from_`` with some dtype can give ``to`` within
    one kind (bool, integer, floating) of the standard's table.
    """
    return D.can_cast(_dtype_of(from_, "can_cast"), _dtype_of(to, "can_cast"))


class finfo_object:
    """Machine limits of a real floating dtype (``finfo(complex64)`` describes float32)."""

    __slots__ = ("bits", "eps", "max", "min", "smallest_normal", "dtype")

    def __init__(self, dtype):
        info = ml_dtypes.finfo(dtype.np)  # NumPy's finfo, extended to bfloat16
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.smallest_normal = float(info.smallest_normal)
        self.dtype = dtype

    def __repr__(self):
        return (
            f"finfo(bits={self.bits}, eps={self.eps}, max={self.max}, min={self.min}, "
            f"smallest_normal={self.smallest_normal}, dtype={self.dtype})"
        )


class iinfo_object:
    """Machine limits of an integer dtype."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, dtype):
        info = np.iinfo(dtype.np)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = dtype

    def __repr__(self):
        return f"iinfo(bits={self.bits}, max={self.max}, min={self.min}, dtype={self.dtype})"


@functools.lru_cache(maxsize=None)
def _finfo(dtype):
    return finfo_object(D.real_dtype(dtype))


@functools.lru_cache(maxsize=None)
def _iinfo(dtype):
    return iinfo_object(dtype)


def finfo(type, /):
    """Limits of a floating dtype (or of a tensor's dtype); complex gives its real part's."""
    dtype = _dtype_of(type, "finfo")
    if dtype.kind not in ("float", "complex"):
        raise TypeError(f"finfo: {dtype} is not a floating-point dtype; use iinfo for integers")
    return _finfo(dtype)


def iinfo(type, /):
    """Limits of an integer dtype (or of a tensor's dtype)."""
    dtype = _dtype_of(type, "iinfo")
    if dtype.kind not in ("int", "uint"):
        raise TypeError(f"iinfo: {dtype} is not an integer dtype; use finfo for floating point")
    return _iinfo(dtype)


def result_type(*arrays_and_dtypes):
    """The dtype of an operation on tensors, dtypes and Python scalars.

    Tensors and dtypes promote through the standard's table; Python scalars are
    weak (they take the others' dtype when their kind allows, see
    :func:`arraykit.core.dtypes.promote_scalar`). NumPy's float64/complex128 scalars
    subclass Python's float/complex and are weak too, as in the element-wise
    functions. At least one tensor or dtype is needed.
    """
    dtype = None
    scalars = []
    for value in arrays_and_dtypes:
        if isinstance(value, Tensor):
            other = value._dtype
        elif isinstance(value, D.DType):
            other = value
        elif isinstance(value, np.generic) and not isinstance(value, (float, complex)):
            other = D.from_numpy(value.dtype)
        elif D.scalar_kind(value) is not None:
            scalars.append(value)
            continue
        else:
            other = _dtype_of(value, "result_type")
        dtype = other if dtype is None else D.promote(dtype, other)
    if dtype is None:
        raise ValueError(
            "result_type needs at least one tensor or dtype "
            f"(got {len(arrays_and_dtypes)} Python scalar(s))"
        )
    for value in scalars:
        dtype = D.promote_scalar(dtype, value)
    return dtype
