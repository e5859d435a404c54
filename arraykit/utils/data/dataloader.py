"""``DataLoader``: batches of a dataset, collated into tensors on a device or sharding,
optionally prepared ahead by worker threads."""

from __future__ import annotations

import collections.abc
import concurrent.futures
import itertools
import numbers
import threading

import numpy as np

from ... import distributed as dist
from ...api.creation import asarray
from ...api.manipulation import stack
from ...core.devices import Placement, as_device
from ...tensors.tensor_type import Tensor
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_collate"]


def _collate(batch, convert):
    first = batch[0]
    if isinstance(first, Tensor):
        return convert(stack(list(batch)))
    if isinstance(first, np.ndarray) or (isinstance(first, np.generic) and not isinstance(first, np.str_)):
        return convert(np.stack(batch))
    if isinstance(first, bool):
        return convert(np.asarray(batch, dtype=np.bool_))
    if isinstance(first, numbers.Integral):
        return convert(np.asarray(batch, dtype=np.int64))
    if isinstance(first, float):
        return convert(np.asarray(batch, dtype=np.float64))
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, collections.abc.Mapping):
        return {key: _collate([d[key] for d in batch], convert) for key in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(_collate(list(s), convert) for s in zip(*batch)))
    if isinstance(first, collections.abc.Sequence):
        sizes = {len(s) for s in batch}
        if len(sizes) != 1:
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [_collate(list(s), convert) for s in zip(*batch)]
        return tuple(columns) if isinstance(first, tuple) else columns
    raise TypeError(f"default_collate: batch must contain tensors, NumPy arrays, numbers, dicts or lists; found {type(first)}")


def default_collate(batch):
    """Stack a list of samples into a batch as PyTorch does: tensors and NumPy arrays
    stacked (a new first dimension), Python ints int64 and floats float64 tensors,
    strings kept in a list, tuples, lists, named tuples and dicts collated per field."""
    return _collate(batch, asarray)


class DataLoader:
    """Batches of ``dataset``, as ``torch.utils.data.DataLoader``.

    ``batch_size``, ``shuffle`` (a :class:`RandomSampler` drawing from
    ``generator``), ``sampler``, ``batch_sampler``, ``drop_last`` and ``collate_fn``
    as in PyTorch. ``device`` (arraykit's addition): where batches go, a device or a
    JAX sharding; with a sharding over the devices of several processes each
    process's batch becomes its rows of one global batch
    (:func:`arraykit.distributed.from_process_local`, pair it with a
    ``DistributedSampler``). The default collation stacks NumPy data on the host
    and transfers each field once. ``num_workers > 0`` prepares up to
    ``prefetch_factor * num_workers`` batches ahead in worker threads (reading,
    collating and transferring, so the next batch's transfer overlaps the step);
    ``worker_init_fn(worker_id)`` runs once in each. ``timeout`` bounds the wait for
    a batch (seconds, 0: none). ``pin_memory`` is accepted for PyTorch code: with
    ``device`` the transfer is made by the loader itself.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, generator=None, *, prefetch_factor=None,
                 persistent_workers=False, device=None):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if prefetch_factor is not None and num_workers == 0:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing; "
                             "let num_workers > 0 to enable it")
        iterable = isinstance(dataset, IterableDataset)
        if iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle, sampler "
                             "and batch_sampler options")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif not iterable:
            if sampler is None:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
            if batch_size is not None:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers else prefetch_factor
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.device = None if device is None else as_device(device)
        self.collate_fn = collate_fn
        self._convert = self._converter()

    def _converter(self):
        device = self.device
        if device is None:
            return asarray
        if isinstance(device, Placement) and not device.addressable:
            return lambda v: dist.from_process_local(v, device.sharding)
        return lambda v: asarray(v, device=device)

    def _collated(self, samples):
        if self.collate_fn is not None:
            batch = self.collate_fn(samples)
            return batch if self.device is None else _moved(batch, self._convert)
        if self.batch_size is None and self.batch_sampler is None:
            return _moved(samples, self._convert)
        return _collate(samples, self._convert)

    def _index_batches(self):
        if isinstance(self.dataset, IterableDataset):
            stream = iter(self.dataset)
            if self.batch_size is None:
                yield from stream
                return
            while True:
                chunk = list(itertools.islice(stream, self.batch_size))
                if not chunk or (self.drop_last and len(chunk) < self.batch_size):
                    return
                yield chunk
        elif self.batch_sampler is not None:
            for indices in self.batch_sampler:
                yield [self.dataset[i] for i in indices]
        else:
            for i in self.sampler:
                yield self.dataset[i]

    def __iter__(self):
        if self.num_workers == 0:
            for samples in self._index_batches():
                yield self._collated(samples)
            return
        yield from self._prefetched()

    def _prefetched(self):
        ids = itertools.count()
        lock = threading.Lock()

        def start():
            if self.worker_init_fn is not None:
                with lock:
                    worker_id = next(ids)
                self.worker_init_fn(worker_id)

        ahead = self.num_workers * self.prefetch_factor
        pending = collections.deque()
        sources = self._index_batches()
        with concurrent.futures.ThreadPoolExecutor(self.num_workers, initializer=start) as pool:
            try:
                for samples in sources:
                    pending.append(pool.submit(self._collated, samples))
                    if len(pending) >= ahead:
                        yield pending.popleft().result(timeout=self.timeout or None)
                while pending:
                    yield pending.popleft().result(timeout=self.timeout or None)
            finally:
                for future in pending:
                    future.cancel()

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)


def _moved(batch, convert):
    """``batch`` (a collate_fn's result) with its arrays and tensors converted."""
    if isinstance(batch, (Tensor, np.ndarray)):
        return convert(batch)
    if isinstance(batch, collections.abc.Mapping):
        return {k: _moved(v, convert) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(_moved(v, convert) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(_moved(v, convert) for v in batch)
    return batch
