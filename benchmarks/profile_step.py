"""Where a training step's host time goes: the small MLP step (784-1024-1024-10,
batch 256, SGD) jitted, eager and as a ``jax.jit`` + optax step, and the GPT step of
``examples/train_gpt.py`` jitted, each profiled on the device it runs on; and the
dispatch-bound step of ``bench_step_cost.py``'s cached-call figure with 40 parameter
tensors, ``arraykit.jit`` against a ``jax.jit`` step that returns its gradients too
(``small40-jit``, ``small40-jax``).

For each step: the XLA compilations of its first three calls (count and seconds,
from ``jax.monitoring``) and the time of each of those calls; the host's waits and
device-to-host reads per step (``arraykit.utils.host_syncs``); the median time of a
step over ``--steps`` steps; and ``--steps`` steps under ``cProfile``, whose top 30
functions by total time go to ``<out>/profile_<step>.txt``. A summary is printed and
written to ``<out>/profile_summary.json``.

    python benchmarks/profile_step.py [--device cpu|gpu] [--steps 200] [--gpt-preset gpu]
                                      [--out DIR] [--only mlp-jit,mlp-eager,mlp-jax,gpt-jit,
                                                          small40-jit,small40-jax]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))

COMPILES = []  # seconds of each XLA compilation, appended by the jax.monitoring listener


def _listen():
    from jax import monitoring

    def listen(name, secs, **_):
        if name.endswith("backend_compile_duration"):
            COMPILES.append(secs)

    monitoring.register_event_duration_secs_listener(listen)


def _mlp_steps(device, jax_precision=None):
    """{name: (step, wait)}: ``step()`` runs one training step, ``wait()`` blocks on its
    last results; ``jax_precision``: the matmul precision of the ``jax.jit`` step
    (None: JAX's default)."""
    import functools

    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    import arraykit as ak
    import train_digits
    from mlp_anchor import make_step, mlp

    sizes = (784, 1024, 1024, 10)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 784)).astype(np.float32)
    y = rng.integers(0, 10, 256)
    steps = {}
    for name, jitted in (("mlp-jit", True), ("mlp-eager", False)):
        ak.manual_seed(0)
        model = mlp(ak.nn, sizes).to(device)
        opt = ak.optim.SGD(model.parameters(), lr=0.01)
        xs, ys = ak.asarray(x, device=device), ak.asarray(y, device=device)
        step = train_digits.make_step(model, opt)
        step = ak.jit(step) if jitted else step
        last = list(model.parameters())[-1]
        steps[name] = (functools.partial(step, xs, ys),
                       lambda last=last: last.untyped_storage().buffer.block_until_ready())
    jdev = jax.devices(device.platform)[0]
    keys = jax.random.split(jax.random.key(0), len(sizes) - 1)
    params = [(jax.device_put(jax.random.normal(k, (a, b)) / np.sqrt(a), jdev),
               jax.device_put(jnp.zeros(b), jdev)) for k, a, b in zip(keys, sizes[:-1], sizes[1:])]
    tx = optax.sgd(0.01)
    state = [params, tx.init(params)]
    jx, jy = jax.device_put(x, jdev), jax.device_put(y.astype(np.int32), jdev)
    jax_step = make_step(tx, jax_precision)

    def run_jax():
        state[0], state[1], _ = jax_step(state[0], state[1], jx, jy)

    steps["mlp-jax"] = (run_jax, lambda: jax.block_until_ready(state[0]))
    return steps


def _small_steps():
    """{name: (step, wait)} of the 40-tensor dispatch-bound step (default device)."""
    import bench_step_cost

    runs = bench_step_cost._small_mlps(20)
    last = {}

    def keep(run, name):
        def step():
            last[name] = run()
        return step

    return {"small40-jit": (keep(runs["arraykit.jit"], "jit"), lambda: last["jit"].block_until_ready()),
            "small40-jax": (keep(runs["jax.jit, grads returned"], "jax"),
                            lambda: last["jax"].block_until_ready())}


def _gpt_step(device, preset):
    import arraykit as ak
    import bench_gpt as B
    import train_gpt as G

    cfg = G.PRESETS[preset]
    ak.manual_seed(0)
    model = G.GPT(cfg).to(device)
    optimizer = ak.optim.AdamW(G.parameter_groups(model, cfg.weight_decay), lr=cfg.lr, betas=(0.9, 0.95))
    scheduler = G.make_scheduler(optimizer, cfg)
    step = ak.jit(G.make_train_step(model, optimizer, cfg, G.autocast_context(device)))
    train, _ = G.load_corpus()
    x, y = (ak.asarray(a, device=device) for a in B.step_batch(train, 0, cfg))
    last = list(model.parameters())[-1]

    def run():
        step(x, y)
        scheduler.step()

    return run, lambda: last.untyped_storage().buffer.block_until_ready()


def profile(name, run, wait, steps, out):
    """The figures of one step (see the module docstring)."""
    from arraykit.utils.host_syncs import counting_host_syncs

    first = []
    before = len(COMPILES)
    for _ in range(3):
        start = time.perf_counter()
        run()
        wait()
        first.append(time.perf_counter() - start)
    made = COMPILES[before:]
    with counting_host_syncs() as seen:
        for _ in range(10):
            run()
    wait()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(max(1, steps // 5)):
            run()
        wait()
        times.append((time.perf_counter() - start) / max(1, steps // 5) * 1e3)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        run()
    wait()
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(30)
    with open(os.path.join(out, f"profile_{name}.txt"), "w") as f:
        f.write(text.getvalue())
    return {"first_three_calls_s": [round(t, 3) for t in first], "xla_compiles": len(made),
            "compile_s": round(sum(made), 3), "waits_per_step": seen.waits / 10,
            "reads_per_step": seen.reads / 10, "step_ms_median": round(statistics.median(times), 3),
            "step_ms_range": [round(min(times), 3), round(max(times), 3)]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cpu or gpu (default: JAX's default)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--gpt-preset", default=None, help="default: gpu on a GPU, else tiny")
    parser.add_argument("--out", default=os.environ.get("OUT", "profile_out"))
    parser.add_argument("--only", default="mlp-jit,mlp-eager,mlp-jax,gpt-jit")
    args = parser.parse_args()
    _listen()
    import jax

    import arraykit as ak

    os.makedirs(args.out, exist_ok=True)
    device = ak.device(args.device) if args.device else ak.device(jax.devices()[0].platform)
    wanted = args.only.split(",")
    summary = {"device": str(jax.devices(device.platform)[0].device_kind), "jax": jax.__version__}
    if any(w.startswith("mlp") for w in wanted):
        for name, (run, wait) in _mlp_steps(device).items():
            if name in wanted:
                summary[name] = profile(name, run, wait, args.steps, args.out)
                print(name, json.dumps(summary[name]), flush=True)
    if any(w.startswith("small40") for w in wanted):
        for name, (run, wait) in _small_steps().items():
            if name in wanted:
                summary[name] = profile(name, run, wait, args.steps, args.out)
                print(name, json.dumps(summary[name]), flush=True)
    if "gpt-jit" in wanted:
        preset = args.gpt_preset or ("gpu" if device.platform != "cpu" else "tiny")
        run, wait = _gpt_step(device, preset)
        summary["gpt-jit"] = profile("gpt-jit", run, wait, max(1, args.steps // 10), args.out)
        summary["gpt-jit"]["preset"] = preset
        print("gpt-jit", json.dumps(summary["gpt-jit"]), flush=True)
    with open(os.path.join(args.out, "profile_summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
