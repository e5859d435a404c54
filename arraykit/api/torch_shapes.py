"""PyTorch's shape functions in the namespace: ``cat``, ``flatten``, ``split``, ``diag``...

Each is PyTorch's signature over the array API function or the ``Tensor`` view that
does the work; results PyTorch documents as views are views here (same storage,
PyTorch's strides). Where PyTorch's spelling is call-compatible with the array API
function, the name is that function itself (``movedim`` is :func:`moveaxis`,
``broadcast_tensors`` is :func:`broadcast_arrays`).
"""

from __future__ import annotations

import operator

import jax.numpy as jnp
import numpy as np

from ..core import dtypes as D
from ..core import layout as L
from ..kernels.launch import apply, is_tensor as _is_tensor
from ..tensors.tensor_type import Tensor, _dims, require_tensor
from . import creation as C
from . import indexing as IX
from . import manipulation as M
from . import torch_keywords as T

__all__ = [
    "as_strided", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_tensors",
    "cat", "chunk", "concatenate", "diag", "diag_embed", "diagonal", "flatten", "fliplr",
    "flipud", "is_floating_point", "is_tensor", "movedim", "narrow", "numel", "permute",
    "repeat_interleave", "rot90", "select", "split", "swapaxes", "take_along_dim",
    "tensor_split", "transpose", "unbind", "unflatten", "unsqueeze",
]

movedim = M.moveaxis
broadcast_tensors = M.broadcast_arrays


_into = T.into_if_given


def cat(tensors, dim=0, *, axis=None, out=None):
    """``torch.cat``: join ``tensors`` along the existing dimension ``dim``
    (:func:`arraykit.concat`)."""
    dim = T.pick("cat", "dim", dim, "axis", axis, 0)
    return _into("cat", M.concat(tensors, axis=operator.index(dim)), out)


def concatenate(tensors, axis=0, out=None, *, dim=None):
    """``torch.concatenate``: :func:`cat` with NumPy's ``axis`` name (or ``dim=``)."""
    axis = T.pick("concatenate", "axis", axis, "dim", dim, 0)
    return _into("concatenate", M.concat(tensors, axis=operator.index(axis)), out)


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002 (PyTorch's names, here and below)
    """Dimensions ``start_dim..end_dim`` merged into one (a view when the layout allows)."""
    return require_tensor(input, "flatten").flatten(start_dim, end_dim)


def unflatten(input, dim, sizes):  # noqa: A002
    """Dimension ``dim`` split into ``sizes`` (one may be -1); a view when possible."""
    x = require_tensor(input, "unflatten")
    d = L.normalize_dim(dim, x.ndim, "dim")
    sizes = tuple(operator.index(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    inner = L.infer_shape(sizes, x.shape[d])
    return x.reshape(x.shape[:d] + inner + x.shape[d + 1:])


def unsqueeze(input, dim, *, out=None):  # noqa: A002
    """A view with a size-1 dimension inserted at ``dim`` (``out=``: written there)."""
    return _into("unsqueeze", require_tensor(input, "unsqueeze").unsqueeze(dim), out)


def permute(input, dims):  # noqa: A002
    """A view with the dimensions reordered (result dimension i is ``dims[i]``)."""
    return require_tensor(input, "permute").permute(tuple(dims))


def transpose(input, dim0, dim1):  # noqa: A002
    """A view with dimensions ``dim0`` and ``dim1`` swapped."""
    return require_tensor(input, "transpose").transpose(dim0, dim1)


def swapaxes(input, axis0, axis1):  # noqa: A002
    """``transpose(input, axis0, axis1)`` (NumPy's name)."""
    return require_tensor(input, "swapaxes").transpose(axis0, axis1)


def narrow(input, dim, start, length):  # noqa: A002
    """A view of ``length`` elements along ``dim`` from ``start`` (negative counts from the end)."""
    x = require_tensor(input, "narrow")
    if isinstance(start, Tensor):
        start = start.item()
    return x.narrow(dim, start, length)


def select(input, dim, index):  # noqa: A002
    """A view of ``input`` at position ``index`` of ``dim``, that dimension removed."""
    return require_tensor(input, "select").select(dim, index)


def as_strided(input, size, stride, storage_offset=None):  # noqa: A002
    """A view of ``input``'s storage with the given sizes, strides and offset."""
    return require_tensor(input, "as_strided").as_strided(size, stride, storage_offset)


def split(tensor, split_size_or_sections=None, dim=0, *, split_size=None):
    """Views of ``tensor`` along ``dim``: pieces of ``split_size`` (the last shorter) or of
    the listed sizes (which must sum to the dimension's size). ``split_size=`` is the
    method's name of the sizes (``x.split(split_size=[2, 3])``), as in PyTorch."""
    x = require_tensor(tensor, "split")
    split_size_or_sections = T.pick("split", "split_size_or_sections", split_size_or_sections,
                                    "split_size", split_size)
    if split_size_or_sections is None:
        raise TypeError("split() missing the sizes (split_size_or_sections, or split_size=)")
    dim = L.normalize_dim(dim, x.ndim, "dim")
    size = x.shape[dim]
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = int(split_size_or_sections)
        if step <= 0 and not (step == 0 and size == 0):
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
        lengths = [min(step, size - start) for start in range(0, size, step)] if size else [0]
    else:
        lengths = [operator.index(n) for n in split_size_or_sections]
        if sum(lengths) != size or any(n < 0 for n in lengths):
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                f"size at dimension {dim}), but got split_sizes={lengths}"
            )
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    return tuple(x.narrow(dim, start, n) for start, n in zip(starts, lengths))


def chunk(input, chunks, dim=0):  # noqa: A002
    """``split(input, ceil(n / chunks), dim)``: at most ``chunks`` views."""
    x = require_tensor(input, "chunk")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = x.shape[L.normalize_dim(dim, x.ndim, "dim")]
    return split(x, max(-(-size // chunks), 1), dim)


def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None,  # noqa: A002
                 tensor_indices_or_sections=None):
    """Views of ``input`` along ``dim``: ``sections`` pieces as equal as possible (the
    first ones one longer), or cut before each of the listed indices (given by position
    or as PyTorch's ``sections=``, ``indices=`` or ``tensor_indices_or_sections=``)."""
    given = [v for v in (indices_or_sections, sections, indices, tensor_indices_or_sections)
             if v is not None]
    if len(given) != 1:
        raise TypeError("tensor_split() takes one of indices_or_sections, sections=, indices= "
                        "or tensor_indices_or_sections=")
    indices_or_sections = given[0]
    x = require_tensor(input, "tensor_split")
    if x.ndim == 0:
        raise RuntimeError("tensor_split expects at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    dim = L.normalize_dim(dim, x.ndim, "dim")
    size = x.shape[dim]
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-"
                               "dimensional or one-dimensional tensor, but got a tensor with "
                               f"{indices_or_sections.ndim} dims")
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, (int, np.integer)):
        n = int(indices_or_sections)
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        base, extra = divmod(size, n)
        lengths = [base + (i < extra) for i in range(n)]
        cuts = np.cumsum([0] + lengths).tolist()
        bounds = list(zip(cuts[:-1], cuts[1:]))
    else:
        cuts = [0] + [operator.index(i) for i in indices_or_sections] + [size]
        cuts = [min(max(c + size if c < 0 else c, 0), size) for c in cuts]
        bounds = [(a, max(a, b)) for a, b in zip(cuts[:-1], cuts[1:])]
    return tuple(x.narrow(dim, a, b - a) for a, b in bounds)


def unbind(input, dim=0):  # noqa: A002
    """The views ``input.select(dim, i)`` for every ``i``, as a tuple."""
    x = require_tensor(input, "unbind")
    return M.unstack(x, axis=L.normalize_dim(dim, x.ndim, "dim"))


def take_along_dim(input, indices, dim=None, *, out=None):  # noqa: A002
    """Elements of ``input`` at ``indices`` along ``dim`` (both broadcast against each
    other elsewhere); over the flattened tensor when ``dim`` is None."""
    x = require_tensor(input, "take_along_dim")
    require_tensor(indices, "take_along_dim")
    if indices._dtype not in (D.int64, D.int32):
        raise RuntimeError(f"take_along_dim(): dtype of indices should be Long but got "
                           f"{indices.dtype}")
    if dim is None:
        return _into("take_along_dim", IX.take_along_axis(x.reshape(-1), indices.reshape(-1),
                                                         axis=0), out)
    d = L.normalize_dim(dim, max(x.ndim, 1), "dim")
    if x.ndim != indices.ndim:
        raise RuntimeError(
            f"torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {x.ndim} dimensions for input, and {indices.ndim} "
            "dimensions for indices"
        )
    shape = list(L.broadcast_shapes(x.shape, indices.shape))
    shape[d] = x.shape[d]
    xb = x.broadcast_to(tuple(shape))
    shape[d] = indices.shape[d]
    ib = indices.broadcast_to(tuple(shape))
    return _into("take_along_dim", IX.take_along_axis(xb, ib, axis=d), out)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """Each element repeated ``repeats`` times along ``dim`` (flattened when None)
    (:func:`arraykit.repeat`); ``repeat_interleave(counts)`` repeats the indices
    ``0..n-1``. ``output_size`` is checked against the result's length."""
    if repeats is None:
        counts = require_tensor(input, "repeat_interleave")
        result = M.repeat(C.arange(counts.shape[0], dtype=counts.dtype, device=counts.device),
                          counts, axis=0)
    else:
        x = require_tensor(input, "repeat_interleave")
        if isinstance(repeats, Tensor) and repeats.ndim == 0:
            repeats = repeats.reshape(1)
        result = M.repeat(x, repeats, axis=dim)
    if output_size is not None:
        d = 0 if dim is None or repeats is None else L.normalize_dim(dim, result.ndim)
        if result.shape[d] != output_size:
            raise RuntimeError(f"repeat_interleave: output_size {output_size} does not match "
                               f"the result's length {result.shape[d]}")
    return result


_AT_LEAST = {  # (n, ndim) -> the new shape of a tensor of shape s
    (1, 0): lambda s: (1,),
    (2, 0): lambda s: (1, 1),
    (2, 1): lambda s: (1,) + s,
    (3, 0): lambda s: (1, 1, 1),
    (3, 1): lambda s: (1,) + s + (1,),
    (3, 2): lambda s: s + (1,),
}


def _at_least(n, tensors, name):
    """``tensors`` (or one list of them) reshaped to at least ``n`` dimensions (views)."""
    one = len(tensors) == 1 and not isinstance(tensors[0], (tuple, list))
    if len(tensors) == 1 and not one:
        tensors = tuple(tensors[0])
    out = []
    for t in tensors:
        x = require_tensor(t, name)
        grow = _AT_LEAST.get((n, x.ndim))
        out.append(x if grow is None else x.reshape(grow(x.shape)))
    return out[0] if one else tuple(out)


def atleast_1d(*tensors):
    """Views of the tensors with at least one dimension (one tensor in, one out)."""
    return _at_least(1, tensors, "atleast_1d")


def atleast_2d(*tensors):
    """Views with at least two dimensions (a 1-D ``(n,)`` becomes ``(1, n)``)."""
    return _at_least(2, tensors, "atleast_2d")


def atleast_3d(*tensors):
    """Views with at least three dimensions (``(n,)`` -> ``(1, n, 1)``, ``(m, n)`` ->
    ``(m, n, 1)``), as NumPy and PyTorch."""
    return _at_least(3, tensors, "atleast_3d")


def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    """A rotation by ``k * 90`` degrees in the plane ``dims``, from the first dimension
    towards the second: a flipped copy, transposed for odd ``k`` (PyTorch's strides)."""
    x = require_tensor(input, "rot90")
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    d0, d1 = (L.normalize_dim(d, x.ndim, "dims") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k = operator.index(k) % 4
    if k == 1:
        return x.flip(d1).contiguous().transpose(d0, d1)
    if k == 2:
        return x.flip(d0, d1).contiguous()
    if k == 3:
        return x.flip(d0).contiguous().transpose(d0, d1)
    return x.clone()


def fliplr(input):  # noqa: A002
    """``input`` reversed along dimension 1 (at least 2-D); a copy, as PyTorch."""
    x = require_tensor(input, "fliplr")
    if x.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return x.flip(1).contiguous()


def flipud(input):  # noqa: A002
    """``input`` reversed along dimension 0 (at least 1-D); a copy, as PyTorch."""
    x = require_tensor(input, "flipud")
    if x.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return x.flip(0).contiguous()


def _diag_matrix(v, offset):
    return jnp.diag(v, offset)


def _embed(x, offset, dim1, dim2):
    m = x.shape[-1]
    n = m + abs(offset)
    rows = jnp.arange(m) + max(-offset, 0)
    cols = jnp.arange(m) + max(offset, 0)
    out = jnp.zeros(x.shape[:-1] + (n, n), x.dtype).at[..., rows, cols].set(x)
    return jnp.moveaxis(out, (-2, -1), (dim1, dim2))


def diag_embed(input, offset=0, dim1=-2, dim2=-1, *, out=None):  # noqa: A002
    """A tensor whose ``(dim1, dim2)`` planes hold the last dimension of ``input`` on
    their ``offset`` diagonal, zeros elsewhere."""
    x = require_tensor(input, "diag_embed")
    ndim = x.ndim + 1
    d1, d2 = L.normalize_dim(dim1, ndim, "dim1"), L.normalize_dim(dim2, ndim, "dim2")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if x.ndim == 0:
        raise RuntimeError("diag_embed: expected a tensor of at least one dimension")
    return _into("diag_embed", apply(_embed, (x,), (operator.index(offset), d1, d2)), out)


def diag(input, diagonal=0, *, out=None):  # noqa: A002
    """A 1-D ``input`` placed on the ``diagonal`` of a square matrix, or the ``diagonal``
    of a 2-D ``input`` (a copy)."""
    x = require_tensor(input, "diag")
    if x.ndim == 1:
        result = apply(_diag_matrix, (x,), (operator.index(diagonal),))
    elif x.ndim == 2:
        result = x.diagonal(diagonal).clone()
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D")
    return _into("diag", result, out)


def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    """A view of the ``offset`` diagonal of the ``(dim1, dim2)`` planes, as the last
    dimension (PyTorch's defaults: the first two dimensions)."""
    return require_tensor(input, "diagonal").diagonal(offset, dim1, dim2)


def numel(input):  # noqa: A002
    """The number of elements of ``input`` (an int)."""
    return require_tensor(input, "numel").numel()


def is_tensor(obj):
    """Whether ``obj`` is an arraykit Tensor."""
    return _is_tensor(obj)


def is_floating_point(input):  # noqa: A002
    """Whether ``input``'s dtype is a real floating-point dtype."""
    return require_tensor(input, "is_floating_point")._dtype.kind == "float"
