"""A training step never makes the host wait for the device or read device data, with
data checks deferred as a GPU defers them: counted with
``arraykit.utils.host_syncs.counting_host_syncs``, for the eager and the jitted step of
an MLP and of the example GPT. Also: the counter sees the reads it is meant to see, and
the queue of deferred checks stays short in a loop that never reads a value."""

from __future__ import annotations

import functools
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arraykit as ak
from arraykit.core import deferred_checks
from arraykit.utils.host_syncs import counting_host_syncs
from training import train_step

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import train_gpt as G  # noqa: E402


def test_the_counter_sees_waits_and_reads():
    x = jnp.arange(4.0)
    t = ak.arange(4.0)
    with counting_host_syncs() as seen:
        x.block_until_ready()
        jax.block_until_ready(x)
        np.asarray(x)
        x[0].item()
        bool(x[1] > 0)
        jax.device_get(x)
        t.tolist()
    assert seen.waits == 2
    assert seen.reads >= 5
    assert seen.by_kind["device_get"] == 1 and seen.by_kind["item"] == 1
    with counting_host_syncs() as nothing:
        x + 1
    assert nothing.waits == nothing.reads == 0


def _mlp(jitted):
    ak.manual_seed(0)
    model = ak.nn.Sequential(ak.nn.Linear(64, 128), ak.nn.ReLU(), ak.nn.Linear(128, 10))
    opt = ak.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(0)
    x = ak.asarray(rng.standard_normal((32, 64)).astype(np.float32))
    y = ak.asarray(rng.integers(0, 10, 32))
    step = functools.partial(train_step, model, opt)
    step = ak.jit(step) if jitted else step
    return lambda: step(x, y)


def _gpt(jitted):
    """The example's loop: its step, then the learning-rate schedule's step."""
    cfg = G.PRESETS["tiny"]
    ak.manual_seed(0)
    model = G.GPT(cfg)
    opt = ak.optim.AdamW(G.parameter_groups(model, cfg.weight_decay), lr=cfg.lr, betas=(0.9, 0.95))
    scheduler = G.make_scheduler(opt, cfg)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 256, (cfg.batch, cfg.context + 1)).astype(np.int32)
    x, y = ak.asarray(tokens[:, :-1]), ak.asarray(tokens[:, 1:])
    step = G.make_train_step(model, opt, cfg, G.autocast_context(x.device))
    step = ak.jit(step) if jitted else step

    def run():
        step(x, y)
        scheduler.step()

    return run


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("make", [_mlp, _gpt], ids=["mlp", "gpt"])
def test_a_training_step_neither_waits_nor_reads(make, jitted):
    with deferred_checks.forced(True):
        run = make(jitted)
        for _ in range(2):  # compiles, and traces again for the state the first call made
            run()
        with counting_host_syncs() as seen:
            for _ in range(3):
                run()
        deferred_checks.report()
    assert (seen.waits, seen.reads) == (0, 0), seen


def test_deferred_checks_stay_few_in_a_loop_that_never_reads():
    table = ak.asarray(np.arange(20.0, dtype=np.float32).reshape(10, 2))
    index = ak.asarray(np.array([1, 3, 5]))
    with deferred_checks.forced(True):
        for _ in range(3 * deferred_checks.LIMIT):
            ak.take(table, index, axis=0)
        assert deferred_checks.pending() <= deferred_checks.LIMIT + 1
        deferred_checks.report()
    assert deferred_checks.pending() == 0


def test_a_failure_found_while_the_queue_was_trimmed_is_reported_at_the_next_read():
    table = ak.asarray(np.arange(20.0, dtype=np.float32).reshape(10, 2))
    bad = ak.asarray(np.array([1, 12]))
    good = ak.asarray(np.array([1, 3]))
    with deferred_checks.forced(True):
        ak.take(table, bad, axis=0)
        jax.block_until_ready(bad.untyped_storage().buffer)
        for _ in range(deferred_checks.LIMIT + 1):
            ak.take(table, good, axis=0)
        with pytest.raises(IndexError):
            table.sum().item()
    assert deferred_checks.pending() == 0
