"""PyTorch's gather/scatter family, where the array API standard is silent.

``masked_select``, ``index_select``, ``gather``, ``scatter``, ``scatter_add``,
``index_add``, ``index_copy`` and ``put`` follow ``torch.<name>``: the same
arguments (``dim`` first after the tensor), the same shape rules and the same
errors. The in-place forms (``x.scatter_``, ``x.index_add_``, ``x.put_``, ...) are
methods (:mod:`arraykit.api.tensor_methods`) built on the same kernels: an in-place
form writes through the tensor's layout in one donating kernel, an out-of-place
form reads and computes in one kernel.

Indices are checked eagerly: an index outside ``[0, size)`` raises ``IndexError``
naming it, the dimension and the size (``put`` also takes ``[-numel, 0)``, as
PyTorch does). JAX itself would clamp a gather and drop a scatter silently; under
a JAX trace no check is possible, and out-of-range gathers read the fill value
of :mod:`arraykit.api.indexing`, out-of-range scatters are dropped. As in PyTorch,
which of several writes to one position wins in ``scatter``/``index_copy``/``put``
(without ``accumulate``) is unspecified.
"""

from __future__ import annotations

import contextlib

import jax.numpy as jnp

from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import addressable, check_same_device
from ..kernels.launch import apply, apply_inplace
from ..tensors.operands import writable_value
from ..tensors import namespace_registry
from ..tensors.tensor_type import Tensor, is_traced, require_tensor
from . import torch_keywords as T
from ..core import deferred_checks
from .indexing import _extremes

__all__ = [
    "gather", "index_add", "index_copy", "index_select", "masked_select", "put", "scatter",
    "scatter_add",
]

_INT32_OR_64 = (D.int32, D.int64)
_INT64 = (D.int64,)


# ----------------------------------------------------------------------------- kernels


def _bounds(idx):
    return jnp.stack([jnp.min(idx), jnp.max(idx)])


def _index_select(x, idx, dim):
    return x.at[(slice(None),) * dim + (idx,)].get(mode="fill")


def _gather(x, idx, dim):
    return jnp.take_along_axis(x, idx, axis=dim, mode="fill")


def _positions(idx, dim):
    """Index arrays addressing, for each element of ``idx``, its target position."""
    grids = list(jnp.indices(idx.shape, sparse=True))
    grids[dim] = idx
    return tuple(grids)


def _scatter(cur, idx, src, dim, add):
    """``cur`` with ``src`` (cut or broadcast to ``idx``'s shape) stored (``add``: added)
    at ``idx`` along ``dim``."""
    if src.ndim:
        src = src[tuple(slice(0, n) for n in idx.shape)]
    src = jnp.broadcast_to(src, idx.shape)
    at = cur.at[_positions(idx, dim)]
    src = src.astype(cur.dtype)
    return at.add(src, mode="drop") if add else at.set(src, mode="drop")


def _index_update(cur, idx, src, dim, add, alpha):
    """``cur`` with the slices ``src`` stored (``add``: ``alpha * src`` added) at ``idx``
    along ``dim``."""
    at = cur.at[(slice(None),) * dim + (idx,)]
    if add:
        return at.add((src * alpha if alpha != 1 else src).astype(cur.dtype), mode="drop")
    return at.set(src.astype(cur.dtype), mode="drop")


def _put(cur, idx, src, accumulate):
    flat = cur.reshape(-1)
    idx = idx.reshape(-1)
    idx = jnp.where(idx < 0, idx + flat.shape[0], idx)
    at = flat.at[idx]
    src = src.reshape(-1).astype(cur.dtype)
    flat = at.add(src, mode="drop") if accumulate else at.set(src, mode="drop")
    return flat.reshape(cur.shape)


# ----------------------------------------------------------------------------- checks


def _index(index, x, allowed, name):
    """``index`` checked to be a tensor of an ``allowed`` dtype on ``x``'s device."""
    require_tensor(index, name)
    if index._dtype not in allowed:
        names = " or ".join(d.name for d in allowed)
        raise TypeError(f"{name}(): expected an index tensor of dtype {names}, got {index.dtype}")
    check_same_device(x.device, index.device, name)
    return index


def _check_outside(index, low, high, error):
    """Raise ``error(value)`` for an element of ``index`` outside ``[low, high)``;
    nothing when ``index`` is traced or empty. On a device that defers its checks
    (:mod:`arraykit.core.deferred_checks`) a kernel computes the bounds and the error is
    raised where the host next reads values; on a placement over several processes
    it computes them too, and every process raises at once.

    The caller holds the lock of ``index``'s storage (:func:`_held`).
    """
    if index._layout.numel == 0 or is_traced(index):
        return

    def error_of(lo, hi):
        if lo < low:
            return error(lo)
        return error(hi) if hi >= high else None

    device = index._storage.device
    if deferred_checks.deferring(device) or not addressable(device):
        # across processes: every process reads the same (replicated) bounds, so all raise
        bounds = apply(_bounds, (index,))._storage.buffer
        deferred_checks.check(device, bounds, lambda host: error_of(*host.tolist()))
        return
    if device.platform == "cpu":
        _, _, lo, hi = _extremes(index)
    else:
        lo, hi = apply(_bounds, (index,)).tolist()
    failed = error_of(lo, hi)
    if failed is not None:
        raise failed


def _check_range(index, size, dim, name):
    """IndexError when an element of ``index`` lies outside ``[0, size)``."""
    _check_outside(index, 0, size, lambda bad: IndexError(
        f"{name}(): index {bad} is out of bounds for dimension {dim} with size {size}"
    ))


def _source(x, src, name):
    """``src`` checked to be a tensor of ``x``'s dtype on its device."""
    require_tensor(src, name)
    check_same_device(x.device, src.device, name)
    if src._dtype is not x._dtype:
        raise TypeError(
            f"{name}(): expected the source to have the dtype of self ({x.dtype}), got {src.dtype}"
        )
    return src


def _held(index):
    """The lock of ``index``'s storage (or a no-op for a non-tensor, rejected later).

    Each function checks its indices and dispatches its kernel under this lock, so a
    write into the indices from another thread cannot slip between the check and the
    kernel (the kernel would fill or drop an unchecked index silently).
    """
    return index._storage.lock if isinstance(index, Tensor) else contextlib.nullcontext()


def _dim(x, dim):
    return L.normalize_dim(dim, max(x.ndim, 1), "dim")


def _at_least_1d(t):
    """A 0-d tensor as a 1-element view (PyTorch treats 0-d tensors as 1-D here)."""
    return t.reshape(1) if t.ndim == 0 else t


# ----------------------------------------------------------------------------- gathers


def masked_select(x=None, /, mask=None, *, input=None, out=None):  # noqa: A002
    """The elements of ``x`` where the boolean ``mask`` is true, as a new 1-D tensor.

    ``x`` and ``mask`` broadcast together; elements come in C order.
    """
    if input is not None or out is not None:  # PyTorch's keywords
        return T.forward(masked_select, "masked_select", x, input, out, mask)
    require_tensor(x, "masked_select")
    require_tensor(mask, "masked_select")
    if mask._dtype is not D.bool_:
        raise TypeError(f"masked_select(): expected a bool mask, got {mask.dtype}")
    check_same_device(x.device, mask.device, "masked_select")
    shape = L.broadcast_shapes(x.shape, mask.shape) or (1,)
    return x.broadcast_to(shape)[mask.broadcast_to(shape)]


def _vector_index(x, dim, index, allowed, name):
    """(dim, 1-D index) for the index_* functions, range-checked along ``dim``."""
    dim = _dim(x, dim)
    _index(index, x, allowed, name)
    if index.ndim > 1:
        raise IndexError(
            f"{name}(): the index must be a vector (at most 1-D), got shape {index.shape}"
        )
    index = _at_least_1d(index)
    _check_range(index, _at_least_1d(x).shape[dim], dim, name)
    return dim, index


def index_select(x=None, /, dim=None, index=None, *, input=None, out=None):  # noqa: A002
    """The slices of ``x`` at the positions ``index`` (1-D int32/int64) along ``dim``."""
    if input is not None or out is not None:  # PyTorch's keywords
        return T.forward(index_select, "index_select", x, input, out, dim, index)
    with _held(index):
        require_tensor(x, "index_select")
        dim, flat = _vector_index(x, dim, index, _INT32_OR_64, "index_select")
        out = apply(_index_select, (_at_least_1d(x), flat), (dim,))
        return out.reshape(()) if x.ndim == 0 else out


def _gather_shapes(x, dim, index, name, src=None):
    """PyTorch's shape rule of gather/scatter: ``index`` has ``x``'s number of
    dimensions and is no larger than ``x`` outside ``dim`` (nor than ``src``)."""
    if max(index.ndim, 1) != max(x.ndim, 1):
        raise ValueError(
            f"{name}(): the index must have as many dimensions as self, got index shape "
            f"{index.shape} and self shape {x.shape}"
        )
    index_shape, x_shape = _at_least_1d(index).shape, _at_least_1d(x).shape
    too_big = [d for d, n in enumerate(index_shape) if d != dim and n > x_shape[d]]
    against = f"self {x.shape} apart from dimension {dim}"
    if src is not None and src.ndim:
        if src.ndim != index.ndim:
            raise ValueError(
                f"{name}(): the source must have as many dimensions as the index, got source "
                f"shape {src.shape} and index shape {index.shape}"
            )
        too_big += [d for d, n in enumerate(index_shape) if n > src.shape[d]]
        against += f" and than the source {src.shape}"
    if too_big:
        raise ValueError(
            f"{name}(): index of shape {index.shape} must be no larger than {against} "
            f"(dimension {too_big[0]})"
        )


def gather(x=None, /, dim=None, index=None, *, input=None, out=None,  # noqa: A002
           sparse_grad=False):
    """Values of ``x`` along ``dim`` at ``index``: ``out[i][j] = x[index[i][j]][j]`` for dim 0.

    ``index`` (int32/int64) has ``x``'s number of dimensions and is no larger than
    ``x`` outside ``dim``; the result has ``index``'s shape. PyTorch's ``sparse_grad``
    is accepted: the gradient is always dense (the same values).
    """
    if input is not None or out is not None:  # PyTorch's keywords
        return T.forward(gather, "gather", x, input, out, dim, index)
    with _held(index):
        require_tensor(x, "gather")
        _index(index, x, _INT32_OR_64, "gather")
        dim = _dim(x, dim)
        _gather_shapes(x, dim, index, "gather")
        flat = _at_least_1d(index)
        src = _at_least_1d(x)
        src = src[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(flat.shape))]
        _check_range(flat, src.shape[dim], dim, "gather")
        return apply(_gather, (src, flat), (dim,)).reshape(index.shape)


# ----------------------------------------------------------------------------- scatters


def _scatter_operands(x, dim, index, src, name):
    """(target view, dim, index, source) of a scatter, checked as PyTorch checks them.

    ``src`` is a tensor of ``x``'s dtype or a scalar (a 0-d operand of that dtype).
    """
    require_tensor(x, name)
    _index(index, x, _INT32_OR_64, name)
    dim = _dim(x, dim)
    if isinstance(src, Tensor):
        _source(x, src, name)
    else:
        src = writable_value(src, x)
    _gather_shapes(x, dim, index, name, src)
    index = _at_least_1d(index)
    _check_range(index, _at_least_1d(x).shape[dim], dim, name)
    if isinstance(src, Tensor):
        src = _at_least_1d(src)
    return _at_least_1d(x), dim, index, src


def scatter_into(x, dim, index, src, add, name):
    """Write (``add``: add) ``src`` into ``x`` in place at ``index`` along ``dim``
    (``x.scatter_``, ``x.scatter_add_``); returns ``x``."""
    with _held(index):
        target, dim, index, src = _scatter_operands(x, dim, index, src, name)
        apply_inplace(_scatter, target, (index, src), (dim, add))
        return x


def scatter(x=None, /, dim=None, index=None, src=None, *, input=None, out=None,  # noqa: A002
            value=None, reduce=None):
    """A copy of ``x`` with ``src`` (a tensor or a scalar) written at ``index`` along ``dim``.

    ``out[index[i][j]][j] = src[i][j]`` for dim 0; ``index`` (int32/int64) has
    ``x``'s number of dimensions and is no larger than ``src``, nor than ``x``
    outside ``dim``. A tensor ``src`` has ``x``'s dtype, as PyTorch requires.
    PyTorch's ``value=`` is a scalar ``src``; its ``reduce="add"``/``"multiply"``
    accumulates into ``x`` (``scatter_reduce``'s ``"sum"``/``"prod"``).
    """
    if value is not None:
        src = T.pick("scatter", "src", src, "value", value)
    if reduce is not None:
        return T.into_if_given("scatter", scatter_reduced(
            T.pick_input("scatter", x, input), dim, index, src, reduce), out)
    if input is not None or out is not None:  # PyTorch's keywords
        return T.forward(scatter, "scatter", x, input, out, dim, index, src)
    with _held(index):
        target, dim, index, src = _scatter_operands(x, dim, index, src, "scatter")
        return apply(_scatter, (target, index, src), (dim, False)).reshape(x.shape)


def scatter_reduced(x, dim, index, src, reduce):
    """PyTorch's ``scatter(..., reduce="add"|"multiply")``: ``src`` (a tensor, or a
    scalar for every position of ``index``) summed or multiplied into a copy of ``x``."""
    namespace = namespace_registry.namespace  # scatter_reduce's module builds on this one
    kinds = {"add": "sum", "multiply": "prod"}
    if reduce not in kinds:
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce!r}")
    require_tensor(x, "scatter")
    if not isinstance(src, Tensor):
        src = namespace.full(require_tensor(index, "scatter").shape, src, dtype=x.dtype,
                             device=x.device)
    return namespace.scatter_reduce(x, dim, index, src, kinds[reduce])


def scatter_add(x=None, /, dim=None, index=None, src=None, *, input=None,  # noqa: A002
                out=None):
    """A copy of ``x`` with the tensor ``src`` added at ``index`` along ``dim``
    (repeated indices accumulate); shapes as in :func:`scatter`."""
    if input is not None or out is not None:  # PyTorch's keywords
        return T.forward(scatter_add, "scatter_add", x, input, out, dim, index, src)
    with _held(index):
        _source(x, src, "scatter_add")
        target, dim, index, src = _scatter_operands(x, dim, index, src, "scatter_add")
        return apply(_scatter, (target, index, src), (dim, True)).reshape(x.shape)


def _index_update_operands(x, dim, index, source, add, name):
    """(target view, dim, 1-D index, source) of index_add/index_copy, with PyTorch's
    shape and dtype rules (index_copy takes int64 indices only, as PyTorch)."""
    require_tensor(x, name)
    _source(x, source, name)
    dim, flat = _vector_index(x, dim, index, _INT32_OR_64 if add else _INT64, name)
    target = _at_least_1d(x)
    want = list(target.shape)
    want[dim] = flat.shape[0]
    if list(_at_least_1d(source).shape) != want:
        raise ValueError(
            f"{name}(): the source must have shape {tuple(want)} (self's shape {x.shape} with "
            f"the index's length {flat.shape[0]} along dimension {dim}), got {source.shape}"
        )
    return target, dim, flat, _at_least_1d(source)


def index_update_into(x, dim, index, source, add, alpha, name):
    """In place: the slices ``source`` stored (``add``: ``alpha * source`` added) at
    ``index`` along ``dim`` of ``x`` (``x.index_copy_``, ``x.index_add_``); returns ``x``."""
    with _held(index):
        target, dim, flat, source = _index_update_operands(x, dim, index, source, add, name)
        apply_inplace(_index_update, target, (flat, source), (dim, add, alpha))
        return x


def index_add(x=None, /, dim=None, index=None, source=None, *, alpha=1, input=None,  # noqa: A002
              out=None):
    """A copy of ``x`` with ``alpha * source`` added to the slices at ``index`` along ``dim``.

    ``index`` is 1-D (int32/int64; repeated indices accumulate); ``source`` has
    ``x``'s dtype and shape except ``len(index)`` along ``dim``.
    """
    if input is not None or out is not None:  # PyTorch's keywords
        return T.forward(index_add, "index_add", x, input, out, dim, index, source, alpha=alpha)
    with _held(index):
        target, dim, flat, source = _index_update_operands(x, dim, index, source, True, "index_add")
        return apply(_index_update, (target, flat, source), (dim, True, alpha)).reshape(x.shape)


def index_copy(x=None, /, dim=None, index=None, source=None, *, input=None,  # noqa: A002
               out=None):
    """A copy of ``x`` with the slices at ``index`` (1-D int64) along ``dim`` replaced by
    ``source``."""
    if input is not None or out is not None:  # PyTorch's keywords
        return T.forward(index_copy, "index_copy", x, input, out, dim, index, source)
    with _held(index):
        target, dim, flat, source = _index_update_operands(
            x, dim, index, source, False, "index_copy"
        )
        return apply(_index_update, (target, flat, source), (dim, False, 1)).reshape(x.shape)


def _put_operands(x, index, source, name):
    require_tensor(x, name)
    _index(index, x, _INT64, name)
    _source(x, source, name)
    if source.size != index.size:
        raise ValueError(
            f"{name}(): source and index must have the same number of elements, got "
            f"{source.size} and {index.size}"
        )
    _check_outside(index, -x.size, x.size, lambda bad: IndexError(
        f"{name}(): index {bad} is out of range for a tensor of {x.size} elements"
    ))


def put_into(x, index, source, accumulate):
    """In place (``x.put_``): ``source`` stored (or added) at the flat C-order
    positions ``index`` of ``x``; negative positions count from the end."""
    with _held(index):
        _put_operands(x, index, source, "put_")
        return apply_inplace(_put, x, (index, source), (bool(accumulate),))


def put(x=None, /, index=None, source=None, accumulate=False, *, input=None):  # noqa: A002
    """A copy of ``x`` with ``source`` stored (``accumulate``: added) at the flat
    positions ``index`` (int64; C order over ``x``'s shape, negative from the end)."""
    if input is not None:  # PyTorch's keyword
        x = T.pick_input("put", x, input)
    with _held(index):
        _put_operands(x, index, source, "put")
        return apply(_put, (x, index, source), (bool(accumulate),))
