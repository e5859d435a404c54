"""Element-wise functions of the array API (standard 2025.12).

Binary functions take tensors or Python scalars on either side (at least one
tensor); scalars follow the standard's scalar promotion rules (:mod:`.dtypes`),
NumPy arrays and NumPy scalars are converted to tensors on the other operand's
device. Each function accepts the dtype category the standard names for it,
checked on the dtype the computation runs in, and raises ``TypeError`` naming
the dtype otherwise. Integer division and remainder by zero give 0, and shifts
by negative or too-large amounts follow NumPy. Every special case of the
standard (NaN, signed zeros, infinities, complex values) is produced by the
kernel bodies in :mod:`.kernels.bodies`.

The floating-point functions of one argument (``exp``, ``log``, ``sqrt``, ``sin``...)
take integer and boolean tensors too, as PyTorch and NumPy do (the standard leaves
them implementation-defined): they compute in the default floating dtype
(:func:`arraykit.get_default_dtype`). ``add`` and ``multiply`` of two bool tensors are their logical
or and and (bool results), as in PyTorch and NumPy.

Every function also takes PyTorch's keywords (``input=``, ``other=``, ``out=``; see
:mod:`.torch_keywords`), read only when given.
"""

from __future__ import annotations

import operator
import sys

import numpy as np

from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import check_same_device
from ..kernels import bodies as B
from ..kernels.launch import apply
from ..tensors import namespace_registry
from ..tensors.operands import as_operand, promote, scalar
from ..tensors.tensor_type import Tensor
from . import torch_keywords as T
from ..core.precision import any_autocast
from .autocasting import coerce
from .dtype_functions import astype
from .naming import named

_PROMOTE = D._PROMOTION

__all__ = [
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh",
    "bitwise_and", "bitwise_left_shift", "bitwise_invert", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "ceil", "clip", "conj", "copysign", "cos",
    "cosh", "divide", "equal", "exp", "expm1", "floor", "floor_divide", "greater",
    "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan", "less",
    "less_equal", "log", "log1p", "log2", "log10", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
    "negative", "nextafter", "not_equal", "positive", "pow", "real", "reciprocal",
    "remainder", "round", "sign", "signbit", "sin", "sinh", "square", "sqrt",
    "subtract", "tan", "tanh", "trunc",
]


# Dtype categories (sets of DType.kind) and how error messages name them.
_BOOL = frozenset(("bool",))
_INTEGER = frozenset(("int", "uint"))
_INTEGER_OR_BOOL = _INTEGER | _BOOL
_REAL_FLOATING = frozenset(("float",))
_FLOATING = frozenset(("float", "complex"))
_COMPLEX = frozenset(("complex",))
_REAL = frozenset(("int", "uint", "float"))
_NUMERIC = _REAL | _COMPLEX
_ANY = _NUMERIC | _BOOL
_CATEGORY_NAMES = {
    _INTEGER: "an integer dtype",
    _INTEGER_OR_BOOL: "an integer or boolean dtype",
    _REAL_FLOATING: "a real floating-point dtype",
    _FLOATING: "a floating-point dtype",
    _COMPLEX: "a complex floating-point dtype",
    _REAL: "a real-valued numeric dtype",
    _NUMERIC: "a numeric dtype",
}


def _dtype_name(x):
    if isinstance(x, Tensor):
        return str(x._dtype)
    if isinstance(x, (np.ndarray, np.generic)):
        return f"NumPy {x.dtype}"
    return f"Python {type(x).__name__}"


def _category_error(name, kinds, *operands, promoted=None):
    got = " and ".join(_dtype_name(x) for x in operands)
    if promoted is not None and all(getattr(x, "_dtype", None) is not promoted for x in operands):
        got += f" (which promote to {promoted})"
    return TypeError(f"{name}() requires {_CATEGORY_NAMES[kinds]}, got {got}")


def _unary(body, x, kinds, name, input=None, out=None):  # noqa: A002 (PyTorch's name)
    """``body`` on the tensor ``x`` (or PyTorch's ``input=``) of a dtype in ``kinds``;
    written into ``out`` when it is given (:mod:`.torch_keywords`)."""
    if input is not None:
        x = T.pick_input(name, x, input)
    if type(x) is not Tensor and not isinstance(x, Tensor):
        raise TypeError(f"{name}() expects an arraykit tensor, got {type(x).__name__}")
    if x._dtype.kind not in kinds:
        if kinds is not _FLOATING or x._dtype.kind not in _INTEGER_OR_BOOL:
            raise _category_error(name, kinds, x)
        x = astype(x, D.DEFAULT_FLOAT)  # PyTorch and NumPy: integers compute in a float
    if any_autocast():
        (x,) = coerce(name, x)
    if out is None:
        return apply(body, (x,))
    return T.into(name, apply(body, (x,)), out)


def _binary(body, kinds, name, doc):
    """The array API function ``name(x1, x2, /)`` documented by ``doc``: ``body`` on
    the operands promoted by :func:`~arraykit.tensors.operands.promote`, whose dtype
    must be one of ``kinds``. PyTorch's ``input=``, ``other=`` and ``out=`` are read
    only when given. Every binary op runs this, so ``promote``'s first case (two tensors of one shape
    on one device) is repeated inline: a call less per op."""

    autocast_op = name if name == "pow" else None  # the one binary op in autocast's table

    def binary(x1=None, x2=None, /, input=None, other=None, out=None):  # noqa: A002
        if input is not None or other is not None:
            x1, x2 = T.pick_pair(name, x1, x2, input, other)
        if autocast_op is not None and any_autocast():
            x1, x2 = coerce(autocast_op, x1, x2)
        if (type(x1) is Tensor and type(x2) is Tensor and x1._storage.device is x2._storage.device
                and x1._layout.shape == x2._layout.shape):
            dtype = x1._dtype
            if x2._dtype is not dtype:
                dtype = _PROMOTE[dtype, x2._dtype]
            a, b = x1, x2
        else:
            a, b, dtype = promote(x1, x2)
        if dtype.kind not in kinds:
            raise _category_error(name, kinds, x1, x2, promoted=dtype)
        if out is None:
            return apply(body, (a, b), (dtype,))
        return T.into(name, apply(body, (a, b), (dtype,)), out)

    return named(binary, name, doc)


# ----------------------------------------------------------------------------- arithmetic


add = _binary(
    B.add, _ANY, "add",
    "Element-wise sum ``x1 + x2``; of two bool operands, their logical or (PyTorch, NumPy).",
)


subtract = _binary(B.subtract, _NUMERIC, "subtract", "Element-wise difference ``x1 - x2``.")


multiply = _binary(
    B.multiply, _ANY, "multiply",
    "Element-wise product ``x1 * x2``; of two bool operands, their logical and (PyTorch, NumPy).",
)


def divide(x1=None, x2=None, /, input=None, other=None, out=None):  # noqa: A002
    """Element-wise true division; integer inputs give float64 results (as NumPy)."""
    if input is not None or other is not None:
        x1, x2 = T.pick_pair("divide", x1, x2, input, other)
    a, b, dtype = promote(x1, x2)
    if dtype.kind not in _NUMERIC:
        raise _category_error("divide", _NUMERIC, x1, x2, promoted=dtype)
    if dtype.kind in ("int", "uint"):
        dtype = D.float64
    if out is None:
        return apply(B.divide, (a, b), (dtype,))
    return T.into("divide", apply(B.divide, (a, b), (dtype,)), out)


floor_divide = _binary(
    B.floor_divide, _REAL, "floor_divide",
    "Element-wise ``floor(x1 / x2)``; integer division by zero gives 0 (NumPy).",
)


remainder = _binary(
    B.remainder, _REAL, "remainder",
    "Element-wise remainder with the sign of ``x2`` (Python's ``%``); ``x % 0`` is 0 for integers.",
)


pow = _binary(  # noqa: A001
    B.pow, _NUMERIC, "pow",
    "Element-wise ``x1 ** x2``; an integer raised to a negative integer truncates toward 0.",
)


maximum = _binary(
    B.maximum, _REAL, "maximum",
    "Element-wise maximum (NaN if either element is NaN).",
)


minimum = _binary(
    B.minimum, _REAL, "minimum",
    "Element-wise minimum (NaN if either element is NaN).",
)


atan2 = _binary(
    B.atan2, _REAL_FLOATING, "atan2",
    "Element-wise angle of the point ``(x2, x1)`` in radians, in ``[-pi, pi]``.",
)


copysign = _binary(
    B.copysign, _REAL_FLOATING, "copysign",
    "Element-wise magnitude of ``x1`` with the sign bit of ``x2``.",
)


hypot = _binary(
    B.hypot, _REAL_FLOATING, "hypot",
    "Element-wise ``sqrt(x1**2 + x2**2)`` without undue overflow or underflow.",
)


logaddexp = _binary(
    B.logaddexp, _REAL_FLOATING, "logaddexp",
    "Element-wise ``log(exp(x1) + exp(x2))``, computed stably.",
)


nextafter = _binary(
    B.nextafter, _REAL_FLOATING, "nextafter",
    "Element-wise next representable value after ``x1`` toward ``x2``.",
)


def negative(x=None, /, input=None, out=None):
    """Element-wise ``-x``."""
    return _unary(B.negative, x, _NUMERIC, "negative", input, out)


def positive(x=None, /, input=None, out=None):
    """Element-wise ``+x`` (a copy)."""
    return _unary(B.identity, x, _NUMERIC, "positive", input, out)


def abs(x=None, /, input=None, out=None):  # noqa: A001 (the array API name)
    """Element-wise absolute value; complex inputs give their real-dtype modulus."""
    return _unary(B.abs, x, _NUMERIC, "abs", input, out)


def square(x=None, /, input=None, out=None):
    """Element-wise ``x * x``."""
    return _unary(B.square, x, _NUMERIC, "square", input, out)


def sqrt(x=None, /, input=None, out=None):
    """Element-wise principal square root."""
    return _unary(B.sqrt, x, _FLOATING, "sqrt", input, out)


def reciprocal(x=None, /, input=None, out=None):
    """Element-wise ``1 / x``."""
    return _unary(B.reciprocal, x, _FLOATING, "reciprocal", input, out)


def sign(x=None, /, input=None, out=None):
    """Element-wise sign: -1, 0 or 1 for real inputs, ``x / |x|`` (or 0) for complex."""
    return _unary(B.sign, x, _NUMERIC, "sign", input, out)


# ----------------------------------------------------------------------------- rounding


def ceil(x=None, /, input=None, out=None):
    """Element-wise smallest integer-valued number not less than ``x``."""
    return _unary(B.ceil, x, _REAL, "ceil", input, out)


def floor(x=None, /, input=None, out=None):
    """Element-wise largest integer-valued number not greater than ``x``."""
    return _unary(B.floor, x, _REAL, "floor", input, out)


def trunc(x=None, /, input=None, out=None):
    """Element-wise integer-valued number nearest to ``x`` toward zero."""
    return _unary(B.trunc, x, _REAL, "trunc", input, out)


def round(x=None, /, input=None, out=None):  # noqa: A001 (the array API name)
    """Element-wise nearest integer-valued number, halves to even (complex: per component)."""
    return _unary(B.round, x, _NUMERIC, "round", input, out)


# ----------------------------------------------------------------------------- exp / log / trig


def exp(x=None, /, input=None, out=None):
    """Element-wise exponential."""
    return _unary(B.exp, x, _FLOATING, "exp", input, out)


def expm1(x=None, /, input=None, out=None):
    """Element-wise ``exp(x) - 1``, accurate near zero."""
    return _unary(B.expm1, x, _FLOATING, "expm1", input, out)


def log(x=None, /, input=None, out=None):
    """Element-wise natural logarithm (principal branch for complex)."""
    return _unary(B.log, x, _FLOATING, "log", input, out)


def log1p(x=None, /, input=None, out=None):
    """Element-wise ``log(1 + x)``, accurate near zero."""
    return _unary(B.log1p, x, _FLOATING, "log1p", input, out)


def log2(x=None, /, input=None, out=None):
    """Element-wise base-2 logarithm."""
    return _unary(B.log2, x, _FLOATING, "log2", input, out)


def log10(x=None, /, input=None, out=None):
    """Element-wise base-10 logarithm."""
    return _unary(B.log10, x, _FLOATING, "log10", input, out)


def sin(x=None, /, input=None, out=None):
    """Element-wise sine (radians)."""
    return _unary(B.sin, x, _FLOATING, "sin", input, out)


def cos(x=None, /, input=None, out=None):
    """Element-wise cosine (radians)."""
    return _unary(B.cos, x, _FLOATING, "cos", input, out)


def tan(x=None, /, input=None, out=None):
    """Element-wise tangent (radians)."""
    return _unary(B.tan, x, _FLOATING, "tan", input, out)


def asin(x=None, /, input=None, out=None):
    """Element-wise principal inverse sine."""
    return _unary(B.asin, x, _FLOATING, "asin", input, out)


def acos(x=None, /, input=None, out=None):
    """Element-wise principal inverse cosine."""
    return _unary(B.acos, x, _FLOATING, "acos", input, out)


def atan(x=None, /, input=None, out=None):
    """Element-wise principal inverse tangent."""
    return _unary(B.atan, x, _FLOATING, "atan", input, out)


def sinh(x=None, /, input=None, out=None):
    """Element-wise hyperbolic sine."""
    return _unary(B.sinh, x, _FLOATING, "sinh", input, out)


def cosh(x=None, /, input=None, out=None):
    """Element-wise hyperbolic cosine."""
    return _unary(B.cosh, x, _FLOATING, "cosh", input, out)


def tanh(x=None, /, input=None, out=None):
    """Element-wise hyperbolic tangent."""
    return _unary(B.tanh, x, _FLOATING, "tanh", input, out)


def asinh(x=None, /, input=None, out=None):
    """Element-wise inverse hyperbolic sine."""
    return _unary(B.asinh, x, _FLOATING, "asinh", input, out)


def acosh(x=None, /, input=None, out=None):
    """Element-wise inverse hyperbolic cosine."""
    return _unary(B.acosh, x, _FLOATING, "acosh", input, out)


def atanh(x=None, /, input=None, out=None):
    """Element-wise inverse hyperbolic tangent."""
    return _unary(B.atanh, x, _FLOATING, "atanh", input, out)


# ----------------------------------------------------------------------------- tests


def isfinite(x=None, /, input=None, out=None):
    """Element-wise test for finite values (complex: both components finite)."""
    return _unary(B.isfinite, x, _NUMERIC, "isfinite", input, out)


def isinf(x=None, /, input=None, out=None):
    """Element-wise test for infinities (complex: either component infinite)."""
    return _unary(B.isinf, x, _NUMERIC, "isinf", input, out)


def isnan(x=None, /, input=None, out=None):
    """Element-wise test for NaN (complex: either component NaN)."""
    return _unary(B.isnan, x, _NUMERIC, "isnan", input, out)


def signbit(x=None, /, input=None, out=None):
    """Element-wise test of the sign bit (true for -0.0 and negative NaNs)."""
    return _unary(B.signbit, x, _REAL_FLOATING, "signbit", input, out)


# ----------------------------------------------------------------------------- complex parts


def real(x=None, /, input=None, out=None):
    """Real component; for real-valued input a view of ``x`` itself (as NumPy's ``.real``)."""
    if isinstance(x, Tensor) and x._dtype.kind in _REAL and input is None and out is None:
        return x._view(x._layout)
    if isinstance(input, Tensor) and input._dtype.kind in _REAL and x is None and out is None:
        return input._view(input._layout)
    return _unary(B.real, x, _NUMERIC, "real", input, out)


def imag(x=None, /, input=None, out=None):
    """Imaginary component of a complex tensor, as the matching real dtype."""
    return _unary(B.imag, x, _COMPLEX, "imag", input, out)


def conj(x=None, /, input=None, out=None):
    """Element-wise complex conjugate (a copy of real-valued input)."""
    return _unary(B.conj, x, _NUMERIC, "conj", input, out)


# ----------------------------------------------------------------------------- comparisons

_PY_COMPARE = {
    "equal": operator.eq, "not_equal": operator.ne, "less": operator.lt,
    "less_equal": operator.le, "greater": operator.gt, "greater_equal": operator.ge,
}


def _compare(body, x1, x2, kinds, name, input=None, other=None, out=None):  # noqa: A002
    if input is not None or other is not None:
        x1, x2 = T.pick_pair(name, x1, x2, input, other)
    if out is not None:
        return T.into(name, _compare(body, x1, x2, kinds, name), out)
    try:
        a, b, dtype = promote(x1, x2)
    except OverflowError as exc:
        return _compare_out_of_range(name, x1, x2, exc)
    if dtype.kind not in kinds:
        raise _category_error(name, kinds, x1, x2, promoted=dtype)
    return apply(body, (a, b), (dtype,))


def _compare_out_of_range(name, x1, x2, exc):
    """Compare an integer tensor with a Python int outside its dtype's range.

    The result does not depend on the tensor's values (NumPy's behaviour); any
    other overflow re-raises ``exc``.
    """
    tensor, number = (x1, x2) if isinstance(x1, Tensor) else (x2, x1)
    if not isinstance(tensor, Tensor) or tensor._dtype.kind not in _INTEGER or D.scalar_kind(number) != "int":
        raise exc
    above = number > np.iinfo(tensor._dtype.np).max
    s = 1 if above else -1
    value = _PY_COMPARE[name](0, s) if tensor is x1 else _PY_COMPARE[name](s, 0)
    return apply(B.constant, (tensor,), (bool(value),))


def equal(x1=None, x2=None, /, input=None, other=None, out=None):
    """Element-wise ``x1 == x2`` (any dtypes)."""
    return _compare(B.equal, x1, x2, _ANY, "equal", input, other, out)


def not_equal(x1=None, x2=None, /, input=None, other=None, out=None):
    """Element-wise ``x1 != x2`` (any dtypes)."""
    return _compare(B.not_equal, x1, x2, _ANY, "not_equal", input, other, out)


def less(x1=None, x2=None, /, input=None, other=None, out=None):
    """Element-wise ``x1 < x2`` (real-valued dtypes)."""
    return _compare(B.less, x1, x2, _REAL, "less", input, other, out)


def less_equal(x1=None, x2=None, /, input=None, other=None, out=None):
    """Element-wise ``x1 <= x2`` (real-valued dtypes)."""
    return _compare(B.less_equal, x1, x2, _REAL, "less_equal", input, other, out)


def greater(x1=None, x2=None, /, input=None, other=None, out=None):
    """Element-wise ``x1 > x2`` (real-valued dtypes)."""
    return _compare(B.greater, x1, x2, _REAL, "greater", input, other, out)


def greater_equal(x1=None, x2=None, /, input=None, other=None, out=None):
    """Element-wise ``x1 >= x2`` (real-valued dtypes)."""
    return _compare(B.greater_equal, x1, x2, _REAL, "greater_equal", input, other, out)


# ----------------------------------------------------------------------------- logical / bitwise


logical_and = _binary(
    B.logical_and, _ANY, "logical_and",
    "Element-wise logical AND (non-boolean inputs: nonzero is true).",
)


logical_or = _binary(
    B.logical_or, _ANY, "logical_or",
    "Element-wise logical OR (non-boolean inputs: nonzero is true).",
)


logical_xor = _binary(
    B.logical_xor, _ANY, "logical_xor",
    "Element-wise logical XOR (non-boolean inputs: nonzero is true).",
)


def logical_not(x=None, /, input=None, out=None):
    """Element-wise logical NOT (non-boolean inputs: nonzero is true)."""
    return _unary(B.logical_not, x, _ANY, "logical_not", input, out)


bitwise_and = _binary(
    B.bitwise_and, _INTEGER_OR_BOOL, "bitwise_and",
    "Element-wise bitwise AND of integer or boolean tensors.",
)


bitwise_or = _binary(
    B.bitwise_or, _INTEGER_OR_BOOL, "bitwise_or",
    "Element-wise bitwise OR of integer or boolean tensors.",
)


bitwise_xor = _binary(
    B.bitwise_xor, _INTEGER_OR_BOOL, "bitwise_xor",
    "Element-wise bitwise XOR of integer or boolean tensors.",
)


def bitwise_invert(x=None, /, input=None, out=None):
    """Element-wise bitwise NOT (logical NOT for booleans)."""
    return _unary(B.bitwise_invert, x, _INTEGER_OR_BOOL, "bitwise_invert", input, out)


bitwise_left_shift = _binary(
    B.bitwise_left_shift, _INTEGER, "bitwise_left_shift",
    "Element-wise ``x1 << x2``; shifts past the bit width (or negative) give 0 (NumPy).",
)


bitwise_right_shift = _binary(
    B.bitwise_right_shift, _INTEGER, "bitwise_right_shift",
    "Element-wise arithmetic ``x1 >> x2``; shifts past the bit width give 0 or -1 (NumPy).",
)


# ----------------------------------------------------------------------------- clip


def _clip_bound(x, bound, name):
    """A clip bound as a tensor or a 0-d NumPy value of ``x``'s dtype."""
    if bound is None or isinstance(bound, Tensor):
        if bound is not None:
            check_same_device(x.device, bound.device)
            if bound._dtype.kind not in _REAL:
                raise TypeError(f"clip() {name} must be real-valued, got {bound._dtype}")
        return bound
    bound = as_operand(bound, x)
    if isinstance(bound, Tensor):
        return _clip_bound(x, bound, name)
    kind = D.scalar_kind(bound)
    if not D.kind_fits(kind, x._dtype):
        raise TypeError(
            f"clip() {name}={bound!r} (a Python {type(bound).__name__}) does not fit "
            f"the dtype {x._dtype} of x"
        )
    if x._dtype.kind in _INTEGER:
        info = np.iinfo(x._dtype.np)
        bound = min(max(int(bound), int(info.min)), int(info.max))
    return scalar(x._dtype, bound)


def clip(x=None, /, min=None, max=None, input=None, out=None):  # noqa: A002 (the API's names)
    """Clamp each element of ``x`` into ``[min, max]`` (either bound may be None).

    The result has ``x``'s dtype; bounds are cast to it and broadcast with ``x``.
    Integer bounds outside ``x``'s dtype range are clamped to it; NaN anywhere
    gives NaN. PyTorch's ``input=`` and ``out=`` are accepted.
    """
    if input is not None:
        x = T.pick_input("clip", x, input)
    if out is not None:
        return T.into("clip", clip(x, min, max), out)
    if not isinstance(x, Tensor):
        raise TypeError(f"clip() expects an arraykit tensor, got {type(x).__name__}")
    if x._dtype.kind not in _REAL:
        raise _category_error("clip", _REAL, x)
    lo = _clip_bound(x, min, "min")
    hi = _clip_bound(x, max, "max")
    tensors = [t for t in (x, lo, hi) if isinstance(t, Tensor)]
    if len(tensors) > 1:
        L.broadcast_shapes(*(t.shape for t in tensors))
    if lo is None and hi is None:
        return apply(B.identity, (x,))
    if hi is None:
        return apply(B.clip_min, (x, lo))
    if lo is None:
        return apply(B.clip_max, (x, hi))
    return apply(B.clip_both, (x, lo, hi))


# ----------------------------------------------------------------------------- operators

_BINARY_OPERATORS = {
    "add": (B.add, _ANY), "subtract": (B.subtract, _NUMERIC),
    "multiply": (B.multiply, _ANY), "divide": (B.divide, _NUMERIC),
    "floor_divide": (B.floor_divide, _REAL),
    "remainder": (B.remainder, _REAL), "pow": (B.pow, _NUMERIC),
    "bitwise_and": (B.bitwise_and, _INTEGER_OR_BOOL),
    "bitwise_or": (B.bitwise_or, _INTEGER_OR_BOOL),
    "bitwise_xor": (B.bitwise_xor, _INTEGER_OR_BOOL),
    "bitwise_left_shift": (B.bitwise_left_shift, _INTEGER),
    "bitwise_right_shift": (B.bitwise_right_shift, _INTEGER),
}


def inplace(x, name, other):
    """``x <op>= other`` for the binary function ``name``, written through ``x``'s layout.

    The operation must accept the operands' dtypes, and its result dtype must be
    writable into ``x`` (``Tensor._inplace`` raises TypeError otherwise).
    """
    body, kinds = _BINARY_OPERATORS[name]
    _, operand, dtype = promote(x, other, broadcast=False)
    if dtype.kind not in kinds:
        raise _category_error(name, kinds, x, other, promoted=dtype)
    return x._inplace_promoted(body, operand, dtype, true_division=name == "divide")


namespace_registry.register(elementwise=sys.modules[__name__])
