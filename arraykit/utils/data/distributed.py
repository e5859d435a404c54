"""``DistributedSampler``: each process's share of a dataset's indices."""

from __future__ import annotations

import math

from ... import distributed as dist
from ... import random as R
from .generators import permutation
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Rank ``rank``'s share of the indices, one of ``num_replicas`` equal shares
    (defaults from :mod:`arraykit.distributed`).

    With ``shuffle`` the order is a permutation seeded by ``seed + epoch`` (call
    :meth:`set_epoch` at each epoch; every process draws the same one). The indices
    are padded by repeating the first ones so that all shares are equal, or, with
    ``drop_last``, the tail that does not divide evenly is dropped. Share r is every
    ``num_replicas``-th index from position r, as in PyTorch.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None:
            num_replicas = dist.get_world_size()
        if rank is None:
            rank = dist.get_rank()
        if not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        self.shuffle = shuffle
        self.seed = seed
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            generator = R.Generator(R.default_generator().device).manual_seed(self.seed + self.epoch)
            indices = permutation(n, generator)
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch whose permutation the next iteration uses (the same on every process)."""
        self.epoch = epoch
