"""Tensors over host (NumPy) arrays read from a checkpoint, aliased where JAX can."""

from __future__ import annotations

import numpy as np

from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import host_to_device
from ..core.storage import Storage
from ..tensors.tensor_type import Tensor


def storage_from_host(arr, device, may_alias):
    """A :class:`Storage` on ``device`` holding the host array ``arr`` (flat, or shaped
    as the global array of a storage placed over several devices).

    With ``may_alias`` the buffer aliases ``arr`` where JAX can (a CPU device,
    aligned memory: a read-only mapped file stays mapped) and the storage is marked
    shared, so an in-place write copies it first and ``arr`` is never written.
    """
    dtype = D.from_numpy(arr.dtype)
    arr = np.ascontiguousarray(arr)
    if may_alias:
        buf, aliased = host_to_device(arr, device, copy=False)
    else:
        buf, aliased = host_to_device(arr, device), False
    return Storage(buf, dtype, device, shared=aliased)


def tensor_from_host(arr, device, may_alias):
    """A tensor of ``arr``'s shape over a new storage holding it (see :func:`storage_from_host`)."""
    storage = storage_from_host(arr, device, may_alias)
    return Tensor._make(storage, L.contiguous(np.shape(arr)), storage.dtype)
