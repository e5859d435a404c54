"""Kernel bodies of the piecewise activations, differentiated as PyTorch at their
kinks (see :mod:`arraykit.kernels.derivatives`): ``hardtanh`` and ``hardsigmoid``
pass no gradient at their corners, ``leaky_relu`` passes ``negative_slope`` at 0,
``elu`` passes ``alpha`` at 0, ``hardswish`` its outer derivatives at -3 and 3,
``softplus`` the smooth branch at its threshold. The ``*_from_result`` forms are
differentiated through their result, as PyTorch's in-place forms that save it (so
the autograd engine checks the written tensor for later in-place writes). Real
floating-point inputs.
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


def leaky_relu_from_result(x, slope):
    """:func:`leaky_relu` differentiated through its result, as PyTorch's in-place form
    (which saves the result; ``slope >= 0``, so the result's sign is the input's)."""

    @with_jvp(lambda p, out, dx: jnp.where(out > 0, dx, dx * _scalar(slope, dx)))
    def body(x):
        return jnp.where(x > 0, x, x * _scalar(slope, x))

    return body(x)


def elu(x, alpha, scale=1.0, input_scale=1.0):
    """``scale * x`` for ``x > 0``, else ``scale * alpha * (exp(input_scale * x) - 1)``
    (``elu``; ``celu`` and ``selu`` are its scalings); the negative branch's derivative at 0."""
    s, a, k = float(scale), float(alpha), float(input_scale)

    def negative_side(x):
        kx = jnp.minimum(x, jnp.zeros((), x.dtype)) * _scalar(k, x)
        return _scalar(s * a, x) * jnp.expm1(kx)

    @with_jvp(lambda p, out, dx: jnp.where(
        p[0] > 0, dx * _scalar(s, dx),
        dx * _scalar(s * a * k, dx) * jnp.exp(_frozen_unless(p[0] < 0, p[0]) * _scalar(k, dx))))
    def body(x):
        return jnp.where(x > 0, x * _scalar(s, x), negative_side(x))

    return body(x)


def elu_from_result(x, alpha, scale=1.0, input_scale=1.0):
    """:func:`elu` differentiated through its result, as PyTorch's in-place form
    (``alpha >= 0``): ``scale`` where the result is positive, else
    ``input_scale * (result + scale * alpha)``."""
    s, a, k = float(scale), float(alpha), float(input_scale)

    @with_jvp(lambda p, out, dx: jnp.where(
        out > 0, dx * _scalar(s, dx), dx * _scalar(k, dx) * (out + _scalar(s * a, dx))))
    def body(x):
        return elu(x, alpha, scale, input_scale)

    return body(x)


def _noise_partials(from_result):
    def dx(p, out, t):
        positive = (out if from_result else p[0]) > 0
        return jnp.where(positive, t, t * p[1])

    def dnoise(p, out, t):
        return where0(p[0] <= 0, p[0] * t)

    return dx, dnoise


@with_jvp(*_noise_partials(False))
def rrelu_with_noise(x, noise):
    """``x`` for ``x > 0``, else ``noise * x`` (``noise``: the drawn slopes)."""
    return jnp.where(x > 0, x, x * noise.astype(x.dtype))


@with_jvp(*_noise_partials(True))
def rrelu_with_noise_from_result(x, noise):
    """:func:`rrelu_with_noise` differentiated through its result (the in-place form)."""
    return jnp.where(x > 0, x, x * noise.astype(x.dtype))


def threshold(x, limit, value):
    """``x`` where ``x > limit``, else ``value`` (no gradient where replaced)."""
    return jnp.where(x > limit, x, jnp.asarray(value).astype(x.dtype))
