"""One MLP training step (784-1024-1024-10, batch 256, float32, SGD lr 0.01) four ways,
in one process: arraykit eager, arraykit.jit, a hand-written jax.jit step with optax
(JAX's default 32-bit mode, int32 labels) and PyTorch eager. Also the first and
second calls of each step (trace + compile: arraykit.jit traces a step again on its
second call, when the gradients its first call created exist).

    python benchmarks/bench_training.py [--repeats 7] [--steps 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
import torch

import arraykit as ak
from arraykit import nn, optim
from arraykit.kernels import size_buckets
from mlp_anchor import make_step, make_torch_step, mlp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import train_digits  # noqa: E402 (the example's PyTorch-style step)

SIZES = (784, 1024, 1024, 10)
BATCH = 256
LR = 0.01


def _data(rng):
    x = rng.normal(size=(BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    return x, y


def arraykit_step(x, y, jitted):
    model = mlp(nn, SIZES)
    opt = optim.SGD(model.parameters(), lr=LR)
    xs, ys = ak.asarray(x), ak.asarray(y)
    step = train_digits.make_step(model, opt)
    fn = ak.jit(step) if jitted else step
    params = list(model.parameters())

    def run():
        # Wait for the updated parameters too: eager kernels still in flight would
        # otherwise run into the next library's timing.
        fn(xs, ys).untyped_storage().buffer.block_until_ready()
        for p in params:
            p.untyped_storage().buffer.block_until_ready()

    return run


def jax_step(x, y):
    keys = jax.random.split(jax.random.key(0), 3)
    params = [
        (jax.random.normal(k, (i, o), jnp.float32) * (1 / np.sqrt(i)), jnp.zeros(o, jnp.float32))
        for k, i, o in zip(keys, SIZES[:-1], SIZES[1:])
    ]
    tx = optax.sgd(LR)
    state = [params, tx.init(params)]
    xs, ys = jnp.asarray(x), jnp.asarray(y, jnp.int32)
    step = make_step(tx)

    def run():
        state[0], state[1], loss = step(state[0], state[1], xs, ys)
        loss.block_until_ready()

    return run


def torch_step(x, y):
    torch.manual_seed(0)
    model = mlp(torch.nn, SIZES)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    step = make_torch_step(model, opt)
    return lambda: step(xs, ys)


# Steps run before timing: past arraykit's size-bucket tier, whose small element-wise
# kernels (biases, the loss) compile their exact programs after
# arraykit.kernels.size_buckets.EXACT_AFTER calls.
WARM_STEPS = size_buckets.EXACT_AFTER + 8


def call_overhead(number=2000):
    """µs per call of a cached jitted ``t + 1`` on 16 float32: arraykit.jit vs jax.jit."""
    t = ak.ones(16)
    j = jnp.ones(16)
    ak_fn = ak.jit(lambda x: x + 1)
    jax_fn = jax.jit(lambda x: x + 1)
    results = {}
    for name, fn, arg in (("arraykit.jit", ak_fn, t), ("jax.jit", jax_fn, j)):
        for _ in range(20):
            fn(arg)
        best = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(number):
                fn(arg)
            best.append((time.perf_counter() - start) / number * 1e6)
        results[name] = statistics.median(best)
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    x, y = _data(np.random.default_rng(0))
    runs = {
        "arraykit eager": arraykit_step(x, y, jitted=False),
        "arraykit jit": arraykit_step(x, y, jitted=True),
        "jax.jit + optax (32-bit)": jax_step(x, y),
        "torch eager": torch_step(x, y),
    }
    first = {}
    second = {}
    for name, run in runs.items():
        start = time.perf_counter()
        run()
        first[name] = time.perf_counter() - start
        start = time.perf_counter()
        run()
        second[name] = time.perf_counter() - start
        for _ in range(WARM_STEPS):
            run()
    times = {name: [] for name in runs}
    for _ in range(args.repeats):  # libraries take turns, so a slow spell hits all of them
        for name, run in runs.items():
            time.sleep(0.05)  # let the previous library's worker threads go idle
            start = time.perf_counter()
            for _ in range(args.steps):
                run()
            times[name].append((time.perf_counter() - start) / args.steps * 1e3)
    jax_ms = statistics.median(times["jax.jit + optax (32-bit)"])
    torch_ms = statistics.median(times["torch eager"])
    print(f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, float32, SGD; ms per step, "
          f"median of {args.repeats} x {args.steps} steps")
    print(f"{'step':28s} {'ms/step':>9s} {'vs jax.jit':>11s} {'vs torch':>9s} {'first call s':>13s}"
          f" {'second s':>9s}")
    for name in runs:
        ms = statistics.median(times[name])
        print(f"{name:28s} {ms:9.2f} {ms / jax_ms:11.2f} {ms / torch_ms:9.2f} {first[name]:13.2f}"
              f" {second[name]:9.2f}")
    jit_first = first["arraykit jit"] / first["jax.jit + optax (32-bit)"]
    print(f"first call, arraykit.jit / jax.jit: {jit_first:.2f}")
    overhead = call_overhead()
    print("cached call of a jitted t + 1 (16 float32), us: " + ", ".join(
        f"{k} {v:.1f}" for k, v in overhead.items())
        + f"; ratio {overhead['arraykit.jit'] / overhead['jax.jit']:.2f}")


if __name__ == "__main__":
    main()
