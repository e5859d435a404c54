"""Datasets: indexable (:class:`Dataset`) or iterable (:class:`IterableDataset`)."""

from __future__ import annotations

import math

from .generators import fresh_generator, permutation

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "random_split"]


class Dataset:
    """A map-style dataset: ``dataset[i]`` for ``i`` in ``range(len(dataset))``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return _Concat([self, other])


class _Concat(Dataset):
    """Datasets one after the other (``a + b``)."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __len__(self):
        return sum(len(d) for d in self.datasets)

    def __getitem__(self, index):
        if index < 0:
            index += len(self)
        for d in self.datasets:
            if index < len(d):
                return d[index]
            index -= len(d)
        raise IndexError("dataset index out of range")


class IterableDataset(Dataset):
    """A stream of samples: subclasses define ``__iter__`` (no indexing, no sampler)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class TensorDataset(Dataset):
    """Samples are the ``index``-th rows of each of ``tensors`` (equal first dimensions);
    NumPy arrays work too and stay NumPy until the loader collates them."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) != 1:
            raise ValueError(f"Size mismatch between tensors: first dimensions {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into non-overlapping random :class:`Subset`\\ s of ``lengths``
    (counts summing to ``len(dataset)``, or fractions summing to 1, the remainder
    given round-robin as PyTorch does)."""
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = permutation(n, fresh_generator(generator))
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + length]))
        start += length
    return out
