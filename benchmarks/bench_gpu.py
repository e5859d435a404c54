"""The GPU figures of issue 15, side by side in one process: arraykit eager and
arraykit.jit, jax.jit, PyTorch eager and torch.compile, as ratios against the aims.

    python benchmarks/bench_gpu.py [--device gpu|cpu] [--repeats 5] [--steps 20]
                                   [--only mlp,large,ce,first,dropped,enqueue,cache]

It prints the device it runs on. Without a GPU it says so and exits 0, unless
``--device cpu`` asks for a trial run on the CPU, at smaller sizes (printed).

Figures (``GPU.md``'s baseline table):

* ``mlp``: small MLP step 784-1024-1024-10, batch 256, SGD: arraykit.jit / jax.jit
  (aim <= 1.1) and arraykit eager / PyTorch eager (aim <= 1.5 on a GPU, <= 1.3 on the
  2-core CPU);
* ``large``: MLP 784-4096x3-10, batch 8192, SGD: arraykit.jit at "high" / jax.jit at
  JAX's default precision and arraykit.jit at "highest" / jax.jit at "highest" (aims
  <= 1.05); PyTorch with TF32 allowed alongside;
* ``ce``: cross-entropy forward+backward on 8192x50304 logits, float32 and bfloat16:
  arraykit eager / jax.jit (aim <= 1.0), arraykit.jit / torch.compile (aim <= 1.0), and
  the peak memory above the logits of each (GPU only; each measured in a fresh
  process, since XLA's allocator keeps one all-time peak; the processes run side by
  side, each reading its own allocator's peak): arraykit.jit <= eager;
* ``first``: first call (trace + compile) of the jitted digits step
  (``examples/train_digits.py``) / jax.jit's first call of the same step (aim <= 1.2),
  each in a fresh process (``benchmarks/cached_start.py``);
* ``enqueue``: time to enqueue N calls of the jitted small MLP step against the time
  until they finish, arraykit.jit and jax.jit (asynchronous dispatch: enqueue well
  below finish when the device is the bottleneck);
* ``dropped``: 50 calls of a jitted ``lambda t: (t @ w).tanh()`` on 2048x2048 float32
  as statements (each result dropped at once), the loop's time against the wait for
  the last result after it: a dropped result must not make the next call wait;
* ``cache``: two fresh processes (``benchmarks/cached_start.py``) sharing a new
  persistent compilation cache directory each run the jitted digits step once; the
  second's time from the end of its imports to its first step's result (aim <= 2 s;
  the time from its start is printed too).

Timing: each variant runs ``--steps`` calls, then waits for its results with
``block_until_ready`` (``torch.cuda.synchronize``); no value is read inside a timed
loop. Libraries take turns within each repeat; the median is reported.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
import torch

import arraykit as ak
import arraykit.nn.functional as AF

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_ROOT, "examples"))

import train_digits  # noqa: E402 (the example's model and step)
from mlp_anchor import make_step, make_torch_step, mlp  # noqa: E402

GPU_SIZES = {
    "mlp": ((784, 1024, 1024, 10), 256),
    "large": ((784, 4096, 4096, 4096, 10), 8192),
    "ce": (8192, 50304),
}
CPU_SIZES = {
    "mlp": ((784, 1024, 1024, 10), 256),
    "large": ((784, 1024, 1024, 1024, 10), 1024),
    "ce": (1024, 8192),
}
LR = 0.01


# ----------------------------------------------------------------------------- devices


def _gpu_device():
    try:
        return jax.devices("gpu")[0]
    except RuntimeError:
        return None


class Target:
    """Where a run happens: the JAX device, arraykit's device and PyTorch's."""

    def __init__(self, jax_device):
        self.jax = jax_device
        self.gpu = jax_device.platform == "gpu"
        self.ak = ak.device("gpu" if self.gpu else "cpu")
        self.torch = torch.device("cuda" if self.gpu and torch.cuda.is_available() else "cpu")

    def torch_sync(self):
        if self.torch.type == "cuda":
            torch.cuda.synchronize()


def _ak_ready(*tensors):
    for t in tensors:
        t.untyped_storage().buffer.block_until_ready()


# ----------------------------------------------------------------------------- timing


def _median_ms(variants, repeats, steps):
    """{name: median ms per call}; ``variants`` maps names to (call, wait)."""
    times = {name: [] for name in variants}
    for call, wait in variants.values():  # warm up: compile, state creation
        for _ in range(3):
            wait(call())
    for _ in range(repeats):
        for name, (call, wait) in variants.items():
            start = time.perf_counter()
            for _ in range(steps):
                out = call()
            wait(out)
            times[name].append((time.perf_counter() - start) / steps * 1e3)
    return {name: statistics.median(v) for name, v in times.items()}


def _ratio_line(label, numerator, denominator, aim):
    ratio = numerator / denominator
    verdict = "meets" if ratio <= aim else "misses"
    print(f"  {label}: {ratio:.2f}x (aim <= {aim}x: {verdict})")


def _print_times(times):
    for name, ms in times.items():
        print(f"  {name:40s} {ms:9.3f} ms")


# ----------------------------------------------------------------------------- MLP steps


def ak_mlp(target, sizes, batch, jitted, precision="highest"):
    """(call, wait) of an arraykit SGD step; the matmul precision is set on each call."""
    model = mlp(ak.nn, sizes).to(target.ak)
    opt = ak.optim.SGD(model.parameters(), lr=LR)
    rng = np.random.default_rng(0)
    x = ak.asarray(rng.normal(size=(batch, sizes[0])).astype(np.float32), device=target.ak)
    y = ak.asarray(rng.integers(0, sizes[-1], batch), device=target.ak)
    params = list(model.parameters())
    step = train_digits.make_step(model, opt)
    fn = ak.jit(step) if jitted else step

    def call():
        ak.set_float32_matmul_precision(precision)
        return fn(x, y)

    return call, lambda loss: _ak_ready(loss, *params)


def jax_mlp(target, sizes, batch, precision=None):
    """(call, wait) of a hand-written jax.jit SGD step (optax; int32 labels)."""
    keys = jax.random.split(jax.random.key(0), len(sizes) - 1)
    with jax.default_device(target.jax):
        params = [
            (jax.random.normal(k, (i, o), jnp.float32) / np.sqrt(i), jnp.zeros(o, jnp.float32))
            for k, i, o in zip(keys, sizes[:-1], sizes[1:])
        ]
        rng = np.random.default_rng(0)
        x = jnp.asarray(rng.normal(size=(batch, sizes[0])).astype(np.float32))
        y = jnp.asarray(rng.integers(0, sizes[-1], batch), jnp.int32)
    tx = optax.sgd(LR)
    state = [params, tx.init(params)]
    step = make_step(tx, precision)

    def call():
        state[0], state[1], loss = step(state[0], state[1], x, y)
        return loss

    return call, lambda loss: jax.block_until_ready((loss, state[0]))


def torch_mlp(target, sizes, batch, compiled, precision="highest"):
    """(call, wait) of a PyTorch SGD step, eager or under torch.compile."""
    torch.manual_seed(0)
    model = mlp(torch.nn, sizes).to(target.torch)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.normal(size=(batch, sizes[0])).astype(np.float32)).to(target.torch)
    y = torch.from_numpy(rng.integers(0, sizes[-1], batch)).to(target.torch)
    step = make_torch_step(model, opt)
    fn = torch.compile(step) if compiled else step

    def call():
        torch.set_float32_matmul_precision(precision)
        return fn(x, y)

    return call, lambda loss: target.torch_sync()


def small_mlp(target, sizes, args):
    (layer_sizes, batch) = sizes["mlp"]
    print(f"\nsmall MLP step {'-'.join(map(str, layer_sizes))}, batch {batch}, SGD")
    variants = {
        "arraykit eager": ak_mlp(target, layer_sizes, batch, jitted=False),
        "arraykit.jit": ak_mlp(target, layer_sizes, batch, jitted=True),
        "jax.jit + optax": jax_mlp(target, layer_sizes, batch),
        "torch eager": torch_mlp(target, layer_sizes, batch, compiled=False),
    }
    if args.torch_compile:
        variants["torch.compile"] = torch_mlp(target, layer_sizes, batch, compiled=True)
    times = _median_ms(variants, args.repeats, args.steps)
    _print_times(times)
    _ratio_line("arraykit.jit / jax.jit", times["arraykit.jit"], times["jax.jit + optax"], 1.1)
    aim = 1.5 if target.gpu else 1.3
    _ratio_line("arraykit eager / torch eager", times["arraykit eager"], times["torch eager"], aim)


def large_mlp(target, sizes, args):
    (layer_sizes, batch) = sizes["large"]
    print(f"\nlarge MLP step {'-'.join(map(str, layer_sizes))}, batch {batch}, SGD")
    highest = jax.lax.Precision.HIGHEST
    variants = {
        "arraykit.jit, 'high'": ak_mlp(target, layer_sizes, batch, True, "high"),
        "jax.jit, default precision": jax_mlp(target, layer_sizes, batch),
        "arraykit.jit, 'highest'": ak_mlp(target, layer_sizes, batch, True, "highest"),
        "jax.jit, 'highest'": jax_mlp(target, layer_sizes, batch, highest),
        "torch eager, 'high' (TF32)": torch_mlp(target, layer_sizes, batch, False, "high"),
    }
    times = _median_ms(variants, args.repeats, max(args.steps // 4, 2))
    ak.set_float32_matmul_precision("highest")
    torch.set_float32_matmul_precision("highest")
    _print_times(times)
    _ratio_line("arraykit.jit 'high' / jax.jit default", times["arraykit.jit, 'high'"],
                times["jax.jit, default precision"], 1.05)
    _ratio_line("arraykit.jit 'highest' / jax.jit 'highest'", times["arraykit.jit, 'highest'"],
                times["jax.jit, 'highest'"], 1.05)


# ----------------------------------------------------------------------------- cross-entropy


def _ce_inputs(rows, classes):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(rows, classes)).astype(np.float32)
    return logits, rng.integers(0, classes, rows)


def ce_variant(name, target, rows, classes, dtype):
    """(call, wait) of one cross-entropy forward+backward variant."""
    logits, labels = _ce_inputs(rows, classes)
    if name.startswith("arraykit"):
        x = ak.asarray(logits, device=target.ak).to(getattr(ak, dtype)).requires_grad_()
        y = ak.asarray(labels, device=target.ak)

        def grad_of(x, y):
            x.grad = None
            loss = AF.cross_entropy(x, y)
            loss.backward()
            return loss, x.grad

        fn = ak.jit(grad_of) if name == "arraykit.jit" else grad_of
        return (lambda: fn(x, y)), (lambda out: _ak_ready(*out))
    if name == "jax.jit":
        with jax.default_device(target.jax):
            x = jnp.asarray(logits).astype(dtype)
            y = jnp.asarray(labels, jnp.int32)
        fn = jax.jit(jax.value_and_grad(
            lambda x, y: optax.softmax_cross_entropy_with_integer_labels(x, y).mean()))
        return (lambda: fn(x, y)), jax.block_until_ready
    x = torch.from_numpy(logits).to(target.torch, getattr(torch, dtype)).requires_grad_()
    y = torch.from_numpy(labels).to(target.torch)

    def loss_of(x, y):
        return torch.nn.functional.cross_entropy(x, y)

    loss_fn = torch.compile(loss_of) if name == "torch.compile" else loss_of

    def call():
        x.grad = None
        loss = loss_fn(x, y)
        loss.backward()
        return loss

    return call, lambda out: target.torch_sync()


CE_VARIANTS = ("arraykit eager", "arraykit.jit", "jax.jit", "torch eager", "torch.compile")


def peak_above_logits(name, target, rows, classes, dtype):
    """Peak device bytes above the logits and labels (in use before the calls) during
    3 calls; run in a fresh process, where XLA's all-time peak is this variant's."""
    call, wait = ce_variant(name, target, rows, classes, dtype)
    if name.startswith("torch"):
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        for _ in range(3):
            wait(call())
        return torch.cuda.max_memory_allocated() - base
    stats = target.jax.memory_stats()
    base = stats["bytes_in_use"]
    for _ in range(3):
        wait(call())
    return target.jax.memory_stats()["peak_bytes_in_use"] - base


def _peak_in_subprocess(name, dtype, device):
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--device", device, "--peak", name, dtype],
        capture_output=True, text=True, check=False)
    if done.returncode:
        print(f"  peak of {name} failed: {(done.stderr.strip().splitlines() or [''])[-1]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])["peak"]


def cross_entropy(target, sizes, args):
    rows, classes = sizes["ce"]
    for dtype in ("float32", "bfloat16"):
        print(f"\ncross-entropy forward+backward {rows}x{classes} {dtype}")
        names = CE_VARIANTS if args.torch_compile else CE_VARIANTS[:-1]
        variants = {n: ce_variant(n, target, rows, classes, dtype) for n in names}
        times = _median_ms(variants, args.repeats, max(args.steps // 4, 2))
        _print_times(times)
        _ratio_line("arraykit eager / jax.jit", times["arraykit eager"], times["jax.jit"], 1.0)
        if "torch.compile" in times:
            _ratio_line("arraykit.jit / torch.compile", times["arraykit.jit"],
                        times["torch.compile"], 1.0)
        if not target.gpu:
            print("  peak memory: measured on a GPU only (the CPU keeps no allocator statistics)")
            continue
        with concurrent.futures.ThreadPoolExecutor(len(names)) as pool:  # one process each
            peaks = dict(zip(names, pool.map(lambda n: _peak_in_subprocess(n, dtype, "gpu"), names)))
        for n, peak in peaks.items():
            shown = "failed" if peak is None else f"{peak / 2**30:.2f} GiB"
            print(f"  peak above the logits, {n:28s} {shown}")
        if peaks["arraykit.jit"] is not None and peaks["arraykit eager"] is not None:
            verdict = "meets" if peaks["arraykit.jit"] <= peaks["arraykit eager"] else "misses"
            print(f"  arraykit.jit peak <= eager peak: {verdict}")


# ----------------------------------------------------------------------------- first call, enqueue


def _fresh_process(device, framework="arraykit", cache_dir=None):
    """The report of one ``benchmarks/cached_start.py`` process (None if it failed)."""
    child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cached_start.py")
    command = [sys.executable, child, "--framework", framework, "--device", device,
               "--spawned", repr(time.time())]
    if cache_dir:
        command += ["--cache-dir", cache_dir]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        print(f"  {framework} process failed: {done.stderr.strip()[-500:]}")
        return None
    report = json.loads(done.stdout.strip().splitlines()[-1])
    report["step_s"] = report["wall_s"] - report["import_s"]
    return report


def first_call(target, args):
    print("\nfirst call of the jitted digits step (64-128-128-10, batch 64, SGD momentum 0.9), "
          "each in a fresh process (benchmarks/cached_start.py)")
    ours = _fresh_process(args.device, "arraykit")
    theirs = _fresh_process(args.device, "jax")
    if ours is None or theirs is None:
        return
    print(f"  arraykit.jit first step {ours['step_s'] * 1e3:.0f} ms, jax.jit + optax first step "
          f"{theirs['step_s'] * 1e3:.0f} ms (after the imports; model, data and step made in it)")
    _ratio_line("arraykit.jit first call / jax.jit first call", ours["step_s"], theirs["step_s"], 1.2)


def enqueue(target, sizes, args):
    (layer_sizes, batch) = sizes["mlp"]
    n = args.steps * 10
    print(f"\nenqueue vs finish, {n} calls of the jitted small MLP step")
    for name, (call, wait) in {
        "arraykit.jit": ak_mlp(target, layer_sizes, batch, jitted=True),
        "jax.jit + optax": jax_mlp(target, layer_sizes, batch),
    }.items():
        for _ in range(3):
            wait(call())
        start = time.perf_counter()
        for _ in range(n):
            out = call()
        queued = time.perf_counter()
        wait(out)
        done = time.perf_counter()
        print(f"  {name:20s} enqueue {(queued - start) / n * 1e6:8.1f} us/call, "
              f"finish {(done - start) / n * 1e6:8.1f} us/call")


def dropped(target, args):
    n = 50
    print(f"\ndropped results: {n} calls of jitted (t @ w).tanh() on 2048x2048 float32 as statements")
    rng = np.random.default_rng(0)
    w_host, x_host = (rng.normal(size=(2048, 2048)).astype(np.float32) for _ in range(2))
    w, x = (ak.asarray(a, device=target.ak) for a in (w_host, x_host))
    ours = ak.jit(lambda t: (t @ w).tanh())
    with jax.default_device(target.jax):
        wj, xj = jnp.asarray(w_host), jnp.asarray(x_host)
    theirs = jax.jit(lambda t: jnp.tanh(t @ wj))
    for name, call, wait in (
        ("arraykit.jit", lambda: ours(x), lambda out: _ak_ready(out)),
        ("jax.jit", lambda: theirs(xj), jax.block_until_ready),
    ):
        for _ in range(3):
            wait(call())
        start = time.perf_counter()
        for _ in range(n):
            call()
        looped = time.perf_counter()
        wait(call())
        done = time.perf_counter()
        print(f"  {name:14s} loop {(looped - start) * 1e3:8.2f} ms, then the wait for one more "
              f"call {(done - looped) * 1e3:8.2f} ms")


def cached_start(target, args):
    print("\nsecond process with the persistent compilation cache (benchmarks/cached_start.py)")
    with tempfile.TemporaryDirectory() as cache:
        for run in ("first", "second"):
            report = _fresh_process(args.device, "arraykit", cache)
            if report is None:
                return
            print(f"  {run} process: first step's result {report['step_s']:.2f} s after its imports, "
                  f"{report['wall_s']:.2f} s after its start; cache {report['cache']}")
    verdict = "meets" if report["step_s"] <= 2.0 else "misses"
    print(f"  second process starts training {report['step_s']:.2f} s after its imports "
          f"(aim <= 2 s: {verdict})")


# ----------------------------------------------------------------------------- main


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--only", default="mlp,large,ce,first,dropped,enqueue,cache")
    parser.add_argument("--no-torch-compile", dest="torch_compile", action="store_false")
    parser.add_argument("--peak", nargs=2, metavar=("VARIANT", "DTYPE"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    jax_device = _gpu_device() if args.device == "gpu" else jax.devices("cpu")[0]
    if jax_device is None:
        print(f"no GPU here (JAX devices: {jax.devices()}); nothing measured. "
              "Use --device cpu for a trial run on the CPU.")
        return 0
    target = Target(jax_device)
    sizes = GPU_SIZES if target.gpu else CPU_SIZES
    if args.peak:
        rows, classes = sizes["ce"]
        peak = peak_above_logits(args.peak[0], target, rows, classes, args.peak[1])
        print(json.dumps({"peak": peak}))
        return 0
    torch_name = torch.cuda.get_device_name() if target.torch.type == "cuda" else "cpu"
    print(f"device: {jax_device.device_kind} ({jax_device.platform}), PyTorch on {torch_name}; "
          f"jax {jax.__version__}, torch {torch.__version__}"
          + ("" if target.gpu else "; CPU trial sizes, not the GPU figures"))
    figures = {
        "mlp": lambda: small_mlp(target, sizes, args),
        "large": lambda: large_mlp(target, sizes, args),
        "ce": lambda: cross_entropy(target, sizes, args),
        "first": lambda: first_call(target, args),
        "enqueue": lambda: enqueue(target, sizes, args),
        "dropped": lambda: dropped(target, args),
        "cache": lambda: cached_start(target, args),
    }
    for name in args.only.split(","):
        figures[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
