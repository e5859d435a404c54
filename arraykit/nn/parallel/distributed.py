"""``DistributedDataParallel``: PyTorch's wrapper, as a placement over a global mesh.

PyTorch's DDP keeps a replica of the model per process and all-reduces the
gradients in hooks. Here the model's parameters and buffers become one replicated
tensor each over the devices of every process (``NamedSharding(mesh, P())``), each
process's batch becomes its rows of one global batch split over the mesh, and the
gradient all-reduce is the one XLA inserts (eagerly per operation, or inside an
``arraykit.jit`` step): the results are those of one process on the whole batch.
"""

from __future__ import annotations

import contextlib

from jax.sharding import NamedSharding, PartitionSpec

from ... import distributed as dist
from ...core.devices import addressable
from ...tensors.tensor_type import Tensor, is_traced
from ..module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Data parallelism over every process of the group (see the module docstring).

    At construction rank 0's parameters and buffers are broadcast to every process
    (as PyTorch does) and then replicated over ``mesh`` (default:
    :func:`arraykit.distributed.global_mesh`). Calling it places each process-local
    tensor argument as this process's rows of a global batch split on ``dim``
    (:func:`arraykit.distributed.from_process_local`); global tensors (for
    instance batches of a ``DataLoader`` made with ``device=ddp.input_sharding``)
    and traced ones inside ``arraykit.jit`` pass as they are. Targets for the loss
    must be placed the same way (``ddp.shard(y)``). ``module`` is the wrapped model.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 mesh=None):
        super().__init__()
        if dim != 0:
            raise ValueError(f"DistributedDataParallel: only the batch dimension 0 is split, got dim={dim}")
        self.module = module
        self.mesh = dist.global_mesh() if mesh is None else mesh
        self.dim = dim
        self.input_sharding = NamedSharding(self.mesh, PartitionSpec(self.mesh.axis_names))
        if dist.is_initialized() and dist.get_world_size() > 1:
            for t in (*module.parameters(), *(module.buffers() if broadcast_buffers else ())):
                if addressable(t.device):
                    dist.broadcast(t.detach(), src=0)
        module.to(NamedSharding(self.mesh, PartitionSpec()))

    def shard(self, x):
        """``x`` (each process's own rows) as a global tensor split like the inputs;
        a global or traced tensor is returned as is."""
        if not isinstance(x, Tensor) or not addressable(x.device) or is_traced(x):
            return x
        return dist.from_process_local(x, self.input_sharding)

    def forward(self, *inputs, **kwargs):
        """The wrapped module on the inputs placed as rows of a global batch."""
        inputs = tuple(self.shard(x) for x in inputs)
        kwargs = {k: self.shard(v) for k, v in kwargs.items()}
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """PyTorch's context for gradient accumulation without communication. The
        gradients here are the global batch's (XLA reduces them within each
        backward), so accumulating inside or outside this block gives the same
        ``.grad`` as PyTorch's after its synchronising backward."""
        yield

