"""Checkpoint and resume: train the digits MLP for a few epochs, save model, optimizer
and step counter with ``arraykit.save``, load them into a fresh model and optimizer
with ``arraykit.load``, and continue. The resumed run's losses equal those of a run
that never stopped.

    python examples/resume_digits.py [--epochs 6] [--checkpoint digits.ckpt]
"""

from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

import arraykit as ak
from arraykit import optim
from train_digits import load, make_model, make_step

DEVICE = ak.device("cpu")  # data, model and batches, whatever the default device is


def run(model, opt, data, epochs, first_epoch, batch_size):
    """Train for ``epochs`` epochs (batches drawn from a seed per epoch); returns the losses."""
    x_train, y_train = data

    step = ak.jit(make_step(model, opt))

    losses = []
    n = x_train.shape[0] - x_train.shape[0] % batch_size
    for epoch in range(first_epoch, first_epoch + epochs):
        order = np.random.default_rng(epoch).permutation(x_train.shape[0])[:n]
        for batch in order.reshape(-1, batch_size):
            picked = ak.asarray(batch, device=DEVICE)
            losses.append(step(x_train[picked], y_train[picked]).item())
    return losses


def fresh():
    ak.manual_seed(0)
    model = make_model().to(DEVICE)
    return model, optim.Adam(model.parameters(), lr=1e-3)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--checkpoint", default=os.path.join(tempfile.gettempdir(), "digits.ckpt"))
    args = parser.parse_args()
    x_train, _, y_train, _ = load(DEVICE, 0)
    data = (x_train, y_train)
    half = args.epochs // 2

    model, opt = fresh()
    straight = run(model, opt, data, args.epochs, 0, args.batch_size)

    model, opt = fresh()
    before = run(model, opt, data, half, 0, args.batch_size)
    ak.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": half},
            args.checkpoint)
    model = make_model().to(DEVICE)  # new, differently initialised parameters
    opt = optim.Adam(model.parameters(), lr=1e-3)
    checkpoint = ak.load(args.checkpoint)
    model.load_state_dict(checkpoint["model"])
    opt.load_state_dict(checkpoint["optimizer"])
    after = run(model, opt, data, args.epochs - half, checkpoint["epoch"], args.batch_size)

    same = np.array_equal(np.array(before + after), np.array(straight))
    print(f"saved after epoch {half} to {args.checkpoint}; resumed run's final loss "
          f"{after[-1]:.5f}, uninterrupted run's {straight[-1]:.5f}; identical losses: {same}")


if __name__ == "__main__":
    main()
