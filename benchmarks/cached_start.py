"""One process of ``bench_gpu.py``'s ``cache`` figure: with the persistent compilation
cache in ``CACHE_DIR``, run the jitted digits step (``examples/train_digits.py``'s
model and step, random data of the digits' shapes) once and print, as one JSON line,
the seconds from ``--spawned`` (the parent's ``time.time()`` when it started this
process) to the step's result, the seconds spent importing, and the cache counters.

    python benchmarks/cached_start.py [--device gpu|cpu] [--spawned T] CACHE_DIR
"""

from __future__ import annotations

import time

spawned_default = time.time()

import argparse  # noqa: E402 (the clock starts before the imports it measures)
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

import arraykit as ak  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))
import train_digits  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache_dir")
    parser.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--spawned", type=float, default=spawned_default)
    args = parser.parse_args()
    imported = time.time()
    ak.set_compilation_cache_dir(args.cache_dir)
    device = ak.device(args.device)
    rng = np.random.default_rng(0)
    x = ak.asarray(rng.random((64, 64)).astype(np.float32), device=device)
    y = ak.asarray(rng.integers(0, 10, 64), device=device)
    model = train_digits.make_model().to(device)
    step = ak.jit(train_digits.make_step(model, ak.optim.SGD(model.parameters(), lr=0.1,
                                                               momentum=0.9)))
    loss = step(x, y)
    loss.untyped_storage().buffer.block_until_ready()
    done = time.time()
    print(json.dumps({"wall_s": done - args.spawned, "import_s": imported - args.spawned,
                      "cache": ak.compilation_cache_info()}))


if __name__ == "__main__":
    main()
