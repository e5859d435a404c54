"""Pure-JAX bodies of the element-wise kernels, shared by the namespace functions
and the in-place methods.

Unary bodies take one dense operand; binary bodies take two dense operands plus
the static NumPy dtype the computation runs in (both operands are cast to it).
Every special case of the array API standard (NaN, signed zeros, infinities,
complex values) is produced explicitly: XLA's own complex functions are used
only for finite arguments reduced to the upper half plane (or first quadrant),
and the results are extended by the functions' symmetries. Note that XLA on CPU
treats subnormal floats as zero (flush-to-zero), as JAX does.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from . import derivatives as DV

_PI = math.pi
_INF = math.inf
_NAN = math.nan


ELEMENTWISE = set()


def elementwise(body):
    """Mark ``body`` as element-wise: each result element depends only on the operand
    elements at its position, whatever the shape (see :mod:`.size_buckets`)."""
    ELEMENTWISE.add(body)
    return body


def at_least_float32(dtype):
    """The dtype a computation on ``dtype`` runs in: 16-bit floats widen to float32."""
    return jnp.promote_types(dtype, jnp.float32)


def _is_complex(x):
    return jnp.issubdtype(x.dtype, jnp.complexfloating)


def _is_float(x):
    return jnp.issubdtype(x.dtype, jnp.floating)


def _is_signed(dtype):
    return np.dtype(dtype).kind == "i"


def _is_int(dtype):
    return np.dtype(dtype).kind in "iu"


def _cast(a, b, dtype):
    """Both operands in ``dtype``, broadcast to their common shape (``lax`` ops need it)."""
    return jnp.broadcast_arrays(a.astype(dtype), b.astype(dtype))


def _parts(z):
    return jnp.real(z), jnp.imag(z)


def _finite(v):
    return jnp.isfinite(v)


def _conj_if(signed, re, im):
    """Complex ``re + im j``, conjugated where ``signed`` (the input's imaginary sign bit)."""
    return lax.complex(re, jnp.where(signed, -im, im))


def _log_max(dtype):
    """Largest argument whose exponential is finite (rounded down), per real dtype."""
    return 709.0 if np.dtype(dtype).itemsize == 8 else 88.0


# ----------------------------------------------------------------------------- identity


def _analytic(derivative):
    """Give the complex branch ``f(z)`` of a holomorphic function the JVP ``f'(z) dz``,
    with ``derivative(z, f(z))`` = ``f'(z)``. Derivatives are written with this
    module's careful functions (``cos`` of ``asin``'s value rather than
    ``sqrt(1 - z^2)``), so they take the same side of a branch cut as the value and
    stay finite wherever it does.

    The branches pick the standard's special values (signed zeros, infinities) with
    ``where``; differentiated as written, a picked branch that is exact on a whole
    line would give that branch's derivative there (``exp`` on the real axis picks
    ``exp(a) + bj``, whose derivative in ``b`` is 1, not ``i exp(a)``).
    """

    def wrap(f):
        analytic = jax.custom_jvp(f)

        def jvp(primals, tangents):
            (z,), (dz,) = primals, tangents
            y = analytic(z)
            return y, derivative(z, y) * dz

        analytic.defjvp(jvp)
        return analytic

    return wrap


def _complex_of(parts):
    """The complex function whose (re, im) ``parts(a, b)`` computes."""

    def f(z):
        return lax.complex(*parts(*_parts(z)))

    return f


def _rotated(parts):
    """``-i h(i z)`` for the ``h`` whose ``parts`` computes (sin from sinh, tan from
    tanh, asin from asinh, atan from atanh)."""

    def f(z):
        a, b = _parts(z)
        p, q = parts(-b, a)
        return lax.complex(q, -p)

    return f


@elementwise
def identity(x):
    return x


# ----------------------------------------------------------------------------- arithmetic


@elementwise
def add(a, b, dtype):
    return a.astype(dtype) + b.astype(dtype)


@elementwise
def subtract(a, b, dtype):
    return a.astype(dtype) - b.astype(dtype)


@elementwise
def multiply(a, b, dtype):
    return a.astype(dtype) * b.astype(dtype)


@elementwise
def divide(a, b, dtype):
    a, b = a.astype(dtype), b.astype(dtype)
    shape = jnp.broadcast_shapes(a.shape, b.shape)
    if b.shape != shape:
        # XLA rewrites ``a / broadcast(b)`` as ``a * broadcast(1 / b)``, which rounds
        # twice (``x / 6`` differs from NumPy's and PyTorch's in the last bit); a
        # divisor broadcast behind a barrier keeps the correctly rounded quotient.
        b = lax.optimization_barrier(jnp.broadcast_to(b, shape))
    return jnp.true_divide(a, b)


@elementwise
def maximum(a, b, dtype):
    a, b = _cast(a, b, dtype)
    return DV.maximum(a, b) if _is_float(a) else jnp.maximum(a, b)


@elementwise
def minimum(a, b, dtype):
    a, b = _cast(a, b, dtype)
    return DV.minimum(a, b) if _is_float(a) else jnp.minimum(a, b)


@elementwise
def where_fill(cur, mask, value):
    """``cur`` with ``value`` wherever ``mask`` (broadcast) is true."""
    return jnp.where(mask, value.astype(cur.dtype), cur)


@elementwise
def negative(x):
    return -x


@elementwise
def square(x):
    return x * x


@elementwise
def reciprocal(x):
    if _is_float(x) or _is_complex(x):
        return DV.reciprocal(x)
    return jnp.ones((), x.dtype) / x


@elementwise
def abs(x):  # noqa: A001 (the array API name)
    if _is_complex(x):
        re, im = _parts(x)
        return jnp.hypot(re, im)
    return DV.abs(x) if _is_float(x) else jnp.abs(x)


@elementwise
def sign(x):
    if _is_complex(x):
        re, im = _parts(x)
        big = jnp.maximum(jnp.abs(re), jnp.abs(im))
        safe = jnp.where((big == 0) | ~_finite(big), 1, big)
        r, i = re / safe, im / safe
        h = jnp.hypot(r, i)
        out_re, out_im = r / h, i / h
        inf_re = jnp.where(jnp.isinf(re), jnp.sign(re), 0)
        inf_im = jnp.where(jnp.isinf(im), jnp.sign(im), 0)
        inf_h = jnp.hypot(inf_re, inf_im)
        any_inf = jnp.isinf(re) | jnp.isinf(im)
        out_re = jnp.where(any_inf, inf_re / inf_h, out_re)
        out_im = jnp.where(any_inf, inf_im / inf_h, out_im)
        zero = big == 0
        out_re = jnp.where(zero, 0, out_re)
        out_im = jnp.where(zero, 0, out_im)
        nan = jnp.isnan(re) | jnp.isnan(im)
        return lax.complex(jnp.where(nan, _NAN, out_re), jnp.where(nan, _NAN, out_im))
    if _is_float(x):
        return jnp.where(x == 0, jnp.zeros((), x.dtype), jnp.sign(x))
    return jnp.sign(x)


def _float_divmod(a, b):
    """NumPy's floor division and remainder of real floats (``npy_divmod``)."""
    # behind a barrier, a broadcast divisor is not turned into a multiplication by its
    # reciprocal (two roundings; see divide)
    safe_b = lax.optimization_barrier(jnp.where(b == 0, 1, b))
    mod = lax.rem(a, safe_b)
    div = (a - mod) / safe_b
    fix = (mod != 0) & ((b < 0) != (mod < 0))
    mod = jnp.where(fix, mod + b, mod)
    div = jnp.where(fix, div - 1, div)
    mod = jnp.where(mod == 0, jnp.copysign(jnp.zeros((), a.dtype), b), mod)
    floor = jnp.floor(div)
    floor = jnp.where(div - floor > 0.5, floor + 1, floor)
    floor = jnp.where(div == 0, jnp.copysign(jnp.zeros((), a.dtype), a / safe_b), floor)
    return floor, mod


@elementwise
def floor_divide(a, b, dtype):
    a, b = _cast(a, b, dtype)
    if _is_int(dtype):
        safe_b = jnp.where(b == 0, 1, b)
        q = lax.div(a, safe_b)
        if _is_signed(dtype):
            r = lax.rem(a, safe_b)
            q = jnp.where((r != 0) & ((r < 0) != (safe_b < 0)), q - 1, q)
        return jnp.where(b == 0, 0, q)
    floor, _ = _float_divmod(a, b)
    ordinary = _finite(a) & _finite(b) & (b != 0)
    return jnp.where(ordinary, floor, jnp.floor(a / b))


@elementwise
def remainder(a, b, dtype):
    a, b = _cast(a, b, dtype)
    if _is_int(dtype):
        safe_b = jnp.where(b == 0, 1, b)
        r = lax.rem(a, safe_b)
        if _is_signed(dtype):
            r = jnp.where((r != 0) & ((r < 0) != (safe_b < 0)), r + safe_b, r)
        return jnp.where(b == 0, 0, r)
    return _float_remainder(a, b)


@DV.with_jvp(lambda p, out, da: da, lambda p, out, db: -_float_divmod(*p)[0] * db)
def _float_remainder(a, b):
    """Float ``a % b``; derivatives 1 and ``-floor(a / b)`` everywhere (PyTorch's),
    also where the result jumps."""
    _, mod = _float_divmod(a, b)
    return jnp.where((b == 0) | ~_finite(a), _NAN, mod)


_INTEGER_POWER_BITS = 7  # exponents below 2**7 in magnitude: NumPy's |n| < 100 and more


def _small_integer(br, bi):
    """Where the complex exponent ``br + bi j`` is an integer of magnitude below 100."""
    return (bi == 0) & (br == jnp.round(br)) & (jnp.abs(br) < 100)


def _integer_power(a, br):
    """``a ** n`` for the integers ``n`` in ``br`` (|n| < 2**7) by repeated squaring,
    as NumPy and PyTorch compute complex integer powers: ``(2j) ** 2`` is exactly
    ``-4+0j``, where ``exp(2 log(2j))`` leaves a rounding error in the real part.
    The base is squared only while a higher bit of ``n`` needs it (no overflow into
    a branch ``where`` discards, whose gradient would be NaN)."""
    n = jnp.where(jnp.abs(br) < 2 ** _INTEGER_POWER_BITS, br, 0).astype(jnp.int32)
    m = jnp.abs(n)
    power, base = jnp.ones_like(a), a
    for bit in range(_INTEGER_POWER_BITS):
        power = jnp.where((m >> bit) & 1 == 1, power * base, power)
        base = jnp.where(m >> (bit + 1) > 0, base * base, base)
    return jnp.where(n < 0, 1 / power, power)


@elementwise
def pow(a, b, dtype):  # noqa: A001 (the array API name)
    a, b = _cast(a, b, dtype)
    if _is_int(dtype):
        if not _is_signed(dtype):
            return jnp.power(a, b)
        out = jnp.power(a, jnp.maximum(b, 0))
        odd = (b & 1) == 1
        negative_power = jnp.where(a == 1, 1, jnp.where(a == -1, jnp.where(odd, -1, 1), 0))
        return jnp.where(b < 0, negative_power.astype(dtype), out)
    if not _is_complex(a):
        return DV.pow(a, b)
    out = jnp.power(a, b)
    b_zero = b == 0
    a_zero = a == 0
    br, bi = _parts(b)
    out = jnp.where(_small_integer(br, bi) & ~a_zero, _integer_power(a, br), out)
    re, im = _parts(out)
    zero_base = a_zero & (br > 0) & (bi == 0)
    re = jnp.where(b_zero, 1, jnp.where(zero_base, 0, re))
    im = jnp.where(b_zero | zero_base, 0, im)
    return lax.complex(re, im)


# ----------------------------------------------------------------------------- rounding


@elementwise
def ceil(x):
    return jnp.ceil(x) if _is_float(x) else x


@elementwise
def floor(x):
    return jnp.floor(x) if _is_float(x) else x


@elementwise
def trunc(x):
    return jnp.trunc(x) if _is_float(x) else x


@elementwise
def round(x):  # noqa: A001 (the array API name)
    if _is_complex(x):
        re, im = _parts(x)
        return lax.complex(jnp.round(re), jnp.round(im))
    return jnp.round(x) if _is_float(x) else x


# ----------------------------------------------------------------------------- tests


@elementwise
def isfinite(x):
    return jnp.isfinite(x)


@elementwise
def isinf(x):
    return jnp.isinf(x)


@elementwise
def isnan(x):
    return jnp.isnan(x)


@elementwise
def signbit(x):
    return jnp.signbit(x)


# ----------------------------------------------------------------------------- complex parts


@elementwise
def real(x):
    return jnp.real(x)


@elementwise
def imag(x):
    return jnp.imag(x)


@elementwise
def conj(x):
    return jnp.conj(x) if _is_complex(x) else x


# ----------------------------------------------------------------------------- exp / log


def _cexp_parts(a, b):
    """``exp(a + bj)`` as (re, im) following C99 ``cexp``."""
    c, s = jnp.cos(b), jnp.sin(b)
    ea = jnp.exp(a)
    half = jnp.exp(a / 2)
    big = a > _log_max(a.dtype)
    re = jnp.where(big, (half * c) * half, ea * c)
    im = jnp.where(big, (half * s) * half, ea * s)
    nonfinite_b = ~_finite(b)
    re = jnp.where(b == 0, ea, re)
    im = jnp.where(b == 0, b, im)
    pos_inf = (a == _INF) & nonfinite_b
    neg_inf = (a == -_INF) & nonfinite_b
    re = jnp.where(pos_inf, _INF, jnp.where(neg_inf, 0, re))
    im = jnp.where(pos_inf, _NAN, jnp.where(neg_inf, 0, im))
    return re, im


_cexp = _analytic(lambda z, y: y)(_complex_of(_cexp_parts))


@elementwise
def exp(x):
    if _is_complex(x):
        return _cexp(x)
    return jnp.exp(x)


@elementwise
def expm1(x):
    if not _is_complex(x):
        return jnp.expm1(x)
    return _cexpm1(x)


@_analytic(lambda z, y: y + 1)
def _cexpm1(x):
    a, b = _parts(x)
    _, im = _cexp_parts(a, b)
    half_sin = jnp.sin(b / 2)
    re = jnp.expm1(a) * jnp.cos(b) - 2 * half_sin * half_sin
    re = jnp.where(b == 0, jnp.where(a == 0, 0, jnp.expm1(a)), re)  # expm1(-0 + 0j) = +0 + 0j
    nonfinite_b = ~_finite(b)
    re = jnp.where((a == _INF) & nonfinite_b, _INF, jnp.where((a == -_INF) & nonfinite_b, -1, re))
    return lax.complex(re, im)


def _clog_upper(x, y, generic):
    """Special cases of ``log(x + yj)`` for ``y >= +0``, over XLA's finite result."""
    re, im = _parts(generic)
    nan = jnp.isnan(x) | jnp.isnan(y)
    inf = jnp.isinf(x) | jnp.isinf(y)
    angle = jnp.arctan2(y, x)
    re = jnp.where(inf, _INF, jnp.where(nan, _NAN, re))
    im = jnp.where(nan, _NAN, jnp.where(inf, angle, im))
    return re, im


def _clog(z):
    a, b = _parts(z)
    y = jnp.abs(b)
    re, im = _clog_upper(a, y, jnp.log(lax.complex(a, y)))
    zero = (a == 0) & (y == 0)
    re = jnp.where(zero, -_INF, re)
    im = jnp.where(zero, jnp.arctan2(y, a), im)
    return re, jnp.copysign(im, b)


def _clog_base(base):
    """``log(z) / log(base)`` (base None: the natural logarithm) with its derivative."""
    scale = 1.0 if base is None else math.log(base)

    @_analytic(lambda z, y: 1 / (z * scale))
    def f(z):
        re, im = _clog(z)
        return lax.complex(re, im) if base is None else lax.complex(re / scale, im / scale)

    return f


_cln = _clog_base(None)
_clog2 = _clog_base(2)
_clog10 = _clog_base(10)


@elementwise
def log(x):
    if _is_complex(x):
        return _cln(x)
    return jnp.log(x)


@elementwise
def log2(x):
    if _is_complex(x):
        return _clog2(x)
    return jnp.log2(x)


@elementwise
def log10(x):
    if _is_complex(x):
        return _clog10(x)
    return jnp.log10(x)


@elementwise
def log1p(x):
    if not _is_complex(x):
        return jnp.log1p(x)
    return _clog1p(x)


@_analytic(lambda z, y: 1 / (1 + z))
def _clog1p(x):
    a, b = _parts(x)
    y = jnp.abs(b)
    generic = jnp.log1p(lax.complex(a, y))
    # Next to the pole -1 with a tiny imaginary part, XLA's |1 + z|^2 underflows.
    near_pole = jnp.isinf(jnp.real(generic)) & _finite(a) & _finite(y) & ~((a == -1) & (y == 0))
    generic = jnp.where(near_pole, lax.complex(jnp.log(jnp.hypot(1 + a, y)), jnp.imag(generic)), generic)
    re, im = _clog_upper(jnp.where(_finite(a), a, a + 1), y, generic)
    pole = (a == -1) & (y == 0)
    re = jnp.where(pole, -_INF, re)
    im = jnp.where(pole, 0, im)
    return lax.complex(re, jnp.copysign(im, b))


@elementwise
def sqrt(x):
    if not _is_complex(x):
        return jnp.sqrt(x)
    return _csqrt(x)


@_analytic(lambda z, y: 0.5 / y)
def _csqrt(x):
    a, b = _parts(x)
    y = jnp.abs(b)
    re, im = _parts(jnp.sqrt(lax.complex(a, y)))
    nan_a, nan_y = jnp.isnan(a), jnp.isnan(y)
    table = [
        ((a == 0) & (y == 0), 0, 0),
        (nan_y & _finite(a), _NAN, _NAN),
        ((a == _INF) & ~nan_y, _INF, 0),
        ((a == _INF) & nan_y, _INF, _NAN),
        ((a == -_INF) & ~nan_y, 0, _INF),
        ((a == -_INF) & nan_y, _NAN, _INF),
        (nan_a, _NAN, _NAN),
        (y == _INF, _INF, _INF),
    ]
    for cond, r, i in table:
        re = jnp.where(cond, r, re)
        im = jnp.where(cond, i, im)
    return lax.complex(re, jnp.copysign(im, b))


@elementwise
def logaddexp(a, b, dtype):
    a, b = _cast(a, b, dtype)
    return DV.logaddexp(a, b)


# ----------------------------------------------------------------------------- hyperbolic


def _scaled(a, plain, trig, odd):
    """``plain * trig`` for ``plain`` = sinh(a) (``odd``) or cosh(a).

    Where ``plain`` overflows, the product is formed as ``(h * trig) * (h/2)`` with
    ``h = e^(|a|/2)``, so it stays finite wherever the true value is (and a tiny
    ``trig`` is not flushed to zero on the way).
    """
    h = jnp.exp(jnp.abs(a) / 2)
    large = (h * trig) * (0.5 * h)
    if odd:
        large = jnp.where(a < 0, -large, large)
    return jnp.where(jnp.abs(a) > _log_max(a.dtype), large, plain * trig)


def _csinh_parts(a, b):
    c, s = jnp.cos(b), jnp.sin(b)
    re = _scaled(a, jnp.sinh(a), c, True)
    im = _scaled(a, jnp.cosh(a), s, False)
    im = jnp.where(b == 0, b, im)
    re = jnp.where(((a == 0) | jnp.isinf(a)) & ~_finite(b), a, re)
    return re, im


def _ccosh_parts(a, b):
    c, s = jnp.cos(b), jnp.sin(b)
    re = _scaled(a, jnp.cosh(a), c, False)
    im = _scaled(a, jnp.sinh(a), s, True)
    im = jnp.where(b == 0, b * jnp.copysign(jnp.ones((), a.dtype), a), im)
    nonfinite_b = ~_finite(b)
    im = jnp.where((a == 0) & nonfinite_b, 0, im)
    re = jnp.where(jnp.isinf(a) & nonfinite_b, _INF, re)
    return re, im


def _ctanh_parts(a, b):
    """C99 ``ctanh`` (Kahan's algorithm, as in FreeBSD's libm)."""
    t = jnp.tan(b)
    beta = 1 + t * t
    s = jnp.sinh(a)
    rho = jnp.sqrt(1 + s * s)
    denom = 1 + beta * s * s
    re = beta * rho * s / denom
    im = t / denom
    large = jnp.abs(a) >= (22.0 if a.dtype.itemsize == 8 else 9.0)
    e = jnp.exp(-jnp.abs(a))
    one = jnp.copysign(jnp.ones((), a.dtype), a)
    re = jnp.where(large, one, re)
    im = jnp.where(large, 4 * jnp.sin(b) * jnp.cos(b) * e * e, im)
    inf_a = jnp.isinf(a)
    re = jnp.where(inf_a, one, re)
    im = jnp.where(inf_a, jnp.copysign(jnp.zeros((), a.dtype), b), im)
    bad_b = _finite(a) & ~_finite(b)
    re = jnp.where(bad_b, jnp.where(a == 0, a, _NAN), re)
    im = jnp.where(bad_b, _NAN, im)
    nan_a = jnp.isnan(a)
    re = jnp.where(nan_a, _NAN, re)
    im = jnp.where(nan_a, jnp.where(b == 0, b, _NAN), im)
    return re, im


def _complex_or(complex_fn, real, x):
    """``complex_fn(x)`` for complex ``x``, else ``real(x)``."""
    return complex_fn(x) if _is_complex(x) else real(x)


_csinh = _analytic(lambda z, y: _ccosh(z))(_complex_of(_csinh_parts))
_ccosh = _analytic(lambda z, y: _csinh(z))(_complex_of(_ccosh_parts))
_ctanh = _analytic(lambda z, y: 1 - y * y)(_complex_of(_ctanh_parts))
_csin = _analytic(lambda z, y: _ccos(z))(_rotated(_csinh_parts))
_ctan = _analytic(lambda z, y: 1 + y * y)(_rotated(_ctanh_parts))


@_analytic(lambda z, y: -_csin(z))
def _ccos(z):  # cos(z) = cosh(i z)
    a, b = _parts(z)
    return lax.complex(*_ccosh_parts(-b, a))


@elementwise
def sinh(x):
    return _complex_or(_csinh, jnp.sinh, x)


@elementwise
def cosh(x):
    return _complex_or(_ccosh, jnp.cosh, x)


@elementwise
def tanh(x):
    return _complex_or(_ctanh, jnp.tanh, x)


@elementwise
def sin(x):
    return _complex_or(_csin, jnp.sin, x)


@elementwise
def cos(x):
    return _complex_or(_ccos, jnp.cos, x)


@elementwise
def tan(x):
    return _complex_or(_ctan, jnp.tan, x)


# ----------------------------------------------------------------------------- inverse functions


def _apply_table(re, im, table):
    """Overwrite (re, im) by the first matching row of ``table`` [(cond, re, im)]."""
    for cond, r, i in reversed(table):
        re = jnp.where(cond, r, re)
        im = jnp.where(cond, i, im)
    return re, im


def _casinh_parts(a, b):
    x, y = jnp.abs(a), jnp.abs(b)
    re, im = _parts(jnp.arcsinh(lax.complex(x, y)))
    nan_x, nan_y = jnp.isnan(x), jnp.isnan(y)
    inf_x, inf_y = jnp.isinf(x), jnp.isinf(y)
    fin_x = _finite(x)
    re, im = _apply_table(re, im, [
        (nan_x & inf_y, _INF, _NAN),
        (nan_x & (y == 0), _NAN, y),
        (nan_x, _NAN, _NAN),
        (inf_x & nan_y, _INF, _NAN),
        (inf_x & inf_y, _INF, _PI / 4),
        (inf_x, _INF, 0),
        (fin_x & inf_y, _INF, _PI / 2),
        (fin_x & nan_y, _NAN, _NAN),
        ((x == 0) & (y == 0), 0, 0),
    ])
    return jnp.copysign(re, a), jnp.copysign(im, b)


def _catanh_parts(a, b):
    x, y = jnp.abs(a), jnp.abs(b)
    re, im = _parts(jnp.arctanh(lax.complex(x, y)))
    fin_x, fin_y = _finite(x), _finite(y)
    # Next to the poles +-1 with a tiny imaginary part, XLA's (1-x)^2 + y^2 underflows.
    near_pole = jnp.isinf(re) & fin_x & fin_y & ~((x == 1) & (y == 0))
    log_ratio = 0.5 * (jnp.log(jnp.hypot(1 + x, y)) - jnp.log(jnp.hypot(1 - x, y)))
    re = jnp.where(near_pole, log_ratio, re)
    nan_x, nan_y = jnp.isnan(x), jnp.isnan(y)
    inf_x, inf_y = jnp.isinf(x), jnp.isinf(y)
    re, im = _apply_table(re, im, [
        (nan_x & inf_y, 0, _PI / 2),
        (nan_x, _NAN, _NAN),
        (inf_x & nan_y, 0, _NAN),
        (inf_x, 0, _PI / 2),
        (fin_x & inf_y, 0, _PI / 2),
        ((x == 0) & nan_y, 0, _NAN),
        (fin_x & nan_y, _NAN, _NAN),
        ((x == 1) & (y == 0), _INF, 0),
        ((x == 0) & (y == 0), 0, 0),
        (fin_x & fin_y & jnp.isnan(re), _NAN, _NAN),
    ])
    return jnp.copysign(re, a), jnp.copysign(im, b)


_casinh = _analytic(lambda z, y: 1 / _ccosh(y))(_complex_of(_casinh_parts))
_catanh = _analytic(lambda z, y: 1 / (1 - z * z))(_complex_of(_catanh_parts))
_casin = _analytic(lambda z, y: 1 / _ccos(y))(_rotated(_casinh_parts))
_catan = _analytic(lambda z, y: 1 / (1 + z * z))(_rotated(_catanh_parts))


@elementwise
def asinh(x):
    return _complex_or(_casinh, jnp.arcsinh, x)


@elementwise
def atanh(x):
    return _complex_or(_catanh, jnp.arctanh, x)


@elementwise
def asin(x):
    return _complex_or(_casin, jnp.arcsin, x)


@elementwise
def atan(x):
    return _complex_or(_catan, jnp.arctan, x)


@elementwise
def acosh(x):
    if not _is_complex(x):
        return jnp.arccosh(x)
    return _cacosh(x)


@_analytic(lambda z, y: 1 / _csinh(y))
def _cacosh(x):
    a, b = _parts(x)
    y = jnp.abs(b)
    re, im = _parts(jnp.arccosh(lax.complex(a, y)))
    nan_a, nan_y = jnp.isnan(a), jnp.isnan(y)
    inf_y = jnp.isinf(y)
    fin_a = _finite(a)
    re, im = _apply_table(re, im, [
        (nan_a & inf_y, _INF, _NAN),
        (nan_a, _NAN, _NAN),
        (jnp.isinf(a) & nan_y, _INF, _NAN),
        ((a == -_INF) & inf_y, _INF, 3 * _PI / 4),
        ((a == _INF) & inf_y, _INF, _PI / 4),
        (a == -_INF, _INF, _PI),
        (a == _INF, _INF, 0),
        (fin_a & inf_y, _INF, _PI / 2),
        ((a == 0) & nan_y, _NAN, _PI / 2),
        (nan_y, _NAN, _NAN),
        ((a == 0) & (y == 0), 0, _PI / 2),
    ])
    return lax.complex(re, jnp.copysign(im, b))


@elementwise
def acos(x):
    if not _is_complex(x):
        return jnp.arccos(x)
    return _cacos(x)


@_analytic(lambda z, y: -1 / _csin(y))
def _cacos(x):
    a, b = _parts(x)
    y = jnp.abs(b)
    re, im = _parts(jnp.arccos(lax.complex(a, y)))
    nan_a, nan_y = jnp.isnan(a), jnp.isnan(y)
    inf_y = jnp.isinf(y)
    fin_a = _finite(a)
    re, im = _apply_table(re, im, [
        (nan_a & inf_y, _NAN, -_INF),
        (nan_a, _NAN, _NAN),
        (jnp.isinf(a) & nan_y, _NAN, _INF),
        ((a == -_INF) & inf_y, 3 * _PI / 4, -_INF),
        ((a == _INF) & inf_y, _PI / 4, -_INF),
        (a == -_INF, _PI, -_INF),
        (a == _INF, 0, -_INF),
        (fin_a & inf_y, _PI / 2, -_INF),
        ((a == 0) & nan_y, _PI / 2, _NAN),
        (nan_y, _NAN, _NAN),
        ((a == 0) & (y == 0), _PI / 2, -0.0),
    ])
    return _conj_if(jnp.signbit(b), re, im)


@elementwise
def atan2(a, b, dtype):
    a, b = _cast(a, b, dtype)
    return DV.atan2(a, b)


@elementwise
def copysign(a, b, dtype):
    a, b = _cast(a, b, dtype)
    return DV.copysign(a, b)


@elementwise
def hypot(a, b, dtype):
    a, b = _cast(a, b, dtype)
    return DV.hypot(a, b)


@elementwise
def nextafter(a, b, dtype):
    return jnp.nextafter(a.astype(dtype), b.astype(dtype))


# ----------------------------------------------------------------------------- comparisons


def _exact_mixed(a, b):
    """Operands of a comparison between int64 and uint64 arrays, compared exactly.

    Returns ``(a, b, negative_a, negative_b)`` as uint64 magnitudes with flags
    for negative signed values, or None when no exact path is needed.
    """
    kinds = (a.dtype.kind, b.dtype.kind)
    if sorted(kinds) != ["i", "u"] or max(a.dtype.itemsize, b.dtype.itemsize) < 8:
        return None
    neg_a = a < 0 if a.dtype.kind == "i" else jnp.zeros(a.shape, bool)
    neg_b = b < 0 if b.dtype.kind == "i" else jnp.zeros(b.shape, bool)
    return a.astype(np.uint64), b.astype(np.uint64), neg_a, neg_b


def _compare(op, a, b, dtype):
    mixed = _exact_mixed(a, b)
    if mixed is None:
        return op(*_cast(a, b, dtype))
    ua, ub, neg_a, neg_b = mixed
    same = neg_a == neg_b
    return jnp.where(same, op(ua, ub), op(jnp.where(neg_a, -1, 1), jnp.where(neg_b, -1, 1)))


@elementwise
def equal(a, b, dtype):
    return _compare(jnp.equal, a, b, dtype)


@elementwise
def not_equal(a, b, dtype):
    return _compare(jnp.not_equal, a, b, dtype)


@elementwise
def less(a, b, dtype):
    return _compare(jnp.less, a, b, dtype)


@elementwise
def less_equal(a, b, dtype):
    return _compare(jnp.less_equal, a, b, dtype)


@elementwise
def greater(a, b, dtype):
    return _compare(jnp.greater, a, b, dtype)


@elementwise
def greater_equal(a, b, dtype):
    return _compare(jnp.greater_equal, a, b, dtype)


@elementwise
def constant(x, value):
    """A boolean array of ``x``'s shape filled with ``value``."""
    return jnp.full(x.shape, value, dtype=bool)


# ----------------------------------------------------------------------------- logical / bitwise


def _truth(x):
    return x if x.dtype == jnp.bool_ else x != 0


@elementwise
def logical_and(a, b, dtype):
    return jnp.logical_and(_truth(a), _truth(b))


@elementwise
def logical_or(a, b, dtype):
    return jnp.logical_or(_truth(a), _truth(b))


@elementwise
def logical_xor(a, b, dtype):
    return jnp.logical_xor(_truth(a), _truth(b))


@elementwise
def logical_not(x):
    return jnp.logical_not(_truth(x))


@elementwise
def bitwise_and(a, b, dtype):
    return jnp.bitwise_and(*_cast(a, b, dtype))


@elementwise
def bitwise_or(a, b, dtype):
    return jnp.bitwise_or(*_cast(a, b, dtype))


@elementwise
def bitwise_xor(a, b, dtype):
    return jnp.bitwise_xor(*_cast(a, b, dtype))


@elementwise
def bitwise_invert(x):
    return jnp.invert(x)


@elementwise
def bitwise_left_shift(a, b, dtype):
    a, b = _cast(a, b, dtype)
    bits = np.dtype(dtype).itemsize * 8
    out_of_range = (b < 0) | (b >= bits) if _is_signed(dtype) else b >= bits
    safe = jnp.where(out_of_range, 0, b)
    return jnp.where(out_of_range, 0, lax.shift_left(a, safe))


@elementwise
def bitwise_right_shift(a, b, dtype):
    a, b = _cast(a, b, dtype)
    bits = np.dtype(dtype).itemsize * 8
    if _is_signed(dtype):
        out_of_range = (b < 0) | (b >= bits)
        safe = jnp.where(out_of_range, 0, b)
        fill = jnp.where(a < 0, -1, 0).astype(dtype)
        return jnp.where(out_of_range, fill, lax.shift_right_arithmetic(a, safe))
    out_of_range = b >= bits
    safe = jnp.where(out_of_range, 0, b)
    return jnp.where(out_of_range, 0, lax.shift_right_logical(a, safe))


# ----------------------------------------------------------------------------- clip


@elementwise
def clip_both(x, lo, hi):
    lo, hi = lo.astype(x.dtype), hi.astype(x.dtype)
    if _is_float(x):
        return DV.clip_both(x, lo, hi)
    return jnp.minimum(jnp.maximum(x, lo), hi)


@elementwise
def clip_min(x, lo):
    lo = lo.astype(x.dtype)
    return DV.clip_min(x, lo) if _is_float(x) else jnp.maximum(x, lo)


@elementwise
def clip_max(x, hi):
    hi = hi.astype(x.dtype)
    return DV.clip_max(x, hi) if _is_float(x) else jnp.minimum(x, hi)
