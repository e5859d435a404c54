"""Data types and the promotion rules of the array API standard (no JAX).

Each dtype is one :class:`DType` singleton wrapping a NumPy dtype. Promotion
between two dtypes follows the standard's table and, where the standard leaves
mixed kinds open, NumPy (``np.promote_types``). Python scalars follow the
standard's scalar rules; mixed kinds go to the default dtype of the scalar's kind.

Besides the standard's dtypes (:data:`ALL`) there are two floating dtypes PyTorch
users reach for, ``float16`` (``x.half()``) and ``bfloat16`` (``x.bfloat16()``,
NumPy's through ``ml_dtypes``, as JAX has it): :data:`EXTRA`. They promote as
NumPy promotes ``float16``; ``bfloat16`` takes ``float16``'s place except that the
two together give ``float32`` (neither holds the other), as in PyTorch and JAX.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np


class DType:
    """An arraykit data type (``arraykit.float32`` etc.); compares by identity."""

    __slots__ = ("name", "np", "kind", "itemsize")

    def __init__(self, name, np_dtype=None):
        self.name = name
        self.np = np.dtype(name if np_dtype is None else np_dtype)
        self.kind = {"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex"}.get(
            self.np.kind, "float"  # ml_dtypes' bfloat16 has NumPy kind "V"
        )
        self.itemsize = self.np.itemsize

    @property
    def dtype(self):
        """The equivalent NumPy dtype (lets ``np.dtype(arraykit.float32)`` work)."""
        return self.np

    @property
    def is_floating_point(self):
        """Whether this is a real floating dtype (float16, bfloat16, float32, float64)."""
        return self.kind == "float"

    @property
    def is_complex(self):
        """Whether this is a complex dtype (complex64, complex128)."""
        return self.kind == "complex"

    def __repr__(self):
        return f"arraykit.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


bool_ = DType("bool")
int8 = DType("int8")
int16 = DType("int16")
int32 = DType("int32")
int64 = DType("int64")
uint8 = DType("uint8")
uint16 = DType("uint16")
uint32 = DType("uint32")
uint64 = DType("uint64")
float32 = DType("float32")
float64 = DType("float64")
complex64 = DType("complex64")
complex128 = DType("complex128")

float16 = DType("float16")
bfloat16 = DType("bfloat16", ml_dtypes.bfloat16)

ALL = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float32, float64, complex64, complex128,
)
"""The array API standard's dtypes (what ``__array_namespace_info__().dtypes()`` lists)."""
EXTRA = (float16, bfloat16)
"""Dtypes outside the standard, for PyTorch's ``half()`` and ``bfloat16()``."""
_BY_NAME = {d.name: d for d in ALL + EXTRA}
_BY_NP = {d.np: d for d in ALL + EXTRA}

DEFAULT_FLOAT = float32
"""The default floating dtype (``set_default_float`` changes it, process-wide)."""
DEFAULT_COMPLEX = complex64
"""The default complex dtype: the complex dtype of :data:`DEFAULT_FLOAT`'s precision."""
DEFAULT_INT = int64
DEFAULT_INDEX = int64

_COMPLEX_OF = {float32: complex64, float64: complex128}
_REAL_OF = {complex64: float32, complex128: float64}


def set_default_float(dtype):
    """Make ``dtype`` (float32 or float64) the default floating dtype, and its complex
    counterpart the default complex dtype, for the whole process (as PyTorch's
    ``torch.set_default_dtype``). Readers look up :data:`DEFAULT_FLOAT` on this
    module at call time: one attribute read on the hot path."""
    global DEFAULT_FLOAT, DEFAULT_COMPLEX
    if dtype not in _COMPLEX_OF:
        raise TypeError(
            f"only float32 and float64 can be the default dtype, got {dtype}"
        )
    DEFAULT_FLOAT, DEFAULT_COMPLEX = dtype, _COMPLEX_OF[dtype]


def from_name(name):
    """The dtype called ``name`` (``"float32"``...)."""
    return _BY_NAME[name]


def from_numpy(np_dtype):
    """The arraykit dtype equal to a NumPy dtype; TypeError for unsupported ones."""
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        pass
    try:
        return _BY_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"unsupported dtype {np_dtype!r}") from None


def as_dtype(value):
    """Coerce a dtype-like (DType, NumPy dtype, type, name) to a DType."""
    if isinstance(value, DType):
        return value
    if value is bool:
        return bool_
    if value is int:
        return DEFAULT_INT
    if value is float:
        return DEFAULT_FLOAT
    if value is complex:
        return DEFAULT_COMPLEX
    return from_numpy(value)


def real_dtype(dtype):
    """The real dtype of a complex dtype (identity for real dtypes)."""
    return _REAL_OF.get(dtype, dtype)


def complex_dtype(dtype):
    """The complex dtype of matching precision for a floating dtype."""
    return _COMPLEX_OF.get(dtype, dtype)


def _promote_numpy(a, b):
    """NumPy's promotion, with bfloat16 standing where float16 stands (see module doc)."""
    if a is bfloat16 and b is bfloat16:
        return bfloat16
    if bfloat16 in (a, b):
        other = b if a is bfloat16 else a
        if other is float16:
            return float32
        result = _BY_NP[np.promote_types(float16.np, other.np)]
        return bfloat16 if result is float16 else result
    return _BY_NP[np.promote_types(a.np, b.np)]


_PROMOTION = {}
for _a in ALL + EXTRA:
    for _b in ALL + EXTRA:
        _PROMOTION[_a, _b] = _promote_numpy(_a, _b)


def promote(a, b):
    """Result dtype of a binary operation between arrays of dtypes ``a`` and ``b``."""
    return _PROMOTION[a, b]


_SCALAR_KIND = {bool: "bool", int: "int", float: "float", complex: "complex"}
_KIND_RANK = {"bool": 0, "int": 1, "uint": 1, "float": 2, "complex": 3}


def scalar_kind(value):
    """The kind of a Python scalar ('bool', 'int', 'float', 'complex') or None."""
    kind = _SCALAR_KIND.get(type(value))
    if kind is None:
        if isinstance(value, bool):
            return "bool"
        if isinstance(value, int):
            return "int"
        if isinstance(value, float):
            return "float"
        if isinstance(value, complex):
            return "complex"
    return kind


def kind_fits(kind, dtype):
    """Whether values of ``kind`` ('bool', 'int', 'uint', 'float', 'complex') fit a
    ``dtype`` of the same or a higher kind (an int fits a float, a float no int)."""
    return _KIND_RANK[kind] <= _KIND_RANK[dtype.kind]


def writable(value, target):
    """Whether the result of an in-place operation, of dtype ``value``, may be stored
    into a tensor of dtype ``target``: PyTorch's same-kind rule (``canCast``). Any
    dtype of the same or a lower kind casts (int64 into int32, float64 into float32);
    a higher kind never does (float into an integer, complex into a real dtype,
    anything but bool into bool)."""
    return _KIND_RANK[value.kind] <= _KIND_RANK[target.kind]


def promote_scalar(dtype, value):
    """Result dtype of an array of ``dtype`` combined with Python scalar ``value``.

    The scalar takes the array's dtype when its kind is not higher; otherwise the
    result is the default dtype of the scalar's kind (complex keeps precision).
    """
    kind = scalar_kind(value)
    if kind is None:
        raise TypeError(f"unsupported scalar type {type(value).__name__}")
    if kind_fits(kind, dtype):
        return dtype
    if kind == "int":
        return DEFAULT_INT
    if kind == "float":
        return DEFAULT_FLOAT
    return _COMPLEX_OF.get(dtype, DEFAULT_COMPLEX)


def can_cast(from_, to):
    """Whether ``from_`` casts to ``to`` under the standard's promotion table.

    Only same-family casts that lose nothing are allowed (bool to bool, integer to
    a wider integer, float to a wider float or complex, complex to wider complex).
    """
    if from_ is to:
        return True
    if from_.kind == "bool" or to.kind == "bool":
        return False
    integral = ("int", "uint")
    if (from_.kind in integral) != (to.kind in integral):
        return False
    return promote(from_, to) is to


_KIND_NAMES = {
    "bool": ("bool",),
    "signed integer": ("int",),
    "unsigned integer": ("uint",),
    "integral": ("int", "uint"),
    "real floating": ("float",),
    "complex floating": ("complex",),
    "numeric": ("int", "uint", "float", "complex"),
}


def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind`` (a dtype, a kind name, or a tuple of them)."""
    if not isinstance(dtype, DType):
        raise TypeError(f"isdtype expects an arraykit dtype, got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, DType):
        return dtype is kind
    if isinstance(kind, str):
        try:
            return dtype.kind in _KIND_NAMES[kind]
        except KeyError:
            raise ValueError(
                f"unknown dtype kind {kind!r}; expected one of {sorted(_KIND_NAMES)}"
            ) from None
    raise TypeError(f"kind must be a dtype, a str or a tuple of them, got {kind!r}")
