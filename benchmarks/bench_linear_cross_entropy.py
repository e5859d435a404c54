"""Fused linear cross-entropy against the unfused ``cross_entropy(x @ w.T, target)``:
one forward and backward (gradients of x and w), time and peak memory.

Variants: arraykit's ``F.linear_cross_entropy`` eagerly and under ``arraykit.jit``,
arraykit's unfused ``F.cross_entropy(F.linear(x, w), t)`` eagerly and under
``arraykit.jit``, the fused JAX function (``arraykit.nn.linear_ce_kernels``) under
``jax.jit``, the unfused form as JAX users write it (``optax`` cross-entropy of
``x @ w.T``, int32 labels, ``jax.jit`` of ``value_and_grad``, JAX's default 32-bit
mode) and PyTorch eager (``F.cross_entropy(F.linear(x, w), t).backward()``).

Times: all variants in this process, median of ``--repeats`` steps after a warm-up
step, each waited for. Peak memory: each variant in a fresh subprocess (on a GPU the
subprocesses run side by side). On the CPU it
is the peak resident set size of a third step (VmHWM, reset through
``/proc/self/clear_refs`` once the gradients of two warm-up steps are dropped, garbage
collected and free heap handed back with ``malloc_trim``; glibc's mmap threshold is
fixed so that freed large buffers leave the resident set) minus the resident size
before that step and minus the gradients' bytes; on a GPU it is JAX's ``peak_bytes_in_use`` (or ``torch.cuda.max_memory_allocated``)
minus the bytes in use once the inputs exist and minus the gradients' bytes (JAX's
peak covers the first step: it is compiled without autotuning there): memory above
inputs and gradients.

    python benchmarks/bench_linear_cross_entropy.py            # CPU: N=2048, d=768, V=8192, float32
    python benchmarks/bench_linear_cross_entropy.py --gpu      # N=8192, d=768, V=50304, bfloat16
    python benchmarks/bench_linear_cross_entropy.py --n 1024 --d 256 --vocab 4096 --repeats 3
"""

from __future__ import annotations

import argparse
import concurrent.futures
import ctypes
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

VARIANTS = ("arraykit_fused_eager", "arraykit_fused_jit", "arraykit_unfused_eager",
            "arraykit_unfused_jit", "jax_fused_jit", "jax_unfused_jit", "torch_unfused")
BASELINE = "jax_unfused_jit"
PRESETS = {"cpu": dict(n=2048, d=768, vocab=8192, dtype="float32"),
           "gpu": dict(n=8192, d=768, vocab=50304, dtype="bfloat16")}


def _inputs(n, d, vocab):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, d)).astype(np.float32)
    w = (rng.normal(size=(vocab, d)) / np.sqrt(d)).astype(np.float32)
    return x, w, rng.integers(0, vocab, n)


def _arraykit(variant, x, w, t, dtype):
    import arraykit as ak
    import arraykit.nn.functional as F

    xs = ak.asarray(x).to(getattr(ak, dtype)).requires_grad_()
    ws = ak.asarray(w).to(getattr(ak, dtype)).requires_grad_()
    ts = ak.asarray(t)
    fused = "_fused" in variant

    def step(x, w, t):
        x.grad = None
        w.grad = None
        loss = F.linear_cross_entropy(x, w, t) if fused else F.cross_entropy(F.linear(x, w), t)
        loss.backward()
        return loss

    jitted = variant.endswith("_jit")
    fn = ak.jit(step) if jitted else step

    def run():
        fn(xs, ws, ts).untyped_storage().buffer.block_until_ready()
        for p in (xs, ws):
            p.grad.untyped_storage().buffer.block_until_ready()

    def drop_gradients():
        # arraykit.jit keeps the .grad storages its program writes: dropping them
        # would make the next call trace and compile again (compiler memory in the
        # peak). They stay; the program's old and new gradients both live until it ends.
        if not jitted:
            xs.grad = None
            ws.grad = None
        ak.buffer_pool.empty()

    return run, drop_gradients


def _jax(variant, x, w, t, dtype):
    import jax
    import jax.numpy as jnp
    import optax

    xs, ws = jnp.asarray(x, dtype), jnp.asarray(w, dtype)
    ts = jnp.asarray(t, jnp.int32)
    if variant == "jax_fused_jit":
        import arraykit.nn.functional.loss as LF
        from arraykit.nn import linear_ce_kernels as LCE

        tokens, rows = LF._lce_chunks(x.shape[0], w.shape[0], jax.devices()[0].platform)
        options = (False, -100, 0.0, "mean", tokens, rows)

        def loss(x, w):
            return LCE.linear_cross_entropy(x, w, None, ts, options)
    else:
        def loss(x, w):
            return optax.softmax_cross_entropy_with_integer_labels(x @ w.T, ts).mean()

    step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))

    def run():
        jax.block_until_ready(step(xs, ws))

    return run, lambda: None


def _torch(x, w, t, dtype, device):
    import torch

    xs = torch.tensor(x, device=device).to(getattr(torch, dtype)).requires_grad_()
    ws = torch.tensor(w, device=device).to(getattr(torch, dtype)).requires_grad_()
    ts = torch.tensor(t, device=device)

    def drop_gradients():
        xs.grad = None
        ws.grad = None

    def run():
        drop_gradients()
        torch.nn.functional.cross_entropy(torch.nn.functional.linear(xs, ws), ts).backward()
        if device == "cuda":
            torch.cuda.synchronize()

    return run, drop_gradients


def make(variant, size, gpu):
    """(run, drop_gradients): one forward and backward of ``variant``, waited for, and
    a function releasing the gradients it keeps."""
    x, w, t = _inputs(size["n"], size["d"], size["vocab"])
    if variant.startswith("arraykit"):
        return _arraykit(variant, x, w, t, size["dtype"])
    if variant.startswith("jax"):
        return _jax(variant, x, w, t, size["dtype"])
    return _torch(x, w, t, size["dtype"], "cuda" if gpu else "cpu")


def _torch_device_ok(gpu):
    import torch

    return not gpu or torch.cuda.is_available()


def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _gradient_bytes(size):
    itemsize = 2 if size["dtype"] == "bfloat16" else np.dtype(size["dtype"]).itemsize
    return (size["n"] + size["vocab"]) * size["d"] * itemsize


def _settled_rss():
    """Resident bytes once garbage is collected and free heap memory is handed back."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return _status("VmRSS")


def measure_peak(variant, size, gpu):
    """Peak bytes above inputs and gradients of one step of ``variant`` (this process),
    after two warm-up steps (compilation) with the gradients dropped."""
    run, drop_gradients = make(variant, size, gpu)
    if gpu and not variant.startswith("torch"):
        import jax

        device = jax.devices()[0]
        before = device.memory_stats()["bytes_in_use"]
        run()  # JAX's peak cannot be reset: the first step, compiled without autotuning
        return device.memory_stats()["peak_bytes_in_use"] - before - _gradient_bytes(size)
    run()
    run()
    drop_gradients()
    if gpu:
        import torch

        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        run()
        return torch.cuda.max_memory_allocated() - before - _gradient_bytes(size)
    before = _settled_rss()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # peak RSS := current RSS
    run()
    return _status("VmHWM") - before - _gradient_bytes(size)


def peak_in_subprocess(variant, size, gpu):
    """``measure_peak`` in a fresh Python process (so no other variant's memory counts)."""
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072", MALLOC_TRIM_THRESHOLD_="131072")
    if gpu:  # autotuning scratch buffers would count in JAX's peak
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_gpu_autotune_level=0").strip()
    cmd = [sys.executable, __file__, "--peak-of", variant, "--size", json.dumps(size)]
    if gpu:
        cmd.append("--gpu")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode:
        return f"failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}"
    return int(out.stdout.strip().splitlines()[-1])


def time_variants(variants, size, gpu, repeats):
    """Median seconds per step of each variant, all in this process."""
    times = {}
    for variant in variants:
        run, _ = make(variant, size, gpu)
        run()
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            run()
            samples.append(time.perf_counter() - start)
        times[variant] = statistics.median(samples)
    return times


def _machine(gpu):
    import jax
    import torch

    device = jax.devices()[0]
    where = f"{device.device_kind} ({device.platform})" if gpu else platform.processor() or platform.machine()
    return (f"{where}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
            f"jax {jax.__version__}, torch {torch.__version__}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", action="store_true", help="GPU preset (N=8192, V=50304, bfloat16)")
    parser.add_argument("--n", type=int)
    parser.add_argument("--d", type=int)
    parser.add_argument("--vocab", type=int)
    parser.add_argument("--dtype", choices=("float32", "bfloat16"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-memory", action="store_true", help="times only")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--peak-of", help=argparse.SUPPRESS)
    parser.add_argument("--size", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peak_of:
        print(measure_peak(args.peak_of, json.loads(args.size), args.gpu))
        return
    size = dict(PRESETS["gpu" if args.gpu else "cpu"])
    size.update({k: getattr(args, k) for k in ("n", "d", "vocab", "dtype") if getattr(args, k)})
    variants = [v for v in args.variants.split(",") if v]
    if not _torch_device_ok(args.gpu):
        variants = [v for v in variants if not v.startswith("torch")]
        print("torch has no CUDA here: torch_unfused left out")
    print(_machine(args.gpu))
    print(f"N={size['n']} d={size['d']} V={size['vocab']} {size['dtype']}; "
          f"logits would take {size['n'] * size['vocab'] * 4 / 2**20:.0f} MiB in float32")
    times = time_variants(variants, size, args.gpu, args.repeats)
    peaks = {}
    if not args.no_memory:  # on a GPU side by side: each process reads its own allocator's peak
        with concurrent.futures.ThreadPoolExecutor(len(variants) if args.gpu else 1) as pool:
            peaks = dict(zip(variants, pool.map(lambda v: peak_in_subprocess(v, size, args.gpu), variants)))
    base_t = times.get(BASELINE)
    base_m = peaks.get(BASELINE)
    print(f"{'variant':24} {'ms/step':>9} {'vs ' + BASELINE:>20} {'peak MiB':>9} {'vs ' + BASELINE:>20}")
    for v in variants:
        t_ratio = f"{times[v] / base_t:.2f}x" if base_t else "-"
        peak = peaks.get(v)
        if isinstance(peak, int):
            m = f"{peak / 2**20:9.1f}"
            m_ratio = f"{peak / base_m:.3f}x" if isinstance(base_m, int) and base_m > 0 else "-"
        else:
            m, m_ratio = f"{'-' if peak is None else peak:>9}", "-"
        print(f"{v:24} {times[v] * 1e3:9.1f} {t_ratio:>20} {m} {m_ratio:>20}")


if __name__ == "__main__":
    main()
