"""Statistical functions of the array API (reductions and cumulative reductions).

Accumulating functions (``sum``, ``prod``, ``cumulative_sum``, ``cumulative_prod``)
promote booleans and integers narrower than 64 bits to ``int64`` / ``uint64``
unless ``dtype=`` says otherwise (the input is cast before accumulating).
``mean``, ``var`` and ``std`` of integers return the default floating dtype and
compute in ``float64``; of complex inputs, ``var``/``std`` return the real dtype
(NumPy). ``max``/``min`` over zero elements raise ``ValueError`` (NumPy); where a
result is zero they recompute it from exact ordering keys
(:mod:`arraykit.kernels.ordering`), so subnormals count on every platform.

PyTorch's spellings (``dim=``, ``keepdim=``, ``input=``, ``out=``; see
:mod:`.torch_keywords`) are read only when given, and then bring PyTorch's meaning:
``max``/``min`` over one ``dim`` return ``(values, indices)``, ``var``/``std`` default
to ``correction=1``.
"""

from __future__ import annotations

import functools

import math

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..core import dtypes as D
from ..core import layout as L
from ..kernels import derivatives as DV
from ..kernels import ordering as O
from ..kernels import size_buckets
from ..kernels.launch import apply
from ..tensors.tensor_type import require_tensor
from . import torch_keywords as T
from .dtype_functions import astype
from .naming import named
from .autocasting import coerce

__all__ = [
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
]

_INTEGRAL = ("bool", "int", "uint")


def _axes(axis, ndim):
    """Reduced axes as a sorted tuple (a 0-d tensor accepts axis 0/-1 and reduces nothing)."""
    if axis is None:
        return _ALL_AXES[ndim] if ndim < len(_ALL_AXES) else tuple(range(ndim))
    if type(axis) is int or type(axis) is tuple:
        return _normalized_axes(axis, ndim)
    axes = L.normalize_dims(axis, ndim, "axis")
    return tuple(sorted(axes)) if ndim else ()


_ALL_AXES = tuple(tuple(range(n)) for n in range(8))


@functools.lru_cache(maxsize=1024)
def _normalized_axes(axis, ndim):
    axes = L.normalize_dims(axis, ndim, "axis")
    return tuple(sorted(axes)) if ndim else ()


def _accumulation_dtype(dtype):
    """Default result dtype of sum/prod/cumulative_*: narrow integers widen to 64 bits."""
    if dtype.kind == "bool" or dtype.kind == "int":
        return D.int64
    if dtype.kind == "uint":
        return D.uint64
    return dtype


def _result_dtype(x, dtype, name):
    if dtype is None:
        return _accumulation_dtype(x._dtype)
    dtype = D.as_dtype(dtype)
    if x._dtype.kind == "complex" and dtype.kind != "complex":
        raise TypeError(
            f"{name}() cannot accumulate complex input ({x._dtype}) in {dtype}; "
            "take real() or abs() first"
        )
    return dtype


def _check_nonempty(x, axes, name):
    shape = x._layout.shape
    for a in axes:
        if shape[a] == 0:
            raise ValueError(
                f"{name}() of a zero-size reduction: axis {a} of the input of shape "
                f"{shape} is empty and the operation has no identity"
            )


def _check_ordered(dtype, name):
    if dtype.kind == "complex":
        raise TypeError(
            f"{name}() is not defined for complex inputs ({dtype}): the array API "
            "standard leaves the ordering of complex numbers unspecified"
        )


# ----------------------------------------------------------------------------- kernels


PAIRWISE_MAX = 1024  # longest reduced axis that _fixed_order_sum adds up itself


def _fixed_order_sum(x, axes, keepdims):
    """Sum over ``axes`` whose rounding depends on the reduced lengths alone.

    XLA's CPU reduction orders a row's additions by the whole operand's shape
    (YNNPACK's tiling in large kernels, a sequential loop in small ones), so a row
    summed beside others could differ in the last bit from the same row summed alone,
    where NumPy and PyTorch give the same bits. Floating axes of at most
    ``PAIRWISE_MAX`` elements are summed here by adding halves (pairwise summation),
    an order fixed by the axis length; longer axes and integers go to XLA's reduction.
    Half-precision floats accumulate in float32 (as ``jnp.sum``); the caller casts back.
    """
    if not jnp.issubdtype(x.dtype, jnp.inexact) or not all(
        0 < x.shape[a] <= PAIRWISE_MAX for a in axes
    ):
        return jnp.sum(x, axis=axes, keepdims=keepdims, dtype=_accumulator(x.dtype))
    if not axes:
        return x.astype(_accumulator(x.dtype))
    x = x.astype(_accumulator(x.dtype))
    for a in axes:
        x = _sum_halves(x, a)
    x = _unsigned_zeros(x)
    return x if keepdims else jnp.squeeze(x, axes)


def _unsigned_zeros(x):
    """``x`` with -0.0 made +0.0 (in each part), as sums starting from 0 give it.

    Adds +0.0 to zeros and -0.0 elsewhere (exact, gradient 1); a constant +0.0 would
    be folded away by XLA.
    """
    if jnp.iscomplexobj(x):
        return x + lax.complex(_zero_for(x.real), _zero_for(x.imag))
    return x + _zero_for(x)


def _zero_for(x):
    return jnp.where(x == 0, jnp.zeros((), x.dtype), jnp.full((), -0.0, x.dtype))


def _accumulator(dtype):
    return jnp.float32 if dtype in (jnp.float16, jnp.bfloat16) else dtype


def _sum_halves(x, axis):
    """``x`` summed over ``axis`` (kept, of length 1) by adding its halves repeatedly,
    the axis first padded with -0.0 (which adds exactly nothing) to a power of two:
    then padding it further changes no bit of the result, so the programs of
    :mod:`..kernels.size_buckets` give the exact kernel's values."""
    n = x.shape[axis]
    whole = 1 << (n - 1).bit_length()
    if whole != n:
        config = [(0, 0, 0)] * x.ndim
        config[axis] = (0, whole - n, 0)
        x = lax.pad(x, _negative_zero(x.dtype), config)
    while whole > 1:
        whole //= 2
        x = lax.slice_in_dim(x, 0, whole, axis=axis) + lax.slice_in_dim(x, whole, 2 * whole, axis=axis)
    return x


def _negative_zero(dtype):
    """-0.0 (in each part) as a 0-d array of the inexact ``dtype``."""
    if jnp.issubdtype(dtype, jnp.complexfloating):
        return jnp.asarray(complex(-0.0, -0.0), dtype)
    return jnp.asarray(-0.0, dtype)


@size_buckets.reduction(size_buckets.zero_sum, longest=PAIRWISE_MAX)
def _sum(x, axes, keepdims, np_dtype):
    return _fixed_order_sum(x.astype(np_dtype), axes, keepdims).astype(np_dtype)


def _prod(x, axes, keepdims, np_dtype):
    return jnp.prod(x.astype(np_dtype), axis=axes, keepdims=keepdims, dtype=np_dtype)


def _exact_extreme(x, axes, keepdims, reduce, nan_last):
    key = reduce(O.float_key(x, nan_last=nan_last), axis=axes, keepdims=keepdims)
    return O.key_to_float(key, x.dtype)


@DV.extreme
def _extreme(x, axes, keepdims, reduce, nan_last):
    m = reduce(x, axis=axes, keepdims=keepdims)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return m
    # comparisons flush subnormals on XLA CPU: a zero result may have missed one,
    # so only then reduce the exact integer keys (lax.cond keeps the fast path fast)
    m = lax.cond(
        jnp.any(m == 0),
        lambda: _exact_extreme(x, axes, keepdims, reduce, nan_last),
        lambda: m,
    )
    # XLA's CPU reduction of 4096 elements or more (vectorized) drops NaNs; the
    # standard propagates them: put them back, on every path and size
    return jnp.where(jnp.any(jnp.isnan(x), axis=axes, keepdims=keepdims), jnp.nan, m)


@size_buckets.reduction(size_buckets.lowest)
def _max(x, axes, keepdims):
    return _extreme(x, axes, keepdims, jnp.max, True)


@size_buckets.reduction(size_buckets.highest)
def _min(x, axes, keepdims):
    return _extreme(x, axes, keepdims, jnp.min, False)


def _fixed_order_mean(x, axes, keepdims):
    total = _fixed_order_sum(x, axes, keepdims)
    count = math.prod(x.shape[a] for a in axes)
    return (total / jnp.asarray(count, total.dtype)).astype(x.dtype)


def _mean(x, axes, keepdims, compute, out):
    return _fixed_order_mean(x.astype(compute), axes, keepdims).astype(out)


def _var(x, axes, keepdims, compute, out, divisor, root):
    x = x.astype(compute)
    d = x - _fixed_order_mean(x, axes, True)
    sq = jnp.real(d * jnp.conj(d)) if jnp.iscomplexobj(d) else d * d
    s = _fixed_order_sum(sq, axes, keepdims)
    v = s / divisor if divisor > 0 else jnp.full_like(s, jnp.nan)
    return (DV.sqrt_of_sum(v) if root else v).astype(out)


def _pad_initial(y, axis, value):
    pad = [(0, 0)] * y.ndim
    pad[axis] = (1, 0)
    return jnp.pad(y, pad, constant_values=value)


def _cumsum(x, axis, include_initial, np_dtype):
    y = jnp.cumsum(x.astype(np_dtype), axis=axis, dtype=np_dtype)
    return _pad_initial(y, axis, 0) if include_initial else y


def _cumprod(x, axis, include_initial, np_dtype):
    y = jnp.cumprod(x.astype(np_dtype), axis=axis, dtype=np_dtype)
    return _pad_initial(y, axis, 1) if include_initial else y


# ----------------------------------------------------------------------------- reductions


def _accumulating_reduction(name, body, doc):
    """The reduction ``name`` (``sum``, ``prod``) computed by the kernel ``body``; narrow
    integers accumulate in 64 bits unless ``dtype=`` says otherwise."""

    def reduce(x=None, /, dim=None, keepdim=None, *, axis=None, dtype=None, keepdims=False,
        input=None, out=None,  # noqa: A002 (PyTorch's names)
    ):
        if dim is not None or keepdim is not None or input is not None or out is not None:
            return T.reduction(reduce, name, x, input, axis, keepdims, dim, keepdim, out,
                               dtype=dtype)
        require_tensor(x, name)
        if dtype is None:
            (x,) = coerce(name, x)
        dtype = _result_dtype(x, dtype, name)
        return apply(body, (x,), (_axes(axis, x.ndim), bool(keepdims), dtype.np))

    return named(reduce, name, doc)


sum = _accumulating_reduction(
    "sum", _sum,
    """Sum over ``axis`` (all axes by default); narrow integers accumulate in 64 bits.""",
)
prod = _accumulating_reduction(
    "prod", _prod,
    """Product over ``axis`` (all axes by default); narrow integers accumulate in 64 bits.""",
)


def _ordered_reduction(name, body, doc):
    """The reduction ``name`` (``max``, ``min``) computed by the kernel ``body``."""

    def reduce(x=None, /, dim=None, keepdim=None, *, axis=None, keepdims=False,
        input=None, out=None,  # noqa: A002 (PyTorch's names)
    ):
        if dim is not None or keepdim is not None or input is not None or out is not None:
            return _torch_extreme(reduce, name, x, input, axis, keepdims, dim, keepdim, out)
        require_tensor(x, name)
        _check_ordered(x._dtype, name)
        axes = _axes(axis, x.ndim)
        _check_nonempty(x, axes, name)
        return apply(body, (x,), (axes, bool(keepdims)))

    return named(reduce, name, doc)


max = _ordered_reduction(
    "max", _max, """Maximum over ``axis``; NaNs propagate; ValueError over zero elements."""
)
min = _ordered_reduction(
    "min", _min, """Minimum over ``axis``; NaNs propagate; ValueError over zero elements."""
)


def _float_dtypes(x, name):
    """(compute dtype, result dtype) of mean/var/std for ``x``."""
    kind = x._dtype.kind
    if kind in _INTEGRAL:
        return D.float64, D.DEFAULT_FLOAT
    if kind not in ("float", "complex"):
        raise TypeError(f"{name}() expects a numeric tensor, got {x._dtype}")
    return x._dtype, x._dtype


def mean(x=None, /, dim=None, keepdim=None, *, axis=None, keepdims=False, dtype=None,
    input=None, out=None,  # noqa: A002 (PyTorch's names)
):
    """Arithmetic mean over ``axis`` (NaN over zero elements).

    Integer and boolean inputs give the default floating dtype; ``dtype=`` (PyTorch's)
    casts the input to a floating dtype first.
    """
    if dim is not None or keepdim is not None or input is not None or out is not None:
        return T.reduction(mean, "mean", x, input, axis, keepdims, dim, keepdim, out, dtype=dtype)
    require_tensor(x, "mean")
    if dtype is not None:
        x = _cast_for_mean(x, dtype)
    compute, out = _float_dtypes(x, "mean")
    return apply(_mean, (x,), (_axes(axis, x.ndim), bool(keepdims), compute.np, out.np))


def _cast_for_mean(x, dtype):
    """``x`` in ``dtype`` for ``mean(dtype=)``, which must be floating (as PyTorch's)."""
    dtype = D.as_dtype(dtype)
    if dtype.kind not in ("float", "complex"):
        raise TypeError(f"mean(): dtype= must be a floating-point dtype, got {dtype}")
    return astype(x, dtype)


def _torch_extreme(function, name, x, input, axis, keepdims, dim, keepdim, out):  # noqa: A002
    """``max``/``min`` (``function``) with PyTorch's spellings: over one ``dim``, PyTorch's
    ``(values, indices)`` named tuple (the method ``x.max(dim)``), else the reduction."""
    x = T.pick_input(name, x, input)
    axis, keepdims = T.reduction_axes(name, axis, keepdims, dim, keepdim)
    if dim is not None and not isinstance(axis, tuple):
        result = getattr(require_tensor(x, name), name)(axis, keepdims)
        return result if out is None else T.into_each(name, result, out)
    result = function(x, axis=axis, keepdims=keepdims)
    return result if out is None else T.into(name, result, out)


def _moment(x, axis, correction, keepdims, root, name):
    require_tensor(x, name)
    compute, out = _float_dtypes(x, name)
    out = D.real_dtype(out)
    if isinstance(correction, (bool, np.bool_)) or not isinstance(
        correction, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{name}() correction must be an int or float, got {correction!r}")
    axes = _axes(axis, x.ndim)
    shape = x._layout.shape
    divisor = math.prod(shape[a] for a in axes) - correction
    return apply(
        _var, (x,), (axes, bool(keepdims), compute.np, out.np, float(divisor), root)
    )


def _moment_reduction(name, root, doc):
    """The reduction ``name``: the variance, or with ``root`` its square root (``std``)."""

    def reduce(x=None, /, dim=None, *, axis=None, correction=None, keepdims=False,
        keepdim=None, input=None, out=None,  # noqa: A002 (PyTorch's names)
    ):
        if dim is not None or keepdim is not None or input is not None or out is not None:
            return T.reduction(reduce, name, x, input, axis, keepdims, dim, keepdim, out,
                               correction=1 if correction is None else correction)
        return _moment(x, axis, 0.0 if correction is None else correction, keepdims, root, name)

    return named(reduce, name, doc)


var = _moment_reduction(
    "var", False,
    """Variance over ``axis`` with divisor ``M - correction`` (NaN when that is <= 0).""",
)
std = _moment_reduction(
    "std", True,
    """Standard deviation over ``axis`` with divisor ``M - correction`` (NaN when <= 0).""",
)


# ----------------------------------------------------------------------------- cumulative


def _cumulative(body, x, axis, dtype, include_initial, name):
    require_tensor(x, name)
    ndim = x.ndim
    if ndim == 0:
        x = x.reshape(1)
        axis = 0
    elif axis is None:
        if ndim != 1:
            raise ValueError(
                f"{name}() needs an axis for a tensor of {ndim} dimensions (shape {x.shape})"
            )
        axis = 0
    else:
        axis = L.normalize_dim(axis, ndim, "axis")
    if dtype is None:
        (x,) = coerce(name, x)
    dtype = _result_dtype(x, dtype, name)
    return apply(body, (x,), (axis, bool(include_initial), dtype.np))


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running sums along ``axis`` (optional for 1-D), optionally starting with 0."""
    return _cumulative(_cumsum, x, axis, dtype, include_initial, "cumulative_sum")


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running products along ``axis`` (optional for 1-D), optionally starting with 1."""
    return _cumulative(_cumprod, x, axis, dtype, include_initial, "cumulative_prod")
