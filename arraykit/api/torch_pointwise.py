"""PyTorch's element-wise functions beside the standard's: ``rsqrt``, ``erf``,
``lgamma``, ``xlogy``, ``lerp``, ``fmod``, ``frexp``, ``nan_to_num``, ``clamp``...

As in PyTorch, the floating-point functions take integer and bool tensors and
compute in float32; ``float_power`` computes in float64. Derivatives are JAX's
or, at special points, PyTorch's (``xlogy``'s derivative in ``x`` is ``log(y)`` at
``x == 0`` too; ``nan_to_num`` passes none where it replaces).
"""

from __future__ import annotations

import builtins
import collections

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..core import dtypes as D
from ..kernels.launch import apply
from ..tensors.operands import promote
from ..tensors.tensor_type import Tensor, require_tensor
from . import elementwise as E
from . import torch_keywords as T
from . import utility as U
from .dtype_functions import astype
from .naming import named

__all__ = [
    "allclose", "clamp", "digamma", "erf", "erfc", "erfinv", "float_power", "fmod", "frac",
    "frexp", "isclose", "ldexp", "lerp", "lgamma", "nan_to_num", "rsqrt", "sgn", "true_divide",
    "xlogy",
]

MantissaExponent = collections.namedtuple("MantissaExponent", ["mantissa", "exponent"])
MantissaExponent.__doc__ = "``(mantissa, exponent)`` of :func:`frexp` (PyTorch's return type)."

true_divide = E.divide


_into = T.into_if_given


def floating(x):
    """``x`` itself, or converted to float32 when it is an integer or bool tensor
    (PyTorch's rule for its floating-point functions)."""
    return astype(x, D.DEFAULT_FLOAT) if x._dtype.kind in ("bool", "int", "uint") else x


def _real_floating(x, name):
    x = floating(require_tensor(x, name))
    if x._dtype.kind == "complex":
        raise RuntimeError(f"{name}(): does not support complex input, got {x.dtype}")
    return x


def _digamma(x):
    zero = x == 0
    pole = jnp.where(jnp.signbit(x), jnp.inf, -jnp.inf).astype(x.dtype)
    return jnp.where(zero, pole, lax.digamma(jnp.where(zero, jnp.ones((), x.dtype), x)))


def _unary(name, body, doc):
    def function(input, *, out=None):  # noqa: A002 (PyTorch's name)
        return _into(name, apply(body, (_real_floating(input, name),)), out)
    return named(function, name, doc)


def _rsqrt(x):
    return lax.rsqrt(x)


def _erf(x):
    return lax.erf(x)


def _erfc(x):
    return lax.erfc(x)


def _erfinv(x):
    return lax.erf_inv(x)


def _lgamma(x):
    return lax.lgamma(x)


def _frac(x):
    return x - jnp.trunc(x)


rsqrt = _unary("rsqrt", _rsqrt, "``1 / sqrt(input)`` element-wise.")
erf = _unary("erf", _erf, "The error function element-wise.")
erfc = _unary("erfc", _erfc, "The complementary error function ``1 - erf(input)``.")
erfinv = _unary("erfinv", _erfinv, "The inverse error function (domain ``[-1, 1]``).")
lgamma = _unary("lgamma", _lgamma, "``log|Gamma(input)|`` element-wise.")
digamma = _unary("digamma", _digamma, "The derivative of ``lgamma``; ``-inf`` at ``+0`` and "
                 "``inf`` at ``-0`` as PyTorch.")


def frac(input, *, out=None):  # noqa: A002
    """The fractional part ``input - trunc(input)`` (sign of ``input``) of a float tensor."""
    x = require_tensor(input, "frac")
    if x._dtype.kind != "float":
        raise RuntimeError(f"frac(): expected a floating-point tensor, got {x.dtype}")
    return _into("frac", apply(_frac, (x,)), out)


def sgn(input, *, out=None):  # noqa: A002
    """``sign(input)`` for real tensors, ``input / |input|`` (0 at 0) for complex ones."""
    return _into("sgn", E.sign(require_tensor(input, "sgn")), out)


def _kind(x):
    return x._dtype.kind if isinstance(x, Tensor) else None


def _binary_floating(x, y, name):
    """Two operands promoted (tensors or Python scalars), integer results computed in
    float32; a float tensor with an integer tensor keeps the float dtype (PyTorch's
    category rule)."""
    a, b, dtype = promote(x, y, name=name)
    kinds = (_kind(x), _kind(y))
    if "float" in kinds and any(k in ("bool", "int", "uint") for k in kinds):
        dtype = (x if kinds[0] == "float" else y)._dtype
    if dtype.kind in ("bool", "int", "uint"):
        dtype = D.DEFAULT_FLOAT
    if dtype.kind == "complex":
        raise RuntimeError(f"{name}(): does not support complex inputs, got {dtype}")
    return a, b, dtype


@jax.custom_jvp
def _xlogy_value(x, y):
    safe = jnp.where(x == 0, jnp.ones((), y.dtype), y)
    return jnp.where((x == 0) & ~jnp.isnan(y), jnp.zeros((), x.dtype), x * jnp.log(safe))


@_xlogy_value.defjvp
def _xlogy_jvp(primals, tangents):
    x, y = primals
    dx, dy = tangents
    return _xlogy_value(x, y), jnp.log(y) * dx + x / y * dy


def _xlogy(x, y, dtype):
    x, y = jnp.broadcast_arrays(x.astype(dtype), y.astype(dtype))
    return _xlogy_value(x, y)


def xlogy(input, other, *, out=None):  # noqa: A002
    """``input * log(other)``, 0 where ``input == 0`` (unless ``other`` is NaN)."""
    a, b, dtype = _binary_floating(input, other, "xlogy")
    return _into("xlogy", apply(_xlogy, (a, b), (dtype.np,)), out)


def _fmod(x, y, dtype):
    return jnp.fmod(x.astype(dtype), y.astype(dtype))


def fmod(input, other, *, out=None):  # noqa: A002
    """C's remainder ``input - trunc(input / other) * other`` (the sign of ``input``)."""
    a, b, dtype = promote(input, other, name="fmod")
    if dtype.kind not in ("int", "uint", "float"):
        raise RuntimeError(f"fmod(): expected real operands, got {dtype}")
    return _into("fmod", apply(_fmod, (a, b), (dtype.np,)), out)


def _ldexp(x, e, dtype):
    return x.astype(dtype) * jnp.exp2(e.astype(dtype))


def ldexp(input, other, *, out=None):  # noqa: A002
    """``input * 2 ** other`` (integer results computed in float32)."""
    a, b, dtype = _binary_floating(input, other, "ldexp")
    return _into("ldexp", apply(_ldexp, (a, b), (dtype.np,)), out)


def _float_power(x, y, dtype):
    return jnp.power(x.astype(dtype), y.astype(dtype))


def float_power(input, exponent, *, out=None):  # noqa: A002
    """``input ** exponent`` computed in float64 (complex128 for complex operands)."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): expected at least one tensor operand")
    a, b, dtype = promote(input, exponent, name="float_power")
    dtype = D.complex128 if dtype.kind == "complex" else D.float64
    return _into("float_power", apply(_float_power, (a, b), (dtype.np,)), out)


def _frexp(x):
    mantissa, exponent = jnp.frexp(x)
    return mantissa, exponent.astype(jnp.int32)


def frexp(input, *, out=None):  # noqa: A002
    """``(mantissa, exponent)`` with ``input == mantissa * 2 ** exponent`` and
    ``0.5 <= |mantissa| < 1`` (exponent int32)."""
    x = require_tensor(input, "frexp")
    if x._dtype.kind != "float":
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got {x.dtype}")
    result = MantissaExponent(*apply(_frexp, (x,), multiple=True))
    return result if out is None else T.into_each("frexp", result, out)


def _nan_to_num(x, nan, posinf, neginf):
    return jnp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):  # noqa: A002
    """``input`` with NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf``
    (the dtype's largest and lowest finite values by default); no gradient where replaced."""
    x = require_tensor(input, "nan_to_num")
    if x._dtype.kind not in ("float", "complex"):
        return _into("nan_to_num", x.clone(), out)
    options = tuple(None if v is None else float(v) for v in (nan, posinf, neginf))
    return _into("nan_to_num", apply(_nan_to_num, (x,), options), out)


def _lerp(start, end, weight, dtype):
    start, end, weight = (v.astype(dtype) for v in (start, end, weight))
    delta = end - start
    return jnp.where(jnp.abs(weight) < 0.5, start + weight * delta, end - delta * (1 - weight))


def lerp(input, end, weight, *, out=None):  # noqa: A002
    """``input + weight * (end - input)`` (``weight`` a number or a tensor; all broadcast)."""
    x = require_tensor(input, "lerp")
    require_tensor(end, "lerp")
    if end._dtype is not x._dtype:
        raise RuntimeError(f"expected dtype {x.dtype} for `end` but got dtype {end.dtype}")
    if x._dtype.kind not in ("float", "complex"):
        raise RuntimeError(f"lerp(): expected floating-point tensors, got {x.dtype}")
    if isinstance(weight, Tensor):
        if weight._dtype is not x._dtype:
            raise RuntimeError(f"expected dtype {x.dtype} for `weight` but got dtype "
                               f"{weight.dtype}")
        operands = (x, end, weight)
    else:
        operands = (x, end, np.asarray(weight, x._dtype.np))
    return _into("lerp", apply(_lerp, operands, (x._dtype.np,)), out)


def clamp(input, min=None, max=None, *, out=None):  # noqa: A002 (PyTorch's names)
    """Each element of ``input`` clamped into ``[min, max]`` (:func:`arraykit.clip`; at
    least one bound)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return _into("clamp", E.clip(require_tensor(input, "clamp"), min, max), out)


def _isclose(a, b, rtol, atol, equal_nan):
    return jnp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """Element-wise ``|input - other| <= atol + rtol * |other|`` (tensors of one dtype)."""
    require_tensor(input, "isclose")
    if not isinstance(other, Tensor):
        raise TypeError(f"isclose(): expected a tensor, got {type(other).__name__}")
    if other._dtype is not input._dtype:
        raise TypeError(
            f"isclose(): expected tensors of one dtype, got {input.dtype} and {other.dtype}"
        )
    return apply(_isclose, (input, other), (float(rtol), float(atol), builtins.bool(equal_nan)))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """Whether every element is close (:func:`isclose`), a Python bool."""
    return builtins.bool(U.all(isclose(input, other, rtol, atol, equal_nan)))
