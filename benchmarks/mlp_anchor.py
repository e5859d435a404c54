"""The JAX anchor the training benchmarks share: an MLP step as JAX users write it
(``jax.jit`` of ``jax.value_and_grad``, optax's integer-label cross-entropy)."""

import jax
import jax.numpy as jnp
import optax


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

