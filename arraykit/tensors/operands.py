"""Operands resolved once: what a binary function, an in-place operator or a write takes.

Every public entry that accepts "a tensor, a NumPy array or a Python scalar" turns it
into the one internal form the kernels take, here and nowhere else:

- :func:`promote` for the two operands of a binary function or in-place operator
  (``x + y``, ``x += y``, ``x.add_(y)``, ``clip``, ``where``, ``isin``...): tensors pass
  through, NumPy arrays and scalars become tensors on the other operand's device,
  Python scalars become 0-d values of the promoted dtype (the standard's scalar
  promotion); anything else raises :class:`OperandTypeError`.
- :func:`writable_value` for a value written into a tensor (``x[k] = v``,
  ``x.copy_(v)``, ``x.fill_(v)``, ``scatter``'s source), cast to the target's dtype
  as PyTorch casts.

The tensor class is registered by :mod:`.tensor_type` when it is defined (this module
sits below it, so that the Tensor's own methods can use it).
"""

from __future__ import annotations

import warnings

import jax
import numpy as np

from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import check_same_device, default_device, host_to_device, put
from ..core.storage import Storage
from . import namespace_registry

_PROMOTE = D._PROMOTION
_SCALAR_TYPES = frozenset((bool, int, float, complex))

Tensor = None  # the tensor class, registered by tensor_type.py


def register_tensor_type(cls):
    """Tell this module which class is the tensor (called once by tensor_type.py)."""
    global Tensor
    Tensor = cls


class OperandTypeError(TypeError):
    """An operand that is neither a tensor, an array nor a Python scalar.

    Operators catch it and return ``NotImplemented``.
    """


_SCALARS = {}
_SCALARS_MAX = 1024


def scalar(dtype, value):
    """A Python scalar as a 0-d operand of ``dtype``.

    Nonzero real values are cached as uncommitted device scalars (a jitted call
    takes those ~4 us faster than NumPy scalars). Zeros, NaNs and complex values,
    whose signs or identity a dict key would not tell apart, stay NumPy scalars.
    """
    key = (dtype, value)
    cached = _SCALARS.get(key)
    if cached is not None:
        return cached
    with np.errstate(over="ignore"):  # a float out of range gives inf, quietly (PyTorch)
        converted = dtype.np.type(value)
    if type(value) is complex or value == 0 or value != value:
        return converted
    cached = put(converted)
    if isinstance(cached, jax.core.Tracer):  # made inside a trace: it must not outlive it
        return converted
    if len(_SCALARS) >= _SCALARS_MAX:
        _SCALARS.clear()
    _SCALARS[key] = cached
    return cached


def from_numpy(arr, device):
    """A new tensor on ``device`` holding a private copy of the NumPy array ``arr``."""
    arr = np.asarray(arr, order="C")
    dtype = D.from_numpy(arr.dtype)
    buf = host_to_device(arr, device)  # private: the caller may change ``arr`` afterwards
    return Tensor._make(Storage(buf, dtype, device), L.contiguous(arr.shape), dtype)


def as_operand(x, like):
    """``x`` as a tensor or Python scalar; arrays go to ``like``'s device (a private
    copy, see :func:`from_numpy`); anything else raises :class:`OperandTypeError`."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, np.generic)) and not isinstance(x, (float, complex)):
        device = like.device if isinstance(like, Tensor) else default_device()
        return from_numpy(x, device)
    if D.scalar_kind(x) is not None:
        return x
    raise OperandTypeError(f"unsupported operand type {type(x).__name__}")


def promote(x1, x2, *, broadcast=True, name=None):
    """Resolve two operands: (a, b, result dtype).

    Tensors pass through (checked to share a device, and with ``broadcast`` to have
    broadcast-compatible shapes); Python scalars become 0-d values of the result
    dtype; NumPy arrays and scalars become tensors; at least one operand must be a
    tensor or an array (``name`` is the function an error names).
    """
    if type(x1) is Tensor:
        if type(x2) is Tensor:
            dtype = _PROMOTE[x1._dtype, x2._dtype]
            if x1._storage.device is not x2._storage.device:
                check_same_device(x1.device, x2.device)
            if broadcast and x1._layout.shape != x2._layout.shape:
                L.broadcast_shapes(x1._layout.shape, x2._layout.shape)
            return x1, x2, dtype
        if type(x2) in _SCALAR_TYPES:
            dtype = D.promote_scalar(x1._dtype, x2)
            return x1, scalar(dtype, x2), dtype
    elif type(x2) is Tensor and type(x1) in _SCALAR_TYPES:
        dtype = D.promote_scalar(x2._dtype, x1)
        return scalar(dtype, x1), x2, dtype
    return _promote_general(x1, x2, broadcast, name)


def _promote_general(x1, x2, broadcast, name):
    """:func:`promote` for anything but a tensor with a tensor or a Python scalar."""
    if not isinstance(x1, Tensor) and not isinstance(x2, Tensor):
        arrays = (np.ndarray, np.generic)
        if not (isinstance(x1, arrays) or isinstance(x2, arrays)):
            who = f"{name}() expects" if name else "expected"
            raise OperandTypeError(
                f"{who} at least one arraykit tensor (arraykit.Tensor) or NumPy array, got "
                f"{type(x1).__name__} and {type(x2).__name__}"
            )
    a = as_operand(x1, x2)
    b = as_operand(x2, a)
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        dtype = _PROMOTE[a._dtype, b._dtype]
        check_same_device(a.device, b.device)
        if broadcast:
            L.broadcast_shapes(a.shape, b.shape)
        return a, b, dtype
    if isinstance(a, Tensor):
        dtype = D.promote_scalar(a._dtype, b)
        return a, scalar(dtype, b), dtype
    dtype = D.promote_scalar(b._dtype, a)
    return scalar(dtype, a), b, dtype


def check_writable_dtype(value_dtype, target_dtype):
    """Raise TypeError when the result of an in-place operation, of ``value_dtype``,
    cannot be stored into ``target_dtype`` (PyTorch's same-kind rule,
    :func:`arraykit.core.dtypes.writable`)."""
    if not D.writable(value_dtype, target_dtype):
        raise TypeError(
            f"result type {value_dtype} can't be cast to the desired output type "
            f"{target_dtype} (an in-place result casts only within its kind or to a higher one)"
        )


def writable_value(value, target):
    """``value`` (tensor, array-like or scalar) as a tensor or 0-d value to write into
    the tensor ``target`` (same device). Values of any dtype are cast to ``target``'s
    dtype as PyTorch and NumPy cast them: floats into integers truncate toward zero,
    complex arrays into a real tensor keep their real part with a warning
    (PyTorch's and NumPy's), a Python complex into a real tensor raises TypeError."""
    if isinstance(value, Tensor):
        check_same_device(value.device, target.device, "write")
        if value._dtype.kind == "complex" and target._dtype.kind != "complex":
            _warn_complex_to_real(target)
            value = namespace_registry.elementwise.real(value)
        return value
    kind = D.scalar_kind(value)
    if kind is not None:
        if kind == "complex" and target._dtype.kind != "complex":
            raise TypeError(
                f"cannot write the Python complex {value!r} into a tensor of dtype "
                f"{target._dtype} (write its real part)"
            )
        return scalar(target._dtype, value)
    arr = np.asarray(value)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"cannot write {type(value).__name__} of dtype {arr.dtype} into a tensor")
    if arr.dtype.kind == "c" and target._dtype.kind != "complex":
        _warn_complex_to_real(target)
        arr = arr.real
    if not isinstance(value, np.ndarray):
        arr = arr.astype(target._dtype.np)
    return from_numpy(arr, target.device)


def _warn_complex_to_real(target):
    warnings.warn(
        f"casting complex values to {target._dtype} discards the imaginary part",
        UserWarning, stacklevel=4,
    )
