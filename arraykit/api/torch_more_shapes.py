"""More of PyTorch's shape and gathering functions in the namespace: the stacks
(``hstack``, ``vstack``/``row_stack``, ``dstack``, ``column_stack``), the splits
(``hsplit``, ``vsplit``, ``dsplit``, ``split_with_sizes`` and the ``unsafe_`` spellings),
``ravel``, ``msort``, ``argwhere``, ``diagflat``, the ``*_scatter`` functions
(``diagonal_scatter``, ``select_scatter``, ``slice_scatter``), ``index_put``,
``cartesian_prod``, ``combinations``, ``block_diag``, ``vander``, ``unravel_index``,
the NaN-ignoring ``nansum``/``nanmean``, ``cov``/``corrcoef``, the trapezoid rule
(``trapezoid``/``trapz``, ``cumulative_trapezoid``) and ``rsub``.

They are compositions of arraykit's views, copies and kernels, so their gradients
follow (a ``*_scatter`` sends the written region's gradient to ``src`` and the rest
to ``input``; ``nansum`` none to NaN elements).
"""

from __future__ import annotations

import builtins
import itertools

import numpy as np

from ..core import dtypes as D
from ..tensors.tensor_type import Tensor, require_tensor
from . import creation as C
from . import elementwise as E
from . import manipulation as M
from . import matrix_products as MP
from . import searching as S
from . import sorting as SO
from . import statistical as ST
from . import torch_keywords as T
from . import torch_shapes as TS
from .dtype_functions import astype

__all__ = [
    "argwhere", "block_diag", "cartesian_prod", "column_stack", "combinations", "corrcoef",
    "cov", "cumulative_trapezoid", "diagflat", "diagonal_scatter", "dsplit", "dstack",
    "hsplit", "hstack", "index_put", "index_put_", "msort", "nanmean", "nansum", "ravel",
    "row_stack", "rsub", "select_scatter", "slice_scatter", "split_with_sizes", "trapezoid",
    "trapz", "unravel_index", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes",
    "vander", "vsplit", "vstack",
]


_into = T.into_if_given


def _sequence(name, tensors):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (tuple, list)) or not tensors:
        raise TypeError(f"{name}(): expected a non-empty sequence of tensors, got "
                        f"{type(tensors).__name__}")
    return [require_tensor(t, name) for t in tensors]


# ----------------------------------------------------------------------------- stacks


def hstack(tensors, *, out=None):
    """Tensors joined column-wise: along dimension 0 for 1-D tensors, 1 otherwise."""
    parts = [TS.atleast_1d(t) for t in _sequence("hstack", tensors)]
    return _into("hstack", M.concat(list(parts), axis=0 if parts[0].ndim == 1 else 1), out)


def vstack(tensors, *, out=None):
    """Tensors joined row-wise (1-D tensors become rows first)."""
    parts = [TS.atleast_2d(t) for t in _sequence("vstack", tensors)]
    return _into("vstack", M.concat(parts, axis=0), out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """Tensors joined along the third dimension (after ``atleast_3d``)."""
    parts = [TS.atleast_3d(t) for t in _sequence("dstack", tensors)]
    return _into("dstack", M.concat(parts, axis=2), out)


def column_stack(tensors, *, out=None):
    """Tensors joined as columns: 0-d and 1-d tensors become ``(n, 1)`` columns, the
    rest are joined along dimension 1."""
    parts = [t.reshape((t.size, 1)) if t.ndim <= 1 else t
             for t in _sequence("column_stack", tensors)]
    return _into("column_stack", M.concat(parts, axis=1), out)


# ----------------------------------------------------------------------------- splits


def _one_of(name, indices_or_sections, sections, indices):
    """The split given by position or as PyTorch's ``sections=`` or ``indices=``."""
    given = [v for v in (indices_or_sections, sections, indices) if v is not None]
    if len(given) != 1:
        raise TypeError(f"{name}() takes one of indices_or_sections, sections= or indices=")
    return given[0]


def _directional_split(name, input, sections, dim, min_ndim):  # noqa: A002
    x = require_tensor(input, name)
    if x.ndim < min_ndim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_ndim} "
                           f"dimension{'s' if min_ndim > 1 else ''}, but got a tensor with "
                           f"{x.ndim} dimensions!")
    if isinstance(sections, (int, np.integer)) and not isinstance(sections, bool):
        if sections <= 0 or x.shape[dim] % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but "
                               f"the size of the dimension {x.shape[dim]} is not divisible by "
                               f"the split_size {sections}!")
    return TS.tensor_split(x, sections, dim)


def hsplit(input, indices_or_sections=None, *, sections=None, indices=None):  # noqa: A002
    """Split column-wise (dimension 1, or 0 for a 1-D tensor): into equal parts for an
    int (which must divide the size), at the given indices for a list (also as PyTorch's
    ``sections=``/``indices=``)."""
    dim = 0 if getattr(input, "ndim", 0) == 1 else 1
    split = _one_of("hsplit", indices_or_sections, sections, indices)
    return _directional_split("hsplit", input, split, dim, 1)


def vsplit(input, indices_or_sections=None, *, sections=None, indices=None):  # noqa: A002
    """Split row-wise (dimension 0) of a tensor of at least 2 dimensions."""
    split = _one_of("vsplit", indices_or_sections, sections, indices)
    return _directional_split("vsplit", input, split, 0, 2)


def dsplit(input, indices_or_sections=None, *, sections=None, indices=None):  # noqa: A002
    """Split depth-wise (dimension 2) of a tensor of at least 3 dimensions."""
    split = _one_of("dsplit", indices_or_sections, sections, indices)
    return _directional_split("dsplit", input, split, 2, 3)


def split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    """Views of ``input`` of the given sizes along ``dim`` (which must add up to its size)."""
    x = require_tensor(input, "split_with_sizes")
    sizes = [int(s) for s in split_sizes]
    size = x.shape[dim]
    if builtins.sum(sizes) != size or any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                           f"(input tensor's size at dimension {dim}), but got "
                           f"split_sizes={sizes}")
    return TS.split(x, sizes, dim)


# arraykit's splits and chunks are views that autograd follows like any other, so
# PyTorch's unsafe_ spellings (which skip its view tracking) are the same functions.
unsafe_split = TS.split
unsafe_chunk = TS.chunk
unsafe_split_with_sizes = split_with_sizes


# ----------------------------------------------------------------------------- reshapes, orders


def ravel(input):  # noqa: A002
    """``input`` flattened to 1-D: a view when the layout allows it, else a copy."""
    return require_tensor(input, "ravel").reshape((-1,))


def msort(input, *, out=None):  # noqa: A002
    """The values of ``input`` sorted along dimension 0 (ascending)."""
    x = require_tensor(input, "msort")
    return _into("msort", SO.sort(x, axis=0) if x.ndim else x.clone(), out)


def argwhere(input):  # noqa: A002
    """The indices of the nonzero elements as an ``(n, input.ndim)`` tensor."""
    x = require_tensor(input, "argwhere")
    return S.nonzero(x.reshape((1,))) if x.ndim == 0 else S.nonzero(x, as_tuple=False)


def diagflat(input, offset=0):  # noqa: A002
    """A square matrix with the flattened ``input`` on its ``offset``-th diagonal."""
    return TS.diag(require_tensor(input, "diagflat").reshape((-1,)), offset)


# ----------------------------------------------------------------------------- scatters


def _written_copy(name, input, region, src):  # noqa: A002
    """A copy of ``input`` with ``src`` written into ``region(copy)`` (same shape)."""
    out = require_tensor(input, name).clone()
    target = region(out)
    require_tensor(src, name)
    if src.shape != target.shape:
        raise RuntimeError(f"{name}(): expected src to have a size equal to the slice of "
                           f"self, {target.shape}, got {src.shape}")
    target.copy_(src)
    return out


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):  # noqa: A002
    """A copy of ``input`` with ``src`` on its diagonal ``input.diagonal(offset, dim1, dim2)``."""
    return _written_copy("diagonal_scatter", input,
                         lambda t: t.diagonal(offset, dim1, dim2), src)


def select_scatter(input, src, dim, index):  # noqa: A002
    """A copy of ``input`` with ``src`` at ``input.select(dim, index)``."""
    return _written_copy("select_scatter", input, lambda t: t.select(dim, index), src)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    """A copy of ``input`` with ``src`` in the slice ``start:end:step`` of ``dim``."""
    def region(t):
        key = [slice(None)] * t.ndim
        key[dim] = slice(start, end, step)
        return t[tuple(key)]
    return _written_copy("slice_scatter", input, region, src)


def _index_tensors(indices, name):
    """PyTorch's index tuple with each boolean mask replaced by its nonzero indices."""
    out = []
    for index in indices:
        if isinstance(index, Tensor) and index._dtype is D.bool_:
            out.extend(S.nonzero(index, as_tuple=True))
        elif isinstance(index, Tensor):
            out.append(index)
        else:
            raise TypeError(f"{name}(): indices must be a tuple of tensors, got "
                            f"{type(index).__name__}")
    return out


def index_put_(input, indices, values, accumulate=False):  # noqa: A002
    """``input[indices] = values`` in place (``indices`` a tuple of index tensors over
    the leading dimensions, broadcast together); with ``accumulate``, ``values`` is
    added, repeated indices adding up. Returns ``input``."""
    x = require_tensor(input, "index_put_")
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put_(): indices must be a tuple of tensors, got "
                        f"{type(indices).__name__}")
    if not accumulate:
        x[tuple(indices)] = values
        return x
    index = _index_tensors(indices, "index_put_")
    if len(index) > x.ndim:
        raise IndexError(f"index_put_(): too many indices ({len(index)}) for a tensor of "
                         f"shape {x.shape}")
    index = M.broadcast_arrays(*index)
    leading, rest = x.shape[:len(index)], x.shape[len(index):]
    linear = index[0]
    for i, size in zip(index[1:], leading[1:]):
        linear = linear * size + i
    linear = linear.reshape((-1,))
    values = values if isinstance(values, Tensor) else C.asarray(values, dtype=x.dtype,
                                                                 device=x.device)
    rows = M.broadcast_to(values, index[0].shape + rest).reshape((-1,) + rest)
    flat = x.contiguous().clone().reshape((-1,) + rest)
    flat.index_add_(0, linear, astype(rows, x.dtype))
    return x.copy_(flat.reshape(x.shape))


def index_put(input, indices, values, accumulate=False):  # noqa: A002
    """A copy of ``input`` with :func:`index_put_` applied."""
    return index_put_(require_tensor(input, "index_put").clone(), indices, values, accumulate)


# ----------------------------------------------------------------------------- products of sets


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D tensors as rows of a ``(n, len(tensors))`` tensor
    (one tensor: itself)."""
    parts = _sequence("cartesian_prod", list(tensors))
    if len(parts) == 1:
        return parts[0]
    grids = C.meshgrid(*parts, indexing="ij")
    return M.stack([g.reshape((-1,)) for g in grids], axis=1)


def combinations(input, r=2, with_replacement=False):  # noqa: A002
    """The length-``r`` combinations of the elements of a 1-D tensor, as rows (with
    ``with_replacement``, an element may repeat)."""
    x = require_tensor(input, "combinations")
    if x.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {x.shape}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return C.empty((0,), dtype=x.dtype, device=x.device)
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = np.array(list(pick(range(x.shape[0]), r)), np.int64).reshape(-1, r)
    index = C.asarray(rows.reshape(-1), device=x.device)
    return x[index].reshape(rows.shape)


def block_diag(*tensors):
    """A block-diagonal matrix of the given blocks (0-d tensors are ``1x1`` blocks, 1-D
    tensors ``1xn`` rows), of their promoted dtype."""
    blocks = []
    for t in tensors:
        require_tensor(t, "block_diag")
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input has {t.ndim} dimensions")
        blocks.append(t.reshape((1, t.size)) if t.ndim < 2 else t)
    if not blocks:
        return C.empty((1, 0))
    dtype = blocks[0]._dtype
    for b in blocks[1:]:
        dtype = D.promote(dtype, b._dtype)
    rows = builtins.sum(b.shape[0] for b in blocks)
    cols = builtins.sum(b.shape[1] for b in blocks)
    out = C.zeros((rows, cols), dtype=dtype, device=blocks[0].device)
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = astype(b, dtype)
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def vander(x, N=None, increasing=False):  # noqa: N803 (PyTorch's name)
    """The Vandermonde matrix of a 1-D tensor: columns ``x ** (N - 1)`` ... ``x ** 0``
    (ascending powers with ``increasing``); ``N`` defaults to ``len(x)``."""
    require_tensor(x, "vander")
    if x.ndim != 1:
        raise RuntimeError(f"x must be a one-dimensional tensor, got shape {x.shape}")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError(f"N must be non-negative, got {N}")
    if x._dtype.kind == "bool":
        x = astype(x, D.int64)
    if n == 0:
        return C.empty((x.shape[0], 0), dtype=x.dtype, device=x.device)
    columns = [C.ones_like(x)]
    for _ in range(n - 1):
        columns.append(E.multiply(columns[-1], x))
    if not increasing:
        columns.reverse()
    return M.stack(columns, axis=1)


def unravel_index(indices, shape):
    """The coordinates of flat ``indices`` in a tensor of ``shape``, one tensor per
    dimension (PyTorch's: indices out of range raise)."""
    index = require_tensor(indices, "unravel_index")
    if index._dtype.kind not in ("int", "uint"):
        raise TypeError(f"expected 'indices' to be an integer tensor, but got {index.dtype}")
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    total = int(np.prod(shape))
    if index.size and index.device.platform == "cpu":
        low, high = int(ST.min(index).item()), int(ST.max(index).item())
        if low < -total or high >= total:
            raise RuntimeError(f"'indices' must be in range [{-total}, {total - 1}] for shape "
                               f"{shape}, got values in [{low}, {high}]")
    index = E.remainder(astype(index, D.int64), total) if total else astype(index, D.int64)
    coords = []
    for size in reversed(shape):
        coords.append(E.remainder(index, size))
        index = E.floor_divide(index, size)
    return tuple(reversed(coords))


# ----------------------------------------------------------------------------- reductions


def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """The sum with NaN counted as zero (no gradient reaches NaN elements)."""
    x = require_tensor(input, "nansum")
    if x._dtype.kind == "complex":
        raise RuntimeError("nansum does not support complex inputs")
    kept = S.where(E.isnan(x), 0, x) if x._dtype.kind == "float" else x
    dim = tuple(dim) if isinstance(dim, list) else dim
    return _into("nansum", ST.sum(kept, axis=dim, keepdims=keepdim, dtype=dtype), out)


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """The mean of the elements that are not NaN (NaN where all are)."""
    x = require_tensor(input, "nanmean")
    if dtype is not None:
        x = astype(x, dtype)
    if x._dtype.kind != "float":
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got "
                           f"{x.dtype}")
    dim = tuple(dim) if isinstance(dim, list) else dim
    count = ST.sum(astype(E.logical_not(E.isnan(x)), x.dtype), axis=dim, keepdims=keepdim)
    return _into("nanmean", E.divide(nansum(x, dim, keepdim), count), out)


def cov(input, *, correction=1, fweights=None, aweights=None):  # noqa: A002
    """The covariance matrix of the variables in the rows of ``input`` (a 1-D tensor is
    one variable) over the observations in its columns, with frequency and
    observation weights as PyTorch's (``correction=1``: the unbiased estimate)."""
    x = require_tensor(input, "cov")
    if x.ndim > 2:
        raise ValueError(f"cov(): expected input to have two or fewer dimensions but got an "
                         f"input with {x.ndim} dimensions")
    x = x.reshape((1, -1)) if x.ndim < 2 else x
    if x._dtype.kind in ("bool", "int", "uint"):
        x = astype(x, D.DEFAULT_FLOAT)
    observations = x.shape[1]
    weights = None
    for name, w in (("fweights", fweights), ("aweights", aweights)):
        if w is None:
            continue
        require_tensor(w, "cov")
        if w.ndim > 1 or w.size != observations:
            raise ValueError(f"cov(): expected {name} to have one dimension and {observations} "
                             f"elements, got shape {w.shape}")
        w = astype(w, x.dtype) if w._dtype is not x._dtype else w
        weights = w if weights is None else E.multiply(weights, w)
    if weights is None:
        total = float(observations)
        mean = ST.mean(x, axis=1, keepdims=True)
        norm = total - correction
    else:
        total = ST.sum(weights)
        mean = E.divide(ST.sum(E.multiply(x, weights), axis=1, keepdims=True), total)
        if aweights is None:
            norm = E.subtract(total, correction)
        else:
            aw = astype(aweights, x.dtype)
            norm = E.subtract(total, E.divide(E.multiply(
                ST.sum(E.multiply(weights, aw)), correction), total))
    centered = E.subtract(x, mean)
    weighted = centered if weights is None else E.multiply(centered, weights)
    other = E.conj(weighted) if x._dtype.kind == "complex" else weighted
    norm = builtins.max(norm, 0.0) if isinstance(norm, float) else E.maximum(norm, 0.0)
    c = E.divide(MP.matmul(centered, M.permute_dims(other, (1, 0))), norm)
    return c.reshape(()) if c.shape == (1, 1) else c


def corrcoef(input):  # noqa: A002
    """The Pearson correlation coefficients of the rows of ``input`` (:func:`cov`
    normalized, clipped into ``[-1, 1]``)."""
    c = cov(input)
    if c.ndim == 0:
        return E.divide(c, c)
    d = E.sqrt(TS.diagonal(c))
    c = E.divide(E.divide(c, d.reshape((-1, 1))), d.reshape((1, -1)))
    return E.clip(c, -1.0, 1.0) if c._dtype.kind == "float" else c


# ----------------------------------------------------------------------------- trapezoid rule


def _spacing_and_pairs(name, y, x, dx, dim):
    """``(widths, pair sums)`` of the trapezoids of ``y`` along ``dim``."""
    y = require_tensor(y, name)
    if y._dtype.kind in ("bool", "int", "uint"):
        y = astype(y, D.DEFAULT_FLOAT)
    n = y.shape[dim]
    pairs = E.add(TS.narrow(y, dim, 1, n - 1), TS.narrow(y, dim, 0, n - 1)) if n else y
    if x is None:
        return (1.0 if dx is None else dx), pairs
    if dx is not None:
        raise TypeError(f"{name}(): pass x or dx, not both")
    require_tensor(x, name)
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point, "
                               f"got {x.shape[0]} for {n} samples")
        widths = E.subtract(x[1:], x[:-1])
        shape = [1] * y.ndim
        shape[dim] = builtins.max(n - 1, 0)
        return widths.reshape(tuple(shape)), pairs
    d = dim % x.ndim
    widths = E.subtract(TS.narrow(x, d, 1, x.shape[d] - 1), TS.narrow(x, d, 0, x.shape[d] - 1))
    return widths, pairs


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along ``dim``: samples ``y`` at the points ``x`` (1-D along
    ``dim``, or broadcasting with ``y``) or spaced ``dx`` apart (1 by default)."""
    widths, pairs = _spacing_and_pairs("trapezoid", y, x, dx, dim)
    return ST.sum(E.multiply(pairs, widths), axis=dim) / 2


trapz = trapezoid


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid rule along ``dim`` (one element fewer than ``y``)."""
    widths, pairs = _spacing_and_pairs("cumulative_trapezoid", y, x, dx, dim)
    return E.divide(ST.cumulative_sum(E.multiply(pairs, widths),
                                      axis=dim % pairs.ndim), 2)


def rsub(input, other, *, alpha=1):  # noqa: A002
    """``other - alpha * input`` (PyTorch's reversed subtraction)."""
    return E.subtract(other, input if alpha == 1 else E.multiply(input, alpha))
