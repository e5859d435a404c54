"""Element-wise functions of the array API."""

from __future__ import annotations

from . import dtypes as D
from . import layout as L
from .devices import check_same_device
from .kernels import bodies as B
from .kernels.launch import apply
from .tensor import Tensor

__all__ = ["add", "divide", "maximum", "minimum", "multiply", "subtract"]

_PROMOTE = D._PROMOTION


def _operands(x1, x2):
    """Promote two operands (tensors or Python scalars): (a, b, result dtype)."""
    if type(x1) is Tensor:
        if type(x2) is Tensor:
            dtype = _PROMOTE[x1._dtype, x2._dtype]
            if x1._storage.device is not x2._storage.device:
                check_same_device(x1.device, x2.device)
            if x1._layout.shape != x2._layout.shape:
                L.broadcast_shapes(x1._layout.shape, x2._layout.shape)
            return x1, x2, dtype
        if isinstance(x2, Tensor):
            return _operands(x1, x2)
        dtype = D.promote_scalar(x1._dtype, x2)
        return x1, dtype.np.type(x2), dtype
    if isinstance(x2, Tensor):
        if isinstance(x1, Tensor):
            return _operands(x1, x2)
        dtype = D.promote_scalar(x2._dtype, x1)
        return dtype.np.type(x1), x2, dtype
    raise TypeError(
        f"expected at least one arraykit tensor, got {type(x1).__name__} and {type(x2).__name__}"
    )


def _binary(body, x1, x2):
    a, b, dtype = _operands(x1, x2)
    return apply(body, (a, b), (dtype.np,))


def add(x1, x2, /):
    """Element-wise sum."""
    return _binary(B.add, x1, x2)


def subtract(x1, x2, /):
    """Element-wise difference."""
    return _binary(B.subtract, x1, x2)


def multiply(x1, x2, /):
    """Element-wise product."""
    return _binary(B.multiply, x1, x2)


def divide(x1, x2, /):
    """Element-wise true division (integer inputs give floating results, as NumPy)."""
    a, b, dtype = _operands(x1, x2)
    if dtype.kind in ("bool", "int", "uint"):
        dtype = D.float64
    return apply(B.divide, (a, b), (dtype.np,))


def maximum(x1, x2, /):
    """Element-wise maximum."""
    return _binary(B.maximum, x1, x2)


def minimum(x1, x2, /):
    """Element-wise minimum."""
    return _binary(B.minimum, x1, x2)

