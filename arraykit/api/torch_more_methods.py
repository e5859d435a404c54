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

from ..tensors.tensor_type import Tensor, _dims
from . import manipulation as M
from . import torch_more_pointwise as MP
from . import torch_more_products as PR
from . import torch_more_shapes as SH
from .tensor_methods import _attach, _attach_property, _inplace_twin


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


# ----------------------------------------------------------------------------- products, shapes

_FUNCTIONS = {
    **{name: getattr(PR, name) for name in (
        "addbmm", "addmv", "addr", "adjoint", "cholesky", "cholesky_inverse", "det", "inner",
        "inverse", "logdet", "matrix_exp", "matrix_power", "mv", "pinverse", "qr", "slogdet",
        "svd", "vdot")},
    **{name: getattr(SH, name) for name in (
        "argwhere", "corrcoef", "cov", "diagflat", "diagonal_scatter", "dsplit", "hsplit",
        "index_put", "index_put_", "msort", "nanmean", "nansum", "ravel", "select_scatter",
        "slice_scatter", "split_with_sizes", "unsafe_chunk", "unsafe_split",
        "unsafe_split_with_sizes", "vsplit")},
}
for _name, _fn in _FUNCTIONS.items():
    _method_of(_name, _fn)
for _name in ("addbmm", "addmv", "addr"):
    _inplace_twin(_name)
del _name, _fn


def _cholesky_solve(self, input2, upper=False):
    return PR.cholesky_solve(self, input2, upper)


def _triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):  # noqa: N803
    return PR.triangular_solve(self, A, upper, transpose, unitriangular)


def _tile(self, *dims):
    return M.tile(self, _dims(dims))


def _get_device(self):
    device = self.device
    return -1 if device.platform == "cpu" else device.id


def _conjugate_transpose(self):
    if self.ndim != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors), got "
                           f"{self.ndim}-D; use x.mH for batches")
    return PR.adjoint(self)


_attach("cholesky_solve", _cholesky_solve, "``x.cholesky_solve(L, upper=False)``: "
        ":func:`arraykit.cholesky_solve` with ``x`` the right-hand side.")
_attach("triangular_solve", _triangular_solve, "``b.triangular_solve(A, upper=True, "
        "transpose=False, unitriangular=False)``: :func:`arraykit.triangular_solve`.")
_attach("tile", _tile, "``x.tile(*dims)``: :func:`arraykit.tile` (``dims`` as one sequence or "
        "several ints).")
_attach("get_device", _get_device, "``x.get_device()``: -1 for a CPU tensor, the device index "
        "otherwise (PyTorch's).")
_attach_property("mH", lambda self: PR.adjoint(self), "The conjugate transpose of the last two "
                 "dimensions (:func:`arraykit.adjoint`; a view for real tensors).")
_attach_property("H", _conjugate_transpose, "The conjugate transpose of a matrix (a view for "
                 "real tensors).")
