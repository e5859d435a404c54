"""Does importing arraykit slow down someone else's JAX code?

    python benchmarks/bench_jax_citizen.py [--steps N] [--repeats R]

Times a hand-written JAX training step (MLP 784-1024-1024-10, batch 256, float32,
SGD with learning rate 0.1, optax's integer-label softmax cross-entropy, one
``jax.jit``) alone, then imports arraykit in the same process and times the same
step again: the already jitted function and a fresh ``jax.jit`` of the same Python
function. Nothing of arraykit runs in the step; a slowdown can only come from
arraykit changing JAX's global state (its 64-bit mode makes this step about 3x
slower). Reports ms per step (median of R repeats of N steps after warm-up, results
waited for with ``block_until_ready``), the ratio to the step alone, and JAX's
default dtypes before and after the import.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time

import jax
import jax.numpy as jnp
import optax

SIZES = (784, 1024, 1024, 10)
BATCH = 256
LR = 0.1


def make_data(seed=0):
    """(params, x, y): He-initialized [(w, b), ...] and a batch, in JAX's default float
    dtype (float32 unless 64-bit mode is on), with int32 labels."""
    key, key_x, key_y = jax.random.split(jax.random.PRNGKey(seed), 3)
    params = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        key, sub = jax.random.split(key)
        w = jax.random.normal(sub, (fan_in, fan_out)) * (2.0 / fan_in) ** 0.5
        params.append((w, jnp.zeros(fan_out)))
    x = jax.random.normal(key_x, (BATCH, SIZES[0]))
    y = jax.random.randint(key_y, (BATCH,), 0, SIZES[-1], dtype=jnp.int32)
    return params, x, y


def loss_fn(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jax.nn.relu(h @ w + b)
    w, b = params[-1]
    return optax.softmax_cross_entropy_with_integer_labels(h @ w + b, y).mean()


def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return jax.tree.map(lambda p, g: p - LR * g, params, grads), loss


def time_step(step, params, x, y, steps, repeats):
    """Median ms per step over ``repeats`` runs of ``steps`` chained steps, after warm-up."""
    for _ in range(3):
        params, loss = step(params, x, y)
    jax.block_until_ready((params, loss))
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            params, loss = step(params, x, y)
        jax.block_until_ready((params, loss))
        runs.append((time.perf_counter() - start) / steps * 1e3)
    return statistics.median(runs)


def jax_defaults():
    return (f"jnp.zeros(2).dtype={jnp.zeros(2).dtype}  jnp.arange(3).dtype={jnp.arange(3).dtype}  "
            f"jax_enable_x64={jax.config.jax_enable_x64}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    data = make_data()
    step = jax.jit(train_step)

    before = jax_defaults()
    alone = time_step(step, *data, args.steps, args.repeats)
    importlib.import_module("arraykit")
    after = jax_defaults()
    rows = [
        ("JAX alone", data, alone),
        ("same jitted step, after import", data, time_step(step, *data, args.steps, args.repeats)),
        ("fresh jax.jit, after import", data,
         time_step(jax.jit(train_step), *data, args.steps, args.repeats)),
    ]
    made_after = make_data()
    rows.append(("fresh jax.jit, data made after import", made_after,
                 time_step(jax.jit(train_step), *made_after, args.steps, args.repeats)))

    print(f"JAX MLP training step {'-'.join(map(str, SIZES))}, batch {BATCH}, SGD; "
          f"ms per step, median of {args.repeats} x {args.steps} steps")
    print(f"before import arraykit: {before}")
    print(f"after  import arraykit: {after}")
    print(f"{'step':40s}{'params':>9s}{'ms/step':>10s}{'vs alone':>10s}")
    for name, (params, _, _), ms in rows:
        print(f"{name:40s}{str(params[0][0].dtype):>9s}{ms:10.2f}{ms / alone:10.2f}")


if __name__ == "__main__":
    main()
