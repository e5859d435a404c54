"""Creation functions of the array API (asarray, zeros, ones, empty, full, arange...)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from . import dtypes as D
from . import layout as L
from .devices import as_device
from .storage import Storage
from .tensor import Tensor


__all__ = ["arange", "asarray", "empty", "from_numpy", "full", "ones", "zeros"]

def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    shape = tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"negative dimensions are not allowed, got shape {shape}")
    return shape


def _wrap(buf, shape, dtype, device, shared=False):
    return Tensor._make(Storage(buf, dtype, device, shared), L.contiguous(shape), dtype)


def _filled(shape, value, dtype, device):
    shape = _shape(shape)
    device = as_device(device)
    buf = _fill_kernel(math.prod(shape), dtype.np, device)(value)
    return _wrap(buf, shape, dtype, device)


_FILL = {}


def _fill_kernel(n, np_dtype, device):
    key = (n, np_dtype, device)
    fn = _FILL.get(key)
    if fn is None:
        sharding = jax.sharding.SingleDeviceSharding(device)
        fn = jax.jit(lambda v: jnp.full((n,), v, dtype=np_dtype), out_shardings=sharding)
        _FILL[key] = fn
    return fn


def _default_for(value):
    if isinstance(value, bool):
        return D.bool_
    if isinstance(value, int):
        return D.DEFAULT_INT
    if isinstance(value, float):
        return D.DEFAULT_FLOAT
    if isinstance(value, complex):
        return D.DEFAULT_COMPLEX
    return D.from_numpy(np.asarray(value).dtype)


def zeros(shape, *, dtype=None, device=None):
    """A new tensor of zeros."""
    return _filled(shape, 0, D.DEFAULT_FLOAT if dtype is None else D.as_dtype(dtype), device)


def ones(shape, *, dtype=None, device=None):
    """A new tensor of ones."""
    return _filled(shape, 1, D.DEFAULT_FLOAT if dtype is None else D.as_dtype(dtype), device)


def empty(shape, *, dtype=None, device=None):
    """A new tensor with unspecified values (zeros: JAX buffers are always initialized)."""
    return zeros(shape, dtype=dtype, device=device)


def full(shape, fill_value, *, dtype=None, device=None):
    """A new tensor filled with ``fill_value``."""
    dtype = _default_for(fill_value) if dtype is None else D.as_dtype(dtype)
    return _filled(shape, fill_value, dtype, device)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """Evenly spaced values in ``[start, stop)``."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if dtype is None:
        is_float = any(isinstance(v, float) for v in (start, stop, step))
        dtype = D.DEFAULT_FLOAT if is_float else D.DEFAULT_INT
    dtype = D.as_dtype(dtype)
    n = max(0, math.ceil((stop - start) / step))
    values = start + np.arange(n, dtype=np.float64 if dtype.kind == "float" else np.int64) * step
    return from_numpy(values.astype(dtype.np), device=device)


def from_numpy(array, *, device=None):
    """A tensor holding a copy of a NumPy array's values."""
    array = np.asarray(array)
    dtype = D.from_numpy(array.dtype)
    device = as_device(device)
    buf = jax.device_put(np.ascontiguousarray(array).reshape(-1), device)
    return _wrap(buf, array.shape, dtype, device)


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """Convert a tensor, NumPy/JAX array, Python scalar or nested sequence to a tensor.

    A tensor is returned as is when no copy or conversion is needed; a JAX array is
    wrapped without a copy (its buffer is then never donated).
    """
    if dtype is not None:
        dtype = D.as_dtype(dtype)
    if isinstance(obj, Tensor):
        if (dtype is None or dtype is obj.dtype) and (device is None or as_device(device) == obj.device) and not copy:
            return obj
        if copy is False:
            raise ValueError("asarray(copy=False) would need a copy (dtype or device change)")
        out = obj.clone() if dtype is None or dtype is obj.dtype else _astype(obj, dtype)
        return out if device is None else out.to_device(device)
    if isinstance(obj, jax.Array) and not isinstance(obj, jax.core.Tracer):
        if dtype is not None and dtype.np != obj.dtype:
            obj = obj.astype(dtype.np)
        target = as_device(device) if device is not None else next(iter(obj.devices()))
        buf = jax.device_put(obj.reshape(-1), target)
        if copy:
            buf = jnp.array(buf, copy=True)
        return _wrap(buf, obj.shape, D.from_numpy(buf.dtype), target, shared=not copy)
    if copy is False and not isinstance(obj, np.ndarray):
        raise ValueError(f"asarray(copy=False) cannot wrap a {type(obj).__name__} without a copy")
    if dtype is None:
        array = _infer(obj)
    else:
        array = np.asarray(obj, dtype=dtype.np)
    return from_numpy(array, device=device)


def _infer(obj):
    """NumPy array for ``obj`` with the array API's default dtypes for Python values."""
    if isinstance(obj, np.ndarray) or isinstance(obj, np.generic):
        return np.asarray(obj)
    if hasattr(obj, "__dlpack__") or hasattr(obj, "__array__"):
        return np.asarray(obj)
    array = np.asarray(obj)
    if array.dtype.kind == "f":
        return array.astype(D.DEFAULT_FLOAT.np)
    if array.dtype.kind == "c":
        return array.astype(D.DEFAULT_COMPLEX.np)
    if array.dtype.kind not in "biu":
        raise TypeError(f"cannot convert {type(obj).__name__} to a tensor (dtype {array.dtype})")
    return array


def _astype(x, dtype):
    from .kernels.launch import apply

    return apply(_cast, (x,), (dtype.np,))


def _cast(x, np_dtype):
    return x.astype(np_dtype)
