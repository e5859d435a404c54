"""Global tensors: one tensor whose shards live on the devices of several processes
(a JAX array over a mesh spanning processes), made from and taken back to each
process's own rows."""

from __future__ import annotations

import jax
import numpy as np

from ..api.creation import asarray
from ..core import x64
from ..core.devices import Placement, addressable, default_device
from ..kernels.export import dense_values
from ..tensors.tensor_type import require_tensor
from .meshes import as_sharding, replicated

__all__ = ["from_process_local", "to_process_local", "all_gather_global"]


@x64.scoped
def from_process_local(local, mesh_or_sharding):
    """A global tensor from each process's ``local`` rows (a tensor, NumPy or JAX array).

    ``mesh_or_sharding``: a ``NamedSharding`` (its first split dimension is the one
    the processes' rows are stacked on), or a ``Mesh`` (dimension 0 split over all of
    its axes). Process p's rows come after process p-1's; no data leaves its host.
    Every process calls it with rows of the same shape but along the split dimension.
    """
    if hasattr(local, "_storage"):
        require_tensor(local, "from_process_local")
        if not addressable(local.device):
            raise ValueError("from_process_local: the tensor is already spread over several processes")
        values = dense_values(local)
    else:
        values = local if isinstance(local, jax.Array) else np.asarray(local)
    sharding = as_sharding(mesh_or_sharding, values.ndim)
    return asarray(jax.make_array_from_process_local_data(sharding, values))


def to_process_local(tensor):
    """This process's rows of a global tensor (the block of it that this process's
    devices hold), as a tensor on this process's default device: the inverse of
    :func:`from_process_local`. A process-local tensor is returned as is."""
    require_tensor(tensor, "to_process_local")
    if addressable(tensor.device):
        return tensor
    values = dense_values(tensor)
    shards = values.addressable_shards
    starts = [min(s.index[d].start or 0 for s in shards) for d in range(values.ndim)]
    stops = [max(values.shape[d] if s.index[d].stop is None else s.index[d].stop for s in shards)
             for d in range(values.ndim)]
    block = np.empty([b - a for a, b in zip(starts, stops)], values.dtype)
    for shard in shards:
        where = tuple(
            slice((i.start or 0) - a, (values.shape[d] if i.stop is None else i.stop) - a)
            for d, (i, a) in enumerate(zip(shard.index, starts))
        )
        block[where] = np.asarray(shard.data)
    return asarray(block, device=default_device())


@x64.scoped
def all_gather_global(tensor):
    """All the values of a global tensor, as a tensor on this process's default device
    (every process gets them: an all-gather between processes, so all must call it).
    A process-local tensor is returned as is."""
    require_tensor(tensor, "all_gather_global")
    device = tensor.device
    if not isinstance(device, Placement) or device.addressable:
        return tensor
    values = dense_values(tensor)
    whole = jax.jit(lambda v: v, out_shardings=replicated(device.sharding))(values)
    return asarray(whole.addressable_data(0), device=default_device())
