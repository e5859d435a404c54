"""What the training benchmarks share: the JAX anchor, an MLP step as JAX users write it
(``jax.jit`` of ``jax.value_and_grad``, optax's integer-label cross-entropy); the MLP as
an arraykit or PyTorch module; and PyTorch's eager step."""

import jax
import jax.numpy as jnp
import optax
import torch


def make_step(tx, precision=None):
    """A jitted ``step(params, opt_state, x, y) -> (params, opt_state, loss)`` for an MLP
    whose ``params`` are ``[(w, b), ...]`` with ReLU between layers, optimized by ``tx``;
    ``precision`` is the matmuls' (``None``: JAX's default)."""

    def loss_fn(p, xb, yb):
        h = xb
        for k, (w, b) in enumerate(p):
            h = jnp.matmul(h, w, precision=precision) + b
            if k < len(p) - 1:
                h = jax.nn.relu(h)
        return optax.softmax_cross_entropy_with_integer_labels(h, yb).mean()

    @jax.jit
    def step(p, s, xb, yb):
        loss, grads = jax.value_and_grad(loss_fn)(p, xb, yb)
        updates, s = tx.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss

    return step



def mlp(nn, sizes):
    """``nn.Sequential`` of ``nn.Linear`` layers through ``sizes`` with ``nn.ReLU`` between
    them; ``nn`` is ``arraykit.nn`` or ``torch.nn``."""
    layers = []
    for i, o in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(i, o), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def make_torch_step(model, opt):
    """PyTorch's eager ``step(x, y) -> loss``: cross-entropy of ``model``, one ``opt`` step."""

    def step(x, y):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step
