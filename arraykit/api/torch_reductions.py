"""PyTorch's reductions, scans and counts in the namespace: ``cumsum``, ``cummax``,
``logcumsumexp``, ``amax``, ``aminmax``, ``median``, ``mode``, ``kthvalue``,
``quantile``, ``std_mean``, ``bincount``, ``histc``, ``bucketize``,
``unique_consecutive``...

Functions that pick an element per slice (``cummax``, ``median(dim)``, ``mode``,
``kthvalue``) compute its index with one kernel and read the value at that index
with another, so the gradient goes to the picked element, as in PyTorch. Which
element is picked among equal ones: ``cummax``/``cummin`` and ``mode`` take the
last, as PyTorch; ``median``/``kthvalue`` take the first in a stable sort, where
PyTorch's choice is unspecified. Full ``median()``/``nanmedian()`` split the gradient
evenly among the elements equal to the result (PyTorch's rule); ``amax``/``amin``
too (:func:`arraykit.max`).
"""

from __future__ import annotations

import collections
import operator

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..core import dtypes as D
from ..core import layout as L
from ..kernels.launch import apply
from ..tensors.tensor_type import Tensor, is_traced, require_tensor
from . import creation as C
from . import host_results
from . import searching as S
from . import sorting as SO
from . import statistical as ST
from . import torch_keywords as T

__all__ = [
    "amax", "amin", "aminmax", "bincount", "bucketize", "cummax", "cummin", "cumprod", "cumsum",
    "histc", "kthvalue", "logcumsumexp", "median", "mode", "nanmedian", "nanquantile",
    "quantile", "std_mean", "unique_consecutive", "var_mean",
]

ValuesIndices = collections.namedtuple("ValuesIndices", ["values", "indices"])
ValuesIndices.__doc__ = """``(values, indices)`` of ``max(dim)``, ``sort``, ``median(dim)``,
``mode``, ``kthvalue``, ``cummax``... (PyTorch's ``torch.return_types``)."""
MinMax = collections.namedtuple("MinMax", ["min", "max"])
MinMax.__doc__ = "``(min, max)`` of :func:`aminmax` (PyTorch's ``torch.return_types.aminmax``)."


_into = T.into_if_given


def _into_each(name, result, out):
    return result if out is None else T.into_each(name, result, out)


def _floating_or_int(x, name):
    require_tensor(x, name)
    if x._dtype.kind == "complex":
        raise RuntimeError(f"{name}(): does not support complex input, got {x.dtype}")
    return x


# ----------------------------------------------------------------------------- scans


def _running_dim(name, dim, axis):
    """``dim`` of a running reduction, also spelled ``axis=`` (the standard's name)."""
    if dim is None and axis is None:
        raise TypeError(f"{name}() missing 1 required argument: 'dim'")
    if dim is not None and axis is not None:
        raise TypeError(f"{name}() got both dim={dim} and axis={axis}; pass one")
    return axis if dim is None else dim


def cumsum(input, dim=None, *, dtype=None, out=None, axis=None):  # noqa: A002 (PyTorch's names, here and below)
    """Running sums along ``dim`` (or ``axis``; integers and bools summed as int64, as PyTorch)."""
    x = require_tensor(input, "cumsum")
    if dtype is None and x._dtype.kind in ("bool", "int", "uint"):
        dtype = D.int64
    dim = _running_dim("cumsum", dim, axis)
    return _into("cumsum", ST.cumulative_sum(x, axis=dim, dtype=dtype), out)


def cumprod(input, dim=None, *, dtype=None, out=None, axis=None):  # noqa: A002
    """Running products along ``dim`` (or ``axis``; integers and bools multiplied as int64)."""
    x = require_tensor(input, "cumprod")
    if dtype is None and x._dtype.kind in ("bool", "int", "uint"):
        dtype = D.int64
    dim = _running_dim("cumprod", dim, axis)
    return _into("cumprod", ST.cumulative_prod(x, axis=dim, dtype=dtype), out)


def _running_extreme_indices(x, dim, larger):
    """Index of the running maximum (``larger``) or minimum along ``dim``: the last
    index reaching it, NaN above everything (PyTorch's ``cummax``/``cummin``)."""
    idx = lax.broadcasted_iota(jnp.int64, x.shape, dim)

    def combine(left, right):
        (v1, i1), (v2, i2) = left, right
        if jnp.issubdtype(x.dtype, jnp.floating):
            wins = jnp.isnan(v2) | (~jnp.isnan(v1) & (v2 >= v1 if larger else v2 <= v1))
        else:
            wins = v2 >= v1 if larger else v2 <= v1
        return jnp.where(wins, v2, v1), jnp.where(wins, i2, i1)

    return lax.associative_scan(combine, (x, idx), axis=dim)[1]


def _running_extreme(name, input, dim, larger, out):  # noqa: A002
    x = _floating_or_int(input, name)
    flat = x.reshape(1) if x.ndim == 0 else x
    d = L.normalize_dim(dim, flat.ndim, "dim")
    indices = apply(_running_extreme_indices, (flat,), (d, larger))
    values = apply(SO.values_at, (flat, indices), (d, True))
    if x.ndim == 0:
        values, indices = values.reshape(()), indices.reshape(())
    return _into_each(name, ValuesIndices(values, indices), out)


def cummax(input, dim, *, out=None):  # noqa: A002
    """``(values, indices)``: the running maximum along ``dim`` and where it was reached
    (the last such index; a NaN stays the maximum)."""
    return _running_extreme("cummax", input, dim, True, out)


def cummin(input, dim, *, out=None):  # noqa: A002
    """``(values, indices)``: the running minimum along ``dim`` (see :func:`cummax`)."""
    return _running_extreme("cummin", input, dim, False, out)


def _logcumsumexp(x, dim):
    return lax.cumlogsumexp(x, axis=dim)


def logcumsumexp(input, dim, *, out=None):  # noqa: A002
    """``log(cumsum(exp(input), dim))`` computed stably."""
    x = require_tensor(input, "logcumsumexp")
    if x._dtype.kind not in ("float", "complex"):
        raise RuntimeError(f"logcumsumexp(): expected a floating-point tensor, got {x.dtype}")
    flat = x.reshape(1) if x.ndim == 0 else x
    result = apply(_logcumsumexp, (flat,), (L.normalize_dim(dim, flat.ndim, "dim"),))
    return _into("logcumsumexp", result.reshape(x.shape), out)


# ----------------------------------------------------------------------------- extremes


def _dims_arg(dim):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    return tuple(dim) if isinstance(dim, (tuple, list)) else operator.index(dim)


def amax(input, dim=(), keepdim=False, *, out=None):  # noqa: A002
    """Maximum over ``dim`` (all dimensions when empty); a tie splits the gradient evenly."""
    x = _floating_or_int(input, "amax")
    return _into("amax", ST.max(x, axis=_dims_arg(dim), keepdims=bool(keepdim)), out)


def amin(input, dim=(), keepdim=False, *, out=None):  # noqa: A002
    """Minimum over ``dim`` (all dimensions when empty); a tie splits the gradient evenly."""
    x = _floating_or_int(input, "amin")
    return _into("amin", ST.min(x, axis=_dims_arg(dim), keepdims=bool(keepdim)), out)


def aminmax(input, *, dim=None, keepdim=False, out=None):  # noqa: A002
    """``(min, max)`` over ``dim`` (all elements when None)."""
    x = _floating_or_int(input, "aminmax")
    axis = None if dim is None else operator.index(dim)
    result = MinMax(ST.min(x, axis=axis, keepdims=bool(keepdim)),
                    ST.max(x, axis=axis, keepdims=bool(keepdim)))
    return _into_each("aminmax", result, out)


# ----------------------------------------------------------------------------- order statistics


def _sorted_order(x, dim):
    """Stable ascending order along ``dim``, NaNs last."""
    return jnp.argsort(x, axis=dim, stable=True)


def _pick_sorted(order, position, dim):
    """``order``'s entry at ``position`` (kept dim) along ``dim``."""
    return jnp.take_along_axis(order, position.astype(order.dtype), axis=dim)


def _count_not_nan(x, dim):
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.full(x.shape[:dim] + (1,) + x.shape[dim + 1:], x.shape[dim], jnp.int64)
    return jnp.sum(~jnp.isnan(x), axis=dim, keepdims=True, dtype=jnp.int64)


def _median_index(x, dim, ignore_nan):
    order = _sorted_order(x, dim)
    valid = _count_not_nan(x, dim)
    n = x.shape[dim]
    if ignore_nan:
        position = jnp.maximum(valid - 1, 0) // 2
    else:  # a NaN is the median of its slice: the first NaN in sorted order
        position = jnp.where(valid < n, valid, (n - 1) // 2)
    return _pick_sorted(order, position, dim)


def _kth_index(x, dim, k):
    kept = x.shape[:dim] + (1,) + x.shape[dim + 1:]
    return _pick_sorted(_sorted_order(x, dim), jnp.full(kept, k - 1), dim)


def _mode_index(x, dim):
    x = jnp.moveaxis(x, dim, -1)
    n = x.shape[-1]
    s = jnp.sort(x, axis=-1)
    search = jax.vmap(lambda row: (jnp.searchsorted(row, row, side="right")
                                   - jnp.searchsorted(row, row, side="left")))
    counts = search(s.reshape(-1, n)).reshape(s.shape)
    value = jnp.take_along_axis(s, jnp.argmax(counts, axis=-1, keepdims=True), axis=-1)
    positions = jnp.where(x == value, jnp.arange(n), -1)
    index = jnp.max(positions, axis=-1, keepdims=True)
    return jnp.moveaxis(index, -1, dim).astype(jnp.int64)


def _selected(name, input, dim, keepdim, index_body, static=(), out=None):  # noqa: A002
    """``(values, indices)``: ``index_body`` picks an index per slice along ``dim``
    (kept), the values are read there (the gradient goes to the picked element)."""
    x = _floating_or_int(input, name)
    flat = x.reshape(1) if x.ndim == 0 else x
    d = L.normalize_dim(dim, flat.ndim, "dim")
    if flat.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    indices = apply(index_body, (flat,), (d,) + tuple(static))
    values = apply(SO.values_at, (flat, indices), (d, True))
    if x.ndim == 0:
        result = ValuesIndices(values.reshape(()), indices.reshape(()))
    elif keepdim:
        result = ValuesIndices(values, indices)
    else:
        result = ValuesIndices(values.squeeze(d), indices.squeeze(d))
    return _into_each(name, result, out)


def _evenly_split(select):
    """``select(x, ignore_nan)``, a value of ``x``, differentiated as PyTorch's
    ``evenly_distribute_backward``: the gradient split among the elements equal to
    the result (the NaNs when the result is NaN)."""
    f = jax.custom_jvp(select, nondiff_argnums=(1,))

    def jvp(ignore_nan, primals, tangents):
        (x,), (dx,) = primals, tangents
        out = f(x, ignore_nan)
        hit = jnp.where(jnp.isnan(out), jnp.isnan(x), x == out).astype(x.dtype)
        return out, (jnp.sum(hit * dx) / jnp.sum(hit)).astype(out.dtype)

    f.defjvp(jvp)
    return f


@_evenly_split
def _median_all(x, ignore_nan):
    flat = x.reshape(-1)
    return flat[_median_index(flat, 0, ignore_nan)[0]]


def _median(name, input, dim, keepdim, ignore_nan, out):  # noqa: A002
    x = _floating_or_int(input, name)
    if dim is None:
        if x.size == 0:
            return _into(name, C.full((), float("nan"), dtype=x.dtype, device=x.device), out)
        return _into(name, apply(_median_all, (x,), (ignore_nan,)), out)
    return _selected(name, x, dim, keepdim, _median_index, (ignore_nan,), out)


class _NotGiven:
    """The default of NumPy's ``axis=``/``keepdims=`` on :func:`median`: told apart
    from ``axis=None``, which NumPy's median takes to mean every axis."""

    def __repr__(self):
        return "<not given>"


NOT_GIVEN = _NotGiven()


def _numpy_median_body(x, axis, keepdims, ignore_nan, dtype):
    f = jnp.nanmedian if ignore_nan else jnp.median
    return f(x.astype(dtype), axis=axis, keepdims=keepdims)


def _numpy_median(name, input, dim, keepdim, axis, keepdims, ignore_nan, out):  # noqa: A002
    """NumPy's ``median(a, axis=None, keepdims=False)``: the mean of the two middle
    elements of an even count, over one axis, several or all."""
    if dim is not None or keepdim:
        raise TypeError(f"{name}() got PyTorch's dim=/keepdim= and NumPy's axis=/keepdims=; "
                        "pass one spelling")
    x = _floating_or_int(input, name)
    axis = None if axis is NOT_GIVEN or axis is None else L.normalize_dims(
        axis if isinstance(axis, (tuple, list)) else (axis,), x.ndim, "axis")
    keepdims = bool(keepdims) if keepdims is not NOT_GIVEN else False
    dtype = x._dtype if x._dtype.kind == "float" else D.DEFAULT_FLOAT
    return _into(name, apply(_numpy_median_body, (x,), (axis, keepdims, ignore_nan, dtype.np)),
                 out)


def median(input, dim=None, keepdim=False, *, out=None,  # noqa: A002
           axis=NOT_GIVEN, keepdims=NOT_GIVEN):
    """PyTorch's median: the lower median of all elements (a 0-d tensor), or
    ``(values, indices)`` along ``dim``; NaN when a slice holds one.

    Given NumPy's ``axis=`` or ``keepdims=`` (``axis=None`` included), NumPy's median
    instead: one tensor, the mean of the two middle elements of an even count, over
    ``axis`` (an int, a tuple, or None for all); integers give the default float dtype."""
    if axis is not NOT_GIVEN or keepdims is not NOT_GIVEN:
        return _numpy_median("median", input, dim, keepdim, axis, keepdims, False, out)
    return _median("median", input, dim, keepdim, False, out)


def nanmedian(input, dim=None, keepdim=False, *, out=None,  # noqa: A002
              axis=NOT_GIVEN, keepdims=NOT_GIVEN):
    """:func:`median` ignoring NaNs (NaN only for a slice of NaNs); with NumPy's
    ``axis=``/``keepdims=``, NumPy's ``nanmedian``."""
    if axis is not NOT_GIVEN or keepdims is not NOT_GIVEN:
        return _numpy_median("nanmedian", input, dim, keepdim, axis, keepdims, True, out)
    return _median("nanmedian", input, dim, keepdim, True, out)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):  # noqa: A002
    """``(values, indices)``: the ``k``-th smallest element (1-based) along ``dim``."""
    x = _floating_or_int(input, "kthvalue")
    size = x.shape[L.normalize_dim(dim, max(x.ndim, 1), "dim")] if x.ndim else 1
    k = operator.index(k)
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim} "
                           f"(k={k}, size {size})")
    return _selected("kthvalue", x, dim, keepdim, _kth_index, (k,), out)


def mode(input, dim=-1, keepdim=False, *, out=None):  # noqa: A002
    """``(values, indices)``: the most frequent value along ``dim`` (the smallest among
    equally frequent ones) and its last index."""
    return _selected("mode", input, dim, keepdim, _mode_index, (), out)


# ----------------------------------------------------------------------------- quantiles

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(x, q, dim, keepdim, method, ignore_nan, scalar_q):
    f = jnp.nanquantile if ignore_nan else jnp.quantile
    axis = None if dim is None else dim
    result = f(x, q.astype(x.dtype), axis=axis, keepdims=keepdim, method=method)
    if not ignore_nan:
        nan = jnp.any(jnp.isnan(x), axis=axis, keepdims=keepdim)
        result = jnp.where(nan, jnp.nan, result)
    return result[0] if scalar_q else result


def _quantiles(name, input, q, dim, keepdim, interpolation, out, ignore_nan):  # noqa: A002
    x = require_tensor(input, name)
    if x._dtype not in (D.float32, D.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype, "
                           f"got {x.dtype}")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of {_INTERPOLATIONS}. Got "
                           f"'{interpolation}'")
    scalar_q = not isinstance(q, Tensor) or q.ndim == 0
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor, got shape {q.shape}")
        if q._dtype is not x._dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor, "
                               f"got {q.dtype} and {x.dtype}")
        values = q.tolist() if not is_traced(q) else []
        qt = q.reshape(-1)
    else:
        values = [float(q)]
        qt = C.asarray([float(q)], dtype=x._dtype, device=x.device)
    for v in values if isinstance(values, list) else [values]:
        if not 0 <= v <= 1:
            raise RuntimeError(f"{name}() q values must be in the range [0, 1], got {v}")
    if x.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    d = None if dim is None else L.normalize_dim(dim, max(x.ndim, 1), "dim")
    flat = x.reshape(1) if x.ndim == 0 else x
    result = apply(_quantile, (flat, qt), (d, bool(keepdim), interpolation, ignore_nan, scalar_q))
    if dim is None and keepdim and x.ndim != flat.ndim:
        result = result.reshape(result.shape[:-1] if not scalar_q else ())
    return _into(name, result, out)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):  # noqa: A002
    """The ``q``-th quantiles (``q`` a float or a 1-D tensor in ``[0, 1]``, its dimension
    first in the result) of all elements or along ``dim``; NaN where a slice holds one."""
    return _quantiles("quantile", input, q, dim, keepdim, interpolation, out, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):  # noqa: A002
    """:func:`quantile` ignoring NaNs."""
    return _quantiles("nanquantile", input, q, dim, keepdim, interpolation, out, True)


# ----------------------------------------------------------------------------- moments


def _moment_and_mean(name, function, input, dim, unbiased, keepdim, correction, out):  # noqa: A002
    x = require_tensor(input, name)
    if x._dtype.kind not in ("float", "complex"):
        raise RuntimeError(f"{name}(): expected a floating-point tensor, got {x.dtype}")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    elif unbiased is not None:
        raise TypeError(f"{name}() got both unbiased={unbiased!r} and correction={correction!r}")
    axis = None if dim is None or dim == () or dim == [] else (
        tuple(dim) if isinstance(dim, (tuple, list)) else dim)
    result = (function(x, axis=axis, correction=correction, keepdims=bool(keepdim)),
              ST.mean(x, axis=axis, keepdims=bool(keepdim)))
    return result if out is None else tuple(T.into(name, r, o) for r, o in zip(result, out))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):  # noqa: A002
    """``(std, mean)`` over ``dim`` (all dimensions by default), Bessel-corrected by
    default (``correction=1``)."""
    return _moment_and_mean("std_mean", ST.std, input, dim, unbiased, keepdim, correction, out)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):  # noqa: A002
    """``(var, mean)`` over ``dim`` (see :func:`std_mean`)."""
    return _moment_and_mean("var_mean", ST.var, input, dim, unbiased, keepdim, correction, out)


# ----------------------------------------------------------------------------- counts


def _bincount(x, weights, length, np_dtype):
    return jnp.bincount(x, weights, length=length).astype(np_dtype)


def _bincount_plain(x, length):
    return jnp.bincount(x, length=length).astype(jnp.int64)


def bincount(input, weights=None, minlength=0):  # noqa: A002
    """Occurrences of each value ``0..max(input)`` of a 1-D non-negative integer tensor
    (at least ``minlength`` bins), or the sums of ``weights`` per value. The length
    depends on the values: they are read on the host (not inside ``arraykit.jit``)."""
    x = require_tensor(input, "bincount")
    if x.ndim != 1 or x._dtype.kind not in ("int", "uint", "bool"):
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs, got "
                           f"shape {x.shape} and dtype {x.dtype}")
    if minlength < 0:
        raise RuntimeError(f"minlength should be >= 0, got {minlength}")
    if is_traced(x):
        raise TypeError("bincount(): the output length depends on the values; call it "
                        "outside arraykit.jit")
    if x.size:
        low, high = int(ST.min(x).item()), int(ST.max(x).item())
        if low < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs, got "
                               f"the value {low}")
    else:
        high = -1
    length = max(high + 1, operator.index(minlength))
    if weights is None:
        return apply(_bincount_plain, (x,), (length,))
    require_tensor(weights, "bincount")
    if weights.shape != x.shape:
        raise RuntimeError(f"weights should be 1-d and have the same length as input, got "
                           f"shapes {weights.shape} and {x.shape}")
    dtype = weights._dtype if weights._dtype in (D.float32, D.float64) else D.float64
    return apply(_bincount, (x, weights), (length, dtype.np))


def _histc(x, bins, low, high):
    x = x.reshape(-1)
    if low == high:  # the data's range, widened by 1 on each side when it is one value
        low, high = jnp.min(x, initial=jnp.inf), jnp.max(x, initial=-jnp.inf)
        same = low == high
        low, high = jnp.where(same, low - 1, low), jnp.where(same, high + 1, high)
    low, high = jnp.asarray(low, x.dtype), jnp.asarray(high, x.dtype)
    inside = (x >= low) & (x <= high)
    b = jnp.floor((x - low) * bins / (high - low)).astype(jnp.int64)
    b = jnp.where(b == bins, bins - 1, b)
    b = jnp.where(inside, b, bins)
    return jnp.bincount(b, length=bins + 1)[:bins].astype(x.dtype)


def histc(input, bins=100, min=0, max=0, *, out=None):  # noqa: A002
    """A histogram of ``bins`` equal bins over ``[min, max]`` (the data's range when both
    are equal); elements outside are ignored, ``max`` falls in the last bin."""
    x = require_tensor(input, "histc")
    if x._dtype.kind != "float":
        raise RuntimeError(f"torch.histc: input tensor must be floating point, got {x.dtype}")
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins}")
    if min > max:
        raise RuntimeError(f"torch.histc(): max must be larger than min, got min={min} "
                           f"and max={max}")
    return _into("histc", apply(_histc, (x,), (operator.index(bins), float(min), float(max))), out)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):  # noqa: A002
    """The bucket of each element of ``input`` among the ascending 1-D ``boundaries``:
    ``i`` with ``boundaries[i-1] < x <= boundaries[i]`` (``<=``/``<`` with ``right``)."""
    require_tensor(boundaries, "bucketize")
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    x = input if isinstance(input, Tensor) else C.asarray(input, device=boundaries.device)
    result = S.searchsorted(boundaries, x, side="right" if right else "left")
    if out_int32:
        result = result.to(D.int32)
    return _into("bucketize", result, out)


def unique_slices(input, dim, return_inverse=False, return_counts=False):  # noqa: A002
    """The distinct slices of ``input`` along ``dim``, sorted lexicographically
    (``torch.unique(input, dim=dim)``), with the inverse and the counts when asked;
    read on the host (not inside ``arraykit.jit``)."""
    x = require_tensor(input, "unique")
    if is_traced(x):
        raise TypeError("unique(): the output shape depends on the values; call it outside "
                        "arraykit.jit")
    d = L.normalize_dim(dim, x.ndim, "dim")
    values = host_results.host_values(x)
    values = values[0] if values is not None else x.numpy()
    unique, inverse, counts = np.unique(values, axis=d, return_inverse=True, return_counts=True)
    results = [np.ascontiguousarray(unique)]
    if return_inverse:
        results.append(inverse.reshape(-1).astype(np.int64))
    if return_counts:
        results.append(counts.astype(np.int64))
    tensors = host_results.to_tensors(results, x.device)
    return tensors[0] if len(tensors) == 1 else tuple(tensors)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """``input`` without consecutive repeats (of elements, or of slices along ``dim``),
    with the inverse indices and the run lengths when asked. The length depends on
    the values: they are read on the host (not inside ``arraykit.jit``)."""
    x = require_tensor(input, "unique_consecutive")
    if is_traced(x):
        raise TypeError("unique_consecutive(): the output length depends on the values; "
                        "call it outside arraykit.jit")
    values = host_results.host_values(x)
    values = values[0] if values is not None else x.numpy()
    if dim is None:
        flat = values.reshape(-1)
        starts = np.ones(flat.shape[0], bool)
        starts[1:] = flat[1:] != flat[:-1]
        unique = flat[starts]
        inverse_shape = values.shape
    else:
        d = L.normalize_dim(dim, x.ndim, "dim")
        moved = np.moveaxis(values, d, 0)
        starts = np.ones(moved.shape[0], bool)
        if moved.shape[0] > 1:
            starts[1:] = np.any((moved[1:] != moved[:-1]).reshape(moved.shape[0] - 1, -1), axis=1)
        unique = np.moveaxis(moved[starts], 0, d)
        inverse_shape = (moved.shape[0],)
    inverse = (np.cumsum(starts) - 1).reshape(inverse_shape).astype(np.int64)
    counts = np.diff(np.append(np.flatnonzero(starts), starts.shape[0])).astype(np.int64)
    results = [unique]
    if return_inverse:
        results.append(inverse)
    if return_counts:
        results.append(counts)
    tensors = host_results.to_tensors([np.ascontiguousarray(r) for r in results], x.device)
    return tensors[0] if len(tensors) == 1 else tuple(tensors)
