"""The jitted MLP step at equal float32 matmul precision: arraykit.jit against jax.jit.

arraykit's default float32 matmul precision is PyTorch's, ``"highest"`` (full float32
products); JAX's default lets a GPU use TensorFloat-32. This benchmark runs the
784-1024-1024-10 MLP step (batch 256, SGD, integer labels) of ``profile_step.py`` both
ways at both precisions, in one process: ``arraykit.set_float32_matmul_precision``
against ``jax.jit`` with ``precision=HIGHEST`` / JAX's default. For each: seconds of the
first call (trace and compilation), milliseconds per step (range over 5 batches), and
the host's CPU time per call (``time.thread_time``: what the calling thread spends,
whether or not the device is busy).

    python benchmarks/bench_precision_step.py [--steps 200] [--device gpu]
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

SIZES = (784, 1024, 1024, 10)
BATCH = 256


def _data():
    import numpy as np

    rng = np.random.default_rng(0)
    return (rng.standard_normal((BATCH, 784)).astype(np.float32), rng.integers(0, 10, BATCH))


def arraykit_step(device):
    """(step(), wait()) of the arraykit.jit MLP step on ``device``."""
    import arraykit as ak
    import train_digits
    from mlp_anchor import mlp

    x, y = _data()
    ak.manual_seed(0)
    model = mlp(ak.nn, SIZES).to(device)
    opt = ak.optim.SGD(model.parameters(), lr=0.01)
    xs, ys = ak.asarray(x, device=device), ak.asarray(y, device=device)
    step = ak.jit(train_digits.make_step(model, opt))
    last = list(model.parameters())[-1]
    return functools.partial(step, xs, ys), lambda: last.untyped_storage().buffer.block_until_ready()


def jax_step(device, precision):
    """(step(), wait()) of the jax.jit + optax MLP step with matmul ``precision``."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    from mlp_anchor import make_step

    x, y = _data()
    jdev = jax.devices(device.platform)[0]
    keys = jax.random.split(jax.random.key(0), len(SIZES) - 1)
    params = [(jax.device_put(jax.random.normal(k, (a, b)) / np.sqrt(a), jdev),
               jax.device_put(jnp.zeros(b), jdev)) for k, a, b in zip(keys, SIZES[:-1], SIZES[1:])]
    tx = optax.sgd(0.01)
    state = [params, tx.init(params)]
    jx, jy = jax.device_put(x, jdev), jax.device_put(y.astype(np.int32), jdev)
    step = make_step(tx, precision)

    def run():
        state[0], state[1], _ = step(state[0], state[1], jx, jy)

    return run, lambda: jax.block_until_ready(state[0])


def measure(run, wait, steps):
    """First call's seconds, ms per step (5 batches), host CPU us per call (5 batches)."""
    start = time.perf_counter()
    run()
    wait()
    first = time.perf_counter() - start
    for _ in range(10):
        run()
    wait()
    per_step, host = [], []
    n = max(1, steps // 5)
    for _ in range(5):
        start, cpu = time.perf_counter(), time.thread_time()
        for _ in range(n):
            run()
        host.append((time.thread_time() - cpu) / n * 1e6)
        wait()
        per_step.append((time.perf_counter() - start) / n * 1e3)
    return first, per_step, host


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--device", default=None, help="cpu or gpu (default: JAX's default)")
    args = parser.parse_args()
    import jax

    import arraykit as ak

    device = ak.device(args.device) if args.device else ak.device(jax.devices()[0].platform)
    print(f"device {jax.devices(device.platform)[0].device_kind}, jax {jax.__version__}; "
          f"MLP {'-'.join(map(str, SIZES))} batch {BATCH}, SGD; ranges over 5 batches of "
          f"{max(1, args.steps // 5)} steps")
    cases = [("highest", jax.lax.Precision.HIGHEST), ("high", None)]
    for setting, jax_precision in cases:
        ak.set_float32_matmul_precision(setting)
        figures = {"arraykit.jit": measure(*arraykit_step(device), args.steps),
                   "jax.jit": measure(*jax_step(device, jax_precision), args.steps)}
        anchor = "HIGHEST" if jax_precision is not None else "JAX's default"
        print(f"\nfloat32 matmul precision {setting!r} (jax.jit: {anchor})")
        for name, (first, per_step, host) in figures.items():
            print(f"  {name:13} first call {first:7.2f} s   step {min(per_step):.3f}-{max(per_step):.3f} ms"
                  f"   host {min(host):.0f}-{max(host):.0f} us/call")
        ak_step, jax_step_ms = figures["arraykit.jit"][1], figures["jax.jit"][1]
        ratio = [a / b for a, b in zip(sorted(ak_step), sorted(jax_step_ms))]
        print(f"  step ratio arraykit/jax x{min(ratio):.2f}-{max(ratio):.2f}")
    ak.set_float32_matmul_precision("highest")


if __name__ == "__main__":
    main()
