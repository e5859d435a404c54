"""Training on several processes and hosts: ``torch.distributed``'s names over JAX's
multi-process runtime (``jax.distributed``, a global mesh, gloo collectives on the
CPU, NCCL on GPUs). A thin layer, not a runtime of its own.

* the process group: :func:`init_process_group`, :func:`get_rank`,
  :func:`get_world_size`, :func:`barrier`, :func:`destroy_process_group`;
* eager collectives on each process's tensors (:func:`all_reduce`,
  :func:`all_gather`, :func:`broadcast`) and on small Python objects;
* global tensors spread over every process's devices: :func:`from_process_local`,
  :func:`to_process_local`, :func:`all_gather_global`, :func:`global_mesh`;
* the launcher: ``python -m arraykit.distributed.run --nproc-per-node N script.py``.

See docs/guide/distributed.md.
"""

from .collectives import (
    ReduceOp, all_gather, all_gather_into_tensor, all_gather_object, all_reduce, barrier,
    broadcast, broadcast_object_list, gather_object,
)
from .global_tensors import all_gather_global, from_process_local, to_process_local
from .meshes import global_mesh
from .process_group import (
    destroy_process_group, get_backend, get_local_rank, get_rank, get_world_size,
    init_process_group, is_available, is_initialized,
)

__all__ = [
    "init_process_group", "destroy_process_group", "is_initialized", "is_available",
    "get_rank", "get_world_size", "get_local_rank", "get_backend", "barrier",
    "ReduceOp", "all_reduce", "all_gather", "all_gather_into_tensor", "broadcast",
    "all_gather_object", "gather_object", "broadcast_object_list",
    "from_process_local", "to_process_local", "all_gather_global", "global_mesh",
]
