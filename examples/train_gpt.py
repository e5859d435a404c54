"""Train a small GPT on the bytes of Python's own standard library with arraykit, PyTorch-style.

A decoder-only transformer (token and position embeddings, pre-norm blocks of
causal self-attention and a GELU MLP, an output head tied to the token embedding)
reads the standard library's ``.py`` files byte by byte, split into training and
validation sets by file. The training step (forward, loss, ``backward()``, gradient
clipping, the AdamW step) is one ``arraykit.jit`` program; the learning rate
(linear warm-up, then cosine) changes between calls without recompiling it. On a
GPU the forward pass runs under bfloat16 autocast.

    python examples/train_gpt.py [--preset cpu|gpu|tiny] [--steps N] [--device cpu|gpu]
                                 [--plot loss.png] [--sample 300] [--save ckpt] [--resume ckpt]
                                 [--distributed]

The default (``--preset cpu``: 2 layers, width 128, context 128, 1000 steps of 32
windows) trains in a few minutes on two CPU cores to about 2.3 bits per byte on the
validation files (the unigram baseline, printed first, is 4.7); ``--preset gpu`` is
a 6-layer, 384-wide model with a 256-byte context and batch 64.

``--distributed`` trains data-parallel on the processes the launcher starts
(``DistributedDataParallel``; a ``DataLoader`` with a ``DistributedSampler`` hands
each process its ``batch / world size`` rows of every step's batch, so the losses
are those of one process on the whole batch; rank 0 prints, logs, samples and plots):

    python -m arraykit.distributed.run --nproc-per-node 2 examples/train_gpt.py --distributed
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import math
import sysconfig
import time
import zlib
from pathlib import Path

import numpy as np
from jax.sharding import NamedSharding, PartitionSpec
from tqdm import tqdm

import arraykit as ak
import arraykit.distributed as dist
import arraykit.nn.functional as F
from arraykit import nn, optim
from arraykit.nn.parallel import DistributedDataParallel
from arraykit.utils.data import DataLoader, Dataset, DistributedSampler

VOCAB = 256  # bytes


@dataclasses.dataclass
class Config:
    """Model and training hyperparameters."""

    context: int = 128
    layers: int = 2
    width: int = 128
    heads: int = 4
    dropout: float = 0.0
    batch: int = 32
    steps: int = 1000
    lr: float = 3e-3
    warmup: int = 50
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    clip: float = 1.0
    eval_every: int = 200
    eval_batches: int = 8


PRESETS = {
    "cpu": Config(),
    "gpu": Config(context=256, layers=6, width=384, heads=6, dropout=0.1, batch=64, steps=5000,
                  lr=1e-3, warmup=200, eval_every=500, eval_batches=20),
    "tiny": Config(context=32, layers=1, width=32, heads=2, batch=8, steps=30, lr=3e-3, warmup=5,
                   eval_every=15, eval_batches=2),
}


# ---------------------------------------------------------------------- data


def load_corpus(validation_share=10):
    """The bytes of every ``.py`` file of the standard library (``sysconfig``'s
    ``stdlib`` path, without site-packages), concatenated into a training and a
    validation array (uint8). A file goes to validation when the CRC-32 of its
    relative path is divisible by ``validation_share``: deterministic, by file."""
    root = Path(sysconfig.get_paths()["stdlib"])
    train, validation = [], []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if "site-packages" in relative:
            continue
        try:
            data = path.read_bytes()
        except OSError:  # unreadable entries (broken links) are skipped
            continue
        (validation if zlib.crc32(relative.encode()) % validation_share == 0 else train).append(data)
    return (np.frombuffer(b"".join(train), np.uint8), np.frombuffer(b"".join(validation), np.uint8))


def unigram_bits(train, validation):
    """Bits per byte of the validation bytes under the training bytes' frequencies
    (add-one smoothed): what a model without context achieves."""
    p = (np.bincount(train, minlength=VOCAB) + 1.0) / (train.size + VOCAB)
    counts = np.bincount(validation, minlength=VOCAB)
    return float(-(counts * np.log2(p)).sum() / validation.size)


def batch(data, rng, batch_size, context):
    """``(inputs, targets)``: ``batch_size`` random windows of ``data`` (int32, shape
    (batch, context)) and the same windows shifted by one byte."""
    starts = rng.integers(0, data.size - context - 1, batch_size)
    windows = data[starts[:, None] + np.arange(context + 1)].astype(np.int32)
    return windows[:, :-1], windows[:, 1:]


@functools.lru_cache(maxsize=2)
def step_starts(size, seed, step, batch_size, context):
    """Where the windows of training step ``step`` start (as :func:`batch` draws them):
    a function of (seed, step) only, so a resumed run sees the batches the
    uninterrupted run would have seen."""
    return np.random.default_rng([seed, step]).integers(0, size - context - 1, batch_size)


class TrainingWindows(Dataset):
    """The training windows of steps ``first`` to ``stop`` (excluded) as a dataset:
    item ``k`` is row ``k % batch`` of step ``first + k // batch``'s batch, an
    ``(inputs, targets)`` pair of int32 windows. Read in order, ``batch`` items at a
    time, it gives every step's batch; a ``DistributedSampler`` without shuffling
    gives each process every ``world size``-th row of each."""

    def __init__(self, data, seed, cfg, first, stop):
        self.data, self.seed, self.cfg, self.first, self.stop = data, seed, cfg, first, stop

    def __len__(self):
        return (self.stop - self.first) * self.cfg.batch

    def __getitem__(self, k):
        step, row = divmod(k, self.cfg.batch)
        context = self.cfg.context
        start = step_starts(self.data.size, self.seed, self.first + step, self.cfg.batch, context)[row]
        window = self.data[start:start + context + 1].astype(np.int32)
        return window[:-1], window[1:]


def make_loader(data, seed, cfg, first, stop, device, distributed):
    """The training batches of steps ``first`` to ``stop`` on ``device`` (a device, or
    the sharding of a data-parallel model's inputs): the whole batch of each step,
    or with ``distributed`` this process's share of its rows."""
    windows = TrainingWindows(data, seed, cfg, first, stop)
    if not distributed:
        return DataLoader(windows, batch_size=cfg.batch, device=device)
    sampler = DistributedSampler(windows, shuffle=False)
    return DataLoader(windows, batch_size=cfg.batch // sampler.num_replicas, sampler=sampler, device=device)


# ---------------------------------------------------------------------- model


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention in which position ``t`` sees positions ``<= t``."""

    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg.heads
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width, bias=False)
        self.proj = nn.Linear(cfg.width, cfg.width, bias=False)
        self.dropout = cfg.dropout
        self.resid_drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        """Attention of ``x`` (batch, time, width) over its own past."""
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                           is_causal=True)
        return self.resid_drop(self.proj(y.transpose(1, 2).reshape(b, t, c)))


class MLP(nn.Module):
    """``width -> 4 width -> width`` with a GELU (tanh approximation)."""

    def __init__(self, cfg):
        super().__init__()
        self.up = nn.Linear(cfg.width, 4 * cfg.width, bias=False)
        self.act = nn.GELU(approximate="tanh")
        self.down = nn.Linear(4 * cfg.width, cfg.width, bias=False)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x):
        """The MLP of ``x``."""
        return self.drop(self.down(self.act(self.up(x))))


class Block(nn.Module):
    """A pre-norm transformer block: ``x + attn(ln(x))``, then ``x + mlp(ln(x))``."""

    def __init__(self, cfg):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.width, bias=False)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.width, bias=False)
        self.mlp = MLP(cfg)

    def forward(self, x):
        """The block applied to ``x`` (batch, time, width)."""
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """A byte-level decoder-only transformer; the output head shares the token
    embedding's weight."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(VOCAB, cfg.width)
        self.wpe = nn.Embedding(cfg.context, cfg.width)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.layers)])
        self.ln_f = nn.LayerNorm(cfg.width, bias=False)
        self.head = nn.Linear(cfg.width, VOCAB, bias=False)
        self.head.weight = self.wte.weight  # weight tying: one parameter, two uses
        self._init_weights()

    def _init_weights(self):
        """GPT-2's initialisation: N(0, 0.02), residual projections scaled by 1/sqrt(2 layers)."""
        for name, p in self.named_parameters():
            if p.ndim == 2:
                std = 0.02 / math.sqrt(2 * self.cfg.layers) if name.endswith(("proj.weight", "down.weight")) \
                    else 0.02
                nn.init.normal_(p, 0.0, std)

    def hidden(self, idx):
        """The final hidden states (batch, time, width) of the byte indices ``idx``."""
        t = idx.shape[1]
        x = self.drop(self.wte(idx) + self.wpe.weight[:t])  # positions 0 .. t-1
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)

    def forward(self, idx, targets):
        """Mean cross-entropy (nats per byte) of predicting ``targets`` from ``idx``, by the
        fused linear cross-entropy (the logits are never held whole)."""
        h = self.hidden(idx)
        return F.linear_cross_entropy(h.reshape(-1, self.cfg.width), self.head.weight, targets.reshape(-1))


def parameter_groups(model, weight_decay):
    """AdamW groups as in GPT training: matrices (and embeddings) decay, gains do not."""
    params = list(model.parameters())
    return [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]


def warmup_steps(cfg):
    """The warm-up's length: ``cfg.warmup``, at least 1 and short of ``cfg.steps``."""
    return max(1, min(cfg.warmup, cfg.steps - 1))


def make_scheduler(optimizer, cfg, sched=optim.lr_scheduler):
    """Linear warm-up from 1 % of the rate over ``warmup`` steps, then a cosine decay to
    ``min_lr_ratio`` of it at ``steps`` (``sched``: arraykit's or PyTorch's
    ``lr_scheduler`` module, which spell it alike)."""
    warmup = warmup_steps(cfg)
    return sched.SequentialLR(optimizer, [
        sched.LinearLR(optimizer, start_factor=0.01, total_iters=warmup),
        sched.CosineAnnealingLR(optimizer, T_max=max(1, cfg.steps - warmup), eta_min=cfg.lr * cfg.min_lr_ratio),
    ], milestones=[warmup])


def autocast_context(device):
    """bfloat16 autocast and TF32-class float32 matmuls on a GPU (where this arraykit
    has ``autocast`` and ``set_float32_matmul_precision``), nothing on the CPU."""
    if device.platform == "cpu":
        return contextlib.nullcontext
    if hasattr(ak, "set_float32_matmul_precision"):
        ak.set_float32_matmul_precision("high")
    autocast = getattr(ak, "autocast", None)
    if autocast is None:
        print("note: this arraykit has no ak.autocast; the GPU trains in float32")
        return contextlib.nullcontext
    return lambda: autocast("cuda", dtype=ak.bfloat16)


def make_train_step(model, optimizer, cfg, autocast):
    """One training step: forward, loss, ``backward()``, clipping, ``optimizer.step()``;
    returns the loss and the gradients' total norm."""

    def train_step(x, y):
        optimizer.zero_grad()
        with autocast():
            loss = model(x, y)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        optimizer.step()
        return loss, norm

    return train_step


def make_evaluate(model, validation, cfg, device, autocast):
    """A function returning the validation loss in bits per byte, over fixed batches
    placed on ``device`` (with the inputs' sharding of a data-parallel model every
    process evaluates its share of each batch's rows)."""
    rng = np.random.default_rng(1234)
    batches = [batch(validation, rng, cfg.batch, cfg.context) for _ in range(cfg.eval_batches)]
    batches = [tuple(ak.asarray(a, device=device) for a in pair) for pair in batches]

    @ak.jit
    def loss_of(x, y):
        with autocast():
            return model(x, y)

    def evaluate():
        model.eval()
        with ak.no_grad():
            losses = [loss_of(x, y) for x, y in batches]
        model.train()
        return float(np.mean([v.item() for v in losses])) / math.log(2)

    return evaluate


# ---------------------------------------------------------------------- sampling


def generate(model, prompt, length, temperature=0.8, top_k=40, seed=0):
    """``prompt`` followed by ``length`` sampled bytes. The window has the model's
    context length throughout (the prompt left-aligned, padding after it, which the
    causal mask hides), so one jitted program serves every step."""
    cfg = model.cfg
    device = model.wte.weight.device
    generator = ak.Generator(device).manual_seed(seed)

    @ak.jit
    def next_byte(window, position):
        h = model.hidden(window)[0]
        logits = model.head(ak.take(h, position, axis=0)) / temperature
        if top_k:
            kth = ak.topk(logits, min(top_k, VOCAB)).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        return ak.multinomial(F.softmax(logits, dim=-1), 1, generator=generator)

    out = list(prompt)
    model.eval()
    with ak.no_grad():
        for _ in range(length):
            recent = out[-cfg.context:]
            window = np.zeros((1, cfg.context), np.int32)
            window[0, :len(recent)] = recent
            position = np.array([len(recent) - 1], np.int32)
            out.append(int(next_byte(ak.asarray(window, device=device),
                                     ak.asarray(position, device=device)).item()))
    model.train()
    return bytes(out)


def local_copy(model, device):
    """A copy of ``model`` on this process's ``device``, for work one process does
    alone (a program over the global mesh would wait for the other processes): its
    parameters read from this process's copy of the replicated ones."""
    copy = GPT(model.cfg).to(device)
    copy.load_state_dict({k: ak.asarray(v.numpy(), device=device) for k, v in model.state_dict().items()})
    return copy


# ---------------------------------------------------------------------- checkpoints


def save_checkpoint(path, model, optimizer, scheduler, step, cfg, seed, history):
    """Model, optimizer, scheduler and generator states, the step reached and the
    configuration, in one arraykit checkpoint."""
    device = model.wte.weight.device
    ak.save({
        "model": model.state_dict(), "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(), "step": step, "seed": seed,
        "config": dataclasses.asdict(cfg), "history": history,
        "generator": ak.random.default_generator(device).get_state(),
    }, path)


def restore(state, model, optimizer, scheduler):
    """Load what :func:`save_checkpoint` wrote (``state``, read by ``ak.load``) into the
    live objects; returns the checkpoint's step, history and data seed."""
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    device = model.wte.weight.device
    ak.random.default_generator(device).set_state(state["generator"].to(device=device))
    return state["step"], state["history"], state["seed"]


# ---------------------------------------------------------------------- main


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="cpu")
    parser.add_argument("--steps", type=int, help="total training steps (the schedule's length)")
    parser.add_argument("--stop-after", type=int, help="stop at this step (to --save and --resume later)")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--lr", type=float)
    parser.add_argument("--device", default="cpu", help="cpu or gpu (cuda)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot", metavar="PNG", help="save the loss curves (needs matplotlib)")
    parser.add_argument("--sample", type=int, default=0, metavar="BYTES",
                        help="print this many generated bytes at the end")
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--top-k", type=int, default=40)
    parser.add_argument("--save", metavar="PATH", help="write a checkpoint at the end")
    parser.add_argument("--resume", metavar="PATH", help="continue from a checkpoint")
    parser.add_argument("--log", metavar="JSONL", help="write every step's loss to this file")
    parser.add_argument("--distributed", action="store_true",
                        help="data-parallel over the processes of arraykit.distributed.run")
    return parser.parse_args(argv)


def configure(args, checkpoint=None):
    """The preset (or the ``checkpoint``'s configuration), updated by the command line."""
    if checkpoint is not None:
        cfg = Config(**checkpoint["config"])
    else:
        cfg = dataclasses.replace(PRESETS[args.preset])
    overrides = {"steps": args.steps, "batch": args.batch_size, "lr": args.lr}
    return dataclasses.replace(cfg, **{k: v for k, v in overrides.items() if v is not None})


def _quiet(*args, **kwargs):
    """``print`` on the ranks that do not print."""


def main(argv=None):
    started = time.perf_counter()
    args = parse_args(argv)
    if args.distributed:
        dist.init_process_group()  # first: JAX's runtime starts before any tensor is made
    rank = dist.get_rank() if args.distributed else 0
    report = print if rank == 0 else _quiet  # rank 0 alone prints
    # a checkpoint's tensors go where the model's are: replicated over every process
    replicated = NamedSharding(dist.global_mesh(), PartitionSpec()) if args.distributed else None
    checkpoint = ak.load(args.resume, map_location=replicated) if args.resume else None
    cfg = configure(args, checkpoint)
    world = dist.get_world_size() if args.distributed else 1
    if cfg.batch % world:
        raise SystemExit(f"the batch size {cfg.batch} must divide among {world} processes")
    device = ak.device(args.device)
    train, validation = load_corpus()
    report(f"corpus: {train.size / 1e6:.1f} MB training, {validation.size / 1e6:.1f} MB validation "
           f"bytes of {sysconfig.get_paths()['stdlib']}")
    baseline = unigram_bits(train, validation)
    report(f"unigram baseline: {baseline:.3f} bits per byte on the validation files")

    ak.manual_seed(args.seed)
    model = GPT(cfg)
    # data parallel: the parameters replicated over every process's devices (rank 0's),
    # the batches split over them
    net = DistributedDataParallel(model) if args.distributed else model.to(device)
    inputs = net.input_sharding if args.distributed else device
    optimizer = optim.AdamW(parameter_groups(model, cfg.weight_decay), lr=cfg.lr, betas=(0.9, 0.95))
    scheduler = make_scheduler(optimizer, cfg)
    step, history = 0, {"train": [], "validation": []}
    seed = args.seed
    if checkpoint is not None:
        step, history, seed = restore(checkpoint, model, optimizer, scheduler)
        report(f"resumed from {args.resume} at step {step}")
    n_params = sum(p.numel() for p in model.parameters())
    where = f"{world} processes ({len(inputs.device_set)} devices)" if args.distributed else str(device)
    report(f"model: {cfg.layers} layers, width {cfg.width}, {cfg.heads} heads, context {cfg.context}, "
           f"{n_params / 1e6:.2f} M parameters; batch {cfg.batch}, {cfg.steps} steps on {where}")

    autocast = autocast_context(device)
    step_fn = ak.jit(make_train_step(net, optimizer, cfg, autocast))
    evaluate = make_evaluate(model, validation, cfg, inputs, autocast)
    stop = min(cfg.steps, args.stop_after or cfg.steps)
    loader = make_loader(train, seed, cfg, step, stop, inputs, args.distributed)
    log = open(args.log, "a") if args.log and rank == 0 else None  # noqa: SIM115 (closed below)
    pending = []  # (step, loss tensor): read in groups, so the host rarely waits
    tokens = cfg.batch * cfg.context
    with tqdm(total=stop, initial=step, unit="step", disable=rank != 0) as bar:
        window_start, window_steps = time.perf_counter(), 0
        for x, y in loader:  # the step's batch (this process's rows of it)
            loss, _ = step_fn(x, y)
            scheduler.step()
            step += 1
            window_steps += 1
            pending.append((step, loss))
            bar.update(1)
            if step % 10 == 0 or step == stop:
                values = [(s, v.item()) for s, v in pending]
                pending.clear()
                history["train"].extend(values)
                if log:
                    log.writelines(json.dumps({"step": s, "loss": v}) + "\n" for s, v in values)
                    log.flush()
                seconds = time.perf_counter() - window_start
                bar.set_postfix(loss=f"{values[-1][1]:.3f}", tok_s=f"{window_steps * tokens / seconds:,.0f}")
                window_start, window_steps = time.perf_counter(), 0
            if step % cfg.eval_every == 0 or step == stop:
                bits = evaluate()  # every process takes part; rank 0 reports
                history["validation"].append((step, bits))
                if rank == 0:
                    tqdm.write(f"step {step}: validation {bits:.3f} bits per byte")
                window_start, window_steps = time.perf_counter(), 0
    if log:
        log.close()
    bits = history["validation"][-1][1]
    report(f"final validation: {bits:.3f} bits per byte (unigram baseline {baseline:.3f}) after "
           f"{step} steps; {step_fn.compile_count} XLA compilation(s) of the training step; "
           f"{time.perf_counter() - started:.0f} s in all")
    if args.save:  # every process calls it; only rank 0 writes the replicated tensors
        save_checkpoint(args.save, model, optimizer, scheduler, step, cfg, seed, history)
        report(f"checkpoint written to {args.save}")
    if args.sample and rank == 0:
        sampler = local_copy(model, device) if args.distributed else model
        text = generate(sampler, b"def ", args.sample, args.temperature, args.top_k, args.seed)
        print("sample:\n" + text.decode("utf-8", errors="replace"))
    if args.plot and rank == 0:
        plot(args.plot, history, baseline)
    if args.distributed:
        dist.destroy_process_group()


def plot(path, history, baseline):
    """Save the training and validation curves (bits per byte) to ``path``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install matplotlib") from None
    fig, ax = plt.subplots(figsize=(6, 3.5))
    steps, losses = zip(*history["train"])
    ax.plot(steps, np.array(losses) / math.log(2), label="training", alpha=0.6)
    if history["validation"]:
        ax.plot(*zip(*history["validation"]), "o-", label="validation")
    ax.axhline(baseline, color="gray", linestyle="--", label="unigram")
    ax.set_xlabel("step")
    ax.set_ylabel("bits per byte")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print(f"loss curves written to {path}")


if __name__ == "__main__":
    main()
