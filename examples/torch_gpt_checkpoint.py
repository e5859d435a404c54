"""Make a nanoGPT-style PyTorch checkpoint of ``train_gpt.py``'s model (needs torch).

The model is ``train_gpt.GPT`` written in PyTorch (same module and parameter names,
the output head tied to the token embedding), trained for a few AdamW steps on
fixed byte windows, and saved as nanoGPT's ``train.py`` saves ``ckpt.pt``: the
model's and the optimizer's state dicts, ``model_args``, ``iter_num``, a 0-d
``best_val_loss`` (here the loss on :func:`evaluation_batch`, so a loader can check
it gets the same number) and the run's ``config``.

    python examples/torch_gpt_checkpoint.py docs/guide/data/gpt_tiny_torch.pt

made the small checkpoint the guide loads where PyTorch is not installed.
"""

from __future__ import annotations

import math
import sys

import numpy as np

MODEL_ARGS = {"context": 16, "layers": 1, "width": 16, "heads": 2, "dropout": 0.0}
VOCAB = 256
TEXT = b"def load(path):\n    with open(path, 'rb') as f:\n        return f.read()\n" * 4


def evaluation_batch(context=MODEL_ARGS["context"], rows=4):
    """``(inputs, targets)`` int64 arrays: ``rows`` fixed windows of :data:`TEXT`."""
    data = np.frombuffer(TEXT, np.uint8).astype(np.int64)
    starts = np.arange(rows) * 7
    windows = data[starts[:, None] + np.arange(context + 1)]
    return windows[:, :-1], windows[:, 1:]


def make_checkpoint(path, steps=20, seed=0):
    """Train the PyTorch twin of ``train_gpt.GPT`` for ``steps`` AdamW steps and save
    nanoGPT's checkpoint layout to ``path``; returns ``path``."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    class CausalSelfAttention(nn.Module):
        def __init__(self, width, heads):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(width, 3 * width, bias=False)
            self.proj = nn.Linear(width, width, bias=False)
            self.resid_drop = nn.Dropout(0.0)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(c, dim=2)
            q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.resid_drop(self.proj(y.transpose(1, 2).reshape(b, t, c)))

    class MLP(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.up = nn.Linear(width, 4 * width, bias=False)
            self.act = nn.GELU(approximate="tanh")
            self.down = nn.Linear(4 * width, width, bias=False)
            self.drop = nn.Dropout(0.0)

        def forward(self, x):
            return self.drop(self.down(self.act(self.up(x))))

    class Block(nn.Module):
        def __init__(self, width, heads):
            super().__init__()
            self.ln1 = nn.LayerNorm(width, bias=False)
            self.attn = CausalSelfAttention(width, heads)
            self.ln2 = nn.LayerNorm(width, bias=False)
            self.mlp = MLP(width)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self, context, layers, width, heads, dropout):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, width)
            self.wpe = nn.Embedding(context, width)
            self.drop = nn.Dropout(dropout)
            self.blocks = nn.ModuleList([Block(width, heads) for _ in range(layers)])
            self.ln_f = nn.LayerNorm(width, bias=False)
            self.head = nn.Linear(width, VOCAB, bias=False)
            self.head.weight = self.wte.weight
            for name, p in self.named_parameters():
                if p.ndim == 2:
                    std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "down.weight")) else 0.02
                    nn.init.normal_(p, 0.0, std)

        def forward(self, idx, targets):
            x = self.drop(self.wte(idx) + self.wpe.weight[:idx.shape[1]])
            for block in self.blocks:
                x = block(x)
            logits = self.head(self.ln_f(x))
            return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))

    torch.manual_seed(seed)
    model = GPT(**MODEL_ARGS)
    params = list(model.parameters())
    optimizer = torch.optim.AdamW([
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": 0.1},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ], lr=3e-3, betas=(0.9, 0.95))
    x, y = (torch.from_numpy(a) for a in evaluation_batch())
    for _ in range(steps):
        optimizer.zero_grad()
        model(x, y).backward()
        optimizer.step()
    with torch.no_grad():
        best_val_loss = model(x, y)
    torch.save({
        "model": model.state_dict(), "optimizer": optimizer.state_dict(), "model_args": dict(MODEL_ARGS),
        "iter_num": steps, "best_val_loss": best_val_loss,
        "config": {"dataset": "bytes", "batch_size": 4, "learning_rate": 3e-3, "compile": False},
    }, path)
    return path


if __name__ == "__main__":
    print(make_checkpoint(sys.argv[1] if len(sys.argv) > 1 else "ckpt.pt"))
