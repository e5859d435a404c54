"""Train an MLP on scikit-learn's handwritten digits with arraykit, PyTorch-style.

The training step (forward, cross-entropy, ``loss.backward()``, ``optimizer.step()``)
is one ``arraykit.jit`` program; ``--eager`` runs the same loop without it.

    python examples/train_digits.py [--epochs 30] [--batch-size 64] [--device cpu|gpu]
                                    [--eager] [--plot loss.png] [--seed 0]

``--distributed`` trains data-parallel on the processes the launcher starts
(``DistributedDataParallel``, a ``DataLoader`` with a ``DistributedSampler``; each
process loads ``batch-size / world size`` rows of every global batch; rank 0 prints):

    python -m arraykit.distributed.run --nproc-per-node 2 examples/train_digits.py --distributed
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

import arraykit as ak
import arraykit.nn.functional as F
from arraykit import nn, optim


def load_arrays(seed):
    """Digits (1797 8x8 images, 10 classes) scaled to [0, 1], split 80/20 (NumPy arrays)."""
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    return train_test_split(x, digits.target, test_size=0.2, random_state=seed, stratify=digits.target)


def load(device, seed):
    """The digits split as tensors on ``device``: x_train, x_test, y_train, y_test."""
    return [ak.asarray(a, device=device) for a in load_arrays(seed)]


def make_model():
    """64 -> 128 -> 128 -> 10 with ReLUs and PyTorch's default initialisation."""
    return nn.Sequential(
        nn.Linear(64, 128), nn.ReLU(),
        nn.Linear(128, 128), nn.ReLU(),
        nn.Linear(128, 10),
    )


def make_step(model, optimizer):
    """One training step: forward, cross-entropy, ``backward()``, ``optimizer.step()``."""

    def train_step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return train_step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--device", default="cpu", help="cpu or gpu (cuda)")
    parser.add_argument("--eager", action="store_true", help="run the step without arraykit.jit")
    parser.add_argument("--plot", metavar="PNG", help="save the loss curve (needs matplotlib)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--distributed", action="store_true",
                        help="data-parallel over the processes of arraykit.distributed.run")
    args = parser.parse_args()
    if args.distributed:
        train_distributed(args)
        return

    device = ak.device(args.device)
    ak.manual_seed(args.seed)
    x_train, x_test, y_train, y_test = load(device, args.seed)
    model = make_model().to(device)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    train_step = make_step(model, optimizer)
    step = train_step if args.eager else ak.jit(train_step)
    n = x_train.shape[0] - x_train.shape[0] % args.batch_size  # whole batches: one shape
    rng = np.random.default_rng(args.seed)
    losses = []
    start = time.perf_counter()
    with tqdm(range(args.epochs), unit="epoch") as bar:
        for _ in bar:
            order = rng.permutation(x_train.shape[0])[:n].reshape(-1, args.batch_size)
            for batch in order:  # each batch is gathered into its own tensors
                picked = ak.asarray(batch, device=device)
                losses.append(step(x_train[picked], y_train[picked]))
            bar.set_postfix(loss=f"{losses[-1].item():.4f}")
    seconds = time.perf_counter() - start
    model.eval()
    with ak.no_grad():
        accuracy = (ak.argmax(model(x_test), axis=1) == y_test).to(ak.float32).mean().item()
    mode = "eager" if args.eager else f"jit ({step.compile_count} XLA compilation(s))"
    print(f"{mode}: {len(losses)} steps in {seconds:.1f} s, final loss "
          f"{losses[-1].item():.4f}, test accuracy {accuracy:.3f}")
    if args.plot:
        plot(args.plot, [float(v.item()) for v in losses])


def train_distributed(args):
    """Data-parallel training: every process runs this; rank 0 prints."""
    from jax.sharding import NamedSharding, PartitionSpec

    import arraykit.distributed as dist
    from arraykit.nn.parallel import DistributedDataParallel
    from arraykit.utils.data import DataLoader, DistributedSampler, TensorDataset

    dist.init_process_group()  # first: JAX's runtime starts before any tensor is made
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world:
        raise SystemExit(f"--batch-size {args.batch_size} must divide among {world} processes")
    ak.manual_seed(args.seed)  # the same initial parameters everywhere (DDP broadcasts rank 0's)
    model = DistributedDataParallel(make_model())
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    train_step = make_step(model, optimizer)
    step = train_step if args.eager else ak.jit(train_step)
    x_train, x_test, y_train, y_test = load_arrays(args.seed)
    dataset = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(dataset, seed=args.seed, drop_last=True)
    loader = DataLoader(dataset, batch_size=args.batch_size // world, sampler=sampler,
                        drop_last=True, device=model.input_sharding)
    losses = []
    start = time.perf_counter()
    with tqdm(range(args.epochs), unit="epoch", disable=rank != 0) as bar:
        for epoch in bar:
            sampler.set_epoch(epoch)  # a new order each epoch, the same on every process
            for x, y in loader:  # this process's rows of each global batch
                losses.append(step(x, y))
            bar.set_postfix(loss=f"{losses[-1].item():.4f}")
    seconds = time.perf_counter() - start
    model.eval()
    whole = NamedSharding(dist.global_mesh(), PartitionSpec())  # every process evaluates the test set
    with ak.no_grad():
        scores = model.module(ak.asarray(x_test, device=whole))
        correct = ak.argmax(scores, axis=1) == ak.asarray(y_test, device=whole)
        accuracy = correct.to(ak.float32).mean().item()
    if rank == 0:
        mode = "eager" if args.eager else f"jit ({step.compile_count} XLA compilation(s))"
        print(f"{world} processes, {mode}: {len(losses)} steps of {args.batch_size} in {seconds:.1f} s, "
              f"final loss {losses[-1].item():.4f}, test accuracy {accuracy:.3f}")
        if args.plot:
            plot(args.plot, [float(v.item()) for v in losses])
    dist.destroy_process_group()


def plot(path, losses):
    """Save the loss curve to ``path``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install -e '.[examples,plot]'") from None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(losses)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy")
    ax.set_yscale("log")
    fig.tight_layout()
    fig.savefig(path)
    print(f"loss curve written to {path}")


if __name__ == "__main__":
    main()
