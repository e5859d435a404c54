"""One fresh process of ``bench_gpu.py``'s ``first`` and ``cache`` figures: the jitted
digits step (``examples/train_digits.py``'s 64-128-128-10 model, SGD with momentum 0.9,
random data of the digits' shapes) called once, by arraykit (``arraykit.jit``, with
the persistent compilation cache in ``--cache-dir`` when given) or by JAX
(``jax.jit`` + optax, the same step as JAX users write it). Prints one JSON line:
seconds from ``--spawned`` (the parent's ``time.time()`` when it started this
process) to the first step's result, seconds spent importing, and arraykit's cache
counters. Each figure runs in its own process, so neither framework inherits the
other's compiled kernels or the device's warm-up.

    python benchmarks/cached_start.py [--framework arraykit|jax] [--device gpu|cpu]
                                      [--cache-dir DIR] [--spawned T]
"""

from __future__ import annotations

import time

spawned_default = time.time()

import argparse  # noqa: E402 (the clock starts before the imports it measures)
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

import arraykit as ak  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))
import train_digits  # noqa: E402
from mlp_anchor import make_step  # noqa: E402


def arraykit_first_step(device, x, y):
    model = train_digits.make_model().to(device)
    opt = ak.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = ak.jit(train_digits.make_step(model, opt))
    loss = step(ak.asarray(x, device=device), ak.asarray(y, device=device))
    loss.untyped_storage().buffer.block_until_ready()


def jax_first_step(device, x, y):
    sizes = (64, 128, 128, 10)
    keys = jax.random.split(jax.random.key(1), 3)
    with jax.default_device(device):
        params = [(jax.random.normal(k, (i, o)) / np.sqrt(i), jnp.zeros(o))
                  for k, i, o in zip(keys, sizes[:-1], sizes[1:])]
        xj, yj = jnp.asarray(x), jnp.asarray(y, jnp.int32)
        tx = optax.sgd(0.1, momentum=0.9)
        jax.block_until_ready(make_step(tx)(params, tx.init(params), xj, yj))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=("arraykit", "jax"), default="arraykit")
    parser.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--cache-dir")
    parser.add_argument("--spawned", type=float, default=spawned_default)
    args = parser.parse_args()
    imported = time.time()
    if args.cache_dir:
        ak.set_compilation_cache_dir(args.cache_dir)
    rng = np.random.default_rng(0)
    x = rng.random((64, 64)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    if args.framework == "jax":
        jax_first_step(jax.devices(args.device)[0], x, y)
    else:
        arraykit_first_step(ak.device(args.device), x, y)
    done = time.time()
    print(json.dumps({"wall_s": done - args.spawned, "import_s": imported - args.spawned,
                      "cache": ak.compilation_cache_info()}))


if __name__ == "__main__":
    main()
