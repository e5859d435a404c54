"""arraykit.utils.data against torch.utils.data: the same batches for sequential
sampling, every element once per epoch for the random and distributed samplers."""

import numpy as np
import pytest
import torch
import torch.utils.data as tud
from hypothesis import given, settings, strategies as st

import arraykit as ak
from arraykit.utils import data as akd

X = np.arange(26, dtype=np.float32).reshape(13, 2)
Y = np.arange(13, dtype=np.int64) % 3


def as_numpy(batch):
    if isinstance(batch, (list, tuple)):
        return [as_numpy(b) for b in batch]
    if isinstance(batch, dict):
        return {k: as_numpy(v) for k, v in batch.items()}
    return np.asarray(batch)


@pytest.mark.parametrize("batch_size, drop_last", [(1, False), (4, False), (4, True), (13, False), (20, True)])
@pytest.mark.parametrize("workers", [0, 2])
def test_sequential_batches_match_torch(batch_size, drop_last, workers):
    ours = akd.DataLoader(akd.TensorDataset(X, Y), batch_size=batch_size, drop_last=drop_last,
                          num_workers=workers)
    theirs = tud.DataLoader(tud.TensorDataset(torch.from_numpy(X), torch.from_numpy(Y)),
                            batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    got, want = list(ours), list(theirs)
    assert len(got) == len(want)
    for (gx, gy), (wx, wy) in zip(got, want):
        assert isinstance(gx, ak.Tensor) and gx.dtype == ak.float32 and gy.dtype == ak.int64
        np.testing.assert_array_equal(gx.numpy(), wx.numpy())
        np.testing.assert_array_equal(gy.numpy(), wy.numpy())


def test_default_collate_matches_torch():
    samples = [{"a": 1, "b": 2.5, "c": np.ones(2, np.float32), "s": "x", "t": (1, 2)},
               {"a": 3, "b": -1.0, "c": np.zeros(2, np.float32), "s": "y", "t": (3, 4)}]
    ours = akd.default_collate(samples)
    theirs = tud.default_collate(samples)
    assert ours["s"] == theirs["s"]
    for key in ("a", "b", "c"):
        assert str(ours[key].dtype).split(".")[-1] == str(theirs[key].dtype).split(".")[-1]
        np.testing.assert_array_equal(ours[key].numpy(), theirs[key].numpy())
    for o, t in zip(ours["t"], theirs["t"]):
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    tensors = [ak.asarray([1.0, 2.0]), ak.asarray([3.0, 4.0])]
    np.testing.assert_array_equal(akd.default_collate(tensors).numpy(), [[1, 2], [3, 4]])


def test_collate_fn_sampler_and_batch_sampler():
    ds = akd.TensorDataset(X, Y)
    loader = akd.DataLoader(ds, batch_sampler=[[0, 5], [2]], collate_fn=lambda s: [i for _, i in s])
    assert list(loader) == [[Y[0], Y[5]], [Y[2]]]
    loader = akd.DataLoader(ds, batch_size=3, sampler=[12, 0, 7, 3])
    np.testing.assert_array_equal(np.concatenate([y.numpy() for _, y in loader]), Y[[12, 0, 7, 3]])
    with pytest.raises(ValueError, match="mutually exclusive"):
        akd.DataLoader(ds, sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="mutually exclusive"):
        akd.DataLoader(ds, batch_sampler=[[0]], batch_size=2)
    single = list(akd.DataLoader(ds, batch_size=None))
    assert len(single) == 13 and single[4][0].shape == (2,)


def test_batches_go_to_the_requested_device():
    device = ak.device("cpu")
    (x, y), = list(akd.DataLoader(akd.TensorDataset(X[:2], Y[:2]), batch_size=2, device=device))
    assert x.device == device and y.device == device


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 30), batch=st.integers(1, 7), seed=st.integers(0, 2**31), drop=st.booleans())
def test_random_sampler_visits_every_element_once(n, batch, seed, drop):
    ds = akd.TensorDataset(np.arange(n))
    loader = akd.DataLoader(ds, batch_size=batch, shuffle=True, drop_last=drop,
                            generator=ak.Generator().manual_seed(seed))
    seen = [v for (b,) in loader for v in b.tolist()]
    if drop:
        assert len(seen) == n // batch * batch and len(set(seen)) == len(seen)
    else:
        assert sorted(seen) == list(range(n))
    again = [v for (b,) in akd.DataLoader(ds, batch_size=batch, shuffle=True, drop_last=drop,
                                          generator=ak.Generator().manual_seed(seed)) for v in b.tolist()]
    assert again == seen


def test_random_sampler_follows_manual_seed_and_replacement():
    ds = list(range(20))
    ak.manual_seed(3)
    first = list(akd.RandomSampler(ds))
    ak.manual_seed(3)
    assert list(akd.RandomSampler(ds)) == first and sorted(first) == ds
    drawn = list(akd.RandomSampler(ds, replacement=True, num_samples=50))
    assert len(drawn) == 50 and all(0 <= i < 20 for i in drawn)
    assert len(list(akd.RandomSampler(ds, num_samples=45))) == 45


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 40), replicas=st.integers(1, 5), shuffle=st.booleans(), drop=st.booleans(),
       epoch=st.integers(0, 3))
def test_distributed_sampler_matches_torch_shares(n, replicas, shuffle, drop, epoch):
    ds = list(range(n))
    ours = [akd.DistributedSampler(ds, replicas, r, shuffle=shuffle, drop_last=drop) for r in range(replicas)]
    theirs = [tud.DistributedSampler(ds, replicas, r, shuffle=shuffle, drop_last=drop) for r in range(replicas)]
    for s in ours:
        s.set_epoch(epoch)
    shares = [list(s) for s in ours]
    assert [len(s) for s in ours] == [len(t) for t in theirs] == [len(s) for s in shares]
    flat = [i for s in shares for i in s]
    if drop:
        assert len(set(flat)) == len(flat)
    else:
        assert set(flat) == set(ds)
    if not shuffle:
        assert shares == [list(t) for t in theirs]
    again = akd.DistributedSampler(ds, replicas, 0, shuffle=shuffle, drop_last=drop)
    again.set_epoch(epoch)
    assert list(again) == shares[0]


def test_distributed_sampler_defaults_need_a_group():
    with pytest.raises(ValueError, match="init_process_group"):
        akd.DistributedSampler(list(range(4)))
    with pytest.raises(ValueError, match="Invalid rank"):
        akd.DistributedSampler(list(range(4)), num_replicas=2, rank=2)


def test_random_split_and_subset():
    parts = akd.random_split(list(range(10)), [3, 7], generator=ak.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted([parts[0][i] for i in range(3)] + [parts[1][i] for i in range(7)]) == list(range(10))
    fractions = akd.random_split(list(range(10)), [0.5, 0.3, 0.2])
    assert [len(p) for p in fractions] == [len(p) for p in tud.random_split(list(range(10)), [0.5, 0.3, 0.2])]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        akd.random_split(list(range(10)), [3, 3])
    sub = akd.Subset(list("abcdef"), [5, 0])
    assert len(sub) == 2 and sub[0] == "f" and sub[1] == "a"


class Stream(akd.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(np.arange(self.n, dtype=np.int64))

    def __len__(self):
        return self.n


class TorchStream(tud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(np.arange(self.n, dtype=np.int64))


@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_dataset_matches_torch(drop_last):
    ours = [b.tolist() for b in akd.DataLoader(Stream(7), batch_size=3, drop_last=drop_last)]
    theirs = [b.tolist() for b in tud.DataLoader(TorchStream(7), batch_size=3, drop_last=drop_last)]
    assert ours == theirs
    assert len(akd.DataLoader(Stream(7), batch_size=3, drop_last=drop_last)) == len(ours)
    with pytest.raises(ValueError, match="IterableDataset"):
        akd.DataLoader(Stream(3), shuffle=True)


def test_worker_threads_prefetch_in_order():
    started = []
    loader = akd.DataLoader(akd.TensorDataset(X, Y), batch_size=2, num_workers=3, prefetch_factor=2,
                            worker_init_fn=started.append, timeout=30)
    got = [y.tolist() for _, y in loader]
    assert got == [Y[i:i + 2].tolist() for i in range(0, 13, 2)]
    assert sorted(started) == list(range(len(started))) and 1 <= len(started) <= 3
    with pytest.raises(ValueError, match="prefetch_factor"):
        akd.DataLoader(X, prefetch_factor=2)
