"""PyTorch's method spellings on :class:`~arraykit.tensors.tensor_type.Tensor`.

The array API standard defines few methods on arrays; PyTorch users call most
functions as methods (``x.exp()``, ``x.sum(0, keepdim=True)``, ``x.max(1)``,
``x.float()``, ``x.new_zeros(2, 3)``...). This module attaches those spellings to
``Tensor``. Each method calls the namespace function that does the work, so the
method and ``arraykit.<function>`` always agree.

Where PyTorch and the standard disagree, methods follow PyTorch and the namespace
functions follow the standard:

* reductions take ``dim=``/``keepdim=`` (and the standard's ``axis=``/``keepdims=``);
  ``x.max(dim)``/``x.min(dim)``/``x.sort()`` return ``(values, indices)`` named
  tuples; ``x.std()``/``x.var()`` default to ``correction=1``;
* the floating-point functions (``exp``, ``log``, ``sqrt``, ``sin``...) take
  integer and bool tensors and compute in the default float dtype, float32;
* ``x.nonzero()`` is a 2-D tensor of indices (``as_tuple=True``: a tuple).

Promotion between tensors is arraykit's everywhere (the standard's table, NumPy's
for mixed kinds, :mod:`arraykit.core.dtypes`): an int64 tensor combined with a float32
tensor, or an integer division, gives float64 where PyTorch gives float32.

The in-place twins (``x.exp_()``, ``x.pow_(2)``, ``x.eq_(y)``...) compute the
out-of-place result and write it through ``x``'s layout; like ``x[...] = value``
they raise ``TypeError`` when the result's dtype cannot be written into ``x``'s
(PyTorch's same-kind rule: ``int_tensor.exp_()`` raises).

``Tensor.size`` stays the standard's attribute (the number of elements, an ``int``)
and is callable as PyTorch's ``x.size()`` (an :class:`arraykit.Size`) and
``x.size(dim)``; ``x.shape`` is the plain tuple.
"""

from __future__ import annotations

import builtins

import jax

from ..autograd.mode import is_grad_enabled
from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import Placement, as_device, one_cpu
from ..kernels.launch import apply
from ..tensors.operands import check_writable_dtype
from ..tensors.tensor_type import (
    Tensor, _dims, _dims_or_keyword, channels_last, channels_last_3d, contiguous_format,
    preserve_format,
)
from . import creation as C
from . import device_memory
from . import elementwise as E
from . import gather_scatter as G
from . import manipulation as M
from . import matrix_products as LA
from . import searching as S
from . import set_functions as SF
from . import sorting as SO
from . import statistical as ST
from . import utility as U
from . import torch_indexing as TI
from . import torch_keywords as T
from . import torch_method_functions as TM
from . import torch_pointwise as TP
from . import torch_products as TL
from . import torch_reductions as TR
from . import torch_shapes as TS
from .dtype_functions import astype
from .indexing import take_flat
from .torch_reductions import ValuesIndices



def _attach(name, fn, doc):
    """Put ``fn`` on ``Tensor`` as the method ``name`` with docstring ``doc``."""
    fn.__name__ = name
    fn.__qualname__ = f"Tensor.{name}"
    fn.__doc__ = doc
    setattr(Tensor, name, fn)


def _attach_property(name, fn, doc):
    """Put ``fn`` on ``Tensor`` as the read-only property ``name``."""
    fn.__name__ = name
    fn.__doc__ = doc
    setattr(Tensor, name, property(fn, doc=doc))


# ----------------------------------------------------------------------------- reductions


def _reduction_args(name, dim, keepdim, axis, keepdims):
    """PyTorch's ``dim``/``keepdim`` or the standard's ``axis``/``keepdims`` (not both)."""
    if axis is not None:
        if dim is not None:
            raise TypeError(f"{name}() got both dim={dim!r} and axis={axis!r}; pass one of them")
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    if isinstance(dim, list):
        dim = tuple(dim)
    return dim, bool(keepdim)


def _plain_reduction(name, function, extra=""):
    """A reduction method ``x.name(dim=None, keepdim=False)`` over ``function``."""
    def method(self, dim=None, keepdim=False, *, axis=None, keepdims=None, **kwargs):
        dim, keepdim = _reduction_args(name, dim, keepdim, axis, keepdims)
        return function(self, axis=dim, keepdims=keepdim, **kwargs)
    _attach(name, method, f"``x.{name}(dim=None, keepdim=False)``: "
            f":func:`arraykit.{function.__name__}` over ``dim`` (or ``axis``){extra}.")


_plain_reduction("sum", ST.sum, "; ``dtype=`` as the function takes it")
_plain_reduction("prod", ST.prod, "; ``dtype=`` as the function takes it")
_plain_reduction("all", U.all)
_plain_reduction("any", U.any)
_plain_reduction("argmax", S.argmax)
_plain_reduction("argmin", S.argmin)
_plain_reduction("count_nonzero", S.count_nonzero)


def _mean(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    dim, keepdim = _reduction_args("mean", dim, keepdim, axis, keepdims)
    if dtype is not None:
        self = astype(self, dtype)
    elif self._dtype.kind not in ("float", "complex"):
        raise TypeError(
            f"mean(): a tensor of dtype {self.dtype} needs a floating-point dtype= (as in "
            "PyTorch); arraykit.mean(x) computes it in float32"
        )
    return ST.mean(self, axis=dim, keepdims=keepdim)


_attach("mean", _mean, "``x.mean(dim=None, keepdim=False, dtype=None)``: :func:`arraykit.mean` "
        "of ``x`` (converted to ``dtype`` when given; integer tensors need one, as in PyTorch).")


def _extreme_method(name, reduce, arg):
    def method(self, dim=None, keepdim=False, *, axis=None, keepdims=None, other=None):
        if other is not None:  # PyTorch's keyword of the element-wise form
            dim = T.pick(name, "dim", dim, "other", other)
        if isinstance(dim, Tensor):  # torch.max(input, other): element-wise
            return (E.maximum if name == "max" else E.minimum)(self, dim)
        dim, keepdim = _reduction_args(name, dim, keepdim, axis, keepdims)
        if dim is None or isinstance(dim, tuple) or self.ndim == 0:
            return reduce(self, axis=dim, keepdims=keepdim)
        indices = arg(self, axis=dim, keepdims=True)
        values = apply(SO.values_at, (self, indices), (dim % self.ndim, keepdim))
        return ValuesIndices(values, indices if keepdim else M.squeeze(indices, axis=dim))
    _attach(name, method, (
        f"``x.{name}()``: the {name}imum (:func:`arraykit.{name}`); "
        f"``x.{name}(dim, keepdim=False)``: a ``(values, indices)`` named tuple over one "
        "dimension, as PyTorch; "
        f"``x.{name}(other)`` (or ``other=``): the element-wise {name}imum."
    ))


_extreme_method("max", ST.max, S.argmax)
_extreme_method("min", ST.min, S.argmin)


def _moment_method(name, function):
    def method(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
               keepdims=None):
        dim, keepdim = _reduction_args(name, dim, keepdim, axis, keepdims)
        if correction is None:
            correction = 1 if unbiased is None or unbiased else 0
        elif unbiased is not None:
            raise TypeError(
                f"{name}() got both unbiased={unbiased!r} and correction={correction!r}"
            )
        return function(self, axis=dim, correction=correction, keepdims=keepdim)
    _attach(name, method, (
        f"``x.{name}(dim=None, unbiased=True, keepdim=False, *, correction=1)``: "
        f":func:`arraykit.{name}` with PyTorch's default Bessel correction."
    ))


_moment_method("std", ST.std)
_moment_method("var", ST.var)


def _argsort(self, dim=-1, descending=False, stable=False, *, axis=None):
    return SO.argsort(self, axis=dim if axis is None else axis, descending=descending, stable=True)


def _sort(self, dim=-1, descending=False, stable=False, *, axis=None):
    indices = _argsort(self, dim, descending, stable, axis=axis)
    axis = L.normalize_dim(dim if axis is None else axis, max(self.ndim, 1), "dim")
    values = self.clone() if self.ndim == 0 else apply(SO.values_at, (self, indices), (axis, True))
    return ValuesIndices(values, indices)


def _topk(self, k, dim=-1, largest=True, sorted=True):
    return SO.topk(self, k, dim, largest, sorted)


_attach("topk", _topk, "``x.topk(k, dim=-1, largest=True, sorted=True)``: :func:`arraykit.topk`.")
_attach("argsort", _argsort, "``x.argsort(dim=-1, descending=False)``: :func:`arraykit.argsort` "
        "(always stable, which is one of the orders ``stable=False`` allows).")
_attach("sort", _sort, "``x.sort(dim=-1, descending=False)``: a ``(values, indices)`` named "
        "tuple, as PyTorch (stable).")


# ----------------------------------------------------------------------------- element-wise

# PyTorch method name -> namespace function. The floating-point functions take
# integer and bool tensors as PyTorch does (computed in float32).
_FLOATING_UNARY = {
    "exp": E.exp, "expm1": E.expm1, "log": E.log, "log1p": E.log1p, "log2": E.log2,
    "log10": E.log10, "sqrt": E.sqrt, "sin": E.sin, "cos": E.cos, "tan": E.tan,
    "asin": E.asin, "acos": E.acos, "atan": E.atan, "sinh": E.sinh, "cosh": E.cosh,
    "tanh": E.tanh, "asinh": E.asinh, "acosh": E.acosh, "atanh": E.atanh,
    "arcsin": E.asin, "arccos": E.acos, "arctan": E.atan, "arcsinh": E.asinh,
    "arccosh": E.acosh, "arctanh": E.atanh, "reciprocal": E.reciprocal, "signbit": E.signbit,
}
_UNARY = {
    "abs": E.abs, "absolute": E.abs, "neg": E.negative, "negative": E.negative,
    "positive": E.positive, "sign": E.sign, "ceil": E.ceil, "floor": E.floor,
    "trunc": E.trunc, "fix": E.trunc, "round": E.round, "square": E.square,
    "logical_not": E.logical_not, "bitwise_not": E.bitwise_invert, "conj": E.conj,
    "isnan": E.isnan, "isinf": E.isinf, "isfinite": E.isfinite,
}
_BINARY = {
    "mul": E.multiply, "multiply": E.multiply, "div": E.divide, "divide": E.divide,
    "true_divide": E.divide, "floor_divide": E.floor_divide, "remainder": E.remainder,
    "pow": E.pow, "maximum": E.maximum, "minimum": E.minimum, "atan2": E.atan2,
    "arctan2": E.atan2, "hypot": E.hypot, "logaddexp": E.logaddexp, "copysign": E.copysign,
    "nextafter": E.nextafter, "eq": E.equal, "ne": E.not_equal, "not_equal": E.not_equal,
    "lt": E.less, "less": E.less, "le": E.less_equal, "less_equal": E.less_equal,
    "gt": E.greater, "greater": E.greater, "ge": E.greater_equal,
    "greater_equal": E.greater_equal, "logical_and": E.logical_and,
    "logical_or": E.logical_or, "logical_xor": E.logical_xor, "bitwise_and": E.bitwise_and,
    "bitwise_or": E.bitwise_or, "bitwise_xor": E.bitwise_xor,
    "bitwise_left_shift": E.bitwise_left_shift, "bitwise_right_shift": E.bitwise_right_shift,
}
# Result-is-bool tests have no in-place twin in PyTorch.
_NO_INPLACE = {"isnan", "isinf", "isfinite", "signbit", "conj", "positive"}


def _floating(x):
    """``x`` itself, or converted to float32 when it is an integer or bool tensor."""
    return astype(x, D.DEFAULT_FLOAT) if x._dtype.kind in ("bool", "int", "uint") else x


def _unary_method(name, function, floating):
    if floating:
        def method(self):
            return function(_floating(self))
    else:
        def method(self):
            return function(self)
    cast = " (integer and bool tensors computed in float32)" if floating else ""
    _attach(name, method, f"``x.{name}()``: :func:`arraykit.{function.__name__}`{cast}.")


def _binary_method(name, function):
    def method(self, other):
        return function(self, other)
    _attach(name, method, f"``x.{name}(other)``: :func:`arraykit.{function.__name__}`.")


def _scaled(other, alpha):
    return other if alpha == 1 else other * alpha


def _add(self, other, *, alpha=1):
    return E.add(self, _scaled(other, alpha))


def _sub(self, other, *, alpha=1):
    return E.subtract(self, _scaled(other, alpha))


def _div(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return E.divide(self, other)
    return TM.div(self, other, rounding_mode=rounding_mode)


def _pow(self, exponent):
    return E.pow(self, exponent)


def _round(self, *, decimals=0):
    if decimals == 0:
        return E.round(self)
    if self._dtype.kind not in ("float", "complex"):
        raise NotImplementedError(f"round(): decimals= needs a floating-point tensor, got "
                                  f"{self.dtype}")
    scale = 10.0 ** abs(decimals)  # PyTorch's order of operations (ties to even after it)
    if decimals > 0:
        return E.divide(E.round(E.multiply(self, scale)), scale)
    return E.multiply(E.round(E.divide(self, scale)), scale)


def _clamp(self, min=None, max=None):  # noqa: A002 (PyTorch's names)
    if min is None and max is None:
        raise ValueError("clamp(): at least one of min and max must be given")
    return E.clip(self, min, max)


def _inplace_twin(name):
    """``x.name_(...)``: ``x.name(...)`` written back into ``x`` (unless Tensor has it).

    When autograd records ``x``, the value is computed from a copy of ``x`` (PyTorch
    keeps the original self the same way): the write makes a new version of ``x``'s
    storage, and the computation's saved input must not be that storage.
    """
    inplace = name + "_"
    if inplace in vars(Tensor):
        return
    compute = getattr(Tensor, name)

    def method(self, *args, **kwargs):
        source = self.clone() if self._storage.node is not None and is_grad_enabled() else self
        result = compute(source, *args, **kwargs)
        check_writable_dtype(result._dtype, self._dtype)
        return self._write(result)
    _attach(inplace, method, f"``x.{inplace}(...)``: ``x.{name}(...)`` written into ``x`` "
            "in place.")


for _name, _fn in _FLOATING_UNARY.items():
    _unary_method(_name, _fn, True)
for _name, _fn in _UNARY.items():
    _unary_method(_name, _fn, False)
for _name, _fn in _BINARY.items():
    _binary_method(_name, _fn)
_attach("add", _add, "``x.add(other, alpha=1)``: ``x + alpha * other`` (:func:`arraykit.add`).")
_attach("sub", _sub, "``x.sub(other, alpha=1)``: ``x - alpha * other`` "
        "(:func:`arraykit.subtract`).")
_attach("subtract", _sub, "``x.subtract(other, alpha=1)``: ``x - alpha * other``.")
for _name in ("div", "divide"):
    _attach(_name, _div, f"``x.{_name}(other, rounding_mode=None)``: "
            ":func:`arraykit.div` (true division, or rounded ``\"trunc\"``/``\"floor\"``).")
_true_div_ = Tensor.div_


def _div_(self, other, *, rounding_mode=None):
    if rounding_mode is None:
        return _true_div_(self, other)
    source = self.clone() if self._storage.node is not None and is_grad_enabled() else self
    result = _div(source, other, rounding_mode=rounding_mode)
    check_writable_dtype(result._dtype, self._dtype)
    return self._write(result)


_attach("div_", _div_, "``x.div_(other, rounding_mode=None)``: ``x.div(...)`` written into "
        "``x`` in place (true division: PyTorch's same-kind rule refuses an integer ``x``).")
_attach("pow", _pow, "``x.pow(exponent)``: :func:`arraykit.pow`.")
_attach("round", _round, "``x.round(decimals=0)``: :func:`arraykit.round`; with ``decimals``, "
        "rounded at ``10**-decimals`` as PyTorch (``round(x * 10**d) / 10**d``).")
_attach("clamp", _clamp, "``x.clamp(min=None, max=None)``: :func:`arraykit.clip` (at least "
        "one bound).")
_attach("clip", _clamp, "``x.clip(min=None, max=None)``: alias of :meth:`clamp`.")
for _name in [*_FLOATING_UNARY, *_UNARY, *_BINARY, "add", "sub", "subtract", "clamp", "clip"]:
    if _name not in _NO_INPLACE:
        _inplace_twin(_name)
del _name, _fn


# ----------------------------------------------------------------------------- linear algebra


def _product(name, ndim, self, other):
    """:func:`arraykit.matmul` of two tensors of ``ndim`` dimensions."""
    if self.ndim != ndim or getattr(other, "ndim", None) != ndim:
        raise ValueError(
            f"{name}(): expected two {ndim}-D tensors, got shapes {self.shape} and "
            f"{getattr(other, 'shape', type(other).__name__)}"
        )
    return LA.matmul(self, other)


def _mm(self, mat2):  # PyTorch's parameter names: x.mm(mat2=), x.dot(tensor=)
    return _product("mm", 2, self, mat2)


def _dot(self, tensor=None, *, other=None):  # other=: arraykit.dot's name too
    if (tensor is None) == (other is None):
        raise TypeError("dot() takes exactly one second tensor (tensor= or other=)")
    return _product("dot", 1, self, other if tensor is None else tensor)


_attach("matmul", lambda self, other: LA.matmul(self, other),
        "``x.matmul(other)``: :func:`arraykit.matmul` (``x @ other``).")
_attach("mm", _mm, "``x.mm(mat2)``: the matrix product of two 2-D tensors.")
_attach("dot", _dot, "``x.dot(tensor)``: the inner product of two 1-D tensors (no conjugation).")


# ----------------------------------------------------------------------------- shapes


def _repeat(self, *sizes, repeats=None):
    sizes = _dims_or_keyword("repeat", sizes, "repeats", repeats)
    if len(sizes) < self.ndim:
        raise ValueError(
            f"repeat(): the number of repeats ({len(sizes)}) cannot be smaller than the number "
            f"of dimensions of the tensor ({self.ndim}, shape {self.shape})"
        )
    return M.tile(self, sizes)


def _triangle_method(name, function):
    def method(self, diagonal=0):
        return function(self, k=diagonal)
    _attach(name, method, f"``x.{name}(diagonal=0)``: :func:`arraykit.{name}` with ``k=diagonal``.")


_attach("view_as", lambda self, other: self.view(other.shape),
        "``x.view_as(other)``: ``x.view(other.shape)``.")
_attach("reshape_as", lambda self, other: self.reshape(other.shape),
        "``x.reshape_as(other)``: ``x.reshape(other.shape)``.")
_attach("repeat", _repeat, "``x.repeat(*sizes)`` (or ``repeats=``): ``x`` tiled ``sizes[i]`` "
        "times along each dimension (PyTorch's repeat is :func:`arraykit.tile`; at least "
        "``x.ndim`` sizes).")
_attach("take", take_flat, "``x.take(index)``: elements of ``x`` read as flat at ``index`` "
        "(any shape), shaped like ``index`` (``torch.take``).")


_triangle_method("triu", C.triu)
_triangle_method("tril", C.tril)
_inplace_twin("triu")
_inplace_twin("tril")


# ----------------------------------------------------------------------------- new tensors


def _new_like(name, make):
    def method(self, *sizes, size=None, dtype=None, device=None, requires_grad=False):
        return make(_dims_or_keyword(name, sizes, "size", size),
                    dtype=self._dtype if dtype is None else dtype,
                    device=self.device if device is None else device,
                    requires_grad=requires_grad)
    _attach(name, method, f"``x.{name}(*size)`` (or ``size=``): :func:`arraykit.{make.__name__}` "
            "with ``x``'s dtype and device unless given.")


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return C.full(_dims((size,)), fill_value, dtype=self._dtype if dtype is None else dtype,
                  device=self.device if device is None else device, requires_grad=requires_grad)


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return C.tensor(data, dtype=self._dtype if dtype is None else dtype,
                    device=self.device if device is None else device,
                    requires_grad=requires_grad)


_new_like("new_zeros", C.zeros)
_new_like("new_ones", C.ones)
_new_like("new_empty", C.empty)
_attach("new_full", _new_full, "``x.new_full(size, fill_value)``: :func:`arraykit.full` with "
        "``x``'s dtype and device unless given.")
_attach("new_tensor", _new_tensor, "``x.new_tensor(data)``: :func:`arraykit.tensor` with "
        "``x``'s dtype and device unless given.")


# ----------------------------------------------------------------------------- comparisons


def _equal(self, other):
    if not isinstance(other, Tensor):
        raise TypeError(f"equal(): expected a tensor, got {type(other).__name__}")
    return self.shape == other.shape and builtins.bool(U.all(E.equal(self, other)))


_attach("equal", _equal, "``x.equal(other)``: True when both have one shape and equal values "
        "(``torch.equal``; a Python bool, NaN is never equal).")


# ----------------------------------------------------------------------------- indexing


def _masked_fill(self, mask, value):
    return self.clone().masked_fill_(mask, value)


def _nonzero(self, *, as_tuple=False):
    if as_tuple and self.ndim == 0:
        return S.nonzero(self.reshape(1))
    return S.nonzero(self, as_tuple=as_tuple)


_attach("masked_fill", _masked_fill, "``x.masked_fill(mask, value)``: a copy of ``x`` with "
        "``value`` where the boolean ``mask`` (broadcast) is true.")


def _forward(name, function):
    """``x.name(*args)``: the namespace function ``function(x, *args)`` as a method."""
    def method(self, *args, **kwargs):
        return function(self, *args, **kwargs)
    _attach(name, method, f"``x.{name}(...)``: :func:`arraykit.{name}` with ``x`` first.")


def _scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    if value is not None:  # PyTorch's keyword for a scalar src
        src = T.pick("scatter_", "src", src, "value", value)
    if reduce is not None:  # PyTorch's "add"/"multiply": computed, then written (as _inplace_twin)
        source = self.clone() if self._storage.node is not None and is_grad_enabled() else self
        return self._write(G.scatter_reduced(source, dim, index, src, reduce))
    return G.scatter_into(self, dim, index, src, False, "scatter_")


def _scatter_add_(self, dim, index, src):
    return G.scatter_into(self, dim, index, src, True, "scatter_add_")


def _index_add_(self, dim, index, source, *, alpha=1):
    return G.index_update_into(self, dim, index, source, True, alpha, "index_add_")


def _index_copy_(self, dim, index, source):
    return G.index_update_into(self, dim, index, source, False, 1, "index_copy_")


def _put_(self, index, source, accumulate=False):
    return G.put_into(self, index, source, accumulate)


for _name in G.__all__:
    _forward(_name, getattr(G, _name))
_attach("scatter_", _scatter_,
        "``x.scatter_(dim, index, src)`` (or ``value=``, ``reduce=``): :func:`arraykit.scatter` "
        "in place.")
_attach("scatter_add_", _scatter_add_,
        "``x.scatter_add_(dim, index, src)``: :func:`arraykit.scatter_add` in place.")
_attach("index_add_", _index_add_,
        "``x.index_add_(dim, index, source, alpha=1)``: :func:`arraykit.index_add` in place.")
_attach("index_copy_", _index_copy_,
        "``x.index_copy_(dim, index, source)``: :func:`arraykit.index_copy` in place.")
_attach("put_", _put_,
        "``x.put_(index, source, accumulate=False)``: :func:`arraykit.put` in place.")
_attach("nonzero", _nonzero, "``x.nonzero(as_tuple=False)``: the indices of the nonzero elements "
        "as an ``(n, x.ndim)`` tensor, or one index tensor per dimension with ``as_tuple=True``.")


# ----------------------------------------------------------------------------- conversions

_DEVICE_PREFIXES = ("cpu", "gpu", "cuda", "rocm", "tpu")
_MEMORY_FORMATS = (contiguous_format, channels_last, channels_last_3d, preserve_format)


def _is_device(arg):
    """A device, a placement over several (a JAX sharding, arraykit's ``Placement``) or
    a device string, as ``x.to`` takes them positionally."""
    return isinstance(arg, (jax.Device, jax.sharding.Sharding, Placement)) or (
        isinstance(arg, str) and arg.partition(":")[0] in _DEVICE_PREFIXES
    )


def _to(self, *args, dtype=None, device=None, non_blocking=False, copy=False,
        memory_format=preserve_format):
    for arg in args:
        if isinstance(arg, Tensor):
            device = arg.device if device is None else device
            dtype = arg.dtype if dtype is None else dtype
        elif _is_device(arg):
            device = arg
        elif isinstance(arg, builtins.bool):
            continue  # PyTorch's positional non_blocking (see the docstring)
        else:
            dtype = arg
    if memory_format not in _MEMORY_FORMATS:
        raise ValueError(f"to(): unknown memory_format {memory_format!r}")
    out = self
    if dtype is not None and D.as_dtype(dtype) is not self._dtype:
        out = astype(out, dtype)
    if device is not None:
        out = out.to_device(device)
    if memory_format != preserve_format:
        out = out.contiguous(memory_format)
    return out.clone(memory_format) if copy and out is self else out


_attach("to", _to, """PyTorch's conversion: ``x.to(dtype)``, ``x.to(device)``, ``x.to(other)``
(``other``'s device and dtype), ``x.to(device, dtype, non_blocking=True)``,
``x.to(memory_format=arraykit.channels_last)``. Returns ``x`` itself when nothing
changes and ``copy`` is false. JAX transfers are always asynchronous, so
``non_blocking`` needs nothing more (see :meth:`pin_memory`).""")


def _conversion(name, dtype):
    def method(self, memory_format=preserve_format):
        return _to(self, dtype, memory_format=memory_format)
    _attach(name, method, f"``x.{name}()``: ``x.to(arraykit.{dtype.name})`` (``x`` itself when "
            "it already has that dtype).")


for _name, _dtype in {
    "float": D.float32, "double": D.float64, "half": D.float16, "bfloat16": D.bfloat16,
    "long": D.int64, "int": D.int32, "short": D.int16, "char": D.int8, "byte": D.uint8,
    "bool": D.bool_, "cfloat": D.complex64, "cdouble": D.complex128,
}.items():
    _conversion(_name, _dtype)
del _name, _dtype

# PyTorch's legacy type names (x.type()).
_TYPE_NAMES = {
    D.float32: "FloatTensor", D.float64: "DoubleTensor", D.float16: "HalfTensor",
    D.bfloat16: "BFloat16Tensor", D.int64: "LongTensor", D.int32: "IntTensor",
    D.int16: "ShortTensor", D.int8: "CharTensor", D.uint8: "ByteTensor", D.bool_: "BoolTensor",
    D.uint16: "UInt16Tensor", D.uint32: "UInt32Tensor", D.uint64: "UInt64Tensor",
    D.complex64: "ComplexFloatTensor", D.complex128: "ComplexDoubleTensor",
}
_BY_TYPE_NAME = {name: dtype for dtype, name in _TYPE_NAMES.items()}


def _type(self, dtype=None, non_blocking=False):
    if dtype is None:
        return "arraykit." + _TYPE_NAMES[self._dtype]
    if isinstance(dtype, str):
        name = dtype.rpartition(".")[2]
        if name in _BY_TYPE_NAME:
            dtype = _BY_TYPE_NAME[name]
    return _to(self, dtype, non_blocking=non_blocking)


_attach("type", _type, """``x.type()``: PyTorch's type name (``"arraykit.FloatTensor"``);
``x.type(dtype)``: ``x.to(dtype)``, where ``dtype`` may also be such a name.""")


def _cuda(self, device=None, non_blocking=False, *, memory_format=preserve_format):
    if device is None:
        device = "cuda"
    elif isinstance(device, int):
        device = f"cuda:{device}"
    return _to(self, as_device(device), non_blocking=non_blocking, memory_format=memory_format)


def _cpu(self, *, memory_format=preserve_format):
    out = self.to_device("cpu")
    return out if memory_format == preserve_format else _to(out, memory_format=memory_format)


_attach("cpu", _cpu, "``x.cpu(memory_format=preserve_format)``: ``x`` on the CPU (``x`` "
        "itself when it is there and nothing else changes).")
_attach("cuda", _cuda, """``x.cuda(device=None)``: ``x`` on a GPU (``device`` an index,
``"cuda:N"`` or a JAX device; the first GPU by default). ValueError naming the
available devices when there is no such GPU.""")
_attach_property("is_cuda", lambda self: self.device.platform == "gpu",
                 "Whether the tensor is on a GPU.")
_attach_property("is_cpu", lambda self: self.device.platform == "cpu",
                 "Whether the tensor is on the CPU.")
_attach_property("nbytes", lambda self: self.size * self._dtype.itemsize,
                 "Bytes the tensor's elements take (``numel() * itemsize``; not the storage's).")
_attach_property("itemsize", lambda self: self._dtype.itemsize, "Bytes per element.")
_attach("nelement", lambda self: self.numel(), "``x.nelement()``: alias of :meth:`numel`.")
def _pin_memory(self, device=None):  # PyTorch's device= (deprecated there) changes nothing
    return device_memory.pin(self)


def _is_pinned(self, device=None):  # PyTorch's device= (deprecated there) changes nothing
    return device_memory.is_pinned(self)


_attach("pin_memory", _pin_memory, """``x.pin_memory()``: a copy of the CPU tensor ``x`` in
page-locked host memory for fast, asynchronous copies to the GPU (RuntimeError on a
machine without a GPU, as in PyTorch); see :mod:`arraykit.api.device_memory`.""")
_attach("is_pinned", _is_pinned, "``x.is_pinned()``: whether ``x`` is in pinned host memory.")


# ----------------------------------------------------------------------------- torch functions


def _method_of(name, function, doc=None):
    """``x.name(*args, **kwargs)``: ``function(x, *args, **kwargs)``."""
    def method(self, *args, **kwargs):
        return function(self, *args, **kwargs)
    _attach(name, method, doc or f"``x.{name}(...)``: :func:`arraykit.{function.__name__}` "
            "with ``x`` first.")


# PyTorch method name -> the namespace function it calls with the tensor first.
_FUNCTIONS = {
    "split": TS.split, "chunk": TS.chunk, "unbind": TS.unbind, "tensor_split": TS.tensor_split,
    "unflatten": TS.unflatten, "movedim": TS.movedim, "moveaxis": TS.movedim,
    "swapaxes": TS.swapaxes, "swapdims": Tensor.transpose, "take_along_dim": TS.take_along_dim,
    "repeat_interleave": TS.repeat_interleave, "rot90": TS.rot90, "fliplr": TS.fliplr,
    "flipud": TS.flipud, "diag": TS.diag, "diag_embed": TS.diag_embed,
    "is_floating_point": TS.is_floating_point,
    "outer": TL.outer, "ger": TL.outer, "bmm": TL.bmm, "addmm": TL.addmm,
    "baddbmm": TL.baddbmm, "cross": TL.cross, "kron": TL.kron, "dist": TL.dist,
    "norm": TL.norm, "renorm": TL.renorm, "trace": TL.trace,
    "cumsum": TR.cumsum, "cumprod": TR.cumprod, "cummax": TR.cummax, "cummin": TR.cummin,
    "logcumsumexp": TR.logcumsumexp, "amax": TR.amax, "amin": TR.amin,
    "aminmax": TR.aminmax, "median": TR.median, "nanmedian": TR.nanmedian, "mode": TR.mode,
    "kthvalue": TR.kthvalue, "quantile": TR.quantile, "nanquantile": TR.nanquantile,
    "bincount": TR.bincount, "histc": TR.histc, "unique_consecutive": TR.unique_consecutive,
    "rsqrt": TP.rsqrt, "erf": TP.erf, "erfc": TP.erfc, "erfinv": TP.erfinv,
    "lgamma": TP.lgamma, "digamma": TP.digamma, "xlogy": TP.xlogy, "sgn": TP.sgn,
    "frexp": TP.frexp, "ldexp": TP.ldexp, "float_power": TP.float_power, "fmod": TP.fmod,
    "nan_to_num": TP.nan_to_num, "frac": TP.frac, "lerp": TP.lerp, "isclose": TP.isclose,
    "allclose": TP.allclose,
    "scatter_reduce": TI.scatter_reduce, "index_reduce": TI.index_reduce,
    "index_fill": TI.index_fill, "masked_scatter": TI.masked_scatter,
}
_INPLACE = (
    "cumsum", "cumprod", "renorm", "addmm", "baddbmm", "rsqrt", "erf", "erfc", "erfinv",
    "lgamma", "digamma", "xlogy", "sgn", "ldexp", "float_power", "fmod", "nan_to_num", "frac",
    "lerp", "scatter_reduce", "index_reduce", "masked_scatter",
)
for _name, _fn in _FUNCTIONS.items():
    _method_of(_name, _fn)
for _name in _INPLACE:
    _inplace_twin(_name)
del _name, _fn


def _type_as(self, other):
    return _to(self, other.dtype)


def _addcmul(self, tensor1, tensor2, *, value=1):
    return E.add(self, _scaled(E.multiply(tensor1, tensor2), value))


def _addcdiv(self, tensor1, tensor2, *, value=1):
    if tensor1._dtype.kind in ("bool", "int", "uint") and tensor2._dtype.kind in (
            "bool", "int", "uint"):
        raise RuntimeError("Integer division with addcdiv is no longer supported; divide "
                           "tensor1 by tensor2 explicitly")
    return E.add(self, _scaled(E.divide(tensor1, tensor2), value))


def _diff(self, n=1, dim=-1, prepend=None, append=None):
    return U.diff(self, n, dim, prepend, append)


def _roll(self, shifts, dims=None):
    return M.roll(self, shifts, axis=dims)


def _where(self, condition, other):
    return S.where(condition, self, other)


def _unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    if dim is not None:
        return TR.unique_slices(self, dim, return_inverse, return_counts)
    if return_inverse and return_counts:
        values, _, inverse, counts = SF.unique_all(self)
        return values, inverse, counts
    if return_inverse:
        return tuple(SF.unique_inverse(self))
    if return_counts:
        return tuple(SF.unique_counts(self))
    return SF.unique_values(self)


_attach("type_as", _type_as, "``x.type_as(other)``: ``x.to(other.dtype)``.")
_attach("ndimension", lambda self: self.ndim, "``x.ndimension()``: the number of dimensions.")
_attach("addcmul", _addcmul, "``x.addcmul(t1, t2, value=1)``: ``x + value * t1 * t2``.")
_attach("addcdiv", _addcdiv, "``x.addcdiv(t1, t2, value=1)``: ``x + value * t1 / t2``.")
_attach("diff", _diff, "``x.diff(n=1, dim=-1, prepend=None, append=None)``: "
        ":func:`arraykit.diff` (``n``-th forward differences along ``dim``).")
_attach("roll", _roll, "``x.roll(shifts, dims=None)``: :func:`arraykit.roll`.")
_attach("where", _where, "``x.where(condition, other)``: ``arraykit.where(condition, x, other)``.")
_attach("unique", _unique, "``x.unique(sorted=True, return_inverse=False, return_counts="
        "False)``: the sorted distinct values (:func:`arraykit.unique_values`), with the "
        "inverse indices and the counts when asked; with ``dim``, the distinct slices along it.")
for _name in ("addcmul", "addcdiv"):
    _inplace_twin(_name)
del _name


# ----------------------------------------------------------------------------- real, imag


def _complex_part(self, index):
    """The real (``index`` 0) or imaginary (1) part of a complex tensor: on one CPU
    outside a trace and autograd a view sharing its memory, as PyTorch's; elsewhere
    (where a view with another dtype is impossible, see ``Tensor.view``, or would
    leave the graph) a new tensor."""
    st = self._storage
    if (one_cpu(st.device) and not isinstance(st._buffer, jax.core.Tracer)
            and not (self.requires_grad and is_grad_enabled())):
        return self.unsqueeze(-1).view(D.real_dtype(self._dtype))[..., index]
    return E.real(self) if index == 0 else E.imag(self)


def _real(self):
    if self._dtype.kind != "complex":
        return self
    return _complex_part(self, 0)


def _imag(self):
    if self._dtype.kind != "complex":
        raise RuntimeError(
            f"imag is not implemented for tensors with non-complex dtypes (got {self._dtype})"
        )
    return _complex_part(self, 1)


_attach_property("real", _real, """``x.real`` (PyTorch's): ``x`` itself for a real tensor;
for a complex tensor its real part, on the CPU a view sharing ``x``'s memory (writes
reach ``x``), on other devices a new tensor (:func:`arraykit.real`).""")
_attach_property("imag", _imag, """``x.imag`` (PyTorch's): the imaginary part of a complex
tensor, on the CPU a view sharing ``x``'s memory, on other devices a new tensor
(:func:`arraykit.imag`); RuntimeError for a real tensor, as in PyTorch.""")
