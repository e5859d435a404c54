"""What a training step costs the host, arraykit against JAX, NumPy and PyTorch, with
ratios:

* ``first``: compilations and time from the first call to the third step's result
  for four training steps (an MLP with SGD momentum, the ResNet and LSTM of
  ``bench_models.py``, the GPT of ``examples/train_gpt.py``), ``arraykit.jit``
  against ``jax.jit`` + optax, each run in a fresh process (imports and model
  building not timed; XLA compilations counted by ``jax.monitoring``);
* ``percall``: a cached ``arraykit.jit`` call of a dispatch-bound step (MLPs of
  8-wide layers, batch 4, SGD momentum) with 4, 40 and 400 parameter tensors,
  against ``jax.jit`` + optax, and against a ``jax.jit`` step that also returns the
  gradients (arraykit's step leaves them in ``.grad``, as PyTorch's does);
* ``eager``: eager ``add`` of two (100,) float32 (arraykit, jax.numpy, PyTorch,
  NumPy), views (``.T``, ``m[1:10:2, 3]``, ``reshape``) against PyTorch's, and the
  eager MLP step (784-1024-1024-10, batch 256, SGD) against PyTorch eager;
* ``async``: 200 jitted calls of that MLP step enqueue in what time against their
  finish; the host's waits and reads per step (eager and jitted, checks deferred).

    python benchmarks/bench_step_cost.py [--only first,percall,eager,async] [--repeats 3]

Timed sections alternate between the libraries round by round and report the median
of each round; ``--repeats`` rounds give the range printed (min-max).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import subprocess
import sys
import time
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))

MODELS = ("mlp", "resnet", "lstm", "gpt")
FIRST_STEPS = 3


# ---------------------------------------------------------------- first calls, one process each


def _compile_events():
    """A list that collects the seconds of every XLA compilation from now on."""
    from jax import monitoring

    seconds = []

    def listen(name, secs, **_):
        if name.endswith("backend_compile_duration"):
            seconds.append(secs)

    monitoring.register_event_duration_secs_listener(listen)
    return seconds


def _mlp_first(framework):
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 784)).astype(np.float32)
    y = rng.integers(0, 10, 128)
    sizes = (784, 256, 256, 10)
    if framework == "arraykit.jit":
        import arraykit as ak

        ak.manual_seed(0)
        layers = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers += [ak.nn.Linear(a, b)] + ([ak.nn.ReLU()] if i < len(sizes) - 2 else [])
        model = ak.nn.Sequential(*layers)
        opt = ak.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        xs, ys = ak.asarray(x), ak.asarray(y)

        @ak.jit
        def step(a, b):
            opt.zero_grad()
            loss = ak.nn.functional.cross_entropy(model(a), b)
            loss.backward()
            opt.step()
            return loss

        return lambda: step(xs, ys).item(), step
    import jax
    import jax.numpy as jnp
    import optax

    keys = jax.random.split(jax.random.key(0), len(sizes) - 1)
    params = [(jax.random.normal(k, (a, b)) / np.sqrt(a), jnp.zeros(b))
              for k, a, b in zip(keys, sizes[:-1], sizes[1:])]
    tx = optax.sgd(0.01, momentum=0.9)
    state = [params, tx.init(params)]
    xs, ys = jnp.asarray(x), jnp.asarray(y, jnp.int32)

    def loss_fn(p, a, b):
        for i, (w, c) in enumerate(p):
            a = a @ w + c
            if i < len(p) - 1:
                a = jax.nn.relu(a)
        return optax.softmax_cross_entropy_with_integer_labels(a, b).mean()

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def step(p, o, a, b):
        loss, g = jax.value_and_grad(loss_fn)(p, a, b)
        u, o = tx.update(g, o, p)
        return optax.apply_updates(p, u), o, loss

    def run():
        state[0], state[1], loss = step(state[0], state[1], xs, ys)
        return float(loss)

    return run, None


@contextlib.contextmanager
def _recording_jit(calls):
    """Within the block, ``arraykit.jit`` also appends each function it makes to ``calls``
    (the benchmarks' own step builders call it)."""
    import arraykit as ak

    real = ak.jit

    def recording(fn):
        jitted = real(fn)
        calls.append(jitted)
        return jitted

    ak.jit = recording
    try:
        yield
    finally:
        ak.jit = real


def _models_first(model_name, framework):
    import numpy as np

    import bench_models as M

    rng = np.random.default_rng(0)
    x, y = M.resnet_data(rng) if model_name == "resnet" else M.lstm_data(rng)
    state = M._state(M.torch_resnet() if model_name == "resnet" else M.torch_lstm())
    if framework == "arraykit.jit":
        calls = []
        with _recording_jit(calls):
            run = M.arraykit_step(model_name, state, x, y, True)
        return run, calls[0]
    return M.jax_step(model_name, state, x, y), None


def _gpt_first(framework):
    import arraykit as ak
    import bench_gpt as B
    import jax.numpy as jnp
    import train_gpt as G

    cfg = G.PRESETS["cpu"]
    ak.manual_seed(0)
    model = G.GPT(cfg).to("cpu")
    train, _ = G.load_corpus()
    host = [B.step_batch(train, i, cfg) for i in range(FIRST_STEPS)]
    if framework == "arraykit.jit":
        calls = []
        with _recording_jit(calls):
            run = B.arraykit_runner(model, cfg, ak.device("cpu"))
        batches = [tuple(ak.asarray(a, device="cpu") for a in pair) for pair in host]
        return (lambda: run(batches)), calls[0]
    run = B.jax_runner(model, cfg, jnp.float32)
    batches = [(jnp.asarray(a), jnp.asarray(b)) for a, b in host]
    return (lambda: run(batches)), None


def first_steps(model_name, framework):
    """One process's figure: seconds from the first call to the third step's result,
    and the XLA compilations meanwhile."""
    compiles = _compile_events()
    if model_name == "mlp":
        run, jitted = _mlp_first(framework)
    elif model_name == "gpt":
        run, jitted = _gpt_first(framework)
    else:
        run, jitted = _models_first(model_name, framework)
    before = len(compiles)
    start = time.perf_counter()
    for _ in range(1 if model_name == "gpt" else FIRST_STEPS):  # the GPT runner takes 3 batches
        run()
    seconds = time.perf_counter() - start
    made = compiles[before:]
    result = {"seconds": seconds, "xla_compiles": len(made), "compile_seconds": sum(made)}
    if jitted is not None:
        result.update(compile_count=jitted.compile_count, trace_count=jitted.trace_count)
    return result


def bench_first(repeats):
    print(f"\nfirst: from the first call to step {FIRST_STEPS}'s result, a fresh process each "
          f"({repeats} processes per figure; range min-max)")
    print(f"  {'model':7} {'arraykit.jit s':>15} {'jax.jit s':>13} {'ratio':>11}   "
          f"{'XLA compiles ak / jax':>22}  arraykit compile_count, trace_count")
    for model_name in MODELS:
        figures = {"arraykit.jit": [], "jax.jit": []}
        for _ in range(repeats):
            for framework in figures:  # alternating, so a change of load hits both
                done = subprocess.run(
                    [sys.executable, __file__, "--first-steps", model_name, framework],
                    capture_output=True, text=True, check=True)
                figures[framework].append(json.loads(done.stdout.strip().splitlines()[-1]))
        ak_s = [f["seconds"] for f in figures["arraykit.jit"]]
        jax_s = [f["seconds"] for f in figures["jax.jit"]]
        ratios = [a / b for a, b in zip(ak_s, jax_s)]
        ak_c = sorted({f["xla_compiles"] for f in figures["arraykit.jit"]})
        jax_c = sorted({f["xla_compiles"] for f in figures["jax.jit"]})
        counts = sorted({(f["compile_count"], f["trace_count"]) for f in figures["arraykit.jit"]})
        print(f"  {model_name:7} {_range(ak_s, '.2f'):>15} {_range(jax_s, '.2f'):>13} "
              f"{_range(ratios, '.2f'):>11}   {str(ak_c) + ' / ' + str(jax_c):>22}  {counts}")


def _range(values, fmt):
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}-{hi:{fmt}}"


# ---------------------------------------------------------------- cached calls


def _small_mlps(n_layers, width=8, batch=4):
    """(arraykit.jit step, jax.jit + optax step, jax.jit step returning the gradients)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    import arraykit as ak

    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, width)).astype(np.float32)
    y = rng.integers(0, width, batch)
    ak.manual_seed(0)
    layers = []
    for i in range(n_layers):
        layers += [ak.nn.Linear(width, width)] + ([ak.nn.ReLU()] if i < n_layers - 1 else [])
    model = ak.nn.Sequential(*layers)
    opt = ak.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    xs, ys = ak.asarray(x), ak.asarray(y)

    @ak.jit
    def ak_step(a, b):
        opt.zero_grad()
        loss = ak.nn.functional.cross_entropy(model(a), b)
        loss.backward()
        opt.step()
        return loss

    # copied through lists: .numpy() would move the parameters into NumPy memory, which
    # every call then writes back into on the host
    params = [(jnp.asarray(m.weight.tolist(), jnp.float32), jnp.asarray(m.bias.tolist(), jnp.float32))
              for m in model if isinstance(m, ak.nn.Linear)]
    tx = optax.sgd(0.01, momentum=0.9)
    jx, jy = jnp.asarray(x), jnp.asarray(y, jnp.int32)

    def loss_fn(p, a, b):
        for i, (w, c) in enumerate(p):
            a = a @ w.T + c
            if i < len(p) - 1:
                a = jax.nn.relu(a)
        return optax.softmax_cross_entropy_with_integer_labels(a, b).mean()

    def make(with_grads):
        @functools.partial(jax.jit, donate_argnums=(0, 1))
        def step(p, o, a, b):
            loss, g = jax.value_and_grad(loss_fn)(p, a, b)
            u, o = tx.update(g, o, p)
            return (optax.apply_updates(p, u), o, loss) + ((g,) if with_grads else ())

        state = [jax.tree.map(jnp.copy, params), tx.init(params)]

        def run():
            out = step(state[0], state[1], jx, jy)
            state[0], state[1] = out[0], out[1]
            return out[2]

        return run

    return {"arraykit.jit": lambda: ak_step(xs, ys).untyped_storage().buffer,
            "jax.jit + optax": make(False), "jax.jit, grads returned": make(True)}


def _per_call_us(fn, number):
    start = time.perf_counter()
    out = None
    for _ in range(number):
        out = fn()
    out.block_until_ready()
    return (time.perf_counter() - start) / number * 1e6


def bench_percall(repeats):
    print(f"\npercall: cached call of a dispatch-bound step (8-wide layers, batch 4, SGD "
          f"momentum), us per call; range over {repeats} rounds of 7 interleaved batches")
    for n_layers in (2, 20, 200):
        runs = _small_mlps(n_layers)
        for run in runs.values():
            for _ in range(20):
                run()
        number = max(20, 4000 // n_layers)
        rounds = {name: [] for name in runs}
        for _ in range(repeats):
            batch = {name: [] for name in runs}
            for _ in range(7):
                for name, run in runs.items():
                    batch[name].append(_per_call_us(run, number))
            for name in runs:
                rounds[name].append(statistics.median(batch[name]))
        ak_us = rounds["arraykit.jit"]
        line = f"  {2 * n_layers:4d} tensors: arraykit.jit {_range(ak_us, '.0f')}"
        for name in list(runs)[1:]:
            ratio = [a / b for a, b in zip(ak_us, rounds[name])]
            line += f"   {name} {_range(rounds[name], '.0f')} (x{_range(ratio, '.2f')})"
        print(line)


# ---------------------------------------------------------------- eager


def bench_eager(repeats):
    import jax.numpy as jnp
    import numpy as np
    import torch

    import arraykit as ak

    base = np.linspace(0, 1, 100, dtype=np.float32)
    a, b = ak.asarray(base), ak.asarray(base + 1)
    ja, jb = jnp.asarray(base), jnp.asarray(base + 1)
    ta, tb = torch.from_numpy(base.copy()), torch.from_numpy(base + 1)
    na, nb = base.copy(), base + 1
    m, tm = ak.ones((16, 16)), torch.ones(16, 16)
    cases = [
        ("add (100,) float32", {"arraykit": lambda: a + b, "jax.numpy": lambda: ja + jb,
                                "torch": lambda: ta + tb, "numpy": lambda: na + nb}, "jax.numpy"),
        (".T (16, 16)", {"arraykit": lambda: m.T, "torch": lambda: tm.T}, "torch"),
        ("m[1:10:2, 3]", {"arraykit": lambda: m[1:10:2, 3], "torch": lambda: tm[1:10:2, 3]}, "torch"),
        ("reshape(8, 32)", {"arraykit": lambda: m.reshape(8, 32), "torch": lambda: tm.reshape(8, 32)},
         "torch"),
    ]
    print(f"\neager: us per call (best of 5 x 5000 calls per round; range over {repeats} rounds)")
    for label, fns, anchor in cases:
        rounds = {name: [] for name in fns}
        for _ in range(repeats):
            for name, fn in fns.items():
                for _ in range(200):
                    fn()
                rounds[name].append(min(timeit.repeat(fn, number=5000, repeat=5)) / 5000 * 1e6)
        ratio = [x / y for x, y in zip(rounds["arraykit"], rounds[anchor])]
        others = "  ".join(f"{name} {_range(v, '.2f')}" for name, v in rounds.items() if name != "arraykit")
        print(f"  {label:20} arraykit {_range(rounds['arraykit'], '.2f')}  {others}  "
              f"arraykit/{anchor} x{_range(ratio, '.2f')}")
    _eager_mlp(repeats)


def _eager_mlp(repeats):
    import numpy as np
    import torch

    import bench_training as T

    rng = np.random.default_rng(0)
    x, y = T._data(rng)
    runs = {"arraykit eager": T.arraykit_step(x, y, False), "PyTorch eager": T.torch_step(x, y)}
    for run in runs.values():
        for _ in range(T.WARM_STEPS):
            run()
    rounds = {name: [] for name in runs}
    for _ in range(repeats):
        batch = {name: [] for name in runs}
        for _ in range(5):
            for name, run in runs.items():
                start = time.perf_counter()
                for _ in range(5):
                    run()
                batch[name].append((time.perf_counter() - start) / 5 * 1e3)
        for name in runs:
            rounds[name].append(statistics.median(batch[name]))
    ratio = [x / y for x, y in zip(rounds["arraykit eager"], rounds["PyTorch eager"])]
    print(f"  eager MLP step 784-1024-1024-10 b256: arraykit {_range(rounds['arraykit eager'], '.2f')} ms, "
          f"PyTorch {_range(rounds['PyTorch eager'], '.2f')} ms (torch threads {torch.get_num_threads()}), "
          f"x{_range(ratio, '.2f')}")


# ---------------------------------------------------------------- asynchrony


def bench_async(repeats):
    import numpy as np

    import arraykit as ak
    import bench_training as T
    from arraykit.core import deferred_checks
    from arraykit.utils.host_syncs import counting_host_syncs

    rng = np.random.default_rng(0)
    x, y = T._data(rng)
    print(f"\nasync: 200 jitted MLP steps (784-1024-1024-10, b256): time to enqueue them "
          f"against time to their finish ({repeats} rounds)")
    model = T.mlp(ak.nn, T.SIZES)
    opt = ak.optim.SGD(model.parameters(), lr=T.LR)
    xs, ys = ak.asarray(x), ak.asarray(y)
    step = ak.jit(functools.partial(T.train_digits.make_step(model, opt)))
    last = list(model.parameters())[-1]
    for _ in range(3):
        step(xs, ys)
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(200):
            step(xs, ys)  # the loss is dropped: a new result nobody reads
        enqueued = time.perf_counter() - start
        last.untyped_storage().buffer.block_until_ready()
        finished = time.perf_counter() - start
        print(f"  enqueued in {enqueued * 1e3:.1f} ms, finished after {finished * 1e3:.1f} ms "
              f"({enqueued / finished:.0%})")
    with deferred_checks.forced(True):
        for label, fn in (("jitted", step), ("eager", T.train_digits.make_step(model, opt))):
            for _ in range(2):
                fn(xs, ys)
            with counting_host_syncs() as seen:
                for _ in range(10):
                    fn(xs, ys)
            print(f"  {label} step, checks deferred: {seen.waits / 10:g} waits and "
                  f"{seen.reads / 10:g} device-to-host reads per step")
        deferred_checks.report()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="first,percall,eager,async")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--first-steps", nargs=2, metavar=("MODEL", "FRAMEWORK"),
                        help=argparse.SUPPRESS)  # one process of the 'first' section
    args = parser.parse_args()
    if args.first_steps:
        print(json.dumps(first_steps(*args.first_steps)))
        return
    import jax
    import torch

    print(f"jax {jax.__version__} ({jax.devices()[0].platform}), torch {torch.__version__}, "
          f"{os.cpu_count()} CPUs")
    sections = {"first": bench_first, "percall": bench_percall, "eager": bench_eager,
                "async": bench_async}
    for name in args.only.split(","):
        sections[name](args.repeats)


if __name__ == "__main__":
    main()
