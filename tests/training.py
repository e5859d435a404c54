"""The PyTorch-style training step the jit tests share (tests/ is on the path under pytest)."""

import arraykit.nn.functional as F


def train_step(model, opt, xb, yb):
    """zero_grad, cross-entropy of ``model(xb)`` against ``yb``, backward, step; the loss."""
    opt.zero_grad()
    loss = F.cross_entropy(model(xb), yb)
    loss.backward()
    opt.step()
    return loss
