"""Data loading as ``torch.utils.data``: datasets, samplers and :class:`DataLoader`,
whose batches of NumPy data become tensors on a requested device or sharding."""

from .dataloader import DataLoader, default_collate
from .dataset import Dataset, IterableDataset, Subset, TensorDataset, random_split
from .distributed import DistributedSampler
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "Subset", "random_split",
    "Sampler", "SequentialSampler", "RandomSampler", "BatchSampler", "DistributedSampler",
    "DataLoader", "default_collate",
]
