"""Core memory-model benchmarks: arraykit next to NumPy, PyTorch and JAX in one process.

    python benchmarks/bench_core.py            # full sizes (needs about 2.5 GB of RAM)
    python benchmarks/bench_core.py --quick    # smaller sizes, a few seconds

Three measurements, each reported as a time (or bandwidth) and as a ratio to arraykit:

(a) a view op (``x.T``, ``x[::2, 1:]``) on a 1000x1000 float32, in µs per op. In
    arraykit, NumPy and PyTorch this only builds metadata; JAX has no views, so its
    "view" is an eagerly dispatched copy (timed until the result is ready).
(b) ``x[5] = 1.0`` on float32 tensors of 1e5 and 1e8 elements, in µs per write.
    arraykit donates the old buffer so a write costs O(1), not O(size); the
    1e8 / 1e5 ratio is printed. JAX is shown eagerly (``x.at[5].set(1.0)``, a full
    copy) and through a jitted function that donates its argument.
(c) ``contiguous()`` of a transposed 4096x4096 float32, in GB/s counting the bytes
    read plus the bytes written (2 x 64 MiB).

Every arraykit and JAX timing waits for the result (``block_until_ready``); arraykit
is synchronized through ``t.untyped_storage().buffer.block_until_ready()``. Each
number is the median over repeats of a timed loop, after warm-up. Wall-clock time
varies with machine load; the ratios are the stable part.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import torch

import arraykit as ak


def ak_sync(t):
    """Wait until every queued write into ``t``'s storage has finished."""
    t.untyped_storage().buffer.block_until_ready()


def measure(body, number, repeats, warmup=2):
    """Median seconds per call of ``body(number)`` (a loop of ``number`` calls)."""
    for _ in range(warmup):
        body(number)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        body(number)
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def row(name, value, unit, reference, higher_is_better=False):
    """One table line: value, unit and the ratio to the arraykit reference."""
    if reference is None:
        ratio = "  (ref)"
    else:
        r = reference / value if higher_is_better else value / reference
        ratio = f"{r:9.3g}x"
    print(f"  {name:<44} {value:12.2f} {unit:<6} {ratio}")


def header(title, note):
    print()
    print(title)
    print(f"  {'':<44} {'':>12} {'':<6} {note}")


# ---------------------------------------------------------------------------
# (a) view ops
# ---------------------------------------------------------------------------


def bench_views(n, repeats):
    number = 2000
    a = ak.zeros((n, n), dtype=ak.float32)
    npx = np.zeros((n, n), dtype=np.float32)
    tx = torch.zeros((n, n), dtype=torch.float32)
    jx = jnp.zeros((n, n), dtype=jnp.float32)
    jx.block_until_ready()

    def loop(op):
        def body(k):
            for _ in range(k):
                op()
        return body

    def jax_loop(op):
        def body(k):
            out = None
            for _ in range(k):
                out = op()
            out.block_until_ready()
        return body

    results = {}
    for label, ops in [
        ("x.T", [
            ("arraykit  x.T", loop(lambda: a.T)),
            ("numpy     x.T", loop(lambda: npx.T)),
            ("torch     x.T", loop(lambda: tx.T)),
            ("jax.numpy x.T (a copy)", jax_loop(lambda: jx.T)),
        ]),
        ("x[::2, 1:]", [
            ("arraykit  x[::2, 1:]", loop(lambda: a[::2, 1:])),
            ("numpy     x[::2, 1:]", loop(lambda: npx[::2, 1:])),
            ("torch     x[::2, 1:]", loop(lambda: tx[::2, 1:])),
            ("jax.numpy x[::2, 1:] (a copy)", jax_loop(lambda: jx[::2, 1:])),
        ]),
    ]:
        header(f"(a) view op {label} on a {n}x{n} float32", "arraykit speedup")
        ref = None
        for name, body in ops:
            k = number if not name.startswith("jax") else max(number // 20, 20)
            us = measure(body, k, repeats) * 1e6
            results[name] = us
            row(name, us, "µs", ref)
            if ref is None:
                ref = us
    return results


# ---------------------------------------------------------------------------
# (b) small write into a large tensor
# ---------------------------------------------------------------------------


def _set5(x):
    return x.at[5].set(1.0)


_set5_donating = jax.jit(_set5, donate_argnums=0)


def _write_body(x, sync=None):
    """A timed body: ``k`` times ``x[5] = 1.0``, then ``sync(x)`` when given."""

    def body(k):
        for _ in range(k):
            x[5] = 1.0
        if sync is not None:
            sync(x)

    return body


def _jax_write_body(box, write):
    """A timed body: ``k`` times ``x = write(x)`` on the JAX array ``box[0]``, kept there."""

    def body(k):
        x = box[0]
        for _ in range(k):
            x = write(x)
        x.block_until_ready()
        box[0] = x

    return body


def bench_write(size, repeats, number):
    """µs per ``x[5] = 1.0`` for a float32 tensor of ``size`` elements."""
    results = {}

    a = ak.zeros(size, dtype=ak.float32)
    results["arraykit  x[5] = 1.0"] = measure(_write_body(a, ak_sync), number, repeats)
    ak_ok = a[5].item() == 1.0 and a.untyped_storage().size() == size
    del a
    gc.collect()

    npx = np.zeros(size, dtype=np.float32)
    results["numpy     x[5] = 1.0"] = measure(_write_body(npx), number, repeats)
    del npx

    tx = torch.zeros(size, dtype=torch.float32)
    results["torch     x[5] = 1.0"] = measure(_write_body(tx), number, repeats)
    del tx
    gc.collect()

    box = [jnp.zeros(size, dtype=jnp.float32)]
    results["jax       jit(x.at[5].set(1.0), donate)"] = measure(
        _jax_write_body(box, _set5_donating), number, repeats
    )
    eager_number = max(1, min(number, int(2e8 // size)))
    results["jax       x.at[5].set(1.0) (eager, copies)"] = measure(
        _jax_write_body(box, _set5), eager_number, repeats, warmup=1
    )
    box.clear()
    gc.collect()
    if not ak_ok:
        raise SystemExit("arraykit write benchmark: x[5] did not hold 1.0 afterwards")
    return {k: v * 1e6 for k, v in results.items()}


def bench_writes(small, large, repeats):
    out = {}
    for size in (small, large):
        res = bench_write(size, repeats, number=200)
        header(f"(b) x[5] = 1.0 on a float32 tensor of {size:.0e} elements", "arraykit speedup")
        ref = None
        for name, us in res.items():
            row(name, us, "µs", ref)
            if ref is None:
                ref = us
        out[size] = res
    key = "arraykit  x[5] = 1.0"
    ratio = out[large][key] / out[small][key]
    verdict = "within 2x: O(1) write" if ratio <= 2 else "NOT within 2x"
    print(f"  arraykit write time ratio {large:.0e} / {small:.0e} elements: {ratio:.2f}  ({verdict})")
    return out, ratio


# ---------------------------------------------------------------------------
# (c) contiguous() of a transpose
# ---------------------------------------------------------------------------


def bench_contiguous(n, repeats):
    nbytes = 2 * n * n * 4  # read + write
    number = 3
    base = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    expected = np.ascontiguousarray(base.T)

    a = ak.asarray(base)

    def ak_body(k):
        for _ in range(k):
            out = a.T.contiguous()
        ak_sync(out)

    tx = torch.from_numpy(base.copy())

    def torch_body(k):
        for _ in range(k):
            tx.t().contiguous()

    def np_body(k):
        for _ in range(k):
            np.ascontiguousarray(base.T)

    jx = jnp.asarray(base)

    def jax_body(k):
        for _ in range(k):
            out = jnp.transpose(jx)
        out.block_until_ready()

    if not np.array_equal(a.T.contiguous().numpy(), expected):
        raise SystemExit("arraykit contiguous() benchmark: wrong values")
    header(
        f"(c) contiguous() of a transposed {n}x{n} float32 (GB/s = read+write bytes / time)",
        "arraykit speedup",
    )
    results = {}
    ref = None
    for name, body in [
        ("arraykit  x.T.contiguous()", ak_body),
        ("numpy     np.ascontiguousarray(x.T)", np_body),
        ("torch     x.t().contiguous()", torch_body),
        ("jax.numpy jnp.transpose(x)", jax_body),
    ]:
        gbs = nbytes / measure(body, number, repeats) / 1e9
        results[name] = gbs
        row(name, gbs, "GB/s", ref, higher_is_better=True)
        if ref is None:
            ref = gbs
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    args = parser.parse_args()
    if args.quick:
        view_n, small, large, cont_n, repeats = 1000, 10**4, 10**6, 1024, 5
    else:
        view_n, small, large, cont_n, repeats = 1000, 10**5, 10**8, 4096, 7

    print(
        f"arraykit vs numpy {np.__version__}, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), jax {jax.__version__} "
        f"[{jax.devices()[0].platform}]{'  --quick' if args.quick else ''}"
    )
    print("ratio column: other / arraykit for times (>1: arraykit faster), "
          "arraykit / other for GB/s (>1: arraykit faster)")
    bench_views(view_n, repeats)
    _, ratio = bench_writes(small, large, repeats)
    bench_contiguous(cont_n, repeats)
    return ratio


if __name__ == "__main__":
    main()
