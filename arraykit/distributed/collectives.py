"""Eager collectives on each process's own tensors, as ``torch.distributed`` spells
them, computed by small jitted JAX programs over a mesh of every process's devices
(XLA inserts the exchange: gloo on the CPU, NCCL on GPUs).

Each process passes its own (process-local) tensor; results are written in place
(``all_reduce``, ``broadcast``) or into the given tensors (``all_gather``). Every
process must make the same calls in the same order, as in PyTorch.
"""

from __future__ import annotations

import enum
import functools
import pickle

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from ..api.creation import asarray
from ..core import x64
from ..core.devices import addressable
from ..kernels.export import dense_values
from ..tensors.tensor_type import require_tensor
from .meshes import process_mesh
from .process_group import _no_subgroups, get_rank, get_world_size

__all__ = [
    "ReduceOp", "all_reduce", "all_gather", "all_gather_into_tensor", "broadcast", "barrier",
    "all_gather_object", "gather_object", "broadcast_object_list",
]


class ReduceOp(enum.Enum):
    """How :func:`all_reduce` combines the processes' values."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


_REDUCE = {
    ReduceOp.SUM: jnp.sum, ReduceOp.AVG: jnp.mean, ReduceOp.PRODUCT: jnp.prod,
    ReduceOp.MIN: jnp.min, ReduceOp.MAX: jnp.max,
}


class _Completed:
    """What ``async_op=True`` returns: arraykit's collectives finish before returning."""

    def wait(self, timeout=None):
        """Return True: the collective has finished."""
        return True

    def is_completed(self):
        """Return True: the collective has finished."""
        return True


def _done(async_op):
    return _Completed() if async_op else None


def _stacked(values):
    """A global ``(world_size, *shape)`` array whose row p is process p's ``values``."""
    mesh = process_mesh()
    sharding = NamedSharding(mesh, PartitionSpec("process"))
    pieces = [jax.device_put(values[None], d) for d in mesh.local_devices]
    return jax.make_array_from_single_device_arrays(
        (mesh.shape["process"], *values.shape), sharding, pieces
    )


@functools.lru_cache(maxsize=None)
def _program(body):
    return jax.jit(body, out_shardings=NamedSharding(process_mesh(), PartitionSpec()))


@x64.scoped
def _exchange(body, values):
    """``body`` of every process's ``values`` stacked, replicated: this process's copy."""
    return _program(body)(_stacked(values)).addressable_data(0)


def _local(tensor, name):
    require_tensor(tensor, name)
    if not addressable(tensor.device):
        raise ValueError(
            f"{name} takes each process's own tensor; this one is already spread over several "
            "processes (use arraykit.distributed.all_gather_global or to_process_local)"
        )
    return dense_values(tensor)


def _write(tensor, values):
    tensor.copy_(asarray(values, device=tensor.device))


def _reduce_body(op):
    reduce = _REDUCE[op]
    return lambda stacked: reduce(stacked, axis=0).astype(stacked.dtype)


_BODIES = {op: _reduce_body(op) for op in ReduceOp}


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Combine ``tensor`` over all processes by ``op`` (``ReduceOp.SUM``, ``AVG``,
    ``PRODUCT``, ``MIN``, ``MAX``), in place on every process."""
    _no_subgroups(group)
    if not isinstance(op, ReduceOp):
        raise ValueError(f"all_reduce: op must be an arraykit.distributed.ReduceOp, got {op!r}")
    if op is ReduceOp.AVG and tensor.dtype.kind not in ("float", "complex"):
        raise TypeError(f"all_reduce: ReduceOp.AVG needs a floating-point tensor, got {tensor.dtype}")
    _write(tensor, _exchange(_BODIES[op], _local(tensor, "all_reduce")))
    return _done(async_op)


def _gathered(tensor, name):
    return _exchange(_identity, _local(tensor, name))


def _identity(stacked):
    return stacked


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill ``tensor_list`` (``world_size`` tensors of ``tensor``'s shape) with every
    process's ``tensor``, rank order."""
    _no_subgroups(group)
    world = get_world_size()
    if len(tensor_list) != world:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors, the world size is {world}")
    stacked = _gathered(tensor, "all_gather")
    for rank, out in enumerate(tensor_list):
        _write(out, stacked[rank])
    return _done(async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every process's ``input_tensor`` into ``output_tensor``: concatenated on
    dimension 0 (shape ``(world_size * n, ...)``) or stacked (``(world_size, n, ...)``)."""
    _no_subgroups(group)
    world = get_world_size()
    shape = tuple(input_tensor.shape)
    stacked_shape = (world, *shape)
    concatenated = (world * shape[0], *shape[1:]) if shape else None
    if tuple(output_tensor.shape) not in (stacked_shape, concatenated):
        raise ValueError(
            f"all_gather_into_tensor: output shape {tuple(output_tensor.shape)} must be "
            f"{concatenated} or {stacked_shape} for input shape {shape} and world size {world}"
        )
    stacked = _gathered(input_tensor, "all_gather_into_tensor")
    _write(output_tensor, stacked.reshape(output_tensor.shape))
    return _done(async_op)


def broadcast(tensor, src, group=None, async_op=False):
    """Copy rank ``src``'s ``tensor`` into every process's ``tensor``, in place."""
    _no_subgroups(group)
    world = get_world_size()
    if not 0 <= src < world:
        raise ValueError(f"broadcast: src {src} is outside [0, world_size={world})")
    _write(tensor, _gathered(tensor, "broadcast")[src])
    return _done(async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every process reached its call to ``barrier``."""
    _no_subgroups(group)
    _exchange(_BODIES[ReduceOp.SUM], jnp.zeros((), jnp.int32)).block_until_ready()
    return _done(async_op)


# ---------------------------------------------------------------------- Python objects


def _gather_bytes(obj):
    """Every process's pickled ``obj``, unpickled, rank order."""
    data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    sizes = np.asarray(_exchange(_identity, jnp.asarray(np.int32(data.size))))
    padded = np.zeros(int(sizes.max()), np.uint8)
    padded[: data.size] = data
    rows = np.asarray(_exchange(_identity, jnp.asarray(padded)))
    return [pickle.loads(rows[r, : sizes[r]].tobytes()) for r in range(len(sizes))]


def all_gather_object(object_list, obj, group=None):
    """Fill ``object_list`` (``world_size`` long) with every process's picklable ``obj``."""
    _no_subgroups(group)
    world = get_world_size()
    if len(object_list) != world:
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} items, the world size is {world}")
    object_list[:] = _gather_bytes(obj)


def gather_object(obj, object_gather_list=None, dst=0, group=None):
    """Collect every process's picklable ``obj`` into ``object_gather_list`` on rank
    ``dst`` (``world_size`` long there; None elsewhere)."""
    _no_subgroups(group)
    gathered = _gather_bytes(obj)
    if get_rank() == dst:
        if object_gather_list is None or len(object_gather_list) != len(gathered):
            raise ValueError(f"gather_object: rank {dst} needs an object_gather_list of {len(gathered)} items")
        object_gather_list[:] = gathered


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """Replace ``object_list``'s items on every process with rank ``src``'s (picklable)."""
    _no_subgroups(group)
    object_list[:] = _gather_bytes(list(object_list))[src]
