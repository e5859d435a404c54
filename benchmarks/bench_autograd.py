"""Eager autograd cost, side by side with PyTorch (CPU) and jitted JAX, with ratios.

    python benchmarks/bench_autograd.py [--n 2048] [--c 8192] [--repeats 7] [--quick]

(a) cross-entropy forward + backward on (N, C) float32 logits with integer labels:
    arraykit eager (``F.cross_entropy(x, y).backward()``, x requires grad), PyTorch
    eager, and one ``jax.jit`` of ``jax.value_and_grad`` of
    ``optax.softmax_cross_entropy_with_integer_labels(...).mean()`` (JAX's default
    32-bit mode, int32 labels). Milliseconds per step (median of ``--repeats`` timed
    loops after warm-up) and the peak memory of each library measured in a fresh
    subprocess: the growth of the process's resident-set high-water mark
    (VmHWM, reset through ``/proc/self/clear_refs`` once the inputs are made, minus
    VmRSS at that moment) over three steps, compilation included; XLA's CPU buffers
    are invisible to tracemalloc and ``memory_stats()`` is None on the CPU.
(b) the cost of recording: small eager ops (16-element float32 add, 256x256 float32
    matmul) on tensors that require grad against the same op without, and PyTorch
    both ways, microseconds per op (results waited for once per batch).

arraykit and JAX results are waited for (``block_until_ready``; arraykit through
``t.untyped_storage().buffer``).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import numpy as np


def _ready(t):
    t.untyped_storage().buffer.block_until_ready()


def ce_steps(lib, n, c):
    """(step, inputs): one forward+backward of ``lib`` on fresh inputs (the same values)."""
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((n, c), dtype=np.float32)
    labels = rng.integers(0, c, n)
    if lib == "arraykit":
        import arraykit as ak
        import arraykit.nn.functional as F

        x = ak.asarray(logits, requires_grad=True)
        y = ak.asarray(labels)

        def step():
            x.grad = None
            loss = F.cross_entropy(x, y)
            loss.backward()
            _ready(x.grad)
            _ready(loss)
            return float(loss.item())

    elif lib == "torch":
        import torch

        x = torch.from_numpy(logits.copy()).requires_grad_()
        y = torch.from_numpy(labels)

        def step():
            x.grad = None
            loss = torch.nn.functional.cross_entropy(x, y)
            loss.backward()
            return float(loss.item())

    else:
        import jax
        import jax.numpy as jnp
        import optax

        x = jnp.asarray(logits)
        y = jnp.asarray(labels.astype(np.int32))

        @jax.jit
        def value_and_grad(x, y):
            def loss(x):
                return optax.softmax_cross_entropy_with_integer_labels(x, y).mean()

            return jax.value_and_grad(loss)(x)

        def step():
            value, grad = value_and_grad(x, y)
            grad.block_until_ready()
            return float(value)

    return step


def median_ms(step, number, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            step()
        times.append((time.perf_counter() - start) / number * 1e3)
    return statistics.median(times)


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def memory_child(lib, n, c):
    """Run in a fresh interpreter: print the peak RSS growth (MiB) of three steps over the
    RSS just after the inputs are made. On Linux the high-water mark is reset first
    (``/proc/self/clear_refs``), so making the inputs does not count; elsewhere
    ``ru_maxrss`` growth (a lower bound)."""
    step = ce_steps(lib, n, c)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
        before = _status_kib("VmRSS")
        for _ in range(3):
            step()
        growth = _status_kib("VmHWM") - before
    except OSError:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for _ in range(3):
            step()
        growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(json.dumps({"peak_mib": growth / 1024}))


def peak_memory(lib, n, c):
    out = subprocess.run(
        [sys.executable, __file__, "--memory-child", lib, "--n", str(n), "--c", str(c)],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_mib"]


def bench_cross_entropy(n, c, repeats, number):
    libs = ["arraykit", "torch", "jax"]
    steps = {lib: ce_steps(lib, n, c) for lib in libs}
    losses = {lib: steps[lib]() for lib in libs}  # warm-up (compilation) and a check
    for lib in libs:
        steps[lib]()
    spread = max(losses.values()) - min(losses.values())
    assert spread < 1e-3, losses
    times = {lib: [] for lib in libs}
    for _ in range(repeats):  # the libraries take turns, so a busy spell hits all of them
        for lib in libs:
            times[lib].append(median_ms(steps[lib], number, 1))
    ms = {lib: statistics.median(v) for lib, v in times.items()}
    mem = {lib: peak_memory(lib, n, c) for lib in libs}
    print(f"(a) cross-entropy forward+backward, N={n}, C={c}, float32, int labels")
    print(f"    {'library':<28} {'ms/step':>9} {'arraykit/lib':>13} {'peak RSS growth':>16}")
    names = {"arraykit": "arraykit eager", "torch": "PyTorch eager (CPU)",
             "jax": "JAX jit(value_and_grad)"}
    for lib in libs:
        print(f"    {names[lib]:<28} {ms[lib]:9.2f} {ms['arraykit'] / ms[lib]:13.2f} "
              f"{mem[lib]:13.0f} MiB")
    return ms, mem


def bench_recording(repeats, number):
    import arraykit as ak
    import torch

    rng = np.random.default_rng(1)
    cases = [
        ("add, 16 float32", (16,), lambda a, b: a + b),
        ("matmul, 256x256 float32", (256, 256), lambda a, b: a @ b),
    ]
    print("(b) recording cost, µs per op (median of batches; arraykit waited for once per batch)")
    print(f"    {'op':<26} {'arraykit':>10} {'ak grad':>10} {'torch':>10} {'torch grad':>11}"
          f" {'ak grad/no':>11} {'torch grad/no':>14}")
    rows = {}
    for name, shape, op in cases:
        a_np = rng.standard_normal(shape, dtype=np.float32)
        b_np = rng.standard_normal(shape, dtype=np.float32)
        variants = {
            "ak": (ak.asarray(a_np), ak.asarray(b_np), True),
            "ak_grad": (ak.asarray(a_np, requires_grad=True), ak.asarray(b_np, requires_grad=True), True),
            "torch": (torch.from_numpy(a_np.copy()), torch.from_numpy(b_np.copy()), False),
            "torch_grad": (torch.from_numpy(a_np.copy()).requires_grad_(),
                           torch.from_numpy(b_np.copy()).requires_grad_(), False),
        }
        us = {}
        for key, (a, b, sync) in variants.items():
            def batch(a=a, b=b, sync=sync):
                r = None
                for _ in range(number):
                    r = op(a, b)
                if sync:
                    _ready(r)

            batch()
            samples = []
            for _ in range(repeats):
                start = time.perf_counter()
                batch()
                samples.append((time.perf_counter() - start) / number * 1e6)
            us[key] = statistics.median(samples)
        rows[name] = us
        print(f"    {name:<26} {us['ak']:10.1f} {us['ak_grad']:10.1f} {us['torch']:10.1f} "
              f"{us['torch_grad']:11.1f} {us['ak_grad'] / us['ak']:11.2f} "
              f"{us['torch_grad'] / us['torch']:14.2f}")
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--c", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="N=256, C=1024, fewer repeats")
    parser.add_argument("--memory-child", choices=["arraykit", "torch", "jax"])
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child, args.n, args.c)
        return
    if args.quick:
        args.n, args.c, args.repeats = 256, 1024, 3
    bench_cross_entropy(args.n, args.c, args.repeats, number=3)
    bench_recording(args.repeats, number=200)


if __name__ == "__main__":
    main()
