"""Recycling of large CPU buffers (arraykit.core.buffer_pool): a dead storage's buffer
is reused only when nothing else can see it, and results are always right."""

from __future__ import annotations

import threading

import jax
import numpy as np
import pytest

import arraykit as ak
from arraykit.core import buffer_pool

SHAPE = (1024, 512)  # 2 MiB of float32: above buffer_pool.MIN_BYTES


@pytest.fixture(autouse=True)
def empty_pool():
    buffer_pool.empty()
    yield
    buffer_pool.empty()


def _values(seed=0):
    return np.random.default_rng(seed).standard_normal(SHAPE, dtype=np.float32)


def test_a_dead_result_buffer_is_reused_for_the_next_result_of_its_shape():
    x = ak.asarray(_values(), device="cpu")
    ak.sin(x)  # compiled: the pool serves kernels whose output size is known
    buffer_pool.empty()
    y = ak.exp(x)
    pointer = y.data_ptr()
    del y
    assert buffer_pool.held_bytes() == 4 * np.prod(SHAPE)
    z = ak.sin(x)
    assert z.data_ptr() == pointer
    assert buffer_pool.held_bytes() == 0
    np.testing.assert_allclose(z.numpy(), np.sin(_values()), rtol=1e-6, atol=1e-6)


def test_small_buffers_are_not_pooled():
    x = ak.ones((16, 16), device="cpu")
    del x
    assert buffer_pool.held_bytes() == 0


def test_a_buffer_referenced_elsewhere_is_not_recycled():
    x = ak.asarray(_values(), device="cpu")
    y = ak.exp(x)
    held = y.untyped_storage().buffer  # a reference outside the storage
    del y
    assert buffer_pool.held_bytes() == 0
    ak.sin(x)
    np.testing.assert_allclose(np.asarray(held), np.exp(_values()), rtol=1e-6)


def test_an_exported_pytree_leaf_stays_readable_after_later_results():
    x = ak.asarray(_values(), device="cpu")
    y = ak.exp(x)
    leaf = jax.tree_util.tree_leaves(y)[0]
    del y
    for _ in range(3):
        ak.sin(x)
    np.testing.assert_allclose(np.asarray(leaf), np.exp(_values()), rtol=1e-6)


def test_views_keep_their_storage_alive():
    x = ak.asarray(_values(), device="cpu")
    y = ak.exp(x)
    view = y[::2]
    del y
    assert buffer_pool.held_bytes() == 0
    ak.sin(x)
    np.testing.assert_allclose(view.numpy(), np.exp(_values())[::2], rtol=1e-6)


def test_results_match_numpy_through_chains_of_recycled_buffers():
    a = _values(1)
    x = ak.asarray(a, device="cpu")
    expected = a.copy()
    for step in range(6):
        x = ak.tanh(x) * 1.5 + float(step)
        expected = np.tanh(expected) * np.float32(1.5) + np.float32(step)
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_the_pool_is_bounded_per_shape_and_in_bytes(monkeypatch):
    x = ak.asarray(_values(), device="cpu")
    results = [ak.exp(x) for _ in range(buffer_pool.PER_SHAPE + 2)]
    del results
    nbytes = 4 * int(np.prod(SHAPE))
    assert buffer_pool.held_bytes() == buffer_pool.PER_SHAPE * nbytes
    buffer_pool.empty()
    monkeypatch.setattr(buffer_pool, "MAX_BYTES", 2 * nbytes)
    results = [ak.exp(x) for _ in range(3)]
    del results
    assert buffer_pool.held_bytes() == 2 * nbytes


def test_memory_statistics_do_not_count_pooled_buffers():
    x = ak.asarray(_values(), device="cpu")
    before = ak.memory_allocated("cpu")
    y = ak.exp(x)
    assert ak.memory_allocated("cpu") == before + 4 * np.prod(SHAPE)
    del y
    assert buffer_pool.held_bytes() > 0
    assert ak.memory_allocated("cpu") == before


def test_threads_computing_large_results_each_get_their_own_values():
    base = _values(2)
    errors = []

    def work(k):
        try:
            x = ak.asarray(base + k, device="cpu")
            for _ in range(20):
                y = ak.exp(x * 0.01)
                np.testing.assert_allclose(y.numpy(), np.exp((base + k) * np.float32(0.01)), rtol=1e-5)
                del y
        except Exception as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
