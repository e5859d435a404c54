"""Set functions of the array API: isin and the unique_* family.

The unique functions have data-dependent shapes. A first kernel sorts the
flattened input (stable) and marks where each run of equal values starts; the
number of distinct values is synchronised to the host once; a second kernel
gathers values, first-occurrence indices, inverse indices and counts into buffers
whose static size is that number rounded up to a power of two (so at most
log2(size) programs are compiled per input layout), and the results are views of
the exact length. Uniqueness follows value equality: every NaN is distinct, ``-0.0`` and
``0.0`` are one value. Values come out in ascending order (NaNs last).
CPU tensors skip both kernels: NumPy computes the same results on the host (see
:mod:`arraykit.host_results`).
"""

from __future__ import annotations

from collections import namedtuple

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels import ordering as O
from ..kernels.launch import apply
from ..tensors.operands import promote
from ..tensors.tensor_type import require_tensor
from . import host_results
from .searching import SEARCH_METHOD, bucket

__all__ = ["isin", "unique_all", "unique_counts", "unique_inverse", "unique_values"]

UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])

_INDEX = np.dtype(np.int64)
# which outputs of each variant have one entry per distinct value (the rest: one per element)
_DISTINCT = {
    "values": (True,),
    "counts": (True, True),
    "inverse": (True, False),
    "all": (True, True, False, True),
}


# ----------------------------------------------------------------------------- kernels


def _runs(x):
    """Sorted flat values, the sorting permutation, run starts and the run count.

    A run starts where the ordering keys change, and at every NaN (each is distinct).
    """
    flat = x.reshape(-1)
    iota = jnp.arange(flat.shape[0], dtype=_INDEX)
    keys, (perm, s) = O.sort_with(flat, (iota, flat), 0, False, True)
    starts = O.has_nan(s)
    for k in keys:
        starts = starts | jnp.concatenate([jnp.ones((min(k.shape[0], 1),), bool), k[1:] != k[:-1]])
    return s, perm, starts, jnp.sum(starts, dtype=_INDEX)


def _unique(s, perm, starts, size, shape, what):
    n = s.shape[0]
    pos = jnp.nonzero(starts, size=size, fill_value=n)[0]
    values = s[pos]
    if what == "values":
        return (values,)
    group = jnp.cumsum(starts, dtype=_INDEX) - 1
    counts = jnp.diff(jnp.concatenate([pos, jnp.full((1,), n, pos.dtype)])).astype(_INDEX)
    if what == "counts":
        return values, counts
    inverse = jnp.zeros((n,), _INDEX).at[perm].set(group).reshape(shape)
    if what == "inverse":
        return values, inverse
    indices = jax.ops.segment_min(perm, group, num_segments=size)
    return values, indices, inverse, counts


def _isin(a, b, invert, np_dtype):
    a = a.astype(np_dtype)
    b = b.reshape(-1).astype(np_dtype)
    if b.shape[0] == 0:
        found = jnp.zeros(a.shape, bool)
    elif jnp.iscomplexobj(a):
        b = jnp.sort(b)
        idx = jnp.searchsorted(b, a, method=SEARCH_METHOD)
        found = b[jnp.minimum(idx, b.shape[0] - 1)] == a
    else:
        (ka,) = O.sort_keys(a)
        kb = jnp.sort(O.sort_keys(b)[0])
        idx = jnp.searchsorted(kb, ka, method=SEARCH_METHOD)
        found = (kb[jnp.minimum(idx, kb.shape[0] - 1)] == ka) & ~O.has_nan(a)
    return ~found if invert else found


# ----------------------------------------------------------------------------- functions


def _unique_parts(x, what, name):
    require_tensor(x, name)
    if isinstance(x._storage._buffer, jax.core.Tracer):
        raise TypeError(
            f"{name}() has a data-dependent output shape and cannot run under a JAX trace"
        )
    values = host_results.host_values(x)
    if values is not None:
        return host_results.to_tensors(host_results.unique(values[0], what), x.device)
    s, perm, starts, count = apply(_runs, (x,), (), multiple=True)
    n = int(count.item())
    parts = apply(_unique, (s, perm, starts), (bucket(n), x.shape, what), multiple=True)
    return [p[:n] if distinct else p for p, distinct in zip(parts, _DISTINCT[what])]


def unique_values(x, /):
    """The distinct values of flattened ``x`` (1-D, ascending, each NaN distinct)."""
    return _unique_parts(x, "values", "unique_values")[0]


def unique_counts(x, /):
    """Namedtuple ``(values, counts)`` of the distinct values of flattened ``x``."""
    return UniqueCountsResult(*_unique_parts(x, "counts", "unique_counts"))


def unique_inverse(x, /):
    """Namedtuple ``(values, inverse_indices)``; ``values[inverse_indices]`` rebuilds ``x``."""
    return UniqueInverseResult(*_unique_parts(x, "inverse", "unique_inverse"))


def unique_all(x, /):
    """Namedtuple ``(values, indices, inverse_indices, counts)`` of flattened ``x``.

    ``indices`` are the first occurrences of each value in the flattened input.
    """
    return UniqueAllResult(*_unique_parts(x, "all", "unique_all"))


def isin(x1, x2, /, *, invert=False):
    """Whether each element of ``x1`` equals some element of ``x2`` (``invert`` negates).

    Either argument may be a Python int (not both); a scalar ``x1`` gives a 0-d result.
    """
    x1, x2, dtype = promote(x1, x2, broadcast=False, name="isin")
    return apply(_isin, (x1, x2), (bool(invert), dtype.np))
