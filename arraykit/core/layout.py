"""Strided layouts: shape, strides and offset (in elements) over a flat storage.

Pure metadata, no JAX. Every function returns a new :class:`Layout`; nothing here
touches data. Strides may be negative (flips, negative-step slices) or zero
(broadcasts), as in NumPy and PyTorch.
"""

from __future__ import annotations

import functools
import math
import operator

import numpy as np


class Layout:
    """Frozen, hashable (shape, strides, offset) triple, all in elements."""

    __slots__ = ("shape", "strides", "offset", "geometry", "_hash")

    def __init__(self, shape, strides, offset=0):
        shape = tuple(map(int, shape))
        strides = tuple(map(int, strides))
        if len(shape) != len(strides):
            raise ValueError(
                f"shape {shape} and strides {strides} must have the same length"
            )
        _fill(self, shape, strides, int(offset))

    def __setattr__(self, name, value):
        raise AttributeError("Layout is immutable")

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return (
            isinstance(other, Layout)
            and self._hash == other._hash
            and self.shape == other.shape
            and self.strides == other.strides
            and self.offset == other.offset
        )

    def __repr__(self):
        return f"Layout(shape={self.shape}, strides={self.strides}, offset={self.offset})"

    def __reduce__(self):
        return (Layout, (self.shape, self.strides, self.offset))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def numel(self):
        return math.prod(self.shape)


_SET_SHAPE = Layout.shape.__set__
_SET_STRIDES = Layout.strides.__set__
_SET_OFFSET = Layout.offset.__set__
_SET_GEOMETRY = Layout.geometry.__set__
_SET_HASH = Layout._hash.__set__
_NEW = object.__new__


def _fill(layout, shape, strides, offset):
    _SET_SHAPE(layout, shape)
    _SET_STRIDES(layout, strides)
    _SET_OFFSET(layout, offset)
    _SET_GEOMETRY(layout, (shape, strides))
    _SET_HASH(layout, hash((shape, strides, offset)))


def _layout(shape, strides, offset):
    """Trusted constructor: ``shape``/``strides`` tuples of ints, ``offset`` an int."""
    layout = _NEW(Layout)
    _fill(layout, shape, strides, offset)
    return layout


# ----------------------------------------------------------------------------
# Construction and queries
# ----------------------------------------------------------------------------


def contiguous_strides(shape):
    """Row-major (C) strides of ``shape``, in elements (size-0 dims count as 1)."""
    strides = []
    acc = 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


@functools.lru_cache(maxsize=4096)
def contiguous(shape, offset=0):
    """The C-contiguous layout of ``shape`` starting at ``offset``."""
    shape = tuple(shape)
    return Layout(shape, contiguous_strides(shape), offset)


def channels_last_strides(shape):
    """Strides of ``shape`` (4-D NCHW or 5-D NCDHW) stored channels-last (NHWC/NDHWC)."""
    if len(shape) not in (4, 5):
        raise ValueError(
            f"channels_last needs a 4-D or 5-D shape, got {len(shape)}-D shape {tuple(shape)}"
        )
    order = [1] + list(range(len(shape) - 1, 1, -1)) + [0]  # C, W, H, (D), N: fastest first
    strides = [0] * len(shape)
    acc = 1
    for d in order:
        strides[d] = acc
        acc *= shape[d]  # no max(n, 1): PyTorch's get_channels_last_strides
    return tuple(strides)


def infer_dense_strides(shape, strides):
    """Dense strides that keep the dimension order of ``strides`` (PyTorch's rule).

    Dimensions are ordered by increasing |stride| with a stable insertion sort;
    stride-0 dimensions keep their place, equal strides put the smaller size first.
    This is the layout PyTorch gives ``clone()``/``empty_like`` of a non-dense tensor.
    """
    ndim = len(shape)
    key = [abs(s) for s in strides]
    perm = list(range(ndim - 1, -1, -1))

    def should_swap(d0, d1):
        if key[d0] == 0 or key[d1] == 0:
            return 0
        if key[d0] != key[d1]:
            return -1 if key[d0] < key[d1] else 1
        return 1 if shape[d0] > shape[d1] else 0

    for i in range(1, ndim):
        d1 = i
        for j in range(1, i + 1):
            d0 = i - j
            cmp = should_swap(perm[d0], perm[d1])
            if cmp > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif cmp < 0:
                break
    out = [0] * ndim
    acc = 1
    for d in perm:
        out[d] = acc
        if shape[d] > 1:
            acc *= shape[d]
    return tuple(out)


def is_contiguous(layout):
    """C-contiguity as PyTorch defines it (size-1 dims ignored, empty is contiguous)."""
    if layout.numel == 0:
        return True
    expected = 1
    for n, s in zip(reversed(layout.shape), reversed(layout.strides)):
        if n != 1:
            if s != expected:
                return False
            expected *= n
    return True


def is_channels_last_contiguous(layout):
    """Whether the layout is dense in channels-last order (4-D or 5-D only)."""
    if layout.ndim not in (4, 5):
        return False
    expected = 1  # no shortcut for empty layouts, as in PyTorch
    for d in [1] + list(range(layout.ndim - 1, 1, -1)) + [0]:
        n = layout.shape[d]
        if n != 1:
            if layout.strides[d] != expected:
                return False
            expected *= n
    return True


def extent(layout):
    """(lowest, highest) storage index the layout touches, or None when empty."""
    if layout.numel == 0:
        return None
    lo = hi = layout.offset
    for n, s in zip(layout.shape, layout.strides):
        span = (n - 1) * s
        if span < 0:
            lo += span
        else:
            hi += span
    return lo, hi


def required_storage_size(layout):
    """Smallest storage size (elements) that holds every element of ``layout``."""
    bounds = extent(layout)
    return 0 if bounds is None else bounds[1] + 1


def _effective_dims(layout):
    """(size, |stride|) of the dims that matter for addressing, sorted by |stride|."""
    return sorted((abs(s), n) for n, s in zip(layout.shape, layout.strides) if n > 1)


def storage_indices(layout):
    """Flat storage index of every element, as a NumPy int64 array of ``layout.shape``."""
    idx = np.full(layout.shape, layout.offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(layout.shape, layout.strides)):
        view = [1] * layout.ndim
        view[d] = n
        idx = idx + (np.arange(n, dtype=np.int64) * s).reshape(view)
    return idx


@functools.lru_cache(maxsize=1024)
def overlaps_self(layout):
    """Whether two distinct elements of ``layout`` share a storage location."""
    if layout.numel == 0:
        return False
    dims = _effective_dims(layout)
    if any(s == 0 for s, _ in dims):
        return True
    reach = 0
    for s, n in dims:
        if s <= reach:
            break
        reach += (n - 1) * s
    else:
        return False
    flat = storage_indices(layout).ravel()
    return np.unique(flat).size != flat.size


def may_overlap(a, b):
    """Cheap conservative test: do the storage extents of two layouts intersect?"""
    ea, eb = extent(a), extent(b)
    if ea is None or eb is None:
        return False
    return ea[0] <= eb[1] and eb[0] <= ea[1]


def overlap(a, b):
    """Exact test: do two layouts over one storage address a common element?"""
    if not may_overlap(a, b):
        return False
    if is_dense(a) and is_dense(b):
        return True
    # NumPy's exact solver works on addresses only: lay both layouts over an untouched
    # 1-byte-per-element buffer spanning their extents (no index arrays materialized).
    lo = min(extent(a)[0], extent(b)[0])
    hi = max(extent(a)[1], extent(b)[1])
    base = np.empty(hi - lo + 1, np.int8)
    views = [
        np.ndarray(lay.shape, np.int8, buffer=base, offset=lay.offset - lo, strides=lay.strides)
        for lay in (a, b)
    ]
    return bool(np.shares_memory(*views, max_work=None))


def is_dense(layout):
    """Whether the layout covers its extent exactly once (some permutation of contiguous)."""
    dims = _effective_dims(layout)
    expected = 1
    for s, n in dims:
        if s != expected:
            return False
        expected *= n
    return True


# ----------------------------------------------------------------------------
# Dimension helpers
# ----------------------------------------------------------------------------


def normalize_dim(dim, ndim, name="dim"):
    """Wrap a possibly negative dimension index; IndexError naming the valid range."""
    dim = operator.index(dim)
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not lo <= dim <= hi:
        raise IndexError(
            f"{name} {dim} is out of range for a tensor of {ndim} dimensions "
            f"(expected to be in range of [{lo}, {hi}])"
        )
    return dim % ndim if ndim > 0 else 0


def normalize_dims(dims, ndim, name="dim"):
    """Normalize a dim or sequence of dims, rejecting repeats."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, (int, np.integer)) or hasattr(dims, "__index__") and not isinstance(dims, (tuple, list)):
        dims = (dims,)
    out = tuple(normalize_dim(d, ndim, name) for d in dims)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}s {tuple(dims)} contain a repeated dimension")
    return out


# ----------------------------------------------------------------------------
# View functions
# ----------------------------------------------------------------------------


def permute(layout, dims):
    """Reorder dimensions: result dim i is input dim ``dims[i]``."""
    dims = tuple(dims)
    if len(dims) != layout.ndim:
        raise ValueError(
            f"permute: number of dims {len(dims)} does not match tensor dims {layout.ndim} "
            f"(dims={dims})"
        )
    nd = len(dims)
    if sorted(dims) != list(range(nd)):  # negative, repeated or invalid dims
        dims = normalize_dims(dims, nd)
    shape, strides = layout.shape, layout.strides
    return _layout(
        tuple([shape[d] for d in dims]), tuple([strides[d] for d in dims]), layout.offset
    )


def transpose(layout, dim0, dim1):
    """Swap two dimensions."""
    d0 = normalize_dim(dim0, layout.ndim)
    d1 = normalize_dim(dim1, layout.ndim)
    shape, strides = list(layout.shape), list(layout.strides)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    strides[d0], strides[d1] = strides[d1], strides[d0]
    return _layout(tuple(shape), tuple(strides), layout.offset)


_VIEWS_LIMIT = 4096  # entries of each remembered-view table before it starts over
_REVERSED = {}  # layout -> its reverse_dims (remembered: .T of one tensor in a loop)


def reverse_dims(layout):
    """Reverse all dimensions (``.T`` for 2-D)."""
    found = _REVERSED.get(layout)
    if found is None:
        found = _layout(layout.shape[::-1], layout.strides[::-1], layout.offset)
        if len(_REVERSED) >= _VIEWS_LIMIT:
            _REVERSED.clear()
        _REVERSED[layout] = found
    return found


def matrix_transpose(layout):
    """Swap the last two dimensions (``.mT``)."""
    if layout.ndim < 2:
        raise ValueError(
            f"matrix transpose needs at least 2 dimensions, got shape {layout.shape}"
        )
    return transpose(layout, -2, -1)


def select(layout, dim, index):
    """Drop ``dim`` by picking position ``index`` (IndexError when out of range)."""
    dim = normalize_dim(dim, layout.ndim)
    n = layout.shape[dim]
    index = operator.index(index)
    if not -n <= index < n:
        raise IndexError(
            f"index {index} is out of bounds for dimension {dim} with size {n}"
        )
    index %= n
    return _layout(
        layout.shape[:dim] + layout.shape[dim + 1:],
        layout.strides[:dim] + layout.strides[dim + 1:],
        layout.offset + index * layout.strides[dim],
    )


def slice_dim(layout, dim, start=None, stop=None, step=None):
    """Python slice semantics along ``dim``; any non-zero step, negative included."""
    if step == 0:
        raise ValueError("slice step cannot be zero")
    dim = normalize_dim(dim, layout.ndim)
    n = layout.shape[dim]
    start, stop, step = slice(start, stop, step).indices(n)
    length = len(range(start, stop, step))
    shape = list(layout.shape)
    strides = list(layout.strides)
    shape[dim] = length
    offset = layout.offset + (start * strides[dim] if length > 0 else 0)
    strides[dim] *= step
    return _layout(tuple(shape), tuple(strides), offset)


def narrow(layout, dim, start, length):
    """``length`` elements of ``dim`` beginning at ``start`` (PyTorch's narrow)."""
    dim = normalize_dim(dim, layout.ndim)
    n = layout.shape[dim]
    start = operator.index(start)
    length = operator.index(length)
    if not -n <= start <= n:
        raise IndexError(f"narrow: start {start} is out of range for dimension {dim} of size {n}")
    if start < 0:
        start += n
    if length < 0 or start + length > n:
        raise IndexError(
            f"narrow: start ({start}) + length ({length}) exceeds dimension {dim} of size {n}"
        )
    return slice_dim(layout, dim, start, start + length, 1)


def unsqueeze(layout, dim):
    """Insert a size-1 dimension at ``dim``."""
    dim = normalize_dim(dim, layout.ndim + 1)
    stride = layout.strides[dim] * layout.shape[dim] if dim < layout.ndim else 1
    return _layout(
        layout.shape[:dim] + (1,) + layout.shape[dim:],
        layout.strides[:dim] + (stride,) + layout.strides[dim:],
        layout.offset,
    )


def squeeze(layout, dims=None, strict=True):
    """Remove size-1 dims (all, or those named; ``strict`` rejects named non-1 dims)."""
    if dims is None:
        keep = [d for d in range(layout.ndim) if layout.shape[d] != 1]
    elif layout.ndim == 0:
        normalize_dims(dims, 0)
        return layout
    else:
        named = normalize_dims(dims, layout.ndim)
        for d in named:
            if layout.shape[d] != 1 and strict:
                raise ValueError(
                    f"cannot squeeze dimension {d} of size {layout.shape[d]} "
                    f"(shape {layout.shape}); only size-1 dimensions can be squeezed"
                )
        drop = {d for d in named if layout.shape[d] == 1}
        keep = [d for d in range(layout.ndim) if d not in drop]
    return _layout(
        tuple(layout.shape[d] for d in keep),
        tuple(layout.strides[d] for d in keep),
        layout.offset,
    )


def broadcast_shapes(*shapes):
    """Broadcast shapes; ValueError naming both shapes and the clashing dimension."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    owner = [None] * ndim
    for shape in shapes:
        for i, n in enumerate(shape):
            d = ndim - len(shape) + i
            if n == 1:
                continue
            if out[d] == 1:
                out[d] = n
                owner[d] = shape
            elif out[d] != n:
                raise ValueError(
                    f"shapes {tuple(owner[d])} and {tuple(shape)} cannot be broadcast: "
                    f"dimension {d - ndim} has sizes {out[d]} and {n}"
                )
    return tuple(out)


def broadcast_to(layout, shape):
    """NumPy broadcast: new leading dims and size-1 dims get stride 0."""
    shape = tuple(operator.index(n) for n in shape)
    if len(shape) < layout.ndim:
        raise ValueError(
            f"cannot broadcast shape {layout.shape} to {shape}: target has fewer dimensions"
        )
    lead = len(shape) - layout.ndim
    strides = [0] * lead
    for i, (n, s) in enumerate(zip(layout.shape, layout.strides)):
        target = shape[lead + i]
        if n == target:
            strides.append(s)
        elif n == 1:
            strides.append(0)
        else:
            raise ValueError(
                f"cannot broadcast shape {layout.shape} to {shape}: dimension "
                f"{i - layout.ndim} has size {n}, expected 1 or {target}"
            )
    return _layout(shape, tuple(strides), layout.offset)


def expand(layout, sizes):
    """PyTorch expand: like :func:`broadcast_to`, with ``-1`` keeping a size."""
    sizes = tuple(operator.index(n) for n in sizes)
    lead = len(sizes) - layout.ndim
    if lead < 0:
        raise ValueError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal "
            f"to the number of dimensions in the tensor ({layout.ndim})"
        )
    target = list(sizes)
    for i, n in enumerate(sizes):
        if n == -1:
            if i < lead:
                raise ValueError(
                    f"expand: -1 is not allowed in a leading, non-existing dimension ({i}); "
                    f"sizes {sizes}"
                )
            target[i] = layout.shape[i - lead]
        elif n < 0:
            raise ValueError(f"expand: negative size {n} in sizes {sizes}")
    return broadcast_to(layout, target)


def flip(layout, dims):
    """Reverse the order of elements along ``dims`` (negative strides)."""
    shape = layout.shape
    strides = list(layout.strides)
    offset = layout.offset
    for d in normalize_dims(dims, layout.ndim):
        if shape[d] > 0:
            offset += (shape[d] - 1) * strides[d]
        strides[d] = -strides[d]
    return _layout(shape, tuple(strides), offset)


def diagonal(layout, offset=0, dim1=0, dim2=1):
    """View of a diagonal: ``dim1``/``dim2`` removed, the diagonal appended last."""
    d1 = normalize_dim(dim1, layout.ndim, "dim1")
    d2 = normalize_dim(dim2, layout.ndim, "dim2")
    if d1 == d2:
        raise ValueError(f"diagonal dimensions cannot be identical ({dim1}, {dim2})")
    n1, n2 = layout.shape[d1], layout.shape[d2]
    s1, s2 = layout.strides[d1], layout.strides[d2]
    if offset >= 0:
        size = max(0, min(n1, n2 - offset))
        start = offset * s2 if size > 0 else 0
    else:
        size = max(0, min(n1 + offset, n2))
        start = -offset * s1 if size > 0 else 0
    keep = [d for d in range(layout.ndim) if d not in (d1, d2)]
    return Layout(
        tuple(layout.shape[d] for d in keep) + (size,),
        tuple(layout.strides[d] for d in keep) + (s1 + s2,),
        layout.offset + start,
    )


def unfold(layout, dim, size, step):
    """Sliding windows of ``size`` every ``step`` along ``dim``, windows appended last."""
    if layout.ndim == 0:
        raise ValueError("unfold needs a tensor with at least one dimension")
    dim = normalize_dim(dim, layout.ndim)
    n = layout.shape[dim]
    if size < 0 or size > n:
        raise ValueError(
            f"unfold: size {size} must be between 0 and the size of dimension {dim} ({n})"
        )
    if step <= 0:
        raise ValueError(f"unfold: step must be positive, got {step}")
    shape = list(layout.shape)
    strides = list(layout.strides)
    shape[dim] = (n - size) // step + 1
    strides[dim] = layout.strides[dim] * step
    return Layout(shape + [size], strides + [layout.strides[dim]], layout.offset)


def as_strided(size, stride, storage_offset, storage_size):
    """A layout of arbitrary ``size``/``stride``, checked to stay inside the storage."""
    size = tuple(operator.index(n) for n in size)
    stride = tuple(operator.index(s) for s in stride)
    storage_offset = operator.index(storage_offset)
    if len(size) != len(stride):
        raise ValueError(
            f"as_strided: mismatch in length of sizes {list(size)} and strides {list(stride)}"
        )
    if any(n < 0 for n in size):
        raise ValueError(f"as_strided: negative size in sizes {list(size)}")
    if any(s < 0 for s in stride):
        raise ValueError(
            f"as_strided: negative strides are not supported, got strides {list(stride)}"
        )
    if storage_offset < 0:
        raise ValueError(f"as_strided: negative storage offset {storage_offset}")
    layout = Layout(size, stride, storage_offset)
    needed = required_storage_size(layout)
    if needed > storage_size:
        raise ValueError(
            f"as_strided: sizes {list(size)}, strides {list(stride)} and storage offset "
            f"{storage_offset} need a storage of {needed} elements, out of bounds for a "
            f"storage of size {storage_size}"
        )
    return layout


def infer_shape(shape, numel):
    """Resolve a single ``-1`` in ``shape`` against ``numel`` elements."""
    shape = tuple(operator.index(n) for n in shape)
    unknown = [i for i, n in enumerate(shape) if n == -1]
    if len(unknown) > 1:
        raise ValueError(f"only one dimension can be inferred (-1), got shape {shape}")
    if any(n < -1 for n in shape):
        raise ValueError(f"invalid shape dimension in {shape}")
    known = math.prod(n for n in shape if n != -1)
    if unknown:
        if known == 0 or numel % known:
            raise ValueError(f"shape {shape} is invalid for input of size {numel}")
        shape = shape[: unknown[0]] + (numel // known,) + shape[unknown[0] + 1:]
    elif known != numel:
        raise ValueError(f"shape {shape} is invalid for input of size {numel}")
    return shape


def _view_strides(old_shape, old_strides, new_shape):
    """PyTorch's computeStride: strides for a view, or None when none exists."""
    if not old_shape:
        return (1,) * len(new_shape)
    numel = math.prod(old_shape)
    if numel == 0:
        if old_shape == new_shape:
            return old_strides
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = old_strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (
            old_shape[tensor_d - 1] != 1
            and old_strides[tensor_d - 1] != tensor_numel * chunk_base
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


_VIEWS = {}  # (geometry, requested shape) -> (shape, strides) of the view, or None
_MISSING = object()


def try_view(layout, shape):
    """Layout of ``shape`` over the same elements, or None when a copy is needed.

    What a geometry and a requested shape give is remembered (a view's cost is its
    Python: a loop reshaping alike tensors computes it once)."""
    key = (layout.geometry, shape)
    try:
        found = _VIEWS.get(key, _MISSING)
    except TypeError:  # an unhashable shape (a list): computed, not remembered
        key, found = None, _MISSING
    if found is _MISSING:
        shape = infer_shape(shape, layout.numel)
        strides = _view_strides(layout.shape, layout.strides, shape)
        found = None if strides is None else (shape, tuple(strides))
        if key is not None:
            if len(_VIEWS) >= _VIEWS_LIMIT:
                _VIEWS.clear()
            _VIEWS[key] = found
    return None if found is None else _layout(found[0], found[1], layout.offset)


def view(layout, shape):
    """PyTorch's ``view``: raise (pointing to ``reshape``) when no view exists."""
    result = try_view(layout, shape)
    if result is None:
        raise RuntimeError(
            f"view size {tuple(shape)} is not compatible with input tensor's size "
            f"{layout.shape} and stride {layout.strides} (at least one dimension spans "
            f"across two contiguous subspaces). Use .reshape(...) instead."
        )
    return result


def flatten(layout, start_dim=0, end_dim=-1):
    """Target shape of flattening dims ``start_dim..end_dim`` into one."""
    if layout.ndim == 0:
        return (1,)
    s = normalize_dim(start_dim, layout.ndim)
    e = normalize_dim(end_dim, layout.ndim)
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} cannot come after end_dim {end_dim}")
    return layout.shape[:s] + (math.prod(layout.shape[s:e + 1]),) + layout.shape[e + 1:]


# ----------------------------------------------------------------------------
# Basic indexing
# ----------------------------------------------------------------------------


def is_basic_key_item(item):
    """Whether one index item is basic (int, slice, Ellipsis, None) rather than advanced."""
    if item is None or item is Ellipsis or isinstance(item, slice):
        return True
    if isinstance(item, (bool, np.bool_)):
        return False
    if isinstance(item, (int, np.integer)):
        return True
    return False


def index(layout, key):
    """Apply a basic index key (ints, slices, Ellipsis, None) to a layout."""
    if type(key) is not tuple:
        key = (key,)
    shape_in, strides_in = layout.shape, layout.strides
    ndim = len(shape_in)
    consumed = 0
    ellipsis = False
    for item in key:
        if item is Ellipsis:
            if ellipsis:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ellipsis = True
        elif item is not None:
            consumed += 1
    if consumed > ndim:
        raise IndexError(
            f"too many indices for tensor of dimension {ndim} (got {consumed} indices)"
        )
    shape, strides = [], []
    offset = layout.offset
    d = 0
    for item in key:
        if item is None:
            shape.append(1)
            strides.append(0)
        elif item is Ellipsis:
            end = d + ndim - consumed
            shape.extend(shape_in[d:end])
            strides.extend(strides_in[d:end])
            d = end
        elif isinstance(item, slice):
            s = strides_in[d]
            start, stop, step = item.indices(shape_in[d])
            length = len(range(start, stop, step))
            if length > 0:
                offset += start * s
            shape.append(length)
            strides.append(s * step)
            d += 1
        else:
            n = shape_in[d]
            i = operator.index(item)
            if not -n <= i < n:
                raise IndexError(
                    f"index {i} is out of bounds for dimension {d} with size {n}"
                )
            offset += (i % n) * strides_in[d]
            d += 1
    if d < ndim:
        shape.extend(shape_in[d:])
        strides.extend(strides_in[d:])
    return _layout(tuple(shape), tuple(strides), offset)
