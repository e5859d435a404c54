"""The digits MLP trained with an optax optimizer: modules are JAX pytrees, so
``arraykit.value_and_grad`` gives gradients shaped like the model and optax updates
it; the step is an ordinary ``jax.jit`` of a pure function.

    python examples/optax_digits.py [--epochs 30] [--batch-size 64]
"""

from __future__ import annotations

import argparse

import jax
import numpy as np
import optax

import arraykit as ak
import arraykit.nn.functional as F
from train_digits import load, make_model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    ak.manual_seed(args.seed)
    cpu = ak.device("cpu")  # data, model and batches, whatever the default device is
    x_train, x_test, y_train, y_test = load(cpu, args.seed)
    model = make_model().to(cpu)
    tx = optax.adam(3e-3)
    opt_state = tx.init(model)

    def loss_fn(m, x, y):
        return F.cross_entropy(m(x), y)

    @jax.jit
    def step(m, state, x, y):
        loss, grads = ak.value_and_grad(loss_fn)(m, x, y)
        updates, state = tx.update(grads, state, m)
        return optax.apply_updates(m, updates), state, loss

    rng = np.random.default_rng(args.seed)
    n = x_train.shape[0] - x_train.shape[0] % args.batch_size
    for epoch in range(args.epochs):
        for batch in rng.permutation(x_train.shape[0])[:n].reshape(-1, args.batch_size):
            picked = ak.asarray(batch, device=cpu)
            model, opt_state, loss = step(model, opt_state, x_train[picked], y_train[picked])
        if epoch % 10 == 9 or epoch == args.epochs - 1:
            print(f"epoch {epoch + 1}: loss {loss.item():.4f}")
    accuracy = (ak.argmax(model(x_test), axis=1) == y_test).to(ak.float32).mean().item()
    print(f"test accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
