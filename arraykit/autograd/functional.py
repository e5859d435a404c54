"""Functional transforms over tensors and pytrees of tensors: ``grad``,
``value_and_grad``, ``vjp``.

They are JAX's own transforms: a tensor is a pytree leaf holding its values, so
the function runs on traced tensors and JAX differentiates every kernel it
launches (``autograd.Function`` lowers to ``jax.custom_vjp``). They compose
with each other (``grad(grad(f))``) and run with arraykit's 64-bit dtypes kept.
"""

from __future__ import annotations

import functools

import jax

from ..core import x64
from ..kernels.export import dense_values
from ..tensors.tensor_type import Tensor


def _scalar_value(out, name):
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}: the function must return a tensor, got {type(out).__name__}")
    if out.size != 1:
        raise TypeError(
            f"{name}: the function must return a scalar tensor (one element), got shape {out.shape}"
        )
    return dense_values(out).reshape(())


def value_and_grad(fn, argnums=0, has_aux=False):
    """``fn``'s value and its gradient with respect to the arguments ``argnums``.

    ``fn`` returns a one-element tensor (or ``(value, aux)`` with ``has_aux``);
    gradients have the structure of the arguments, tensors of their shapes.
    """

    def pure(*args, **kwargs):
        out = fn(*args, **kwargs)
        value, aux = out if has_aux else (out, None)
        return _scalar_value(value, "value_and_grad"), (value, aux)

    transformed = jax.value_and_grad(pure, argnums=argnums, has_aux=True)

    @functools.wraps(fn)
    @x64.scoped
    def value_and_grad_fn(*args, **kwargs):
        (_, (value, aux)), grads = transformed(*args, **kwargs)
        return ((value, aux) if has_aux else value), grads

    return value_and_grad_fn


def grad(fn, argnums=0, has_aux=False):
    """The gradient of the scalar function ``fn`` with respect to the arguments ``argnums``."""
    both = value_and_grad(fn, argnums=argnums, has_aux=has_aux)

    @functools.wraps(fn)
    def grad_fn(*args, **kwargs):
        value, grads = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return grad_fn


@x64.scoped
def vjp(fn, *primals, has_aux=False):
    """``(fn(*primals), vjp_fn)``: ``vjp_fn(cotangent)`` gives the cotangents of the primals."""
    result = jax.vjp(fn, *primals, has_aux=has_aux)
    vjp_fn = x64.scoped(result[1])
    return (result[0], vjp_fn, result[2]) if has_aux else (result[0], vjp_fn)
