"""``requires_grad=`` on creation functions, and higher-order eager gradients
(``create_graph=True``) against PyTorch and ``jax.hessian``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import autograd

RNG = np.random.default_rng(7)


# ---------------------------------------------------------------------- creation keyword


@pytest.mark.parametrize(
    "make",
    [
        lambda rg: ak.zeros((2, 3), requires_grad=rg),
        lambda rg: ak.zeros(2, 3, requires_grad=rg),
        lambda rg: ak.ones((2, 3), requires_grad=rg),
        lambda rg: ak.empty((2, 3), requires_grad=rg),
        lambda rg: ak.full((2, 3), 1.5, requires_grad=rg),
        lambda rg: ak.zeros_like(ak.ones((2, 3)), requires_grad=rg),
        lambda rg: ak.ones_like(ak.ones((2, 3)), requires_grad=rg),
        lambda rg: ak.empty_like(ak.ones((2, 3)), requires_grad=rg),
        lambda rg: ak.full_like(ak.ones((2, 3)), 2.0, requires_grad=rg),
        lambda rg: ak.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=rg),
        lambda rg: ak.asarray(np.ones((2, 3)), requires_grad=rg),
        lambda rg: ak.eye(2, 3, requires_grad=rg),
        lambda rg: ak.arange(0.0, 6.0, requires_grad=rg).reshape(2, 3),
        lambda rg: ak.linspace(0.0, 1.0, 6, requires_grad=rg).reshape(2, 3),
    ],
)
def test_creation_requires_grad(make):
    plain = make(False)
    assert not plain.requires_grad and plain.is_leaf
    x = make(True)
    if x.ndim == 2 and x.shape == (2, 3) and x.is_leaf:
        assert x.requires_grad
        (x * x).sum().backward()
        np.testing.assert_allclose(np.asarray(x.grad), 2 * np.asarray(x.detach()))
    else:  # reshape of a leaf: a view
        assert x.requires_grad


def test_creation_requires_grad_integer_raises():
    with pytest.raises(RuntimeError, match="floating point and complex"):
        ak.zeros((2,), dtype=ak.int64, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point and complex"):
        ak.arange(5, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point and complex"):
        ak.asarray([1, 2], requires_grad=True)


def test_creation_requires_grad_is_keyword_only():
    with pytest.raises(TypeError):
        ak.full((2,), 1.0, ak.float32, None, True)


def test_tensor_requires_grad_still_works():
    x = ak.tensor([1.0, 2.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf
