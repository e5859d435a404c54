"""PyTorch's derivatives at kinks, ties and removable singularities, as JAX custom JVPs.

JAX differentiates ``maximum(x, 0)`` at 0 as half a gradient, ``abs`` at 0 as 1,
``sqrt`` of a zero variance as infinity; PyTorch (``derivatives.yaml``) gives 0, 0
and 0. Each function here computes the same values as its ``jax.numpy``
counterpart and differentiates as PyTorch does at the exact points, so an
arraykit gradient matches PyTorch's on padded, clamped or tied inputs. The rules
are written in ``jax.numpy``, so they differentiate again (second derivatives).
Real floating-point operands only: callers keep JAX's rules for complex ones.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp


def with_jvp(tangent):
    """Decorator: give ``f(*arrays)`` the JVP ``tangent(primals, tangents, out)``
    (``out`` = ``f(*primals)``; the result is broadcast to ``out``'s shape)."""

    def wrap(f):
        g = jax.custom_jvp(f)

        def jvp(primals, tangents):
            out = g(*primals)
            t = tangent(primals, tangents, out)
            return out, jnp.broadcast_to(t, out.shape).astype(out.dtype)

        g.defjvp(jvp)
        return g

    return wrap


def where0(cond, t):
    """``t`` where ``cond``, else 0 (broadcast)."""
    return jnp.where(cond, t, jnp.zeros((), t.dtype))


@with_jvp(lambda p, t, out: where0(p[0] > 0, t[0]))
def relu(x):
    """``max(x, 0)``; derivative 0 at 0 (PyTorch's ``threshold_backward``)."""
    return jnp.maximum(x, jnp.zeros((), x.dtype))


@with_jvp(lambda p, t, out: jnp.sign(p[0]) * t[0])
def abs(x):  # noqa: A001 (the array API name)
    """``|x|``; derivative ``sign(x)``, 0 at 0."""
    return jnp.abs(x)


def _clip_both_jvp(p, t, out):
    (x, lo, hi), (dx, dlo, dhi) = p, t
    return (
        where0((x >= lo) & (x <= hi), dx)
        + where0((x < lo) & (lo < hi), dlo)
        + where0((x > hi) | (hi < lo), dhi)
    )


@with_jvp(_clip_both_jvp)
def clip_both(x, lo, hi):
    """``min(max(x, lo), hi)``: the gradient goes to ``x`` when ``lo <= x <= hi``
    (at a tie too), else to the bound that is the result (``hi`` when ``lo > hi``)."""
    return jnp.minimum(jnp.maximum(x, lo), hi)


@with_jvp(lambda p, t, out: where0(p[0] >= p[1], t[0]) + where0(p[0] < p[1], t[1]))
def clip_min(x, lo):
    """``max(x, lo)``: the gradient goes to ``x`` when ``x >= lo``."""
    return jnp.maximum(x, lo)


@with_jvp(lambda p, t, out: where0(p[0] <= p[1], t[0]) + where0(p[0] > p[1], t[1]))
def clip_max(x, hi):
    """``min(x, hi)``: the gradient goes to ``x`` when ``x <= hi``."""
    return jnp.minimum(x, hi)


def _pow_jvp(p, t, out):
    (a, b), (da, db) = p, t
    one = jnp.ones((), a.dtype)
    d_base = where0(b != 0, b * jnp.power(a, b - one))
    d_exponent = where0(~((a == 0) & (b >= 0)), out * jnp.log(a))
    return d_base * da + d_exponent * db


@with_jvp(_pow_jvp)
def pow(a, b):  # noqa: A001 (the array API name)
    """``a ** b``: no gradient to ``a`` where ``b == 0``, none to ``b`` where
    ``a == 0 <= b`` (PyTorch's ``pow_backward``)."""
    return jnp.power(a, b)


def _atan2_jvp(p, t, out):
    (a, b), (da, db) = p, t
    den = a * a + b * b
    scale = where0(den != 0, 1 / jnp.where(den == 0, jnp.ones((), den.dtype), den))
    return (b * da - a * db) * scale


@with_jvp(_atan2_jvp)
def atan2(a, b):
    """``atan2(a, b)``; gradient 0 at the origin, as PyTorch."""
    return jnp.arctan2(a, b)


def _hypot_jvp(p, t, out):
    (a, b), (da, db) = p, t
    safe = jnp.where(out == 0, jnp.ones((), out.dtype), out)
    return where0(out != 0, (a * da + b * db) / safe)


@with_jvp(_hypot_jvp)
def hypot(a, b):
    """``sqrt(a^2 + b^2)``; gradient 0 at the origin (as ``vector_norm``; PyTorch's
    ``hypot`` gives NaN there)."""
    return jnp.hypot(a, b)


def _copysign_jvp(p, t, out):
    a, da = p[0], t[0]
    safe = jnp.where(a == 0, jnp.ones((), a.dtype), a)
    return where0(a != 0, out / safe) * da


@with_jvp(_copysign_jvp)
def copysign(a, b):
    """``|a|`` with ``b``'s sign: no gradient to ``b``, none to ``a`` where ``a == 0``."""
    return jnp.copysign(a, b)


def _logaddexp_jvp(p, t, out):
    (a, b), (da, db) = p, t
    half = jnp.full((), 0.5, out.dtype)
    wa = jnp.where(a == b, half, jax.nn.sigmoid(a - b))
    wb = jnp.where(a == b, half, jax.nn.sigmoid(b - a))
    return wa * da + wb * db


@with_jvp(_logaddexp_jvp)
def logaddexp(a, b):
    """``log(exp(a) + exp(b))``: a tie splits the gradient evenly (at infinities too)."""
    return jnp.logaddexp(a, b)


def _sqrt_jvp(p, t, out):
    safe = jnp.where(out == 0, jnp.ones((), out.dtype), out)
    return where0(out != 0, 0.5 / safe) * t[0]


@with_jvp(_sqrt_jvp)
def sqrt_of_sum(v):
    """``sqrt(v)`` of a sum of squares (a norm or a standard deviation): gradient 0
    where ``v == 0``, as PyTorch's ``std`` and ``norm`` backward."""
    return jnp.sqrt(v)


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
        n = norm(x, axis, True, ord, real)
        coef = _norm_coefficient(x, n, ord, axis)
        return out, jnp.sum(coef * dx, axis=axis, keepdims=keepdims).astype(out.dtype)

    norm.defjvp(jvp)
    return norm


def _norm_coefficient(x, n, p, axis):
    """``d norm / d x`` of the ``p``-norm ``n`` (kept dims) of real ``x``, PyTorch's way."""
    zero = jnp.zeros((), x.dtype)
    one = jnp.ones((), x.dtype)
    sign = jnp.sign(x)
    a = jnp.abs(x)
    safe_n = jnp.where(n == 0, one, n)
    if p == 0:
        return jnp.zeros_like(x)
    if p == 1:
        return sign
    if math.isinf(p):
        mask = ((a == n) | jnp.isnan(a)).astype(x.dtype)
        return sign * mask / jnp.sum(mask, axis=axis, keepdims=True)
    if p == 2:
        return x * where0(n != 0, one / safe_n)
    if p < 1:
        safe_a = jnp.where(x == 0, one, a)
        return sign * jnp.where(x == 0, zero, safe_a ** (p - 1)) * n ** (1 - p)
    return sign * a ** (p - 1) * where0(n != 0, one / safe_n ** (p - 1))
