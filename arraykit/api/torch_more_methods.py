"""More of PyTorch's method spellings on :class:`~arraykit.tensors.tensor_type.Tensor`:
the methods of :mod:`arraykit.api.torch_more_pointwise`, :mod:`arraykit.api.torch_more_products`
and :mod:`arraykit.api.torch_more_shapes`, their in-place twins, and the predicates
``is_complex``/``is_signed``/``is_nonzero``/``is_same_size``/``is_conj``/``is_neg``.

As in :mod:`arraykit.api.tensor_methods`, each method calls the namespace function
(``x.sinc()`` is ``arraykit.sinc(x)``) and each in-place twin computes the result and
writes it through ``x``'s layout (views write into their base; a leaf that requires
grad refuses the write while grad mode is on, as in PyTorch).
"""

from __future__ import annotations

import builtins

from ..tensors.tensor_type import Tensor
from . import torch_more_pointwise as MP
from .tensor_methods import _attach, _inplace_twin


def _method_of(name, function):
    def method(self, *args, **kwargs):
        return function(self, *args, **kwargs)
    _attach(name, method, f"``x.{name}(...)``: :func:`arraykit.{function.__name__}` with "
            "``x`` first.")


_POINTWISE = (
    "angle", "clamp_max", "clamp_min", "conj_physical", "deg2rad", "exp2", "fmax", "fmin",
    "gcd", "heaviside", "i0", "igamma", "igammac", "isneginf", "isposinf", "isreal", "lcm",
    "logaddexp2", "logit", "mvlgamma", "rad2deg", "sinc",
)
_POINTWISE_INPLACE = (
    "clamp_max", "clamp_min", "conj_physical", "deg2rad", "exp2", "gcd", "heaviside", "i0",
    "igamma", "igammac", "lcm", "logit", "mvlgamma", "rad2deg", "sinc",
)
for _name in _POINTWISE:
    _method_of(_name, getattr(MP, _name))


def _polygamma(self, n):
    return MP.polygamma(n, self)


_attach("polygamma", _polygamma, "``x.polygamma(n)``: :func:`arraykit.polygamma` of ``x``.")
for _name in (*_POINTWISE_INPLACE, "polygamma"):
    _inplace_twin(_name)
del _name


# ----------------------------------------------------------------------------- predicates


def _is_nonzero(self):
    if self.size != 1:
        if self.size == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous "
                           f"(shape {self.shape})")
    return builtins.bool(self.reshape(()).item() != 0)


def _is_same_size(self, other):
    if not isinstance(other, Tensor):
        raise TypeError(f"is_same_size(): expected a tensor, got {type(other).__name__}")
    return self.shape == other.shape


_attach("is_complex", lambda self: self._dtype.kind == "complex",
        "``x.is_complex()``: whether ``x``'s dtype is complex.")
_attach("is_signed", lambda self: self._dtype.kind in ("int", "float", "complex"),
        "``x.is_signed()``: whether ``x``'s dtype holds negative values (not bool or unsigned).")
_attach("is_nonzero", _is_nonzero, "``x.is_nonzero()``: whether the one element of ``x`` is "
        "not zero (RuntimeError for zero or several elements).")
_attach("is_same_size", _is_same_size, "``x.is_same_size(other)``: whether both have one shape.")
_attach("is_conj", lambda self: False, "``x.is_conj()``: False: arraykit conjugates at once "
        "(PyTorch's lazy conjugation bit is never set), so :meth:`resolve_conj` is ``x``.")
_attach("is_neg", lambda self: False, "``x.is_neg()``: False: arraykit has no lazy negation "
        "bit, so :meth:`resolve_neg` is ``x``.")
_attach("resolve_conj", lambda self: self, "``x.resolve_conj()``: ``x`` itself (see "
        ":meth:`is_conj`).")
_attach("resolve_neg", lambda self: self, "``x.resolve_neg()``: ``x`` itself (see "
        ":meth:`is_neg`).")
