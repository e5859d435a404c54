"""PyTorch's other names for functions the namespace already has: each is the same
function object under both names (``arraykit.arccos is arraykit.acos``), so it has
one meaning and one docstring.

``arccos``/``arcsin``/``arctan``/``arctan2`` and their hyperbolic forms are NumPy's
spellings PyTorch also accepts; ``absolute``, ``neg``, ``mul``, ``bitwise_not``,
``swapdims`` and the comparison names ``eq``/``ne``/``lt``/``le``/``gt``/``ge`` are
PyTorch's short names of the array API's functions (with the same arguments);
``fix`` is PyTorch's other name of ``trunc`` and ``ger`` its older name of ``outer``."""

from __future__ import annotations

from .elementwise import (
    abs,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_invert,
    equal,
    greater,
    greater_equal,
    less,
    less_equal,
    multiply,
    negative,
    not_equal,
    trunc,
)
from .torch_products import outer
from .torch_shapes import swapaxes

__all__ = [
    "absolute", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "bitwise_not",
    "eq", "fix", "ger", "ge", "gt", "le", "lt", "mul", "ne", "neg", "swapdims",
]

absolute = abs
arccos = acos
arccosh = acosh
arcsin = asin
arcsinh = asinh
arctan = atan
arctan2 = atan2
arctanh = atanh
bitwise_not = bitwise_invert
eq = equal
fix = trunc
ge = greater_equal
ger = outer
gt = greater
le = less_equal
lt = less
mul = multiply
ne = not_equal
neg = negative
swapdims = swapaxes
