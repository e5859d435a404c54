"""Asynchronous dispatch: eager ops and arraykit.jit calls return before the device
finishes, and device-side checks are reported at the next host read.

No wall time is asserted. A call's results must still be pending (``is_ready()``
False) right after it returns: the work is large enough (tens of milliseconds) that
a call which dispatched asynchronously returns long before it is done, while a call
that waited for its work returns ready results. Up to ``_ATTEMPTS`` calls are
tried, so a scheduling hiccup between the return and the check cannot fail the
test; a call that always waits fails every attempt. (A host callback blocking on an
event would be deterministic, but JAX runs programs with host callbacks
synchronously on the CPU.)
"""

import functools

import numpy as np
import pytest

import arraykit as ak
import arraykit.nn.functional as F
from arraykit.core import deferred_checks
from training import train_step

_ATTEMPTS = 5
_N = 512  # a 512x512 float32 matmul chain: tens of milliseconds on a CPU core


def _buffer(t):
    return t.untyped_storage().buffer


def _returns_before_done(call, results=None):
    """Whether some call of ``call()`` returned while the buffers of ``results(out)``
    (default: the returned tensors) were still being computed."""
    for _ in range(_ATTEMPTS):
        out = call()
        tensors = results(out) if results is not None else out if isinstance(out, tuple) else (out,)
        buffers = [_buffer(t) for t in tensors]
        pending = not all(b.is_ready() for b in buffers)
        for b in buffers:
            b.block_until_ready()
        if pending:
            return True
    return False


def _rand(*shape, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape) / np.sqrt(shape[-1])
    return ak.asarray(values.astype(np.float32), device="cpu")


def _chain(t, w):
    for _ in range(4):
        t = (t @ w).tanh()
    return t


def test_eager_ops_return_before_their_work_is_done():
    t, w = _rand(_N, _N), _rand(_N, _N, seed=1)
    assert _returns_before_done(lambda: _chain(t, w))


def test_jit_with_new_results_returns_before_done():
    t, w = _rand(_N, _N), _rand(_N, _N, seed=1)
    chain = ak.jit(_chain)
    chain(t, w).numpy()  # traces and compiles
    assert _returns_before_done(lambda: chain(t, w))


def test_jit_with_kept_outputs_returns_before_done():
    w = _rand(_N, _N, seed=1).requires_grad_()
    x = _rand(_N, _N)

    @ak.jit
    def grads(x):
        w.grad = None
        _chain(x, w).sum().backward()

    grads(x)
    grads(x)  # the first call made .grad: traced once more, then kept
    assert _returns_before_done(lambda: grads(x), lambda _: (w.grad,))


def test_jit_writing_in_place_returns_before_done():
    t, w = _rand(_N, _N), _rand(_N, _N, seed=1)

    @ak.jit
    def update(t, w):
        t.copy_(_chain(t, w))

    update(t, w)
    assert _returns_before_done(lambda: update(t, w), lambda _: (t,))


def test_jitted_training_step_returns_before_done():
    model = ak.nn.Sequential(ak.nn.Linear(_N, 2 * _N), ak.nn.ReLU(), ak.nn.Linear(2 * _N, 10))
    model.to("cpu")
    opt = ak.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = _rand(_N, _N), ak.asarray(np.arange(_N) % 10, device="cpu")

    step = ak.jit(functools.partial(train_step, model, opt))

    for _ in range(3):
        step(x, y)
    params = list(model.parameters())
    assert _returns_before_done(lambda: step(x, y), lambda loss: (loss, *params))


def test_jit_reading_numpy_memory_returns_before_done():
    # NumPy memory enters as a private JAX copy: dropping it must not wait for the program
    values = np.random.default_rng(0).standard_normal((_N, _N)).astype(np.float32) / _N
    t = ak.from_numpy(values)
    w = _rand(_N, _N, seed=1)
    chain = ak.jit(_chain)
    chain(t, w)
    assert _returns_before_done(lambda: chain(t, w))
    out = chain(t, w)
    values[...] = 0  # NumPy's write after the call is not seen by it
    assert np.abs(out.numpy()).sum() > 0


def test_eager_op_on_numpy_memory_returns_before_done():
    values = np.random.default_rng(0).standard_normal((_N, _N)).astype(np.float32) / _N
    t = ak.from_numpy(values)
    w = _rand(_N, _N, seed=1)
    assert _returns_before_done(lambda: _chain(t, w))


# ----------------------------------------------------------------------------- deferred checks


def test_deferred_checks_wait_for_nothing_and_raise_at_the_next_read():
    x, w = _rand(_N, _N), _rand(_N, _N, seed=1)
    targets = np.arange(_N) % 10
    targets[7] = _N + 9
    targets = ak.asarray(targets, device="cpu")
    with deferred_checks.forced(True):
        assert _returns_before_done(lambda: F.cross_entropy(_chain(x, w), targets))
        assert deferred_checks.pending() >= 1  # queued, nothing read
        with pytest.raises(IndexError, match=f"cross_entropy: target {_N + 9} is out of bounds"):
            deferred_checks.report()
        loss = F.cross_entropy(_chain(x, w), targets)
        with pytest.raises(IndexError, match=f"cross_entropy: target {_N + 9} is out of bounds"):
            loss.item()
        assert deferred_checks.pending() == 0
        loss.item()  # reported once: the value is read without an error now


@pytest.mark.parametrize("case", ["take", "take_along_axis", "gather", "index_select", "put",
                                  "scatter", "embedding", "nll_loss", "searchsorted"])
def test_each_checked_op_defers_and_names_itself(case):
    x = _rand(4, 5)
    bad_rows = ak.asarray(np.array([0, 7]), device="cpu")
    bad_cols = ak.asarray(np.array([[0], [1], [6], [2]]), device="cpu")
    calls = {
        "take": (lambda: ak.take(x, bad_rows, axis=0), "take\\(\\): index 7"),
        "take_along_axis": (lambda: ak.take_along_axis(x, bad_cols, axis=1),
                            "take_along_axis\\(\\): index 6"),
        "gather": (lambda: ak.gather(x, 1, bad_cols), "gather\\(\\): index 6"),
        "index_select": (lambda: ak.index_select(x, 0, bad_rows), "index_select\\(\\): index 7"),
        "put": (lambda: ak.put(x, ak.asarray(np.array([0, 25]), device="cpu"), _rand(2)), "put\\(\\): index 25"),
        "scatter": (lambda: ak.scatter(x, 1, bad_cols, _rand(4, 1)), "scatter\\(\\): index 6"),
        "embedding": (lambda: F.embedding(bad_rows, x), "embedding: index 7"),
        "nll_loss": (lambda: F.nll_loss(x, ak.asarray(np.array([0, 1, 5, 2]), device="cpu")),
                     "nll_loss: target 5"),
    }
    calls["searchsorted"] = (
        lambda: ak.searchsorted(_rand(5), _rand(3), sorter=ak.asarray(np.array([0, 1, 2, 3, 8]),
                                                                        device="cpu")),
        "searchsorted\\(\\) sorter index 8")
    call, message = calls[case]
    error = ValueError if case == "searchsorted" else IndexError
    with deferred_checks.forced(False), pytest.raises(error, match=message):
        call()  # the CPU checks at once (also where ARRAYKIT_TEST_DEFER_CHECKS=1 defers)
    with deferred_checks.forced(True):
        out = call()  # queued: no error yet
        assert deferred_checks.pending() >= 1
        with pytest.raises(error, match=message):
            out.tolist()
        assert deferred_checks.pending() == 0


def test_deferred_check_in_range_raises_nothing():
    x = _rand(4, 5)
    with deferred_checks.forced(True):
        out = ak.take(x, ak.asarray(np.array([3, 0, -1]), device="cpu"), axis=0)
        np.testing.assert_array_equal(out.numpy(), x.numpy()[[3, 0, -1]])
        assert deferred_checks.pending() == 0
