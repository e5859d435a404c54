"""PyTorch's derivatives at kinks, ties and removable singularities, as JAX custom JVPs.

JAX differentiates ``maximum(x, 0)`` at 0 as half a gradient, ``abs`` at 0 as 1,
``sqrt`` of a zero variance as infinity; PyTorch (``derivatives.yaml``) gives 0, 0
and 0. Each function here computes the same values as its ``jax.numpy``
counterpart and differentiates as PyTorch does at the exact points, so an
arraykit gradient matches PyTorch's on padded, clamped or tied inputs. The rules
are written in ``jax.numpy``, so they differentiate again (second derivatives).
Real floating-point operands (``reciprocal``, holomorphic, complex too): callers
keep JAX's rules for complex ones. Rules read the result where PyTorch saves it
(``relu``, ``hypot``, ``reciprocal``, the norms), so that the autograd engine sees
the dependence and checks the output for in-place writes as PyTorch does.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero


def with_jvp(*partials):
    """Decorator: give ``f(*arrays)`` the JVP ``sum_i partials[i](primals, out, t_i)``
    (``out`` = ``f(*primals)``, ``t_i`` the tangent of argument ``i``; arguments
    without a tangent are skipped, so what their term reads is not computed, nor
    kept for the VJP). The result is broadcast to ``out``'s shape."""

    def wrap(f):
        g = jax.custom_jvp(f)

        def jvp(primals, tangents):
            out = g(*primals)
            t = jnp.zeros_like(out)
            for partial, dt in zip(partials, tangents):
                if type(dt) is not SymbolicZero:
                    t = t + partial(primals, out, dt)
            return out, jnp.broadcast_to(t, out.shape).astype(out.dtype)

        g.defjvp(jvp, symbolic_zeros=True)
        return g

    return wrap


def where0(cond, t):
    """``t`` where ``cond``, else 0 (broadcast)."""
    return jnp.where(cond, t, jnp.zeros((), t.dtype))


def _safe_inverse(v):
    """``1 / v``, 0 where ``v == 0``."""
    one = jnp.ones((), v.dtype)
    return where0(v != 0, one / jnp.where(v == 0, one, v))


@with_jvp(lambda p, out, dx: where0(out > 0, dx))
def relu(x):
    """``max(x, 0)``; derivative 0 at 0, read from the result (PyTorch's
    ``threshold_backward``, which saves the result)."""
    return jnp.maximum(x, jnp.zeros((), x.dtype))


@with_jvp(lambda p, out, dx: jnp.sign(p[0]) * dx)
def abs(x):  # noqa: A001 (the array API name)
    """``|x|``; derivative ``sign(x)``, 0 at 0."""
    return jnp.abs(x)


@with_jvp(
    lambda p, out, dx: where0((p[0] >= p[1]) & (p[0] <= p[2]), dx),
    lambda p, out, dlo: where0((p[0] < p[1]) & (p[1] < p[2]), dlo),
    lambda p, out, dhi: where0((p[0] > p[2]) | (p[2] < p[1]), dhi),
)
def clip_both(x, lo, hi):
    """``min(max(x, lo), hi)``: the gradient goes to ``x`` when ``lo <= x <= hi``
    (at a tie too), else to the bound that is the result (``hi`` when ``lo > hi``)."""
    return jnp.minimum(jnp.maximum(x, lo), hi)


@with_jvp(lambda p, out, dx: where0(p[0] >= p[1], dx), lambda p, out, dlo: where0(p[0] < p[1], dlo))
def clip_min(x, lo):
    """``max(x, lo)``: the gradient goes to ``x`` when ``x >= lo``."""
    return jnp.maximum(x, lo)


@with_jvp(lambda p, out, dx: where0(p[0] <= p[1], dx), lambda p, out, dhi: where0(p[0] > p[1], dhi))
def clip_max(x, hi):
    """``min(x, hi)``: the gradient goes to ``x`` when ``x <= hi``."""
    return jnp.minimum(x, hi)


def _share(a, b, loses):
    """PyTorch's share of a ``maximum``/``minimum`` gradient for ``a``: all of it, half
    at a tie, none where ``loses``; read from the operands, not the result."""
    half = jnp.where(a == b, jnp.full((), 0.5, a.dtype), jnp.ones((), a.dtype))
    return where0(~loses, half)


@with_jvp(lambda p, out, da: _share(p[0], p[1], p[0] < p[1]) * da,
          lambda p, out, db: _share(p[0], p[1], p[0] > p[1]) * db)
def maximum(a, b):
    """Element-wise maximum; a tie splits the gradient evenly."""
    return jnp.maximum(a, b)


@with_jvp(lambda p, out, da: _share(p[0], p[1], p[0] > p[1]) * da,
          lambda p, out, db: _share(p[0], p[1], p[0] < p[1]) * db)
def minimum(a, b):
    """Element-wise minimum; a tie splits the gradient evenly."""
    return jnp.minimum(a, b)


def _pow_base(p, out, da):
    a, b = p
    return where0(b != 0, b * jnp.power(a, b - jnp.ones((), a.dtype))) * da


def _pow_exponent(p, out, db):
    a, b = p
    return where0(~((a == 0) & (b >= 0)), out * jnp.log(a)) * db


@with_jvp(_pow_base, _pow_exponent)
def pow(a, b):  # noqa: A001 (the array API name)
    """``a ** b``: no gradient to ``a`` where ``b == 0``, none to ``b`` where
    ``a == 0 <= b``; the exponent's gradient reads the result (PyTorch's
    ``pow_backward``)."""
    return jnp.power(a, b)


def _atan2_scale(p):
    a, b = p
    return _safe_inverse(a * a + b * b)


@with_jvp(lambda p, out, da: p[1] * _atan2_scale(p) * da,
          lambda p, out, db: -p[0] * _atan2_scale(p) * db)
def atan2(a, b):
    """``atan2(a, b)``; gradient 0 at the origin, as PyTorch."""
    return jnp.arctan2(a, b)


@with_jvp(lambda p, out, da: p[0] * _safe_inverse(out) * da,
          lambda p, out, db: p[1] * _safe_inverse(out) * db)
def hypot(a, b):
    """``sqrt(a^2 + b^2)``, derivatives read from the result; gradient 0 at the
    origin (as ``vector_norm``; PyTorch's ``hypot`` gives NaN there)."""
    return jnp.hypot(a, b)


@with_jvp(lambda p, out, da: out * _safe_inverse(p[0]) * da, lambda p, out, db: jnp.zeros_like(out))
def copysign(a, b):
    """``|a|`` with ``b``'s sign: no gradient to ``b``, none to ``a`` where ``a == 0``.
    Computed on the bits (``a``'s without its sign bit, ``b``'s sign bit), so a NaN
    takes ``b``'s sign on every backend (``jnp.copysign``'s NaN came out positive on a GPU)."""
    bits = jnp.dtype(f"uint{8 * jnp.dtype(a.dtype).itemsize}")
    sign = jnp.asarray(1 << (8 * bits.itemsize - 1), bits)
    magnitude = jax.lax.bitcast_convert_type(a, bits) & ~sign
    return jax.lax.bitcast_convert_type(
        magnitude | (jax.lax.bitcast_convert_type(b, bits) & sign), a.dtype)


def _tie_weight(a, b):
    """``sigmoid(a - b)``, 1/2 at a tie of infinities too (where ``a - b`` is NaN)."""
    d = a - b
    return jax.nn.sigmoid(jnp.where(jnp.isnan(d) & (a == b), jnp.zeros((), d.dtype), d))


@with_jvp(lambda p, out, da: _tie_weight(p[0], p[1]) * da,
          lambda p, out, db: _tie_weight(p[1], p[0]) * db)
def logaddexp(a, b):
    """``log(exp(a) + exp(b))``: a tie splits the gradient evenly (at infinities too)."""
    return jnp.logaddexp(a, b)


@with_jvp(lambda p, out, dv: 0.5 * _safe_inverse(out) * dv)
def sqrt_of_sum(v):
    """``sqrt(v)`` of a sum of squares (a norm or a standard deviation): gradient 0
    where ``v == 0``, as PyTorch's ``std`` and ``norm`` backward."""
    return jnp.sqrt(v)


@with_jvp(lambda p, out, dx: -(out * out) * dx)
def reciprocal(x):
    """``1 / x``, differentiated through its result (PyTorch saves it)."""
    return jnp.ones((), x.dtype) / x


def extreme(value):
    """Give ``value(x, axes, keepdims, *static)``, a maximum or minimum over ``axes``,
    PyTorch's ``amax``/``amin`` derivative for real ``x``: the gradient is split evenly
    among the elements equal to the result (read from the result, as PyTorch's)."""
    reduced = jax.custom_jvp(value, nondiff_argnums=(1, 2, 3, 4))

    def jvp(axes, keepdims, *rest):
        *static, (x,), (dx,) = rest
        out = reduced(x, axes, keepdims, *static)
        kept = out if keepdims else jnp.expand_dims(out, _kept(axes, x.ndim))
        hit = (x == kept).astype(x.dtype)
        count = jnp.sum(hit, axis=axes, keepdims=keepdims)
        return out, (jnp.sum(hit * dx, axis=axes, keepdims=keepdims) / count).astype(out.dtype)

    reduced.defjvp(jvp)
    return reduced


def vector_norm(value):
    """Give ``value(x, axis, keepdims, ord, real)``, a vector ``ord``-norm, PyTorch's
    derivative (``linalg_vector_norm_backward``) for real ``x``: 0 at a zero norm,
    ``sign(x)`` (0 at 0) for the 1-norm, ``inf`` norms split among ties."""
    norm = jax.custom_jvp(value, nondiff_argnums=(1, 2, 3, 4))

    def jvp(axis, keepdims, ord, real, primals, tangents):
        (x,), (dx,) = primals, tangents
        out = norm(x, axis, keepdims, ord, real)
        if jnp.iscomplexobj(x):
            return out, jax.jvp(lambda v: value(v, axis, keepdims, ord, real), (x,), (dx,))[1]
        n = out if keepdims else jnp.expand_dims(out, _kept(axis, x.ndim))
        coef = _norm_coefficient(x, n, ord, axis)
        return out, jnp.sum(coef * dx, axis=axis, keepdims=keepdims).astype(out.dtype)

    norm.defjvp(jvp)
    return norm


def _kept(axis, ndim):
    """The reduced dimensions of a reduction over ``axis`` (None: all)."""
    return tuple(range(ndim)) if axis is None else axis


def _norm_coefficient(x, n, p, axis):
    """``d norm / d x`` of the ``p``-norm ``n`` (kept dims) of real ``x``, PyTorch's way."""
    zero = jnp.zeros((), x.dtype)
    one = jnp.ones((), x.dtype)
    sign = jnp.sign(x)
    a = jnp.abs(x)
    if p == 0:
        return jnp.zeros_like(x)
    if p == 1:
        return sign
    if math.isinf(p):
        mask = ((a == n) | jnp.isnan(a)).astype(x.dtype)
        return sign * mask / jnp.sum(mask, axis=axis, keepdims=True)
    if p == 2:
        return x * _safe_inverse(n)
    if p < 1:
        safe_a = jnp.where(x == 0, one, a)
        return sign * jnp.where(x == 0, zero, safe_a ** (p - 1)) * n ** (1 - p)
    return sign * a ** (p - 1) * _safe_inverse(n ** (p - 1))
