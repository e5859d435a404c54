"""What the jit and autograd tests share (tests/ is on the path under pytest): the
PyTorch-style training step, and a check that ``ak.grad`` and a jitted ``backward()``
agree with eager ``backward()``."""

import numpy as np

import arraykit as ak
import arraykit.nn.functional as F


def train_step(model, opt, xb, yb):
    """zero_grad, cross-entropy of ``model(xb)`` against ``yb``, backward, step; the loss."""
    opt.zero_grad()
    loss = F.cross_entropy(model(xb), yb)
    loss.backward()
    opt.step()
    return loss


def check_grad_and_jit_match_eager(loss, inputs, rtol, atol):
    """The gradients of the scalar ``loss(*inputs)`` with respect to every input, from
    ``ak.grad`` and from ``backward()`` inside ``ak.jit``, match eager ``backward()``
    (and the jitted loss the eager one)."""
    grads = ak.grad(loss, argnums=tuple(range(len(inputs))))(*inputs)
    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    eager = loss(*leaves)
    eager.backward()
    for g, leaf in zip(grads, leaves):
        np.testing.assert_allclose(g.numpy(), leaf.grad.numpy(), rtol=rtol, atol=atol)

    @ak.jit
    def step(*args):
        for t in args:
            t.grad = None
        out = loss(*args)
        out.backward()
        return out

    traced = [t.detach().clone().requires_grad_() for t in inputs]
    np.testing.assert_allclose(step(*traced).item(), eager.item(), rtol=1e-6)
    for t, leaf in zip(traced, leaves):
        np.testing.assert_allclose(t.grad.numpy(), leaf.grad.numpy(), rtol=rtol, atol=atol)
