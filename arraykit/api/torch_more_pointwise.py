"""More of PyTorch's element-wise functions: ``clamp_min``/``clamp_max``,
``deg2rad``/``rad2deg``, ``exp2``, ``logaddexp2``, ``fmax``/``fmin``, ``gcd``/``lcm``,
``heaviside``, the special functions ``i0``, ``sinc``, ``logit``, ``polygamma``,
``mvlgamma``, ``igamma``/``igammac``, and ``angle``, ``isposinf``/``isneginf``/``isreal``,
``conj_physical``.

As in :mod:`arraykit.api.torch_pointwise`, the floating-point functions take integer
and bool tensors and compute in float32. Gradients are JAX's, chosen where PyTorch
defines a particular one: ``fmax``/``fmin`` send it to ``input`` on ties and to the
operand that is not NaN; ``logit`` with ``eps`` passes none outside ``[eps, 1 - eps]``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np

from ..core import dtypes as D
from ..kernels.launch import apply
from ..tensors.operands import promote
from ..tensors.tensor_type import Tensor, is_traced, require_tensor
from . import elementwise as E
from . import torch_keywords as T
from .naming import named
from .torch_pointwise import _binary_floating, _real_floating, digamma

__all__ = [
    "angle", "clamp_max", "clamp_min", "conj_physical", "deg2rad", "exp2", "fmax", "fmin",
    "gcd", "heaviside", "i0", "igamma", "igammac", "isneginf", "isposinf", "isreal", "lcm",
    "logaddexp2", "logit", "mvlgamma", "polygamma", "rad2deg", "sinc",
]


_into = T.into_if_given


def clamp_min(input, min, *, out=None):  # noqa: A002 (PyTorch's names)
    """Each element of ``input`` raised to at least ``min`` (:func:`arraykit.clip`)."""
    return _into("clamp_min", E.clip(require_tensor(input, "clamp_min"), min, None), out)


def clamp_max(input, max, *, out=None):  # noqa: A002
    """Each element of ``input`` lowered to at most ``max`` (:func:`arraykit.clip`)."""
    return _into("clamp_max", E.clip(require_tensor(input, "clamp_max"), None, max), out)


def _deg2rad(x):
    return x * jnp.asarray(math.pi / 180, x.dtype)


def _rad2deg(x):
    return x * jnp.asarray(180 / math.pi, x.dtype)


def _exp2(x):
    return jnp.exp2(x)


@jax.custom_jvp
def _i0(x):
    return jsp.i0(x)


@_i0.defjvp
def _i0_jvp(primals, tangents):  # i0' = i1 (JAX's own is off at 0, through |x|)
    (x,), (dx,) = primals, tangents
    return _i0(x), jsp.i1(x) * dx


def _sinc(x):
    return jnp.sinc(x)


def _isposinf(x):
    return jnp.isposinf(x) if jnp.issubdtype(x.dtype, jnp.floating) else jnp.zeros(x.shape, bool)


def _isneginf(x):
    return jnp.isneginf(x) if jnp.issubdtype(x.dtype, jnp.floating) else jnp.zeros(x.shape, bool)


def _floating_unary(name, body, doc):
    def function(input, *, out=None):  # noqa: A002
        return _into(name, apply(body, (_real_floating(input, name),)), out)
    return named(function, name, doc)


deg2rad = _floating_unary("deg2rad", _deg2rad, "Angles in degrees converted to radians.")
rad2deg = _floating_unary("rad2deg", _rad2deg, "Angles in radians converted to degrees.")
exp2 = _floating_unary("exp2", _exp2, "``2 ** input`` element-wise.")
i0 = _floating_unary("i0", _i0, "The modified Bessel function of the first kind of order 0.")
sinc = _floating_unary("sinc", _sinc, "The normalized sinc ``sin(pi x) / (pi x)``, 1 at 0.")


def _real_test(name, body, doc):
    def function(input, *, out=None):  # noqa: A002
        x = require_tensor(input, name)
        if x._dtype.kind == "complex":
            raise RuntimeError(f"{name} does not support complex inputs, got {x.dtype}")
        return _into(name, apply(body, (x,)), out)
    return named(function, name, doc)


isposinf = _real_test("isposinf", _isposinf, "Whether each element is positive infinity.")
isneginf = _real_test("isneginf", _isneginf, "Whether each element is negative infinity.")


def _isreal(x):
    return x.imag == 0 if jnp.iscomplexobj(x) else jnp.ones(x.shape, bool)


def isreal(input):  # noqa: A002
    """Whether each element is real: a complex element whose imaginary part is 0, every
    element of a real tensor."""
    return apply(_isreal, (require_tensor(input, "isreal"),))


def conj_physical(input, *, out=None):  # noqa: A002
    """The complex conjugate (a copy; ``input`` itself copied for a real tensor)."""
    x = require_tensor(input, "conj_physical")
    return _into("conj_physical", E.conj(x) if x._dtype.kind == "complex" else x.clone(), out)


def _angle(x, dtype):
    if jnp.iscomplexobj(x):
        return jnp.angle(x)
    x = x.astype(dtype)
    return jnp.where(x < 0, jnp.asarray(math.pi, dtype), jnp.where(jnp.isnan(x), jax.lax.stop_gradient(x),
                                                              jnp.zeros_like(x)))


def angle(input, *, out=None):  # noqa: A002
    """The argument of each element: ``atan2(imag, real)`` for complex tensors; ``pi``
    for negative real elements, 0 otherwise (NaN stays NaN; integers give float32; the
    gradient of a real tensor is 0, as PyTorch's)."""
    x = require_tensor(input, "angle")
    dtype = x._dtype if x._dtype.kind in ("float", "complex") else D.DEFAULT_FLOAT
    return _into("angle", apply(_angle, (x,), (dtype.np,)), out)


def _logaddexp2(x, y, dtype):
    return jnp.logaddexp2(x.astype(dtype), y.astype(dtype))


def logaddexp2(input, other, *, out=None):  # noqa: A002
    """``log2(2 ** input + 2 ** other)`` without overflow."""
    a, b, dtype = _binary_floating(input, other, "logaddexp2")
    return _into("logaddexp2", apply(_logaddexp2, (a, b), (dtype.np,)), out)


def _extreme(x, y, dtype, larger):
    x, y = jnp.broadcast_arrays(x.astype(dtype), y.astype(dtype))
    keep = (x >= y) if larger else (x <= y)
    if jnp.issubdtype(dtype, jnp.floating):
        keep = keep | jnp.isnan(y)
    return jnp.where(keep, x, y)


def _nan_ignoring(name, larger):
    word = "maximum" if larger else "minimum"

    def function(input, other, *, out=None):  # noqa: A002
        a, b, dtype = promote(input, other, name=name)
        if dtype.kind == "complex":
            raise RuntimeError(f"{name} is not implemented for complex tensors, got {dtype}")
        return _into(name, apply(_extreme, (a, b), (dtype.np, larger)), out)
    return named(function, name, f"The element-wise {word}, ignoring NaN: the other "
                 "operand where one is NaN, NaN where both are.")


fmax = _nan_ignoring("fmax", True)
fmin = _nan_ignoring("fmin", False)


def _gcd(x, y, dtype):
    return jnp.gcd(x.astype(dtype), y.astype(dtype))


def _lcm(x, y, dtype):
    return jnp.lcm(x.astype(dtype), y.astype(dtype))


def _integer_pair(name, body, doc):
    def function(input, other, *, out=None):  # noqa: A002
        a, b, dtype = promote(input, other, name=name)
        if dtype.kind not in ("int", "uint"):
            raise RuntimeError(f"{name}(): expected integer operands, got {dtype}")
        return _into(name, apply(body, (a, b), (dtype.np,)), out)
    return named(function, name, doc)


gcd = _integer_pair("gcd", _gcd, "The greatest common divisor of each pair (non-negative).")
lcm = _integer_pair("lcm", _lcm, "The least common multiple of each pair (non-negative).")


def _heaviside(x, values, dtype):
    x, values = x.astype(dtype), values.astype(dtype)
    return jnp.where(x == 0, values, (x > 0).astype(dtype))


def heaviside(input, values, *, out=None):  # noqa: A002
    """The Heaviside step: 0 where ``input < 0``, 1 where ``input > 0``, ``values`` where
    ``input == 0`` (two tensors of one dtype, as PyTorch)."""
    x = require_tensor(input, "heaviside")
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): values must be a tensor, got {type(values).__name__}")
    if values._dtype is not x._dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different "
                           f"dtypes: {x.dtype} and {values.dtype}")
    if x._dtype.kind == "complex":
        raise RuntimeError(f"heaviside is not yet implemented for complex tensors ({x.dtype})")
    _, _, dtype = promote(x, values, name="heaviside")
    return _into("heaviside", apply(_heaviside, (x, values), (dtype.np,)), out)


def _logit(x, eps):
    if eps is not None:
        lo, hi = jnp.asarray(eps, x.dtype), jnp.asarray(1 - eps, x.dtype)
        x = jnp.where(x < lo, lo, jnp.where(x > hi, hi, x))
    return jnp.log(x / (1 - x))


def logit(input, eps=None, *, out=None):  # noqa: A002
    """``log(p / (1 - p))``, with ``p`` clamped into ``[eps, 1 - eps]`` when ``eps`` is
    given (no gradient where clamped)."""
    x = _real_floating(input, "logit")
    return _into("logit", apply(_logit, (x,), (None if eps is None else float(eps),)), out)


def _polygamma(x, n):
    return jsp.polygamma(n, x)


def polygamma(n, input, *, out=None):  # noqa: A002
    """The ``n``-th derivative of the digamma function (``n >= 0``; ``n == 0`` is
    :func:`arraykit.digamma`)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative or non-integer n, "
                           f"got {n!r}")
    x = _real_floating(input, "polygamma")
    if n == 0:
        return digamma(x, out=out)
    return _into("polygamma", apply(_polygamma, (x,), (int(n),)), out)


def _mvlgamma(x, p):
    offsets = jnp.arange(p, dtype=x.dtype) / 2
    constant = p * (p - 1) / 4 * math.log(math.pi)
    return jnp.sum(jsp.gammaln(x[..., None] - offsets), axis=-1) + jnp.asarray(constant, x.dtype)


def mvlgamma(input, p, *, out=None):  # noqa: A002
    """The log of the multivariate gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_i lgamma(input - i / 2)`` for ``i < p``. Every element
    must exceed ``(p - 1) / 2`` (checked where the host reads the values: on the CPU
    at once, outside a trace)."""
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
        raise RuntimeError(f"mvlgamma(): p has to be greater than or equal to 1, got {p!r}")
    x = _real_floating(input, "mvlgamma")
    if x._dtype.kind != "float":
        raise RuntimeError(f"mvlgamma(): expected a floating-point tensor, got {x.dtype}")
    if (x.device.platform == "cpu" and not is_traced(x) and x.size
            and not bool(E.greater(x, (p - 1) / 2).all())):
        raise RuntimeError(f"mvlgamma(): all elements must be greater than (p-1)/2 = "
                           f"{(p - 1) / 2} for p = {p}")
    return _into("mvlgamma", apply(_mvlgamma, (x,), (int(p),)), out)


def _igamma(a, x, dtype):
    return jsp.gammainc(a.astype(dtype), x.astype(dtype))


def _igammac(a, x, dtype):
    return jsp.gammaincc(a.astype(dtype), x.astype(dtype))


def igamma(input, other, *, out=None):  # noqa: A002
    """The regularized lower incomplete gamma function ``P(input, other)``."""
    a, b, dtype = _binary_floating(input, other, "igamma")
    return _into("igamma", apply(_igamma, (a, b), (dtype.np,)), out)


def igammac(input, other, *, out=None):  # noqa: A002
    """The regularized upper incomplete gamma function ``Q(input, other) = 1 - P``."""
    a, b, dtype = _binary_floating(input, other, "igammac")
    return _into("igammac", apply(_igammac, (a, b), (dtype.np,)), out)
