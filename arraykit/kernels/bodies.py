"""Pure-JAX bodies of the elementwise kernels, shared by the namespace functions
and the in-place methods. Each takes dense operands plus the static NumPy dtype
the computation runs in."""

from __future__ import annotations

import jax.numpy as jnp


def add(a, b, dtype):
    return a.astype(dtype) + b.astype(dtype)


def subtract(a, b, dtype):
    return a.astype(dtype) - b.astype(dtype)


def multiply(a, b, dtype):
    return a.astype(dtype) * b.astype(dtype)


def divide(a, b, dtype):
    return jnp.true_divide(a.astype(dtype), b.astype(dtype))


def maximum(a, b, dtype):
    return jnp.maximum(a.astype(dtype), b.astype(dtype))


def minimum(a, b, dtype):
    return jnp.minimum(a.astype(dtype), b.astype(dtype))


def where_fill(cur, mask, value):
    """``cur`` with ``value`` wherever ``mask`` (broadcast) is true."""
    return jnp.where(mask, value.astype(cur.dtype), cur)
