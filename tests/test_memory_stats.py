"""Allocator statistics and pinned memory (arraykit.api.device_memory).

On the CPU the statistics are arraykit's own accounting of its live storages:
exact bytes, counts and peaks, checked here storage by storage. The GPU paths
(JAX's allocator statistics, pinned host memory, asynchronous copies from it)
run only where a GPU exists.
"""

from __future__ import annotations

import gc
import threading

import jax
import numpy as np
import pytest
import torch

import arraykit as ak

GPU = any(d.platform == "gpu" for d in jax.devices())
needs_gpu = pytest.mark.skipif(not GPU, reason="needs a GPU")


def settle():
    gc.collect()
    return ak.memory_allocated("cpu"), ak.memory_stats("cpu")["num_storages"]


def test_allocations_are_counted_storage_by_storage():
    base, count = settle()
    x = ak.zeros(1000, dtype=ak.float64, device="cpu")
    assert ak.memory_allocated("cpu") == base + 8000
    assert ak.memory_stats("cpu")["num_storages"] == count + 1
    views = [x[10:], x.view(10, 100).t(), x[::3], x.expand(2, 1000)]
    assert ak.memory_allocated("cpu") == base + 8000  # views share the storage
    y = x[::2].clone()
    assert ak.memory_allocated("cpu") == base + 8000 + 500 * 8
    del x, y, views
    assert settle() == (base, count)


def test_peak_since_reset():
    base, _ = settle()
    ak.reset_peak_memory_stats("cpu")
    assert ak.max_memory_allocated("cpu") == base
    big = ak.ones(250_000, device="cpu")  # 1 MB
    small = ak.ones(1000, device="cpu")
    assert ak.max_memory_allocated("cpu") == base + 1_000_000 + 4000
    del big
    gc.collect()
    assert ak.memory_allocated("cpu") == base + 4000
    assert ak.max_memory_allocated("cpu") == base + 1_004_000  # the peak stays
    ak.reset_peak_memory_stats("cpu")
    assert ak.max_memory_allocated("cpu") == ak.memory_allocated("cpu") == base + 4000
    stats = ak.memory_stats("cpu")
    assert stats["peak_bytes_in_use"] == stats["bytes_in_use"] == stats["storage_bytes"]
    del small


def test_temporaries_raise_the_peak_only_while_alive():
    x = ak.ones(100_000, device="cpu")  # 400 kB
    settle()
    ak.reset_peak_memory_stats("cpu")
    before = ak.memory_allocated("cpu")
    y = ((x * 2) + 1).sum()  # (x*2) lives until the add has run, then goes
    assert ak.memory_allocated("cpu") == before + 4  # only y remains
    assert ak.max_memory_allocated("cpu") >= before + 800_000  # x*2 and (x*2)+1 at once
    del y


def test_numpy_memory_counts_and_traced_values_do_not():
    base, count = settle()
    a = np.zeros((100, 10))
    x = ak.from_numpy(a)  # a CPU tensor, whatever the default device
    assert ak.memory_allocated("cpu") == base + a.nbytes
    x.numpy()  # already NumPy memory: nothing moves
    assert ak.memory_allocated("cpu") == base + a.nbytes
    jax.jit(lambda t: (t * 2).sum())(x)  # traced storages hold no memory
    gc.collect()
    assert ak.memory_allocated("cpu") == base + a.nbytes
    del x
    assert settle() == (base, count)


def test_accounting_is_exact_across_threads():
    base, count = settle()
    ak.reset_peak_memory_stats("cpu")

    def work():
        for _ in range(300):
            t = ak.zeros(16, device="cpu") + 1
            del t

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert settle() == (base, count)
    assert base + 128 <= ak.max_memory_allocated("cpu") <= base + 4 * 3 * 64 + 4096


def test_device_arguments():
    cpu = ak.device("cpu")
    assert ak.memory_stats(cpu) == ak.memory_stats("cpu")
    assert ak.memory_allocated(cpu) == ak.memory_stats("cpu")["bytes_in_use"]
    with pytest.raises(ValueError, match="unknown device"):
        ak.memory_allocated("abacus")


def test_pin_memory_without_a_gpu():
    x = ak.arange(6.0, device="cpu")
    assert x.is_pinned() is False
    if GPU:
        return
    with pytest.raises(RuntimeError):
        torch.arange(6.0).pin_memory()
    with pytest.raises(RuntimeError, match=r"has none \(devices: cpu:0\)"):
        x.pin_memory()


@needs_gpu
def test_gpu_statistics_come_from_jax():
    gpu = ak.device("cuda")
    stats = ak.memory_stats(gpu)
    assert {"bytes_in_use", "peak_bytes_in_use", "num_storages", "storage_bytes"} <= set(stats)
    before = ak.memory_allocated(gpu)
    x = ak.zeros(1 << 20, device=gpu)  # 4 MB
    x.numel()
    assert ak.memory_allocated(gpu) >= before + (4 << 20)
    assert ak.memory_stats(gpu)["storage_bytes"] >= 4 << 20
    ak.reset_peak_memory_stats(gpu)
    assert ak.max_memory_allocated(gpu) >= ak.memory_allocated(gpu)
    y = ak.ones(1 << 22, device=gpu)  # a new high: 16 MB more
    assert ak.max_memory_allocated(gpu) >= before + (20 << 20)
    del x, y


@needs_gpu
def test_pinned_memory_round_trip():
    x = ak.arange(12.0, device="cpu").reshape(3, 4).t()  # only CPU tensors are pinned
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p.pin_memory() is p
    assert p.tolist() == x.tolist()
    g = p.to("cuda", non_blocking=True)
    assert g.is_cuda and not g.is_pinned() and g.tolist() == x.tolist()
    assert p.cuda().tolist() == x.tolist() and p.cpu().is_cpu
    assert (p * 2).tolist() == (x * 2).tolist()
    with pytest.raises(RuntimeError, match="only CPU tensors"):
        g.pin_memory()
