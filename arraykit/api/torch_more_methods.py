"""More of PyTorch's method spellings on :class:`~arraykit.tensors.tensor_type.Tensor`:
the methods of :mod:`arraykit.api.torch_more_pointwise`, :mod:`arraykit.api.torch_more_products`
and :mod:`arraykit.api.torch_more_shapes`, their in-place twins, the predicates
``is_complex``/``is_signed``/``is_nonzero``/``is_same_size``/``is_conj``/``is_neg``/
``is_set_to``, the in-place view methods (``t_``, ``transpose_``, ``swapaxes_``,
``swapdims_``, ``squeeze_``, ``unsqueeze_``: the tensor itself takes the view's layout
over the same storage) and ``sum_to_size``, ``narrow_copy``, ``fill_diagonal_``,
``dim_order``, ``new_empty_strided`` and ``data``.

As in :mod:`arraykit.api.tensor_methods`, each method calls the namespace function
(``x.sinc()`` is ``arraykit.sinc(x)``) and each in-place twin computes the result and
writes it through ``x``'s layout (views write into their base; a leaf that requires
grad refuses the write while grad mode is on, as in PyTorch).
"""

from __future__ import annotations

import builtins

import numpy as np

from ..autograd.mode import is_grad_enabled
from ..core import layout as L
from ..tensors.tensor_type import Tensor, _dims_or_keyword
from . import creation as C
from . import manipulation as M
from . import statistical as ST
from . import torch_shapes as TS
from . import torch_more_pointwise as MP
from . import torch_more_products as PR
from . import torch_more_shapes as SH
from .tensor_methods import _attach, _attach_property, _inplace_twin
from .torch_more_creation import empty_strided


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


def _tile(self, *reps, dims=None):
    return M.tile(self, _dims_or_keyword("tile", reps, "dims", dims))


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
_attach("tile", _tile, "``x.tile(*dims)``: :func:`arraykit.tile` (``dims`` as one sequence, "
        "several ints or PyTorch's ``dims=``).")
_attach("get_device", _get_device, "``x.get_device()``: -1 for a CPU tensor, the device index "
        "otherwise (PyTorch's).")
_attach_property("mH", lambda self: PR.adjoint(self), "The conjugate transpose of the last two "
                 "dimensions (:func:`arraykit.adjoint`; a view for real tensors).")
_attach_property("H", _conjugate_transpose, "The conjugate transpose of a matrix (a view for "
                 "real tensors).")


# ----------------------------------------------------------------------------- in-place views


def _view_in_place(name, view):
    def method(self, *args, **kwargs):
        if self.requires_grad and self.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               f"operation ({name} on a tensor of shape {self.shape})")
        self._layout = view(self, *args, **kwargs)._layout
        return self
    _attach(name, method, f"``x.{name}(...)``: ``x`` itself made ``x.{name[:-1]}(...)`` (the "
            "same storage; autograd reads ``x`` through its new layout; RuntimeError for a "
            "leaf that requires grad, as PyTorch's in-place ops).")


for _name, _view in (("t_", Tensor.t), ("transpose_", Tensor.transpose),
                     ("swapaxes_", TS.swapaxes), ("swapdims_", Tensor.transpose),
                     ("squeeze_", Tensor.squeeze), ("unsqueeze_", Tensor.unsqueeze)):
    _view_in_place(_name, _view)
del _name, _view


# ----------------------------------------------------------------------------- odds and ends


def _sum_to_size(self, *sizes, size=None):
    size = _dims_or_keyword("sum_to_size", sizes, "size", size)
    try:
        L.broadcast_to(L.contiguous(size), self.shape)
    except ValueError:
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, self.shape))}}}.") from None
    lead = self.ndim - len(size)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(size)
                                      if n == 1 and self.shape[lead + i] != 1)
    out = ST.sum(self, axis=axes, keepdims=True) if axes else self
    return out.reshape(size)


def _narrow_copy(self, dim, start, length):
    return TS.narrow(self, dim, start, length).clone()


def _fill_diagonal_(self, fill_value, wrap=False):
    if self.ndim < 2:
        raise RuntimeError(f"dimensions must larger than 1, got shape {self.shape}")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError(f"all dimensions of input must be of equal length, got {self.shape}")
    mask = np.zeros(self.shape, bool)
    if self.ndim == 2 and wrap and self.shape[0] > self.shape[1] + 1:
        flat = mask.reshape(-1)
        flat[::self.shape[1] + 1] = True  # PyTorch's wrap: the diagonal restarts every N+1 rows
    else:
        n = min(self.shape)
        mask[(np.arange(n),) * self.ndim] = True
    return self.masked_fill_(C.asarray(mask, device=self.device), fill_value)


def _dim_order(self, *, ambiguity_check=False):
    strides = self.stride()
    return tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))


def _is_set_to(self, tensor):
    return (self._storage is tensor._storage and self._layout == tensor._layout
            and self._dtype is tensor._dtype)


def _new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False):
    return empty_strided(size, stride, dtype=self._dtype if dtype is None else dtype,
                           device=self.device if device is None else device,
                           requires_grad=requires_grad)


def _data(self):
    return self.detach()


def _set_data(self, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"x.data must be set to a tensor, got {type(value).__name__}")
    leaf = self.requires_grad
    if leaf:  # requires_grad lives with the storage: a copy leaves value's own flag alone
        value = value.detach().clone()
    self._storage, self._layout, self._dtype = value._storage, value._layout, value._dtype
    if leaf:
        self.requires_grad_()


_attach("sum_to_size", _sum_to_size, "``x.sum_to_size(*size)``: ``x`` summed over the "
        "dimensions that broadcasting ``size`` to ``x.shape`` would expand.")
_attach("narrow_copy", _narrow_copy, "``x.narrow_copy(dim, start, length)``: a copy of "
        "``x.narrow(dim, start, length)``.")
_attach("fill_diagonal_", _fill_diagonal_, "``x.fill_diagonal_(value, wrap=False)``: the main "
        "diagonal (all indices equal) set to ``value`` in place; ``wrap`` restarts it every "
        "``cols + 1`` rows of a tall matrix, as PyTorch's.")
_attach("dim_order", _dim_order, "``x.dim_order()``: the dimensions from outermost to innermost "
        "in memory (by decreasing stride).")
_attach("is_set_to", _is_set_to, "``x.is_set_to(t)``: whether ``x`` and ``t`` are the same "
        "storage, layout and dtype.")
_attach("new_empty_strided", _new_empty_strided, "``x.new_empty_strided(size, stride)``: "
        ":func:`arraykit.empty_strided` with ``x``'s dtype and device unless given.")
Tensor.data = property(_data, _set_data, doc="``x.data``: ``x`` detached (the same storage, "
                       "no gradient history); ``x.data = t`` makes ``x`` hold ``t``'s values, layout "
                       "and dtype: ``t``'s storage itself, or a copy of it when ``x`` requires "
                       "grad (``x`` stays a leaf that requires grad, as PyTorch's).")
