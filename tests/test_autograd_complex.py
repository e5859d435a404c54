"""Gradients of complex element-wise functions against jax.grad of jax.numpy's, at
generic points and on the real and imaginary axes, where the kernels' special-case
branches (signed zeros, infinities) must not change the derivative.

arraykit follows JAX's convention for complex gradients: the gradient of a
real-valued loss is the conjugate of PyTorch's (checked below against PyTorch)."""

from __future__ import annotations

import cmath
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import arraykit as ak

POINTS = np.array([0.7 + 0.3j, 0.4 + 0j, 0 + 0.6j, -0.5 + 0.2j, 1.3 - 0.4j, 0.2 - 0.9j])
FUNCTIONS = {
    "exp": jnp.exp, "expm1": jnp.expm1, "log": jnp.log, "log2": jnp.log2, "log10": jnp.log10,
    "log1p": jnp.log1p, "sqrt": jnp.sqrt, "sin": jnp.sin, "cos": jnp.cos, "tan": jnp.tan,
    "sinh": jnp.sinh, "cosh": jnp.cosh, "tanh": jnp.tanh, "asin": jnp.arcsin,
    "acos": jnp.arccos, "atan": jnp.arctan, "asinh": jnp.arcsinh, "atanh": jnp.arctanh,
}


def _loss_jax(f):
    return lambda z: jnp.sum(jnp.real(f(z)) + 2 * jnp.imag(f(z)))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_complex_gradient_matches_jax_on_and_off_the_axes(name):
    x = ak.asarray(POINTS.astype(np.complex128), requires_grad=True)
    y = getattr(ak, name)(x)
    (ak.real(y) + 2 * ak.imag(y)).sum().backward()
    with jax.enable_x64(True):
        expected = jax.grad(_loss_jax(FUNCTIONS[name]))(jnp.asarray(POINTS, jnp.complex128))
    np.testing.assert_allclose(x.grad.numpy(), np.asarray(expected), rtol=1e-10, atol=1e-12)


def test_acosh_gradient_matches_finite_differences_off_its_cut():
    # jax.numpy's arccosh derivative, 1/sqrt(z^2 - 1), has the wrong sign where
    # Re(z) < 0; the oracle is a central difference of NumPy's arccosh. For a
    # holomorphic f and the loss Re((1 - 2i) f), JAX's convention gives (1 - 2i) f'(z).
    points = np.array([1.5 + 0j, 0.7 + 0.3j, -0.5 + 0.8j, 2.0 - 0.5j])
    x = ak.asarray(points, requires_grad=True)
    y = ak.acosh(x)
    (ak.real(y) + 2 * ak.imag(y)).sum().backward()
    h = 1e-6
    derivative = (np.arccosh(points + h) - np.arccosh(points - h)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), (1 - 2j) * derivative, rtol=1e-7)


def test_second_derivative_of_a_complex_function():
    f = jnp.exp
    with jax.enable_x64(True):
        expected = jax.grad(lambda z: jnp.real(jax.grad(lambda w: jnp.real(f(w) * (1 + 2j)), holomorphic=False)(z) * (0.5 - 1j)))(
            jnp.asarray(0.4 + 0j))

    def inner(z):
        return ak.real(ak.exp(z) * (1 + 2j))

    def outer(z):
        return ak.real(ak.grad(inner)(z) * (0.5 - 1j))

    got = ak.grad(outer)(ak.asarray(np.complex128(0.4 + 0j)))
    np.testing.assert_allclose(complex(got.item()), complex(expected), rtol=1e-10)


def test_gradient_convention_is_the_conjugate_of_pytorch():
    x = ak.asarray(POINTS.astype(np.complex128), requires_grad=True)
    y = ak.exp(x * (0.5 + 1j))
    (ak.real(y) + 2 * ak.imag(y)).sum().backward()
    t = torch.tensor(POINTS, dtype=torch.complex128, requires_grad=True)
    ty = torch.exp(t * (0.5 + 1j))
    (ty.real + 2 * ty.imag).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.conj(t.grad.numpy()), rtol=1e-10, atol=1e-12)


# points on the branch cuts, each side: the sign of the zero part picks the side
# (``2.5 - 0j`` is ``2.5 + 0j`` in Python, so signed zeros are built with complex())
BRANCH_CUT_POINTS = [
    ("asin", 2.5, 0.0), ("asin", 2.5, -0.0), ("asin", -1.5, 0.0), ("asin", -1.5, -0.0),
    ("acos", 2.5, 0.0), ("acos", 2.5, -0.0), ("acos", -1.5, 0.0), ("acos", -1.5, -0.0),
    ("acosh", -0.5, 0.0), ("acosh", -0.5, -0.0), ("atanh", 1.5, 0.0), ("atanh", 1.5, -0.0),
    ("atanh", -1.5, 0.0), ("atanh", -1.5, -0.0), ("log", -2.0, 0.0), ("log", -2.0, -0.0),
    ("sqrt", -3.0, 0.0), ("sqrt", -3.0, -0.0),
    ("asinh", 0.0, 1.5), ("asinh", -0.0, 1.5), ("asinh", 0.0, -1.5), ("asinh", -0.0, -1.5),
]


@pytest.mark.parametrize("name, re, im", BRANCH_CUT_POINTS)
def test_derivative_on_a_branch_cut_takes_the_side_of_the_value(name, re, im):
    # cmath's finite differences along the cut (the real axis, or the imaginary one for
    # asinh), keeping the signed zero, give the derivative on the side it picks
    point = complex(re, im)
    f = getattr(cmath, name)
    h = 1e-6
    if name == "asinh":
        derivative = (f(complex(re, im + h)) - f(complex(re, im - h))) / (2j * h)
    else:
        derivative = (f(complex(re + h, im)) - f(complex(re - h, im))) / (2 * h)
    value = ak.asarray(np.array([point]))
    assert math.copysign(1, ak.imag(value).numpy()[0]) == math.copysign(1, im)  # the side is kept
    np.testing.assert_allclose(getattr(ak, name)(value).numpy()[0], f(point), rtol=1e-12)
    x = ak.asarray(np.array([point]), requires_grad=True)
    ak.real(getattr(ak, name)(x)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy()[0], derivative, rtol=1e-6)


@pytest.mark.parametrize("name", ["sin", "cos", "sinh", "cosh"])
def test_complex64_derivative_is_finite_where_the_value_is(name):
    point = 89j if name in ("sin", "cos") else 89 + 0j
    x = ak.asarray(np.array([point], np.complex64), requires_grad=True)
    y = getattr(ak, name)(x)
    assert np.isfinite(y.numpy()).all()
    ak.real(y).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
