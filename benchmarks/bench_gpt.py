"""The GPT training step of ``examples/train_gpt.py`` four ways, in one process:
arraykit.jit, a hand-written jax.jit + optax step of the same model (same
initial weights, same batches), PyTorch eager and ``torch.compile``. Each step is
forward, cross-entropy, backward, gradient clipping at norm 1, AdamW (weight decay
on matrices only) and the learning-rate schedule (linear warm-up, then cosine).

On a GPU every framework uses bfloat16 for matrix products (arraykit: ``ak.autocast``;
JAX: bfloat16 operands, float32 norms, softmax and loss; PyTorch: ``torch.autocast``)
and the model FLOPs utilisation is printed (6 x parameters x tokens plus attention,
over the device's peak dense bfloat16 rate).

    python benchmarks/bench_gpt.py [--preset cpu|gpu|tiny] [--device cpu|gpu] [--steps 10]
                                   [--rounds 3] [--skip torch.compile ...]

Timings alternate between the frameworks in ``--rounds`` rounds of ``--steps`` steps
and report each one's median round, so a machine whose load changes treats them
alike.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

import arraykit as ak

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import train_gpt as G  # noqa: E402

# Peak dense bfloat16 rates (FLOP/s) by a substring of the device kind, first match wins.
PEAK_BF16 = [
    ("H200", 989e12), ("H100 PCIe", 756e12), ("H100 NVL", 835e12), ("H100", 989e12),
    ("A100", 312e12), ("L40S", 362e12), ("L4", 121e12),
]


def peak_flops(kind):
    """The peak dense bfloat16 FLOP/s of a device kind, or None when unknown."""
    for name, peak in PEAK_BF16:
        if name in kind:
            return peak
    return None


def flops_per_token(model, cfg):
    """Training FLOPs per token: 6 x (parameters but the position table) plus
    12 x layers x width x context for attention (PaLM's and nanoGPT's estimate)."""
    params = sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()
    return 6 * params + 12 * cfg.layers * cfg.width * cfg.context


# ---------------------------------------------------------------------- arraykit


def arraykit_runner(model, cfg, device):
    """The example's own training step, jitted, with its scheduler between calls."""
    optimizer = ak.optim.AdamW(G.parameter_groups(model, cfg.weight_decay), lr=cfg.lr, betas=(0.9, 0.95))
    scheduler = G.make_scheduler(optimizer, cfg)
    step = ak.jit(G.make_train_step(model, optimizer, cfg, G.autocast_context(device)))

    def run(batches):
        loss = None
        for x, y in batches:
            loss, _ = step(x, y)
            scheduler.step()
        return loss.item()

    return run


# ---------------------------------------------------------------------- JAX


def _layer_norm(x, w):
    x32 = x.astype(jnp.float32)
    mean = x32.mean(-1, keepdims=True)
    var = jnp.square(x32 - mean).mean(-1, keepdims=True)
    return ((x32 - mean) * jax.lax.rsqrt(var + 1e-5) * w).astype(x.dtype)


def jax_loss(params, idx, targets, cfg, compute):
    """The example's model as pure JAX: ``compute`` is the dtype of the matrix products."""
    t = idx.shape[1]
    c, heads = cfg.width, cfg.heads

    def mm(a, w):  # a @ w.T in the compute dtype
        return jnp.einsum("...i,oi->...o", a.astype(compute), w.astype(compute))

    x = (params["wte.weight"][idx] + params["wpe.weight"][:t]).astype(compute)
    for i in range(cfg.layers):
        p = f"blocks.{i}."
        h = _layer_norm(x, params[p + "ln1.weight"])
        q, k, v = jnp.split(mm(h, params[p + "attn.qkv.weight"]), 3, axis=-1)
        q, k, v = (z.reshape(*z.shape[:2], heads, c // heads) for z in (q, k, v))
        y = jax.nn.dot_product_attention(q, k, v, is_causal=True).reshape(x.shape)
        x = x + mm(y, params[p + "attn.proj.weight"])
        h = _layer_norm(x, params[p + "ln2.weight"])
        x = x + mm(jax.nn.gelu(mm(h, params[p + "mlp.up.weight"]), approximate=True),
                   params[p + "mlp.down.weight"])
    h = _layer_norm(x, params["ln_f.weight"])
    logits = mm(h, params["wte.weight"]).astype(jnp.float32)
    return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()


def jax_schedule(cfg):
    """optax's form of the example's schedule (warm-up from 1 %, then cosine to
    ``min_lr_ratio``)."""
    warmup = G.warmup_steps(cfg)
    return optax.join_schedules([
        optax.linear_schedule(cfg.lr * 0.01, cfg.lr, warmup),
        optax.cosine_decay_schedule(cfg.lr, max(1, cfg.steps - warmup), alpha=cfg.min_lr_ratio),
    ], [warmup])


def jax_runner(model, cfg, compute):
    """A hand-written jax.jit + optax step over the arraykit model's initial weights."""
    params = {k: jnp.asarray(v.numpy()) for k, v in model.state_dict().items() if k != "head.weight"}
    mask = {k: v.ndim >= 2 for k, v in params.items()}
    tx = optax.chain(
        optax.clip_by_global_norm(cfg.clip),
        optax.adamw(jax_schedule(cfg), b1=0.9, b2=0.95, eps=1e-8, weight_decay=cfg.weight_decay, mask=mask),
    )
    state = [params, tx.init(params)]

    def train_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jax_loss(p, x, y, cfg, compute))(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    step = jax.jit(train_step, donate_argnums=(0, 1))

    def run(batches):
        loss = None
        for x, y in batches:
            state[0], state[1], loss = step(state[0], state[1], x, y)
        return float(loss)

    return run


# ---------------------------------------------------------------------- PyTorch


def torch_model(model, cfg, torch):
    """The same model in PyTorch, loaded with the arraykit model's weights."""
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(cfg.width, bias=False)
            self.attn = nn.Module()
            self.attn.qkv = nn.Linear(cfg.width, 3 * cfg.width, bias=False)
            self.attn.proj = nn.Linear(cfg.width, cfg.width, bias=False)
            self.ln2 = nn.LayerNorm(cfg.width, bias=False)
            self.mlp = nn.Module()
            self.mlp.up = nn.Linear(cfg.width, 4 * cfg.width, bias=False)
            self.mlp.down = nn.Linear(4 * cfg.width, cfg.width, bias=False)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.attn.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, cfg.heads, c // cfg.heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
            x = x + self.attn.proj(y)
            return x + self.mlp.down(F.gelu(self.mlp.up(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(G.VOCAB, cfg.width)
            self.wpe = nn.Embedding(cfg.context, cfg.width)
            self.blocks = nn.ModuleList([Block() for _ in range(cfg.layers)])
            self.ln_f = nn.LayerNorm(cfg.width, bias=False)
            self.head = nn.Linear(cfg.width, G.VOCAB, bias=False)
            self.head.weight = self.wte.weight

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for block in self.blocks:
                x = block(x)
            logits = self.head(self.ln_f(x))
            return F.cross_entropy(logits.reshape(-1, G.VOCAB).float(), targets.reshape(-1))

    theirs = GPT()
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    return theirs


def torch_runner(model, cfg, device, compiled):
    """PyTorch eager (or ``torch.compile`` of the model) with the same optimizer,
    clipping and schedule."""
    import torch

    dev = torch.device("cuda" if device.platform != "cpu" else "cpu")
    theirs = torch_model(model, cfg, torch).to(dev)
    params = list(theirs.parameters())
    optimizer = torch.optim.AdamW(G.parameter_groups(theirs, cfg.weight_decay), lr=cfg.lr,
                                  betas=(0.9, 0.95))
    scheduler = G.make_scheduler(optimizer, cfg, torch.optim.lr_scheduler)
    forward = torch.compile(theirs) if compiled else theirs
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=dev.type == "cuda")

    def run(batches):
        loss = None
        for x, y in batches:
            optimizer.zero_grad(set_to_none=True)
            with autocast:
                loss = forward(x.to(dev), y.to(dev))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.clip)
            optimizer.step()
            scheduler.step()
        return loss.item()

    return run


# ---------------------------------------------------------------------- main


def step_batch(train, step, cfg):
    """Training step ``step``'s batch as the example draws it (seed 0): int32
    ``(inputs, targets)`` of shape (batch, context)."""
    starts = G.step_starts(train.size, 0, step, cfg.batch, cfg.context)
    windows = train[starts[:, None] + np.arange(cfg.context + 1)].astype(np.int32)
    return windows[:, :-1], windows[:, 1:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(G.PRESETS), default=None,
                        help="default: gpu on a GPU, else cpu")
    parser.add_argument("--device", default=None, help="cpu or gpu (default: JAX's default device)")
    parser.add_argument("--steps", type=int, default=5, help="steps per timed round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip", nargs="*", default=[], choices=["torch", "torch.compile"],
                        help="leave out PyTorch (eager and compiled) or torch.compile")
    args = parser.parse_args()

    device = ak.device(args.device) if args.device else ak.device(jax.devices()[0].platform)
    on_gpu = device.platform != "cpu"
    cfg = G.PRESETS[args.preset or ("gpu" if on_gpu else "cpu")]
    kind = jax.devices(device.platform)[0].device_kind
    print(f"device: {device} ({kind}); model: {cfg.layers} layers, width {cfg.width}, context "
          f"{cfg.context}, batch {cfg.batch}; {'bfloat16 autocast' if on_gpu else 'float32'}")

    ak.manual_seed(0)
    model = G.GPT(cfg).to(device)
    train, _ = G.load_corpus()
    total = args.steps * args.rounds + 2  # two warm-up steps compile (and warm) each step
    host = [step_batch(train, i, cfg) for i in range(total)]

    runners = {}
    data = {}
    runners["jax.jit + optax"] = jax_runner(model, cfg, jnp.bfloat16 if on_gpu else jnp.float32)
    data["jax.jit + optax"] = [(jnp.asarray(x), jnp.asarray(y)) for x, y in host]
    for name, compiled in (("torch eager", False), ("torch.compile", True)):
        if "torch" not in args.skip and name not in args.skip:
            import torch

            runners[name] = torch_runner(model, cfg, device, compiled)
            data[name] = [(torch.from_numpy(x).long(), torch.from_numpy(y).long()) for x, y in host]
    # arraykit last: it trains the model object the others copied their weights from
    runners["arraykit.jit"] = arraykit_runner(model, cfg, device)
    data["arraykit.jit"] = [tuple(ak.asarray(a, device=device) for a in pair) for pair in host]

    first = {}
    for name in list(runners):
        start = time.perf_counter()
        try:
            loss = runners[name](data[name][:2])
        except Exception as error:  # noqa: BLE001 (torch.compile needs a working toolchain)
            print(f"{name}: skipped ({type(error).__name__}: {str(error).splitlines()[0][:200]})")
            del runners[name]
            continue
        first[name] = time.perf_counter() - start
        print(f"{name}: first two steps (compilation included) {first[name]:.1f} s, loss {loss:.4f}")

    times = {name: [] for name in runners}
    for r in range(args.rounds):
        batches = slice(2 + r * args.steps, 2 + (r + 1) * args.steps)
        for name, run in runners.items():
            start = time.perf_counter()
            run(data[name][batches])
            times[name].append((time.perf_counter() - start) / args.steps)

    tokens = cfg.batch * cfg.context
    reference = statistics.median(times["jax.jit + optax"])
    peak = peak_flops(kind) if on_gpu else None
    per_token = flops_per_token(model, cfg)
    print(f"\n{'':18} {'ms/step':>9} {'tokens/s':>11} {'x JAX':>7}" + ("   MFU" if peak else ""))
    for name, ts in times.items():
        t = statistics.median(ts)
        line = f"{name:18} {t * 1e3:9.1f} {tokens / t:11,.0f} {t / reference:7.2f}"
        if peak:
            line += f" {per_token * tokens / t / peak:6.1%}"
        print(line)
    if on_gpu and not peak:
        print(f"MFU: no peak bfloat16 rate known for {kind!r}")
    if "arraykit.jit" in times and "torch.compile" in times:
        ratio = statistics.median(times["torch.compile"]) / statistics.median(times["arraykit.jit"])
        print(f"arraykit.jit tokens/s over torch.compile's: {ratio:.2f}")


if __name__ == "__main__":
    main()
