"""Threads sharing one storage: disjoint writers lose nothing, readers never fail.

Every write to a storage replaces its buffer (donating the old one) under the
storage's lock, so concurrent writers through disjoint views must each see all
their writes survive, and readers running meanwhile must neither raise (no
"buffer has been deleted or donated") nor see a torn write.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time

import numpy as np

import arraykit as ak

THREADS = 8
WRITES = 200


def run_threads(target, n=THREADS):
    errors = []
    barrier = threading.Barrier(n)

    def wrapped(i):
        try:
            barrier.wait()
            target(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _position(k, shape):
    return tuple(int(i) for i in np.unravel_index(k % int(np.prod(shape)), shape))


def _replay(shape):
    """What one writer's view holds after its WRITES writes (NumPy)."""
    v = np.zeros(shape, np.int64)
    for k in range(WRITES):
        v[_position(k, shape)] = k
        if k % 10 == 0:
            v += 1
    return v


def _writes(view):
    for k in range(WRITES):
        view[_position(k, view.shape)] = k
        if k % 10 == 0:
            view += 1


def test_threads_write_disjoint_rows():
    x = ak.zeros((THREADS, 24), dtype=ak.int64)
    run_threads(lambda i: _writes(x[i]))
    np.testing.assert_array_equal(x.numpy(), np.tile(_replay((24,)), (THREADS, 1)))
    assert x.untyped_storage().version >= THREADS * (WRITES + WRITES // 10)


def test_threads_write_interleaved_columns():
    x = ak.zeros((5, THREADS * 3), dtype=ak.int64)
    run_threads(lambda i: _writes(x[:, i::THREADS]))
    expected = np.zeros((5, THREADS * 3), np.int64)
    for i in range(THREADS):
        expected[:, i::THREADS] = _replay((5, 3))
    np.testing.assert_array_equal(x.numpy(), expected)


def test_threads_write_strided_views_of_a_flat_storage():
    base = ak.zeros(THREADS * 40, dtype=ak.int64)
    grid = base.view(40, THREADS)
    run_threads(lambda i: _writes(grid[::-1, i]))
    np.testing.assert_array_equal(grid.numpy()[::-1], np.tile(_replay((40,))[:, None], (1, THREADS)))


def test_concurrent_readers_and_writers_never_fail_nor_tear():
    rows, width = 4, 64
    x = ak.zeros((rows, width), dtype=ak.int64)

    def work(i):
        if i < rows:  # writer: each write sets a whole row to one value
            row = x[i]
            for k in range(1, WRITES + 1):
                row.fill_(k)
        else:  # reader: every row it sees is uniform (never half written)
            for k in range(WRITES // 2):
                if k % 3 == 0:
                    snap = x.numpy()
                elif k % 3 == 1:
                    snap = x.T.contiguous().numpy().T
                else:
                    snap = (x[:, ::-1] + 0).numpy()
                assert (snap == snap[:, :1]).all(), snap
                np.asarray(x)  # a zero-copy export racing with donating writes

    run_threads(work)
    np.testing.assert_array_equal(x.numpy(), np.full((rows, width), WRITES))


def test_concurrent_writes_reading_another_storage():
    src = ak.zeros(THREADS * 16, dtype=ak.int64)
    dst = ak.zeros(THREADS * 16, dtype=ak.int64)

    def work(i):
        mine = slice(i * 16, (i + 1) * 16)
        for k in range(WRITES // 2):
            src[mine] = k  # writers of src ...
            dst[mine] += src[mine]  # ... while other threads read src as an operand

    run_threads(work)
    total = sum(range(WRITES // 2))
    np.testing.assert_array_equal(dst.numpy(), np.full(THREADS * 16, total))


def test_take_checks_the_indices_it_gathers_with():
    """A write racing a take either makes it raise IndexError or is not seen at all:
    the indices a take checks are the indices it gathers with (never fill values)."""
    xn = np.arange(10.0)
    x = ak.asarray(xn)
    good = np.array([[0, 9, 3, 7], [1, 2, 8, 5]])  # the only in-range index sets
    flat, grid = ak.asarray(good[0]), ak.asarray(good)
    done = threading.Event()
    ok = [0, 0]

    def gather(indices, call, expected):
        try:
            got = call(indices).numpy()
        except IndexError:
            return 0
        np.testing.assert_array_equal(got, expected)
        return 1

    def write(target, value):  # out of range every other write
        for k in itertools.count():
            if done.is_set():
                return
            target[2] = 10 if k % 2 == 0 else value
            if k % 40 == 39:  # leave the in-range value in place for a moment
                time.sleep(0.0005)

    def read():
        try:
            for _ in range(400):
                ok[0] += gather(flat, lambda j: ak.take(x, j), np.take(xn, good[0]))
                ok[1] += gather(grid, lambda j: ak.take_along_axis(x[None], j, axis=1),
                                np.take_along_axis(xn[None], good, axis=1))
        finally:
            done.set()

    def work(i):
        if i == 0:
            read()
        else:
            write((flat, grid[1])[i - 1], int(good[i - 1, 2]))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so the race window is hit
    try:
        run_threads(work, n=3)
    finally:
        sys.setswitchinterval(interval)
    assert ok[0] and ok[1], ok  # in-range snapshots were gathered, not only rejected


def test_jitted_and_eager_increments_from_threads_lose_nothing():
    """A jitted in-place step called from several threads while others write the same
    storage eagerly: every increment survives (jit takes the storages' locks whenever
    another thread is running)."""
    acc = ak.zeros(4, dtype=ak.int64, device="cpu")

    @ak.jit
    def bump(step):
        acc.add_(step)
        return acc.sum()

    one = ak.ones(4, dtype=ak.int64, device="cpu")
    bump(one)
    bump(one)  # traced and compiled before the threads start

    def target(i):
        for _ in range(WRITES // 4):
            if i % 2:
                bump(one)
            else:
                acc.add_(1)

    run_threads(target)
    np.testing.assert_array_equal(np.asarray(acc), np.full(4, 2 + THREADS * (WRITES // 4)))
