"""PyTorch model files run unchanged with ``torch`` mapped to arraykit.

Each model below is PyTorch source text, written as model files in public
repositories are (``import torch``, ``torch.nn``, ``torch.nn.functional as F``,
``x.size()``, ``torch.cat``, in-place ReLU, BatchNorm, pooling, einops, ...). The same
text is executed twice: once with the real ``torch`` and once with ``torch``,
``torch.nn`` and ``torch.nn.functional`` bound to ``arraykit``, ``arraykit.nn`` and
``arraykit.nn.functional``. Weights go from PyTorch to arraykit through
``state_dict`` -> NumPy -> ``load_state_dict``; then forward, loss, every gradient and
two optimizer steps are compared with PyTorch, eagerly and with the step compiled by
``arraykit.jit``.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import torch

import arraykit as ak

GPT = '''
import math
import torch
import torch.nn as nn
from torch.nn import functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary(x, base=10000.0):
    B, H, T, D = x.size()
    inv = 1.0 / (base ** (torch.arange(0, D, 2).float() / D))
    freqs = torch.outer(torch.arange(T).type_as(inv), inv)
    cos, sin = freqs.cos(), freqs.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q, k = rotary(q), rotary(k)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, n_embd=32, n_head=4, block_size=8):
        super().__init__()
        self.ln_1 = RMSNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Model(nn.Module):
    def __init__(self, vocab=50, n_embd=32, block_size=8):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.block = Block(n_embd, 4, block_size)
        self.head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, idx, targets):
        b, t = idx.size()
        logits = self.head(self.block(self.wte(idx)))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def make_inputs(rng):
    idx = torch.tensor(rng.integers(0, 50, (2, 8)), dtype=torch.long)
    return idx, torch.roll(idx, -1, 1)
'''

RESNET = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        out = F.relu(out, inplace=True)
        return out


class Model(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = BasicBlock(8, 8)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer2 = BasicBlock(8, 16, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x, targets):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer2(self.maxpool(self.layer1(out)))
        out = torch.flatten(self.avgpool(out), 1)
        return F.cross_entropy(self.fc(out), targets)


def make_inputs(rng):
    x = torch.tensor(rng.normal(size=(4, 3, 8, 8)), dtype=torch.float32)
    return x, torch.tensor(rng.integers(0, 10, 4), dtype=torch.long)
'''

EINOPS_VIT = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange, reduce, repeat


class Model(nn.Module):
    def __init__(self, patch=4, dim=16, classes=10):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(3 * patch * patch, dim)
        self.cls = nn.Parameter(torch.randn(1, 1, dim))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(2 * dim, classes)

    def forward(self, img, targets):
        p = self.patch
        x = rearrange(img, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=p, p2=p)
        x = self.embed(x)
        cls = repeat(self.cls, "() n d -> b n d", b=x.shape[0])
        x = self.norm(torch.cat([cls, x], dim=1))
        pooled = reduce(x, "b n d -> b d", "mean")
        feats = torch.cat([x[:, 0], pooled], dim=-1)
        return F.cross_entropy(self.head(feats), targets)


def make_inputs(rng):
    img = torch.tensor(rng.normal(size=(2, 3, 8, 8)), dtype=torch.float32)
    return img, torch.tensor(rng.integers(0, 10, 2), dtype=torch.long)
'''

MNIST_CNN = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.dropout1 = nn.Dropout(0.0)
        self.fc1 = nn.Linear(8 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x, target):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        output = F.log_softmax(self.fc2(x), dim=1)
        return F.nll_loss(output, target)


def make_inputs(rng):
    x = torch.tensor(rng.normal(size=(4, 1, 12, 12)), dtype=torch.float32)
    return x, torch.tensor(rng.integers(0, 10, 4), dtype=torch.long)
'''

LSTM_LM = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, ntoken=30, ninp=8, nhid=12, nlayers=2):
        super().__init__()
        self.drop = nn.Dropout(0.0)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=0.0)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))

    def forward(self, input, targets):
        hidden = self.init_hidden(input.size(1))
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, 30)
        return F.nll_loss(F.log_softmax(decoded, dim=1), targets.view(-1))


def make_inputs(rng):
    data = torch.tensor(rng.integers(0, 30, (7, 3)), dtype=torch.long)  # (time, batch)
    return data[:-1], data[1:]
'''

UNET = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class DoubleConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True))

    def forward(self, x):
        return self.double_conv(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.inc = DoubleConv(2, 4)
        self.down = nn.Sequential(nn.MaxPool2d(2), DoubleConv(4, 8))
        self.up = nn.ConvTranspose2d(8, 4, kernel_size=2, stride=2)
        self.conv = DoubleConv(8, 4)
        self.outc = nn.Conv2d(4, 3, kernel_size=1)

    def forward(self, x, mask):
        x1 = self.inc(x)
        x2 = self.down(x1)
        x3 = self.up(x2)
        diffY = x1.size()[2] - x3.size()[2]
        diffX = x1.size()[3] - x3.size()[3]
        x3 = F.pad(x3, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        logits = self.outc(self.conv(torch.cat([x1, x3], dim=1)))
        return F.cross_entropy(logits, mask)


def make_inputs(rng):
    x = torch.tensor(rng.normal(size=(2, 2, 9, 9)), dtype=torch.float32)
    return x, torch.tensor(rng.integers(0, 3, (2, 9, 9)), dtype=torch.long)
'''

SOURCES = {"gpt_block": GPT, "resnet_block": RESNET, "einops_vit": EINOPS_VIT,
           "mnist_cnn": MNIST_CNN, "lstm_lm": LSTM_LM, "unet": UNET}


def _load(source, name, lib):
    """Execute ``source`` as a module with ``torch`` bound to ``lib`` (torch or arraykit)."""
    if lib is ak:
        bound = {"torch": ak, "torch.nn": ak.nn, "torch.nn.functional": ak.nn.functional}
    else:
        bound = {"torch": torch, "torch.nn": torch.nn, "torch.nn.functional": torch.nn.functional}
    saved = {k: sys.modules.get(k) for k in bound}
    sys.modules.update(bound)
    try:
        module = types.ModuleType(f"model_{name}_{lib.__name__}")
        exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return module


def _to_ak(t):
    return ak.asarray(t.detach().numpy())


def _pair(name):
    """The model built by PyTorch's code and by the same code on arraykit, same weights."""
    pytest.importorskip("einops")
    torch_mod = _load(SOURCES[name], name, torch)
    ak_mod = _load(SOURCES[name], name, ak)
    torch.manual_seed(0)
    tm = torch_mod.Model()
    am = ak_mod.Model()
    am.load_state_dict({k: _to_ak(v) for k, v in tm.state_dict().items()})
    inputs = torch_mod.make_inputs(np.random.default_rng(0))
    return tm, am, inputs, tuple(_to_ak(t) for t in inputs)


def _close(a, t, what):
    np.testing.assert_allclose(np.asarray(a), t.detach().numpy(), rtol=2e-4, atol=2e-5, err_msg=what)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_forward_and_gradients_match_torch(name):
    tm, am, t_in, a_in = _pair(name)
    t_loss = tm(*t_in)
    t_loss.backward()
    a_loss = am(*a_in)
    a_loss.backward()
    _close(a_loss, t_loss, "loss")
    t_params = dict(tm.named_parameters())
    for pname, p in am.named_parameters():
        _close(p.grad, t_params[pname].grad, f"grad of {pname}")
    t_buffers = dict(tm.named_buffers())
    for bname, b in am.named_buffers():
        _close(b, t_buffers[bname], f"buffer {bname}")


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_training_steps_match_torch(name, jitted):
    tm, am, t_in, a_in = _pair(name)
    t_opt = torch.optim.AdamW(tm.parameters(), lr=1e-2)
    a_opt = ak.optim.AdamW(am.parameters(), lr=1e-2)

    def a_step(*inputs):
        a_opt.zero_grad()
        loss = am(*inputs)
        loss.backward()
        a_opt.step()
        return loss

    step = ak.jit(a_step) if jitted else a_step
    for i in range(2):
        t_opt.zero_grad()
        t_loss = tm(*t_in)
        t_loss.backward()
        t_opt.step()
        _close(step(*a_in), t_loss, f"loss at step {i}")
    t_state = tm.state_dict()
    for key, value in am.state_dict().items():
        _close(value, t_state[key], f"{key} after two steps")
