"""Argument checks shared by the :mod:`arraykit.nn.functional` families: dims,
reductions, floating inputs, index ranges."""

from __future__ import annotations

import operator

import jax.numpy as jnp

from ...core import deferred_checks
from ...core import layout as L
from ...core.devices import addressable
from ...kernels.launch import apply
from ...tensors.tensor_type import require_tensor

_REDUCTIONS = ("none", "mean", "sum")


def _dim(dim, ndim, name):
    if dim is None:
        raise TypeError(f"{name}: dim must be given (an int)")
    return L.normalize_dim(operator.index(dim), ndim)


def _reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction!r} is not a valid value for reduction; expected one of {_REDUCTIONS}")
    return reduction


def _floating(x, name):
    require_tensor(x, name)
    if x.dtype.kind not in ("float", "complex"):
        raise TypeError(f"{name}: expected a floating-point tensor, got {x.dtype}")
    return x




def _first_outside(values, size, ignore):
    """``[found, value]``: whether an element of ``values`` lies outside ``[0, size)``
    other than ``ignore`` (None: no exception), and the first such element."""
    flat = values.reshape(-1)
    bad = (flat < 0) | (flat >= size)
    if ignore is not None:
        bad &= flat != ignore
    return jnp.stack([jnp.any(bad).astype(flat.dtype), flat[jnp.argmax(bad)]])


def _check_indices(indices, size, ignore, error):
    """Raise ``error(value)`` for an element of the concrete ``indices`` outside
    ``[0, size)`` (``ignore`` excepted, unless None): at once (read on the host, or by
    a kernel for a tensor spread over several processes, so that every process raises),
    or, on a device that defers its checks, from a kernel read where the host next
    reads values (:mod:`arraykit.core.deferred_checks`)."""
    device = indices._storage.device
    if deferred_checks.deferring(device) or not addressable(device):
        # across processes: every process computes the same (replicated) verdict, so all raise
        found = apply(_first_outside, (indices,), (size, ignore))._storage.buffer
        deferred_checks.check(device, found, lambda host: error(int(host[1])) if host[0] else None)
        return
    values = indices._values()  # a snapshot: numpy() would move the storage to NumPy memory
    outside = (values < 0) | (values >= size)
    bad = values[outside if ignore is None else outside & (values != ignore)]
    if bad.size:
        raise error(int(bad[0]))


