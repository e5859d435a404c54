"""The training steps the benchmarks share: an MLP step as JAX users write it
(``jax.jit`` of ``jax.value_and_grad``, optax's integer-label cross-entropy) and the
PyTorch-style arraykit step it is compared with."""

import jax
import jax.numpy as jnp
import optax

import arraykit.nn.functional as AF


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


def make_arraykit_step(model, opt):
    """``step(x, y) -> loss``: zero_grad, cross-entropy, ``backward()``, ``opt.step()``."""

    def step(xb, yb):
        opt.zero_grad()
        loss = AF.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    return step
