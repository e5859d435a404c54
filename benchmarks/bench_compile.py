"""First-call cost of a new shape: what an eager op costs when its kernel is not cached.

    python benchmarks/bench_compile.py [--shapes N]

Runs the same small ops (the element-wise and reduction mix of a typical array-API
assertion: isnan, equal, signbit, where, all) on N shapes never seen before, on
arraykit with its small-kernel compile options, on arraykit with them switched off
(``launch.SMALL_KERNEL_ELEMENTS = 0``), on jax.numpy and on NumPy, in one process.
arraykit runs twice with them: its first shapes compile the size-bucket programs
(:mod:`arraykit.kernels.size_buckets`, once per process and bucket), later new shapes
of the same sizes (the shapes transposed) find them compiled: what a new shape costs
in a process that has run a while. Reports milliseconds per op on a new shape and the
ratios; also the time per op once the kernels are cached (the first
``size_buckets.EXACT_AFTER`` calls of a shape run on the bucket program, the next
compile its exact kernel).
"""

from __future__ import annotations

import argparse
import time

import jax.numpy as jnp
import numpy as np

import arraykit as ak
from arraykit.kernels import launch, size_buckets


def _ops(xp, x, y):
    """The op mix; returns the number of ops it ran."""
    nan = xp.isnan(x)
    zero = xp.equal(x, 0.0)
    sign = xp.signbit(x)
    same = xp.where(nan | (zero & sign), 42.0, x) == xp.where(nan, 42.0, y)
    bool(xp.all(same))
    return 9


def _per_op_ms(xp, make, shapes):
    """Milliseconds per op: (first calls on the given new shapes, repeat calls)."""
    ops = 0
    start = time.perf_counter()
    for shape in shapes:
        x = make(np.full(shape, 1.5, dtype=np.float32))
        ops += _ops(xp, x, x)
    first = (time.perf_counter() - start) / ops * 1e3
    x = make(np.full(shapes[0], 1.5, dtype=np.float32))
    for _ in range(size_buckets.EXACT_AFTER):  # past the size buckets: exact kernels
        _ops(xp, x, x)
    ops = 0
    start = time.perf_counter()
    for _ in range(200):
        ops += _ops(xp, x, x)
    again = (time.perf_counter() - start) / ops * 1e3
    return first, again


def main():
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", type=int, default=12, help="new shapes per library")
    args = parser.parse_args()
    _ops(ak, ak.asarray(np.ones(3, np.float32)), ak.asarray(np.ones(3, np.float32)))  # warm up
    _ops(jnp, jnp.ones(3), jnp.ones(3))
    rows = []
    base = 5
    first = [(base + i, 3) for i in range(args.shapes)]
    for name, xp, make, small, shapes in [
        ("arraykit, first shapes", ak, ak.asarray, launch.SMALL_KERNEL_ELEMENTS, first),
        ("arraykit, later new shapes", ak, ak.asarray, launch.SMALL_KERNEL_ELEMENTS,
         [s[::-1] for s in first]),
        ("arraykit, no compile options", ak, ak.asarray, 0, None),
        ("jax.numpy", jnp, jnp.asarray, None, None),
        ("numpy", np, np.asarray, None, None),
    ]:
        if shapes is None:
            base += args.shapes
            shapes = [(base + i, 3) for i in range(args.shapes)]
        if small is not None:
            saved, launch.SMALL_KERNEL_ELEMENTS = launch.SMALL_KERNEL_ELEMENTS, small
        try:
            rows.append((name, *_per_op_ms(xp, make, shapes)))
        finally:
            if small is not None:
                launch.SMALL_KERNEL_ELEMENTS = saved
    ref = rows[0][1]
    print(f"ms per op, {args.shapes} new shapes x 9 ops (isnan, equal, signbit, &, |, where x2, ==, all)")
    print(f"{'library':32}{'new shape':>12}{'cached':>12}{'new/arraykit':>14}")
    for name, first, again in rows:
        print(f"{name:32}{first:12.3f}{again:12.4f}{first / ref:14.2f}")


if __name__ == "__main__":
    main()
