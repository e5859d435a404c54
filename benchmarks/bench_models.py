"""Two model training steps, five ways each, side by side in one process.

* ``resnet``: the small ResNet of ``examples/train_cnn.py`` (Conv2d, BatchNorm2d
  with running statistics, in-place ReLU, MaxPool2d, AdaptiveAvgPool2d, a residual
  ``+=``), 3x32x32 inputs, width 16, batch 32, SGD with momentum and weight decay.
* ``lstm``: a byte-level LSTM language model (Embedding 256x64, one LSTM layer of
  128, Linear to 256), batch 16 x 32 steps, Adam.

Ways: arraykit eager, ``arraykit.jit``, the same model in plain JAX (``jax.jit`` +
optax, JAX's default 32-bit mode, int32 labels), PyTorch eager and
``torch.compile``. Reported: the median step time of each and the ratios the aims
are stated in (arraykit.jit / JAX, arraykit eager / PyTorch eager).

Start-up (``--startup-runs``, each figure a range over that many new processes): the
first eager step of a new process, its model already built: arraykit with no
persistent compilation cache, arraykit writing a new cache directory, arraykit in a
second process reading that directory (``ARRAYKIT_COMPILATION_CACHE``), and PyTorch.

    python benchmarks/bench_models.py [--model resnet|lstm|all] [--repeats 5] [--steps 10]
                                      [--startup-runs 3]
"""

from __future__ import annotations

import argparse
import os
import json
import statistics
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
import torch

import arraykit as ak

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import train_cnn  # noqa: E402 (the example's model, written once for both libraries)

RESNET = dict(batch=32, channels=3, side=32, width=16, classes=10, lr=0.05, momentum=0.9, wd=5e-4)
LSTM = dict(batch=16, steps=32, vocab=256, embed=64, hidden=128, lr=1e-3)


# ---------------------------------------------------------------- the models in PyTorch


def torch_resnet():
    torch.manual_seed(0)
    cfg = RESNET
    return train_cnn.resnet_class(torch.nn)(cfg["channels"], cfg["width"], cfg["classes"])


def lstm_class(nn):
    """The LSTM language model over the layer library ``nn``."""

    class LanguageModel(nn.Module):
        def __init__(self, vocab, embed, hidden):
            super().__init__()
            self.embed = nn.Embedding(vocab, embed)
            self.lstm = nn.LSTM(embed, hidden, batch_first=True)
            self.head = nn.Linear(hidden, vocab)

        def forward(self, tokens):
            out, _ = self.lstm(self.embed(tokens))
            return self.head(out)

    return LanguageModel


def torch_lstm():
    torch.manual_seed(0)
    return lstm_class(torch.nn)(LSTM["vocab"], LSTM["embed"], LSTM["hidden"])


def _state(module):
    return {k: v.detach().numpy().copy() for k, v in module.state_dict().items()}


# ---------------------------------------------------------------- data


def resnet_data(rng):
    c = RESNET
    x = rng.normal(size=(c["batch"], c["channels"], c["side"], c["side"])).astype(np.float32)
    return x, rng.integers(0, c["classes"], c["batch"])


def lstm_data(rng):
    tokens = rng.integers(0, LSTM["vocab"], (LSTM["batch"], LSTM["steps"] + 1))
    return tokens[:, :-1], tokens[:, 1:]


# ---------------------------------------------------------------- the steps, five ways


def _optimizer(lib, params, model_name):
    if model_name == "resnet":
        c = RESNET
        return lib.optim.SGD(params, lr=c["lr"], momentum=c["momentum"], weight_decay=c["wd"])
    return lib.optim.Adam(params, lr=LSTM["lr"])


def _loss_of(lib_f, logits, y):
    return lib_f.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def arraykit_step(model_name, state, x, y, jitted):
    model = (train_cnn.resnet_class(ak.nn)(RESNET["channels"], RESNET["width"], RESNET["classes"])
             if model_name == "resnet" else lstm_class(ak.nn)(LSTM["vocab"], LSTM["embed"], LSTM["hidden"]))
    model.load_state_dict({k: ak.asarray(v) for k, v in state.items()})
    opt = _optimizer(ak, model.parameters(), model_name)
    xs, ys = ak.asarray(x), ak.asarray(y)

    def step(a, b):
        opt.zero_grad()
        loss = _loss_of(ak.nn.functional, model(a), b)
        loss.backward()
        opt.step()
        return loss

    fn = ak.jit(step) if jitted else step
    tensors = list(model.parameters()) + list(model.buffers())

    def run():
        loss = fn(xs, ys)
        for t in tensors:  # eager kernels still in flight would run into the next timing
            t.untyped_storage().buffer.block_until_ready()
        return float(loss.item())

    return run


def torch_step(model_name, x, y, compiled):
    model = torch_resnet() if model_name == "resnet" else torch_lstm()
    opt = _optimizer(torch, model.parameters(), model_name)
    xs, ys = torch.as_tensor(x), torch.as_tensor(y)

    def step(a, b):
        opt.zero_grad()
        loss = _loss_of(torch.nn.functional, model(a), b)
        loss.backward()
        opt.step()
        return loss

    fn = torch.compile(step) if compiled else step
    return lambda: float(fn(xs, ys).item())


# ---------------------------------------------------------------- the models in plain JAX


def _conv(x, w, stride=1, padding=1):
    return jax.lax.conv_general_dilated(x, w, (stride, stride), [(padding, padding)] * 2,
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))


def _batch_norm(x, p, stats, prefix):
    """Training-mode BatchNorm2d: batch statistics, running statistics updated as PyTorch."""
    mean = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    n = x.size // x.shape[1]
    y = (x - mean[None, :, None, None]) * jax.lax.rsqrt(var + 1e-5)[None, :, None, None]
    y = y * p[prefix + ".weight"][None, :, None, None] + p[prefix + ".bias"][None, :, None, None]
    stats = dict(stats)
    stats[prefix + ".running_mean"] = 0.9 * stats[prefix + ".running_mean"] + 0.1 * mean
    stats[prefix + ".running_var"] = 0.9 * stats[prefix + ".running_var"] + 0.1 * var * n / (n - 1)
    return y, stats


def _block(x, p, s, name, stride, project):
    out = _conv(x, p[name + ".conv1.weight"], stride)
    out, s = _batch_norm(out, p, s, name + ".bn1")
    out = jax.nn.relu(out)
    out, s = _batch_norm(_conv(out, p[name + ".conv2.weight"]), p, s, name + ".bn2")
    if project:
        short, s = _batch_norm(_conv(x, p[name + ".shortcut.0.weight"], stride, 0), p, s, name + ".shortcut.1")
    else:
        short = x
    return jax.nn.relu(out + short), s


def jax_resnet_forward(p, s, x):
    h, s = _batch_norm(_conv(x, p["stem.0.weight"]), p, s, "stem.1")
    h, s = _block(jax.nn.relu(h), p, s, "layer1", 1, False)
    h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    h, s = _block(h, p, s, "layer2", 1, True)
    h = h.mean(axis=(2, 3))
    return h @ p["fc.weight"].T + p["fc.bias"], s


def jax_lstm_forward(p, s, tokens):
    e = p["embed.weight"][tokens]  # (B, T, E)
    hidden = LSTM["hidden"]

    def cell(carry, xt):
        h, c = carry
        gates = xt @ p["lstm.weight_ih_l0"].T + p["lstm.bias_ih_l0"] + h @ p["lstm.weight_hh_l0"].T + p["lstm.bias_hh_l0"]
        i, f, g, o = jnp.split(gates, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    zeros = jnp.zeros((tokens.shape[0], hidden), e.dtype)
    _, hs = jax.lax.scan(cell, (zeros, zeros), jnp.swapaxes(e, 0, 1))
    return jnp.swapaxes(hs, 0, 1) @ p["head.weight"].T + p["head.bias"], s


def jax_step(model_name, state, x, y):
    stat_keys = [k for k in state if "running" in k or "num_batches" in k]
    params = {k: jnp.asarray(v) for k, v in state.items() if k not in stat_keys}
    stats = {k: jnp.asarray(v) for k, v in state.items() if k in stat_keys and "num_batches" not in k}
    if model_name == "resnet":
        c = RESNET
        tx = optax.chain(optax.add_decayed_weights(c["wd"]), optax.sgd(c["lr"], momentum=c["momentum"]))
        forward = jax_resnet_forward
    else:
        tx = optax.adam(LSTM["lr"])
        forward = jax_lstm_forward

    def loss_fn(p, s, a, b):
        logits, s = forward(p, s, a)
        logits = logits.reshape(-1, logits.shape[-1])
        return optax.softmax_cross_entropy_with_integer_labels(logits, b.reshape(-1)).mean(), s

    @jax.jit
    def step(p, s, o, a, b):
        (loss, s), g = jax.value_and_grad(loss_fn, has_aux=True)(p, s, a, b)
        updates, o = tx.update(g, o, p)
        return optax.apply_updates(p, updates), s, o, loss

    carry = [params, stats, tx.init(params)]
    xs, ys = jnp.asarray(x, jnp.int32 if model_name == "lstm" else jnp.float32), jnp.asarray(y, jnp.int32)

    def run():
        carry[0], carry[1], carry[2], loss = step(*carry, xs, ys)
        return float(loss)

    return run


# ---------------------------------------------------------------- timing


def _time(run, steps):
    start = time.perf_counter()
    for _ in range(steps):
        run()
    return (time.perf_counter() - start) / steps * 1e3


def bench(model_name, repeats, steps):
    rng = np.random.default_rng(0)
    x, y = resnet_data(rng) if model_name == "resnet" else lstm_data(rng)
    state = _state(torch_resnet() if model_name == "resnet" else torch_lstm())
    runs = {
        "arraykit eager": arraykit_step(model_name, state, x, y, False),
        "arraykit.jit": arraykit_step(model_name, state, x, y, True),
        "jax.jit + optax": jax_step(model_name, state, x, y),
        "PyTorch eager": torch_step(model_name, x, y, False),
        "torch.compile": torch_step(model_name, x, y, True),
    }
    first_losses, first_call = {}, {}
    for name, run in runs.items():
        start = time.perf_counter()
        first_losses[name] = run()
        first_call[name] = time.perf_counter() - start
        for _ in range(2):
            run()
    times = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():  # interleaved, so drifts of the machine hit all alike
            times[name].append(_time(run, steps))
    print(f"\n{model_name}: median ms per step over {repeats} repeats of {steps} steps "
          f"(first call in s; first loss)")
    for name in runs:
        print(f"  {name:16s} {statistics.median(times[name]):9.2f} ms   "
              f"first call {first_call[name]:6.2f} s   loss {first_losses[name]:.4f}")
    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"  arraykit.jit / jax.jit: {med['arraykit.jit'] / med['jax.jit + optax']:.2f}x (aim <= 1.1)")
    print(f"  arraykit eager / PyTorch eager: {med['arraykit eager'] / med['PyTorch eager']:.2f}x (aim <= 1.5)")
    print(f"  arraykit.jit / torch.compile: {med['arraykit.jit'] / med['torch.compile']:.2f}x")


def first_step(model_name, lib):
    """Seconds of the first eager step of ``lib`` ("arraykit" or "torch") in this
    process, the model and data already made (what a new process pays to compile)."""
    rng = np.random.default_rng(0)
    x, y = resnet_data(rng) if model_name == "resnet" else lstm_data(rng)
    state = _state(torch_resnet() if model_name == "resnet" else torch_lstm())
    run = arraykit_step(model_name, state, x, y, False) if lib == "arraykit" else torch_step(model_name, x, y, False)
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _first_step_in_new_process(model_name, lib, cache_dir=None):
    env = dict(os.environ)
    env.pop("ARRAYKIT_COMPILATION_CACHE", None)
    if cache_dir is not None:
        env["ARRAYKIT_COMPILATION_CACHE"] = cache_dir
    done = subprocess.run([sys.executable, __file__, "--first-step", model_name, lib], env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds"]


def startup(model_name, runs):
    """Print the first eager step of new processes (see the module's docstring)."""
    times = {"arraykit, no cache": [], "arraykit, writing a cache": [],
             "arraykit, cache written": [], "PyTorch": []}
    for _ in range(runs):  # interleaved, so drifts of the machine hit all alike
        times["arraykit, no cache"].append(_first_step_in_new_process(model_name, "arraykit"))
        with tempfile.TemporaryDirectory() as cache_dir:
            times["arraykit, writing a cache"].append(
                _first_step_in_new_process(model_name, "arraykit", cache_dir))
            times["arraykit, cache written"].append(
                _first_step_in_new_process(model_name, "arraykit", cache_dir))
        times["PyTorch"].append(_first_step_in_new_process(model_name, "torch"))
    print(f"\n{model_name}: first eager step of a new process, s (min-max, median of {runs})")
    for name, t in times.items():
        print(f"  {name:26s} {min(t):6.2f}-{max(t):6.2f}   median {statistics.median(t):6.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["resnet", "lstm", "all"], default="all")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--startup-runs", type=int, default=3)
    parser.add_argument("--first-step", nargs=2, metavar=("MODEL", "LIB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    if args.first_step:  # a child process of startup()
        print(json.dumps({"seconds": first_step(*args.first_step)}))
        return
    print(f"jax {jax.__version__} ({jax.devices()[0].platform}), torch {torch.__version__}, "
          f"{os.cpu_count()} CPUs")
    for name in (["resnet", "lstm"] if args.model == "all" else [args.model]):
        if args.startup_runs:
            startup(name, args.startup_runs)
        bench(name, args.repeats, args.steps)


if __name__ == "__main__":
    main()
