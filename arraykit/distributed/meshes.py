"""The meshes arraykit.distributed builds over every process's devices."""

from __future__ import annotations

import functools

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["global_mesh"]


def global_mesh(axis_name="data"):
    """A 1-D ``Mesh`` over the devices of every process (rank 0's first), the mesh of
    data parallelism: ``NamedSharding(mesh, P())`` replicates over all processes,
    ``NamedSharding(mesh, P(axis_name))`` splits the batch among them."""
    return _global_mesh(axis_name)


@functools.lru_cache(maxsize=8)
def _global_mesh(axis_name):
    return Mesh(np.array(_by_process()).reshape(-1), (axis_name,))


def _by_process():
    devices = jax.devices()
    rows = [[d for d in devices if d.process_index == p] for p in range(jax.process_count())]
    if len({len(r) for r in rows}) != 1:
        raise RuntimeError(
            "arraykit.distributed needs the same number of devices in every process, got "
            + ", ".join(f"{len(r)} in process {p}" for p, r in enumerate(rows))
        )
    return rows


@functools.lru_cache(maxsize=1)
def process_mesh():
    """A ``(process, local)`` mesh: row p holds process p's devices."""
    return Mesh(np.array(_by_process()), ("process", "local"))


def replicated(sharding):
    """A sharding replicating over the devices of ``sharding``."""
    mesh = getattr(sharding, "mesh", None)
    if mesh is None:
        mesh = Mesh(np.array(sorted(sharding.device_set, key=lambda d: d.id)), ("all",))
    return NamedSharding(mesh, PartitionSpec())


def as_sharding(mesh_or_sharding, ndim):
    """A sharding from a ``Mesh`` (dimension 0 split over all its axes) or a sharding as is."""
    if isinstance(mesh_or_sharding, Mesh):
        names = mesh_or_sharding.axis_names
        spec = PartitionSpec(names if len(names) > 1 else names[0], *([None] * (ndim - 1)))
        return NamedSharding(mesh_or_sharding, spec)
    if isinstance(mesh_or_sharding, jax.sharding.Sharding):
        return mesh_or_sharding
    raise TypeError(f"expected a jax.sharding.Mesh or Sharding, got {type(mesh_or_sharding).__name__}")
