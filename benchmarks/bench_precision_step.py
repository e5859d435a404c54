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
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import profile_step  # noqa: E402 (its MLP steps; it puts examples/ on the path)


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
          f"MLP 784-1024-1024-10 batch 256, SGD; ranges over 5 batches of "
          f"{max(1, args.steps // 5)} steps")
    cases = [("highest", jax.lax.Precision.HIGHEST), ("high", None)]
    for setting, jax_precision in cases:
        ak.set_float32_matmul_precision(setting)
        steps = profile_step._mlp_steps(device, jax_precision)
        figures = {"arraykit.jit": measure(*steps["mlp-jit"], args.steps),
                   "jax.jit": measure(*steps["mlp-jax"], args.steps)}
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
