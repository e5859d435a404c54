"""Data parallelism: :class:`DistributedDataParallel` (over processes) and
:class:`DataParallel` (PyTorch's one-process wrapper)."""

from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
