"""Data parallelism on 2 local processes and the DataLoader's cost per batch.

1. One data-parallel MLP training step (64-256-256-10, global batch 256 split over
   the processes, float32, SGD lr 0.01) on 2 processes started by
   ``arraykit.distributed.run`` (CPU, gloo): arraykit (``DistributedDataParallel`` +
   ``arraykit.jit``) against a hand-written ``jax.jit`` step with optax over the
   same global mesh (parameters replicated, batch split). Median ms per step, as
   rank 0 sees it.
2. The ``DataLoader``'s overhead per batch, one process: an epoch of 4096 float32
   rows of 64 features with int64 labels, batch 64, shuffled, no workers, against
   PyTorch's ``DataLoader`` on the same NumPy data (``torch.utils.data.TensorDataset``).

    python benchmarks/bench_distributed.py [--repeats 5] [--steps 20]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = (64, 256, 256, 10)
BATCH = 256
LR = 0.01


def worker(repeats, steps):
    """One process of the data-parallel comparison (run by the launcher)."""
    import arraykit.distributed as dist

    dist.init_process_group(timeout=120)
    import jax
    import numpy as np
    import optax
    from jax.sharding import NamedSharding, PartitionSpec

    import arraykit as ak
    import arraykit.nn.functional as F
    from arraykit import nn, optim
    from arraykit.nn.parallel import DistributedDataParallel
    from mlp_anchor import make_step, mlp

    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = dist.global_mesh()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    rows = slice(rank * BATCH // world, (rank + 1) * BATCH // world)

    ak.manual_seed(0)
    model = DistributedDataParallel(mlp(nn, SIZES))
    opt = optim.SGD(model.parameters(), lr=LR)

    @ak.jit
    def ak_step(xb, yb):
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    xa, ya = model.shard(ak.asarray(x[rows])), model.shard(ak.asarray(y[rows]))
    params = list(model.parameters())

    def run_arraykit():
        ak_step(xa, ya).untyped_storage().buffer.block_until_ready()
        for p in params:
            p.untyped_storage().buffer.block_until_ready()

    split = NamedSharding(mesh, PartitionSpec("data"))
    whole = NamedSharding(mesh, PartitionSpec())
    tx = optax.sgd(LR)
    linears = [m for m in model.module if isinstance(m, nn.Linear)]
    jax_params = [  # the same initial values, (in, out) weights
        (jax.make_array_from_process_local_data(whole, dist.to_process_local(m.weight.detach()).numpy().T),
         jax.make_array_from_process_local_data(whole, dist.to_process_local(m.bias.detach()).numpy()))
        for m in linears
    ]
    state = [tx.init(jax_params)]
    jax_step = make_step(tx)
    xj = jax.make_array_from_process_local_data(split, x[rows])
    yj = jax.make_array_from_process_local_data(split, y[rows].astype(np.int32))
    current = [jax_params]

    def run_jax():
        current[0], state[0], loss = jax_step(current[0], state[0], xj, yj)
        jax.block_until_ready((current[0], loss))

    timings = {"arraykit.jit (DDP)": run_arraykit, "jax.jit + optax": run_jax}
    for run in timings.values():  # compile
        run()
    medians = {name: [] for name in timings}
    for _ in range(repeats):
        for name, run in timings.items():
            start = time.perf_counter()
            for _ in range(steps):
                run()
            medians[name].append((time.perf_counter() - start) / steps * 1e3)
    if rank == 0:
        print(f"data-parallel step on {world} processes ({len(mesh.devices.flat)} devices), "
              f"MLP {'-'.join(map(str, SIZES))}, global batch {BATCH}:")
        for name, values in medians.items():
            print(f"  {name:22s} {statistics.median(values):7.3f} ms/step "
                  f"(min {min(values):.3f}, max {max(values):.3f})")
    dist.destroy_process_group()


def loaders(repeats):
    """The DataLoader's time per batch against PyTorch's, one process."""
    import numpy as np
    import torch
    import torch.utils.data as tdata

    import arraykit as ak
    from arraykit.utils import data as adata

    rng = np.random.default_rng(0)
    x = rng.normal(size=(4096, 64)).astype(np.float32)
    y = rng.integers(0, 10, 4096)
    ours = adata.DataLoader(adata.TensorDataset(x, y), batch_size=64, shuffle=True,
                            generator=ak.Generator().manual_seed(0))
    theirs = tdata.DataLoader(tdata.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
                              batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(0))
    results = {"arraykit DataLoader": [], "torch DataLoader": []}
    for _ in range(repeats):
        for name, loader in (("arraykit DataLoader", ours), ("torch DataLoader", theirs)):
            start = time.perf_counter()
            count = 0
            for xb, _yb in loader:
                count += 1
            results[name].append((time.perf_counter() - start) / count * 1e6)
    print("DataLoader, 4096 rows x 64 float32 + int64 labels, batch 64, shuffled, 0 workers:")
    for name, values in results.items():
        print(f"  {name:22s} {statistics.median(values):7.1f} us/batch "
              f"(min {min(values):.1f}, max {max(values):.1f})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    if args.worker:
        worker(args.repeats, args.steps)
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"),
           "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, "-m", "arraykit.distributed.run", "--nproc-per-node", "2",
                    "--master-port", str(port), os.path.abspath(__file__), "--worker",
                    "--repeats", str(args.repeats), "--steps", str(args.steps)],
                   env=env, check=True, timeout=900)
    loaders(args.repeats)


if __name__ == "__main__":
    main()
