"""``from_numpy`` and ``Tensor.numpy()`` share memory both ways, as in PyTorch.

Each scenario runs on PyTorch (``torch.from_numpy`` on one copy of the input)
and on arraykit (``arraykit.from_numpy`` on another copy); after every step the
two NumPy arrays and the two tensors must hold the same values. Further tests
check what PyTorch cannot tell us: a write costs O(write) (no storage-sized
buffer appears), concurrent readers never see half of a write, the memory
outlives every name for it, and caches keyed on versions notice NumPy's writes.
"""

from __future__ import annotations

import gc
import threading
import tracemalloc

import jax
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import arraykit as ak
from arraykit.core import deferred_checks

SETTINGS = settings(max_examples=40, deadline=None)


def twins(a):
    """(NumPy array for torch, torch tensor over it, NumPy array for arraykit, tensor over it)."""
    a_t, a_k = np.array(a), np.array(a)
    return a_t, torch.from_numpy(a_t), a_k, ak.from_numpy(a_k)


def agree(a_t, t, a_k, x):
    np.testing.assert_array_equal(a_k, a_t)
    np.testing.assert_array_equal(x._values(), t.numpy())
    assert x.shape == tuple(t.shape) and x.stride() == t.stride()
    assert x.storage_offset() == t.storage_offset()


def test_the_issue_example():
    a_t, t, a_k, x = twins(np.zeros((2, 3)))
    assert x.data_ptr() == a_k.ctypes.data and x.dtype is ak.float64
    t.add_(1.0)
    x.add_(1.0)
    agree(a_t, t, a_k, x)
    assert a_k[1, 2] == 1.0
    a_t[0, 0] = 7.0
    a_k[0, 0] = 7.0
    agree(a_t, t, a_k, x)
    assert x[0, 0].item() == 7.0
    a_t = a_t + 1.0  # rebinding makes a new array; the tensors keep the old memory
    a_k = a_k + 1.0
    assert x[0, 0].item() == t[0, 0].item() == 7.0
    assert a_k[0, 0] == 8.0


STEPS = {
    "add_": lambda lib, v: v.add_(1),
    "mul_ scalar": lambda lib, v: v.mul_(3),
    "setitem": lambda lib, v: v.__setitem__(0, 5),
    "fill_": lambda lib, v: v.fill_(-2),
    "copy_ flipped self": lambda lib, v: v.copy_(v.flip(0)),
    "clamp_": lambda lib, v: v.clamp_(0, 4),
    "masked_fill_": lambda lib, v: v.masked_fill_(v > 2, 9),
    "zero_": lambda lib, v: v.zero_(),
    "index_add_": lambda lib, v: v.index_add_(
        0, lib.tensor([0, 0], device="cpu"), v[:1].expand(2, *v.shape[1:]).clone()),
    "scatter_": lambda lib, v: v.scatter_(0, lib.zeros(v.shape, dtype=lib.int64, device="cpu")[:1], 8),
    "iadd": lambda lib, v: v.__iadd__(v * 2),
}

VIEWS = {
    "whole": lambda v: v,
    "transposed": lambda v: v.t(),
    "row": lambda v: v[1],
    "column": lambda v: v[:, 2],
    "strided": lambda v: v[::2, 1::2],
    "narrow": lambda v: v.narrow(1, 1, 2),
    "flat view": lambda v: v.view(-1),
}


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("step", STEPS)
def test_writes_through_views_reach_numpy(view, step):
    a_t, t, a_k, x = twins(np.arange(12, dtype=np.int64).reshape(3, 4))
    tv, xv = VIEWS[view](t), VIEWS[view](x)
    STEPS[step](ak, xv)
    STEPS[step](torch, tv)
    agree(a_t, t, a_k, x)
    np.testing.assert_array_equal(xv._values(), tv.numpy())
    a_t[2, 3] = -100  # NumPy's side, after the write
    a_k[2, 3] = -100
    agree(a_t, t, a_k, x)
    np.testing.assert_array_equal((xv * 1)._values(), (tv * 1).numpy())


def test_arrays_that_are_views_of_larger_arrays():
    base_t, base_k = np.arange(20.0), np.arange(20.0)
    t, x = torch.from_numpy(base_t[3:15:3]), ak.from_numpy(base_k[3:15:3])
    assert x.stride() == t.stride() == (3,)
    t.mul_(-1)
    x.mul_(-1)
    np.testing.assert_array_equal(base_k, base_t)
    m_t, m_k = np.arange(24.0).reshape(4, 6), np.arange(24.0).reshape(4, 6)
    t, x = torch.from_numpy(m_t.T), ak.from_numpy(m_k.T)
    assert x.stride() == t.stride() and x.shape == tuple(t.shape)
    t[1:3] = 0
    x[1:3] = 0
    np.testing.assert_array_equal(m_k, m_t)
    assert x.data_ptr() == m_k.ctypes.data


def test_negative_strides_are_shared_too():
    a = np.arange(6.0)
    x = ak.from_numpy(a[::-1])  # PyTorch refuses negative strides; arraykit keeps them
    assert x.stride() == (-1,) and x.tolist() == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]
    x[0] = -1.0
    assert a[5] == -1.0
    with pytest.raises(ValueError):
        torch.from_numpy(a[::-1])


def test_numpy_shares_memory_like_pytorch():
    t, x = torch.arange(12.0).reshape(3, 4), ak.arange(12.0, device="cpu").reshape(3, 4)
    row_t, row_k = t[1], x[1]
    n_t, n_k = t.t().numpy(), x.t().numpy()
    assert n_k.strides == n_t.strides and n_k.flags.writeable
    t.add_(1)
    x.add_(1)
    np.testing.assert_array_equal(n_k, n_t)
    n_t[0, 1] = -5.0
    n_k[0, 1] = -5.0
    row_t.mul_(2)  # another view of the storage, made before numpy()
    row_k.mul_(2)
    np.testing.assert_array_equal(x._values(), t.numpy())
    np.testing.assert_array_equal(n_k, n_t)
    assert x.numpy().ctypes.data == x.data_ptr()
    b = x[::2].numpy()
    b[...] = 0
    assert x[2].tolist() == [0.0] * 4


def test_numpy_of_a_storage_from_numpy_is_the_same_memory():
    a = np.arange(6.0).reshape(2, 3)
    x = ak.from_numpy(a)
    n = x.numpy()
    assert n.ctypes.data == a.ctypes.data and np.shares_memory(n, a)
    assert np.shares_memory(np.asarray(x), a) and not np.shares_memory(np.array(x), a)


def test_copies_stay_copies():
    a = np.arange(4.0)
    for x in (ak.asarray(a), ak.tensor(a), ak.from_numpy(a).clone(), ak.from_numpy(a) + 0):
        a[0] = 100.0
        assert x[0].item() != 100.0
        x[1] = -1.0
        assert a[1] == 1.0
        a[0] = 0.0
    snap = ak.arange(3.0)
    values = snap.tolist()
    snap.add_(1)
    assert values == [0.0, 1.0, 2.0]


def test_lifetime():
    x = ak.from_numpy(np.arange(1000.0))
    gc.collect()
    assert x[999].item() == 999.0 and x.sum().item() == 499500.0
    n = ak.arange(50.0).numpy()  # the tensor is gone at once
    gc.collect()
    assert n.sum() == 1225.0
    v = ak.from_numpy(np.ones((10, 10)))[3]
    gc.collect()
    v.add_(1)
    assert v.tolist() == [2.0] * 10


def test_other_devices_get_a_copy_and_bad_inputs_raise():
    a = np.arange(3.0)
    x = ak.from_numpy(a, device="cpu")
    x[0] = 9.0
    assert a[0] == 9.0
    with pytest.raises(TypeError):
        torch.from_numpy([1.0, 2.0])
    with pytest.raises(TypeError, match="NumPy array"):
        ak.from_numpy([1.0, 2.0])
    odd = np.zeros(10, np.uint8)[1:].view(np.dtype([("a", np.uint8)]))
    with pytest.raises(TypeError):
        ak.from_numpy(odd)
    packed = np.lib.stride_tricks.as_strided(np.zeros(8, np.float32), shape=(3,), strides=(6,))
    with pytest.raises(ValueError):
        torch.from_numpy(packed)
    with pytest.raises(ValueError, match="multiples of its item size"):
        ak.from_numpy(packed)
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    y = ak.from_numpy(frozen)
    assert (y * 2).tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(ValueError, match="read-only"):
        y.add_(1)


@pytest.mark.skipif(not any(d.platform == "gpu" for d in jax.devices()), reason="needs a GPU")
def test_from_numpy_to_a_gpu_copies():
    a = np.arange(3.0)
    x = ak.from_numpy(a, device="cuda")
    x[0] = 9.0
    assert a[0] == 0.0 and x.is_cuda


def test_exports_of_numpy_memory():
    a = np.arange(6.0)
    x = ak.from_numpy(a)
    dl = torch.from_dlpack(x[1:])
    dl[0] = -1.0  # DLPack shares this memory
    assert a[1] == -1.0 and x[1].item() == -1.0
    leaf = jax.jit(lambda t: t * 2)(x)
    a[0] = 50.0
    assert leaf.tolist()[0] == 0.0  # JAX got a private copy
    assert jax.tree_util.tree_leaves(x)[0].tolist() == a.tolist()


def test_index_checks_see_numpy_writes():
    idx = np.array([0, 1])
    i = ak.from_numpy(idx)
    x = ak.arange(3, device="cpu")  # from_numpy tensors are CPU tensors
    assert ak.take(x, i).tolist() == [0, 1]
    idx[0] = 7  # no new storage version: the cached bounds must not be trusted
    with deferred_checks.forced(False):  # the CPU's checks, at once
        with pytest.raises(IndexError, match="7"):
            ak.take(x, i)
        with pytest.raises(IndexError):
            x.index_select(0, i)


def test_mixed_operands():
    a = np.arange(6.0).reshape(2, 3)
    x = ak.from_numpy(a)
    j = ak.ones(2, 3, dtype=ak.float64, device="cpu")  # from_numpy tensors are CPU tensors
    j.add_(x)  # NumPy memory read into a JAX-buffer storage
    assert j.tolist() == (np.arange(6.0).reshape(2, 3) + 1).tolist()
    x.add_(j)  # and the other way
    assert a.tolist() == (2 * np.arange(6.0).reshape(2, 3) + 1).tolist()
    x[:, 1:] += x[:, :-1]  # overlapping source and target in NumPy memory, as NumPy/PyTorch
    ref = torch.from_numpy(2 * np.arange(6.0).reshape(2, 3) + 1)
    ref[:, 1:] += ref[:, :-1].clone()
    assert a.tolist() == ref.tolist()
    assert (x @ x.t()).tolist() == (ref @ ref.t()).tolist()


def test_a_write_costs_o_write():
    """Small writes (through a slice, a column, a strided grid) into an 8 MB storage
    over NumPy memory allocate no storage-sized buffer: neither in NumPy
    (tracemalloc) nor among arraykit's storages (the live-storage peak)."""
    big = np.zeros(1_000_000, np.float64)
    x = ak.from_numpy(big)
    grid = x.view(1000, 1000)
    views = (x[10:20], grid.t()[5], grid[::50, ::50], grid[7], x[-1])
    for v in views:  # compile first
        v[...] = 1.0
        v.add_(v * 2)
    ak.reset_peak_memory_stats("cpu")
    base = ak.memory_allocated("cpu")
    tracemalloc.start()
    try:
        for v in views:
            v[...] = 2.0
            v.add_(v * 2)
        _, peak_numpy = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak_numpy < big.nbytes // 50
    assert ak.max_memory_allocated("cpu") - base < big.nbytes // 50
    assert x.data_ptr() == big.ctypes.data
    assert big[10] == big[5] == big[50 * 1000 + 50] == big[-1] == 6.0 and big[1] == 0.0


def test_readers_never_see_half_a_write():
    """Rows are rewritten whole (every element one value) by one thread while others
    read them through kernels: every row read is uniform."""
    a = np.zeros((64, 256), np.float32)
    x = ak.from_numpy(a)
    stop = threading.Event()
    torn = []

    def writer():
        for k in range(1, 200):
            x[:, :] = float(k)
        stop.set()

    def reader():
        while not stop.is_set():
            rows = (x[::3] + 0)._values()
            if not (rows == rows[0, 0]).all():
                torn.append(rows)

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not torn
    assert (a == 199.0).all()


def test_autograd_over_numpy_memory():
    """Reads of NumPy memory are differentiable; updates under no_grad() land in the
    array (an SGD step on a parameter whose values NumPy shows); a recorded in-place
    write raises instead of losing its history."""
    w_np = np.array([1.0, -2.0, 3.0])
    w = ak.from_numpy(w_np).requires_grad_()
    w_t = torch.from_numpy(w_np.copy()).requires_grad_()
    for lib, p in ((ak, w), (torch, w_t)):
        loss = (p * p).sum()
        loss.backward()
        with lib.no_grad():
            p.sub_(p.grad * 0.25)
    np.testing.assert_array_equal(w_np, w_t.detach().numpy())
    with pytest.raises(RuntimeError):
        w_t.add_(1.0)
    with pytest.raises(RuntimeError, match="cannot be recorded by autograd"):
        w.add_(1.0)
    plain = ak.from_numpy(np.zeros(3))
    with pytest.raises(RuntimeError, match="cannot be recorded by autograd"):
        plain.add_(w)
    plain.add_(w.detach())
    np.testing.assert_array_equal(plain._values(), w_np)


def test_arraykit_jit_over_numpy_memory():
    """arraykit.jit reads NumPy memory at each call (arguments and closed-over tensors)
    and writes results back into it: the sharing survives compiled calls."""
    a, c = np.arange(4.0), np.ones(4)
    t, closed = ak.from_numpy(a), ak.from_numpy(c)

    @ak.jit
    def step(x):
        x.add_(closed)
        return x * 2

    assert step(t).tolist() == [2.0, 4.0, 6.0, 8.0] and a.tolist() == [1.0, 2.0, 3.0, 4.0]
    c[0] = 10.0  # seen by the next call, not baked into the program
    a[1] = 100.0
    assert step(t).tolist() == [22.0, 202.0, 8.0, 10.0] and a.tolist() == [11.0, 101.0, 4.0, 5.0]
    assert t.data_ptr() == a.ctypes.data and step.compile_count == 1


def test_numpy_while_another_thread_writes():
    """numpy() moves the storage while writes run: every write lands in the shared memory."""
    for _ in range(3):
        x = ak.zeros(4096, device="cpu")
        view = x[::2]
        writer = threading.Thread(target=lambda: [view.add_(1.0) for _ in range(100)])
        writer.start()
        n = x.numpy()
        writer.join()
        assert (n[::2] == 100.0).all() and (n[1::2] == 0.0).all()
        assert np.shares_memory(n, x.numpy())


@st.composite
def chains(draw):
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["view_write", "numpy_write", "add", "read"]))
        view = draw(st.sampled_from(sorted(VIEWS)))
        value = draw(st.integers(-9, 9))
        steps.append((kind, view, value))
    return steps


@SETTINGS
@given(steps=chains())
def test_random_chains_against_torch(steps):
    a_t, t, a_k, x = twins(np.arange(12, dtype=np.float32).reshape(3, 4))
    for kind, view, value in steps:
        tv, xv = VIEWS[view](t), VIEWS[view](x)
        if kind == "view_write":
            tv.fill_(value)
            xv.fill_(value)
        elif kind == "numpy_write":
            a_t[value % 3, value % 4] = value
            a_k[value % 3, value % 4] = value
        elif kind == "add":
            tv.add_(tv * value)
            xv.add_(xv * value)
        else:
            np.testing.assert_array_equal((xv * 2)._values(), (tv * 2).numpy())
        agree(a_t, t, a_k, x)
