"""Advanced index keys (integer arrays, boolean masks) for ``__getitem__``/``__setitem__``.

Eagerly, a key is checked on the host against NumPy (bounds, mask shapes, the
result shape) before any kernel runs, so out-of-range indices raise ``IndexError``
instead of being clamped. The kernel then receives integer index arrays as
operands and the key's structure as a static, hashable plan.
"""

from __future__ import annotations

import dataclasses
import operator

import jax
import jax.numpy as jnp
import numpy as np

from ..core import layout as L
from ..kernels.launch import is_tensor


def is_basic(key):
    """Whether ``key`` uses only ints, slices, Ellipsis and None."""
    if isinstance(key, tuple):
        return all(L.is_basic_key_item(k) or _index_like(k) for k in key)
    return L.is_basic_key_item(key) or _index_like(key)


def _index_like(item):
    """Objects with ``__index__`` (0-d integer tensors, NumPy ints) act as ints."""
    if is_tensor(item):
        traced = isinstance(item._storage._buffer, jax.core.Tracer)
        return item.ndim == 0 and item.dtype.kind in ("int", "uint") and not traced
    return (
        hasattr(item, "__index__")
        and not isinstance(item, (bool, np.bool_, np.ndarray, jax.Array))
    )


def basic_key(key):
    """Turn index-like items of a basic key into plain ints."""
    items = key if isinstance(key, tuple) else (key,)
    return tuple(
        k if k is None or k is Ellipsis or isinstance(k, slice) else operator.index(k)
        for k in items
    )


@dataclasses.dataclass(slots=True, eq=False)
class Plan:
    """Static structure of an advanced key plus its index operands."""

    structure: tuple
    operands: tuple
    result_shape: tuple | None


def _host(item):
    """A NumPy array for a key item that is an array-like (Tensor, list, ndarray)."""
    if is_tensor(item):
        return item._values()
    arr = np.asarray(item)
    if arr.size == 0 and not isinstance(item, np.ndarray):
        arr = arr.astype(np.int64)  # an empty list indexes like an empty integer array
    if arr.dtype == object or arr.dtype.kind not in "biu":
        raise IndexError(
            f"only integers, slices, ellipsis, None, integer arrays and boolean arrays "
            f"are valid indices (got {type(item).__name__} of dtype {arr.dtype})"
        )
    return arr


def _plan_of(items, item_entries, result_shape):
    """The :class:`Plan` of the key ``items``: None, Ellipsis and slices need no operand;
    ``item_entries(k)`` gives ``(structure entries, operands)`` of any other item."""
    structure = []
    operands = []
    for k in items:
        if k is None:
            structure.append(("none",))
        elif k is Ellipsis:
            structure.append(("ellipsis",))
        elif isinstance(k, slice):
            structure.append(("slice", k.start, k.stop, k.step))
        else:
            entries, item_operands = item_entries(k)
            structure.extend(entries)
            operands.extend(item_operands)
    return Plan(tuple(structure), tuple(operands), result_shape)


def plan(shape, key):
    """Validate an advanced key against ``shape`` and build its kernel plan (eager)."""
    items = key if isinstance(key, tuple) else (key,)
    np_items = []
    for k in items:
        if k is None or k is Ellipsis or isinstance(k, slice):
            np_items.append(k)
        elif isinstance(k, (bool, np.bool_)):
            np_items.append(np.asarray(k))
        elif isinstance(k, (int, np.integer)):
            np_items.append(int(k))
        else:
            np_items.append(_host(k))
    dummy = np.lib.stride_tricks.as_strided(
        np.zeros(1, dtype=np.bool_), shape=shape, strides=(0,) * len(shape)
    )
    result_shape = dummy[tuple(np_items)].shape
    return _plan_of(np_items, _eager_entries, result_shape)


def _eager_entries(k):
    """Structure entries and operands of a host key item (as :func:`plan` converted it)."""
    if isinstance(k, np.ndarray) and k.dtype == np.bool_:
        if k.ndim == 0:  # a scalar bool adds an axis of length 1 or 0, as in NumPy
            return [("bool", bool(k))], []
        indices = np.nonzero(k)
        return [("array",)] * len(indices), [idx.astype(np.int64) for idx in indices]
    if isinstance(k, np.ndarray):
        return [("array",)], [k.astype(np.int64)]
    return [("int", k)], []


def traced_plan(key):
    """Plan for a key used under a JAX trace: no host checks, masks rejected."""
    items = key if isinstance(key, tuple) else (key,)
    return _plan_of(items, _traced_entries, None)


def _traced_entries(k):
    """Structure entries and operands of a key item under a JAX trace (masks rejected)."""
    if isinstance(k, (bool, np.bool_)):
        return [("bool", bool(k))], []
    if isinstance(k, (int, np.integer)):
        return [("int", int(k))], []
    t = k if is_tensor(k) else None
    dtype_kind = t.dtype.kind if t is not None else np.asarray(k).dtype.kind
    if dtype_kind == "bool" or dtype_kind == "b":
        raise IndexError(
            "boolean mask indexing has a data-dependent shape and cannot be "
            "traced; use arraykit.where instead"
        )
    return [("array",)], [t if t is not None else np.asarray(k, dtype=np.int64)]


def jax_key(structure, index_arrays):
    """Rebuild a JAX index tuple from a static structure and traced index arrays.

    A scalar bool becomes an integer array (``[0]`` or ``[]``) indexing the size-1
    axis :func:`with_bool_axes` inserted for it: NumPy's own reading of a scalar
    bool, which JAX's indexing gets wrong next to other advanced indices.
    """
    arrays = iter(index_arrays)
    out = []
    for item in structure:
        kind = item[0]
        if kind == "array":
            out.append(next(arrays))
        elif kind == "none":
            out.append(None)
        elif kind == "ellipsis":
            out.append(Ellipsis)
        elif kind == "slice":
            out.append(slice(*item[1:]))
        elif kind == "bool":
            out.append(np.zeros(int(item[1]), dtype=np.int64))
        else:
            out.append(item[1])
    return tuple(out)


def with_bool_axes(xp, x, structure):
    """``x`` with a size-1 axis inserted at the input position of each scalar bool
    (``xp``: ``jax.numpy`` in kernels, ``numpy`` in the tests that check the key logic
    against NumPy's own indexing)."""
    consumed = sum(1 for item in structure if item[0] in ("array", "slice", "int"))
    spanned = x.ndim - consumed  # the Ellipsis spans the input's axes, not inserted ones
    pos = 0
    for item in structure:
        kind = item[0]
        if kind == "ellipsis":
            pos += spanned
        elif kind == "bool":
            x = xp.expand_dims(x, pos)
            pos += 1
        elif kind != "none":
            pos += 1
    return x


def gather(x, *rest):
    """Kernel body: ``x[key]`` (indices already checked, or filled when traced)."""
    *index_arrays, structure, checked = rest
    key = jax_key(structure, index_arrays)
    mode = "promise_in_bounds" if checked else "fill"
    return with_bool_axes(jnp, x, structure).at[key].get(mode=mode)


def scatter(cur, *rest):
    """Kernel body: ``cur`` with ``cur[key] = value`` (value broadcast to the result)."""
    *index_arrays, value, structure, checked = rest
    key = jax_key(structure, index_arrays)
    mode = "promise_in_bounds" if checked else "drop"
    out = with_bool_axes(jnp, cur, structure).at[key].set(value.astype(cur.dtype), mode=mode)
    return out.reshape(cur.shape)


def mask_where(cur, mask, value):
    """Kernel body for ``x[mask] = scalar``: a select, no data-dependent shape."""
    mask = jnp.reshape(mask, mask.shape + (1,) * (cur.ndim - mask.ndim))
    return jnp.where(mask, value.astype(cur.dtype), cur)
