"""PyTorch's namespace spellings of tensor methods: ``arraykit.clone(x)``,
``arraykit.detach(x)``, ``arraykit.t(x)``, ``arraykit.dot(x, y)``,
``arraykit.masked_fill(x, mask, value)``, ``arraykit.addcmul``/``addcdiv``,
``arraykit.sub(x, y, alpha=2)``, ``arraykit.div(x, y, rounding_mode="floor")``,
``arraykit.fill(x, value)`` and the predicates ``is_complex``, ``is_signed``,
``is_nonzero``, ``is_same_size``, ``is_conj``, ``is_neg`` with ``resolve_conj`` and
``resolve_neg``, each with PyTorch's arguments (``out=`` where PyTorch has it)."""

from __future__ import annotations

import jax.numpy as jnp

from ..kernels.launch import apply
from ..tensors.operands import promote
from ..tensors.tensor_type import preserve_format, require_tensor
from . import elementwise as E
from . import torch_keywords as T
from .naming import named

_PREDICATES = ("get_device", "is_complex", "is_conj", "is_neg", "is_nonzero", "is_signed")

__all__ = [
    "addcdiv", "addcmul", "clone", "detach", "div", "dot", "fill", "masked_fill", "sub", "t",
    *_PREDICATES, "is_same_size", "resolve_conj", "resolve_neg",
]


_into = T.into_if_given


def clone(input, *, memory_format=preserve_format):  # noqa: A002 (PyTorch's name)
    """A copy of ``input`` in a new storage (:meth:`Tensor.clone`)."""
    return require_tensor(input, "clone").clone(memory_format)


def detach(input):  # noqa: A002
    """``input`` over the same storage without gradient history (:meth:`Tensor.detach`)."""
    return require_tensor(input, "detach").detach()


def t(input):  # noqa: A002
    """The transpose of a tensor of at most 2 dimensions, a view (:meth:`Tensor.t`)."""
    return require_tensor(input, "t").t()


def dot(input, other=None, *, out=None, tensor=None):  # noqa: A002
    """The inner product of two 1-D tensors of one dtype (no conjugation); the second
    given by position, as ``other=`` or as ``tensor=`` (PyTorch's documented name)."""
    if (other is None) == (tensor is None):
        raise TypeError("dot() takes exactly one second tensor (other= or tensor=)")
    return _into("dot", require_tensor(input, "dot").dot(tensor if other is None else other), out)


def masked_fill(input, mask, value):  # noqa: A002
    """A copy of ``input`` with ``value`` where the boolean ``mask`` (broadcast) is true."""
    return require_tensor(input, "masked_fill").masked_fill(mask, value)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):  # noqa: A002
    """``input + value * tensor1 * tensor2`` (broadcast)."""
    return _into("addcmul", require_tensor(input, "addcmul").addcmul(tensor1, tensor2,
                                                                        value=value), out)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):  # noqa: A002
    """``input + value * tensor1 / tensor2`` (broadcast; two integer tensors refused)."""
    return _into("addcdiv", require_tensor(input, "addcdiv").addcdiv(tensor1, tensor2,
                                                                        value=value), out)


def sub(input, other, *, alpha=1, out=None):  # noqa: A002
    """``input - alpha * other`` (:func:`arraykit.subtract` with PyTorch's ``alpha``)."""
    return _into("sub", E.subtract(input, other if alpha == 1 else other * alpha), out)


def _truncated_quotient(a, b, dtype):
    a, b = a.astype(dtype), b.astype(dtype)
    if jnp.issubdtype(dtype, jnp.integer):
        floor = a // b
        return jnp.where((a % b != 0) & ((a < 0) != (b < 0)), floor + 1, floor)
    return jnp.trunc(a / b)


def div(input, other, *, rounding_mode=None, out=None):  # noqa: A002
    """``input / other``: true division (``rounding_mode=None``, :func:`arraykit.divide`),
    rounded toward zero (``"trunc"``) or toward minus infinity (``"floor"``,
    :func:`arraykit.floor_divide`); the rounded forms keep an integer dtype, as PyTorch."""
    if rounding_mode is None:
        result = E.divide(input, other)
    elif rounding_mode == "floor":
        result = E.floor_divide(input, other)
    elif rounding_mode == "trunc":
        a, b, dtype = promote(input, other, name="div")
        if dtype.kind not in ("int", "uint", "float"):
            raise RuntimeError(f"div(): rounding_mode='trunc' needs real operands, got {dtype}")
        result = apply(_truncated_quotient, (a, b), (dtype.np,))
    else:
        raise ValueError(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"{rounding_mode!r}"
        )
    return _into("div", result, out)


def fill(input, value):  # noqa: A002
    """A new tensor like ``input`` filled with ``value`` (a number or a 0-d tensor)."""
    return require_tensor(input, "fill").clone().fill_(value)


def _predicate(name):
    def function(input, *args):  # noqa: A002
        return getattr(require_tensor(input, name), name)(*args)
    return named(function, name, f"``arraykit.{name}(x, ...)``: ``x.{name}(...)``.")


globals().update({name: _predicate(name) for name in _PREDICATES})


def is_same_size(input, other):  # noqa: A002
    """Whether ``input`` and ``other`` have one shape (:meth:`Tensor.is_same_size`)."""
    return require_tensor(input, "is_same_size").is_same_size(other)


def resolve_conj(input, *, out=None):  # noqa: A002
    """``input`` itself: arraykit never sets PyTorch's lazy conjugation bit."""
    return _into("resolve_conj", require_tensor(input, "resolve_conj").resolve_conj(), out)


def resolve_neg(input, *, out=None):  # noqa: A002
    """``input`` itself: arraykit never sets PyTorch's lazy negation bit."""
    return _into("resolve_neg", require_tensor(input, "resolve_neg").resolve_neg(), out)
