"""Kernel bodies of the piecewise activations, differentiated as PyTorch at their
kinks (see :mod:`arraykit.kernels.derivatives`): ``hardtanh`` and ``hardsigmoid``
pass no gradient at their corners, ``leaky_relu`` passes ``negative_slope`` at 0,
``elu`` passes ``alpha`` at 0, ``hardswish`` its outer derivatives at -3 and 3,
``softplus`` the smooth branch at its threshold. Real floating-point inputs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..kernels.derivatives import where0, with_jvp


def _scalar(value, like):
    return jnp.asarray(value, like.dtype)


def _frozen_unless(cond, x):
    """``x``, differentiable only where ``cond``: a first derivative written with it has
    PyTorch's second derivative, masked strictly inside the branch."""
    return jnp.where(cond, x, jax.lax.stop_gradient(x))


def hardtanh(x, low, high):
    """``clip(x, low, high)``; gradient only strictly inside ``(low, high)``."""

    @with_jvp(lambda p, out, dx: where0((p[0] > low) & (p[0] < high), dx))
    def body(x):
        return jnp.clip(x, _scalar(low, x), _scalar(high, x))

    return body(x)


def leaky_relu(x, slope):
    """``x`` for ``x > 0``, else ``slope * x`` (slope also at 0, as PyTorch)."""

    @with_jvp(lambda p, out, dx: jnp.where(p[0] > 0, dx, dx * _scalar(slope, dx)))
    def body(x):
        return jnp.where(x > 0, x, x * _scalar(slope, x))

    return body(x)


def elu(x, alpha):
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``; derivative ``alpha`` at 0."""

    def negative_side(x):
        return _scalar(alpha, x) * jnp.expm1(jnp.minimum(x, jnp.zeros((), x.dtype)))

    @with_jvp(lambda p, out, dx: jnp.where(
        p[0] > 0, dx, dx * _scalar(alpha, dx) * jnp.exp(_frozen_unless(p[0] < 0, p[0]))))
    def body(x):
        return jnp.where(x > 0, x, negative_side(x))

    return body(x)


def softplus(x, beta, threshold):
    """``log(1 + exp(beta x)) / beta``, ``x`` where ``beta x > threshold``."""
    b = float(beta)

    def smooth(x):
        return jnp.logaddexp(jnp.zeros((), x.dtype), x * _scalar(b, x)) / _scalar(b, x)

    def slope(x):
        bx = x * _scalar(b, x)
        return jnp.where(bx > threshold, jnp.ones((), x.dtype),
                         jax.nn.sigmoid(_frozen_unless(bx < threshold, bx)))

    @with_jvp(lambda p, out, dx: dx * slope(p[0]))
    def body(x):
        return jnp.where(x * _scalar(b, x) > threshold, x, smooth(x))

    return body(x)


@with_jvp(lambda p, out, dx: where0((p[0] > -3) & (p[0] < 3), dx / 6))
def hardsigmoid(x):
    """``relu6(x + 3) / 6``; gradient only strictly inside ``(-3, 3)``."""
    return jnp.clip(x + 3, 0, 6) / 6


@with_jvp(lambda p, out, dx: jnp.where(
    p[0] <= -3, jnp.zeros((), dx.dtype), jnp.where(p[0] < 3, dx * (p[0] / 3 + 0.5), dx)))
def hardswish(x):
    """``x * relu6(x + 3) / 6``; derivative ``x / 3 + 1/2`` strictly inside ``(-3, 3)``,
    0 at -3 and 1 at 3 (PyTorch's one-sided choices)."""
    return x * jnp.clip(x + 3, 0, 6) / 6


@with_jvp(lambda p, out, dx: dx * out * (1 - out))
def sigmoid(x):
    """``1 / (1 + exp(-x))``, differentiated through its result (PyTorch saves it)."""
    return jax.nn.sigmoid(x)
