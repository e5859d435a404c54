"""Eager dispatch cost: per-call time of small ops on arraykit, NumPy, jax.numpy,
PyTorch and array_api_strict, side by side in one process, with ratios.

    python benchmarks/bench_dispatch.py [--size N] [--number K]

Each op runs on tiny operands so the figure is the library's per-call overhead
(dispatch, promotion, allocation), not arithmetic. The libraries take turns batch
by batch, so a slow spell of a shared machine slows all of them alike. JAX and arraykit results are
synchronized (block_until_ready) once per timing batch, as an eager user would
observe them in a loop. ``asarray(ndarray)`` makes an array from a 16-element NumPy
array (NumPy's own ``asarray`` returns it as it is). Also prints arraykit's kernel
cache counters.
"""

from __future__ import annotations

import argparse
import statistics
import timeit

import jax
import jax.numpy as jnp
import numpy as np

import arraykit as ak

try:
    import torch
except ImportError:  # benchmarks still run without the oracle
    torch = None
try:
    import array_api_strict as strict
except ImportError:
    strict = None


def _ops():
    """(name, {library: callable(a, b, idx, mask)})."""
    return [
        ("add", lambda xp: lambda a, b, i, m: xp.add(a, b)),
        ("multiply scalar", lambda xp: lambda a, b, i, m: a * 2.0),
        ("exp", lambda xp: lambda a, b, i, m: xp.exp(a)),
        ("less", lambda xp: lambda a, b, i, m: a < b),
        ("where", lambda xp: lambda a, b, i, m: xp.where(m, a, b)),
        ("sum", lambda xp: lambda a, b, i, m: xp.sum(a)),
        ("max axis=0", lambda xp: lambda a, b, i, m: xp.max(a, axis=0)),
        ("mean", lambda xp: lambda a, b, i, m: xp.mean(a)),
        ("x[3:7]", lambda xp: lambda a, b, i, m: a[3:7]),
        ("take(x, idx)", lambda xp: lambda a, b, i, m: xp.take(a, i, axis=0)),
        ("x[1] = 2.0", lambda xp: lambda a, b, i, m: a.__setitem__(1, 2.0)),
        ("x[idx] = 2.0", lambda xp: lambda a, b, i, m: a.__setitem__(i, 2.0)),
        ("asarray(ndarray)", lambda xp: lambda a, b, i, m, host=np.ones(16, np.float32): xp.asarray(host)),
    ]


def _libraries(n):
    base_a = np.linspace(0.0, 1.0, n, dtype=np.float32)
    base_b = np.linspace(1.0, 2.0, n, dtype=np.float32)
    idx = np.array([0, 2, 4], dtype=np.int64)
    mask = base_a > 0.5
    libs = {
        "numpy": (np, np.copy(base_a), np.copy(base_b), idx, mask, None),
        "arraykit": (ak, ak.asarray(base_a), ak.asarray(base_b), ak.asarray(idx), ak.asarray(mask),
                     lambda r: r.untyped_storage().buffer.block_until_ready() if isinstance(r, ak.Tensor) else r),
        "jax.numpy": (jnp, jnp.asarray(base_a), jnp.asarray(base_b), jnp.asarray(idx), jnp.asarray(mask),
                      lambda r: r.block_until_ready() if isinstance(r, jax.Array) else r),
    }
    if torch is not None:
        libs["torch"] = (torch, torch.from_numpy(base_a.copy()), torch.from_numpy(base_b.copy()),
                         torch.from_numpy(idx), torch.from_numpy(mask), None)
    if strict is not None:
        libs["array_api_strict"] = (strict, strict.asarray(base_a), strict.asarray(base_b),
                                    strict.asarray(idx), strict.asarray(mask), None)
    return libs


REPEATS = 7


def _batch(fn, args, sync, number):
    """A callable running ``fn(*args)`` ``number`` times, then synchronizing once."""

    def batch():
        r = None
        for _ in range(number):
            r = fn(*args)
        if sync is not None:
            sync(r)

    return batch


def _time_interleaved(batches, number):
    """Median per-call time (us) of each batch; the libraries take turns, batch by batch,
    so a slow spell of the machine hits all of them rather than one."""
    for batch in batches.values():
        batch()
    runs = {name: [] for name in batches}
    for _ in range(REPEATS):
        for name, batch in batches.items():
            runs[name].append(timeit.timeit(batch, number=1))
    return {name: statistics.median(r) / number * 1e6 for name, r in runs.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    libs = _libraries(args.size)
    names = list(libs)
    print(f"per-call time in microseconds (operands of {args.size} float32), "
          f"median of {REPEATS} interleaved batches")
    header = f"{'op':18s}" + "".join(f"{n:>18s}" for n in names) + f"{'ak/jnp':>9s}{'ak/np':>9s}"
    print(header)
    print("-" * len(header))
    failures = []
    for op, make in _ops():
        batches = {}
        for name in names:
            xp, a, b, i, m, sync = libs[name]
            if name == "jax.numpy" and op.startswith("x[") and " = " in op:
                continue  # JAX arrays are immutable
            batch = _batch(make(xp), (a, b, i, m), sync, args.number)
            try:
                batch()
            except Exception as exc:  # shown as nan, with the reason
                failures.append(f"{name} {op}: {type(exc).__name__}: {exc}")
                continue
            batches[name] = batch
        row = _time_interleaved(batches, args.number)
        line = f"{op:18s}" + "".join(f"{row.get(n, float('nan')):18.2f}" for n in names)
        ak_time = row["arraykit"]
        line += f"{ak_time / row.get('jax.numpy', float('nan')):9.2f}{ak_time / row['numpy']:9.2f}"
        print(line)
    for failure in failures:
        print("nan:", failure)
    print("\narraykit kernel cache:", ak.cache_info())


if __name__ == "__main__":
    main()
