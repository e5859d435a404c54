"""Data parallelism over processes: :class:`DistributedDataParallel`."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
