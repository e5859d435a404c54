"""arraykit.jit: views, in-place writes, closed-over tensors and autograd inside one
compiled program; compile counts; control-flow errors."""

from __future__ import annotations

import copy
import functools
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import arraykit as ak
import arraykit.nn.functional as F
from training import train_step


def test_writes_through_views_of_arguments_reach_the_callers_base():
    base = ak.arange(12.0).reshape(3, 4)

    @ak.jit
    def scale_column(col):
        col.mul_(10.0)
        return col.sum()

    total = scale_column(base[:, 1])
    np.testing.assert_array_equal(base.numpy()[:, 1], [10, 50, 90])
    assert total.item() == 150.0
    scale_column(base[:, 1])
    np.testing.assert_array_equal(base.numpy()[:, 1], [100, 500, 900])
    assert scale_column.compile_count == 1


def test_two_views_of_one_storage_stay_aliases():
    base = ak.zeros(6)

    @ak.jit
    def write_then_read(a, b):
        a[1] = 5.0  # a = base[0:4]; b = base[1:5] sees it at b[0]
        return b * 1.0

    out = write_then_read(base[0:4], base[1:5])
    np.testing.assert_array_equal(out.numpy(), [5, 0, 0, 0])
    np.testing.assert_array_equal(base.numpy(), [0, 5, 0, 0, 0, 0])
    separate = ak.zeros(6)
    out = write_then_read(separate[0:4], ak.zeros(6)[1:5])
    np.testing.assert_array_equal(out.numpy(), [0, 0, 0, 0])
    assert write_then_read.compile_count == 2
    assert "storage" in write_then_read.last_compile_reason


def test_returned_views_alias_the_argument():
    x = ak.arange(6.0)

    @ak.jit
    def tail(t):
        t.add_(1.0)
        return t[3:]

    view = tail(x)
    assert view.untyped_storage() is x.untyped_storage() and view.storage_offset() == 3
    view[0] = -1.0
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3, -1, 5, 6])


def test_closed_over_tensors_are_read_at_call_time_and_written_back():
    scale = ak.asarray(2.0)
    counter = ak.zeros(())

    @ak.jit
    def f(t):
        counter.add_(1.0)
        return t * scale

    x = ak.ones(3)
    np.testing.assert_array_equal(f(x).numpy(), [2, 2, 2])
    scale.fill_(5.0)
    np.testing.assert_array_equal(f(x).numpy(), [5, 5, 5])
    assert counter.item() == 2.0 and f.compile_count == 1


def _sgd_momentum_step(w, velocity, lr, x, y):
    w.grad = None
    loss = F.cross_entropy(F.relu(x @ w), y)
    loss.backward()
    with ak.no_grad():
        velocity.mul_(0.9).add_(w.grad)
        w.sub_(lr * velocity)
    return loss


def test_jitted_training_matches_eager_and_lr_changes_do_not_recompile():
    rng = np.random.default_rng(0)
    x = ak.asarray(rng.normal(size=(16, 5)).astype(np.float32))
    y = ak.asarray(rng.integers(0, 4, 16))
    init = rng.normal(size=(5, 4)).astype(np.float32)
    runs = {}
    for mode in ("eager", "jit"):
        w = ak.asarray(init).requires_grad_()
        velocity = ak.zeros((5, 4))
        lr = ak.asarray(0.1)
        step = _sgd_momentum_step if mode == "eager" else ak.jit(_sgd_momentum_step)
        losses = [step(w, velocity, lr, x, y).item() for _ in range(4)]
        lr.fill_(0.05)
        losses += [step(w, velocity, lr, x, y).item() for _ in range(2)]
        runs[mode] = (losses, w.numpy(), w.grad.numpy())
        if mode == "jit":  # traced again once (the first call made w.grad), compiled once
            assert step.trace_count == 2 and step.compile_count == 1
    np.testing.assert_allclose(runs["jit"][0], runs["eager"][0], rtol=1e-5)
    np.testing.assert_allclose(runs["jit"][1], runs["eager"][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(runs["jit"][2], runs["eager"][2], rtol=1e-5, atol=1e-6)


def test_closed_over_model_and_grads_set_inside_jit():
    w = ak.ones((3, 2)).requires_grad_()

    @ak.jit
    def step(x):
        w.grad = None
        (x @ w).sum().backward()
        with ak.no_grad():
            w.sub_(0.5 * w.grad)

    step(ak.ones((4, 3)))
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 2), 4.0))
    np.testing.assert_array_equal(w.numpy(), np.full((3, 2), -1.0))
    step(ak.ones((4, 3)) * 2)
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 2), 8.0))
    assert w.is_leaf and w.requires_grad


def test_a_jitted_function_called_while_another_traces_becomes_part_of_it():
    # the inner function traces inside the outer trace (it deadlocked on the trace lock);
    # a jitted optimizer update called by a jitted step writes the closed-over state
    w = ak.ones((3, 2)).requires_grad_()
    velocity = ak.zeros((3, 2))

    @ak.jit
    def update():
        with ak.no_grad():
            velocity.mul_(0.5).add_(w.grad)
            w.sub_(0.25 * velocity)

    @ak.jit
    def step(x):
        w.grad = None
        (x @ w).sum().backward()
        update()

    w_np, v_np = np.ones((3, 2)), np.zeros((3, 2))
    for scale in (1.0, 2.0, 3.0):
        step(ak.ones((4, 3)) * scale)
        v_np = 0.5 * v_np + 4.0 * scale
        w_np = w_np - 0.25 * v_np
        np.testing.assert_allclose(w.tolist(), w_np, rtol=1e-6)  # tolist: .numpy() would
        np.testing.assert_allclose(velocity.tolist(), v_np, rtol=1e-6)  # move w to NumPy memory
    assert step.compile_count == 1 and update.compile_count == 0
    update()  # on its own it compiles its own program
    v_np = 0.5 * v_np + 12.0
    w_np = w_np - 0.25 * v_np
    np.testing.assert_allclose(velocity.tolist(), v_np, rtol=1e-6)
    assert update.compile_count == 1
    # a new batch shape: step traces again, calling update, which has a program of its
    # own now: the outer trace takes update's Python in
    for _ in range(2):
        step(ak.ones((6, 3)))
        v_np = 0.5 * v_np + 6.0
        w_np = w_np - 0.25 * v_np
        np.testing.assert_allclose(velocity.tolist(), v_np, rtol=1e-6)
        np.testing.assert_allclose(w.tolist(), w_np, rtol=1e-6)
    assert step.compile_count == 2 and update.compile_count == 1


def test_a_jitted_loss_with_a_program_of_its_own_keeps_its_gradient_inside_a_jitted_step():
    w = ak.ones(3).requires_grad_()

    @ak.jit
    def loss_fn(x):
        return (w * x).sum()

    @ak.jit
    def step(x):
        w.grad = None
        loss_fn(x).backward()
        with ak.no_grad():
            w.sub_(0.1 * w.grad)

    x = ak.asarray([1.0, 2.0, 3.0])
    assert loss_fn(x).item() == 6.0  # compiled on its own first
    step(x)
    step(x)
    np.testing.assert_allclose(w.tolist(), [0.8, 0.6, 0.4], rtol=1e-6)


def test_a_jitted_counter_with_a_program_of_its_own_counts_every_call_of_a_jitted_step():
    # its inputs are all concrete inside the outer trace: its program must not run then
    calls = ak.zeros(())

    @ak.jit
    def count():
        calls.add_(1.0)

    @ak.jit
    def step(x):
        count()
        return x * 2

    count()
    for _ in range(3):
        step(ak.ones(2))
    assert calls.item() == 4.0 and step.compile_count == 1


def test_a_jitted_write_of_a_closed_over_tensor_inside_jax_jit_raises_and_writes_nothing():
    # as the same write made eagerly inside jax.jit does: the tensor would keep a tracer
    count = ak.zeros((), device="cpu")

    @ak.jit
    def tick(x):
        count.add_(1.0)
        return x

    @ak.jit
    def reads(x):
        return x * count

    v = ak.ones(3, device="cpu")
    for cached in (False, True):
        if cached:
            tick(v)
        with pytest.raises(RuntimeError, match="targets a tensor created outside it"):
            jax.jit(lambda a: tick(a) * 1)(v)
        assert count.item() == float(cached)  # usable, and not written by the refused call
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda a: reads(a) * 1)(v)), [1.0, 1.0, 1.0])


def test_compile_counts_reasons_and_cap():
    @ak.jit(max_compiles=2)
    def double(t):
        return t * 2

    for _ in range(3):
        double(ak.ones(3))
    assert double.compile_count == 1 and double.last_compile_reason == "first call"
    double(ak.ones(4))
    assert double.compile_count == 2 and "shape (4,)" in double.last_compile_reason
    with pytest.raises(RuntimeError, match="max_compiles=2.*shape \\(5,\\)"):
        double(ak.ones(5))


def test_static_arguments():
    @ak.jit(static_argnums=1)
    def power(t, k):
        return t ** k

    np.testing.assert_array_equal(power(ak.full((2,), 3.0), 2).numpy(), [9, 9])
    np.testing.assert_array_equal(power(ak.full((2,), 3.0), 3).numpy(), [27, 27])
    # traced for each static value; compiled once per distinct program they lower to
    assert power.trace_count == 2
    assert power.compile_count == len(power._recent._programs) in (1, 2)


@pytest.mark.parametrize("body,what", [
    (lambda t: 1.0 if t.sum() > 0 else 0.0, "bool()"),
    (lambda t: t.sum().item(), "item()"),
    (lambda t: float(t[0]), "float()"),
    (lambda t: t.tolist(), "tolist()"),
])
def test_python_control_flow_on_traced_values_raises(body, what):
    x = ak.arange(3.0)
    with pytest.raises(TypeError, match=f"{what.replace('(', '[(]').replace(')', '[)]')}.*arraykit.where"):
        ak.jit(body)(x)
    np.testing.assert_array_equal(x.numpy(), [0, 1, 2])  # the storage is concrete again


def test_data_dependent_mask_raises():
    with pytest.raises(IndexError, match="arraykit.where"):
        ak.jit(lambda t: t[t > 1])(ak.arange(3.0))


def test_only_written_storages_are_written_back():
    x, y = ak.ones(3), ak.ones(3)
    versions = (x.untyped_storage().version, y.untyped_storage().version)
    ptr = y.data_ptr()

    @ak.jit
    def f(a, b):
        a.add_(b)
        return b.sum()

    f(x, y)
    assert x.untyped_storage().version == versions[0] + 1
    assert y.untyped_storage().version == versions[1] and y.data_ptr() == ptr


def test_donated_arguments_are_handed_over():
    x = ak.ones(1000)
    y = ak.jit(lambda t: t * 2, donate_argnums=0)(x)
    np.testing.assert_array_equal(y.numpy()[:3], [2, 2, 2])
    assert x.untyped_storage().buffer.is_deleted()


def test_donated_arguments_are_handed_over_even_where_xla_copies_them():
    # views of one geometry at several offsets make its offset a run-time argument,
    # and XLA then copies a donated input it reads at that offset; the caller gave the
    # buffer up, so it is donated all the same (only arraykit's own donations of
    # written storages are dropped where XLA would copy)
    base = ak.ones(3000)
    for i in range(4):
        base[i:i + 1000] * 2
    x = ak.ones(1000)
    y = ak.jit(lambda t: t * 2, donate_argnums=0)(x)
    np.testing.assert_array_equal(y.numpy()[:3], [2, 2, 2])
    assert x.untyped_storage().buffer.is_deleted()


SHARDED_STEP = """
import jax, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import arraykit as ak
import arraykit.nn.functional as F
mesh = Mesh(np.array(jax.devices()), ("data",))
rng = np.random.default_rng(0)
X = rng.normal(size=(64, 10)).astype(np.float32)
Y = rng.integers(0, 3, 64)
W0 = rng.normal(size=(10, 3)).astype(np.float32)

def train(sharded):
    place = (lambda spec: NamedSharding(mesh, spec)) if sharded else (lambda spec: None)
    w = ak.asarray(W0, device=place(P())).requires_grad_()
    lr = ak.asarray(0.5, device=place(P()))
    x, y = ak.asarray(X, device=place(P("data"))), ak.asarray(Y, device=place(P("data")))

    @ak.jit
    def step(x, y):
        w.grad = None
        loss = F.cross_entropy(x @ w, y)
        loss.backward()
        with ak.no_grad():
            w.sub_(lr * w.grad)
        return loss

    losses = [step(x, y).item() for _ in range(3)]
    return losses, w.numpy(), x.untyped_storage().buffer.sharding

single, sharded = train(False), train(True)
pre_sharded = jax.device_put(X, NamedSharding(mesh, P("data")))
wrapped = ak.asarray(pre_sharded)  # a sharded JAX array is wrapped as it is
assert wrapped.untyped_storage().buffer is pre_sharded
np.testing.assert_allclose((wrapped * 2).numpy(), X * 2)
assert len(jax.devices()) == 8
assert sharded[2].spec == P("data"), sharded[2]
moved = ak.asarray(X).to(NamedSharding(mesh, P("data")))  # a placement given positionally
assert moved.untyped_storage().buffer.sharding.spec == P("data")
assert ak.zeros(X.shape).to(moved.device).device == moved.device
np.testing.assert_array_equal(moved.numpy(), X)
np.testing.assert_allclose(sharded[0], single[0], rtol=1e-6)
np.testing.assert_allclose(sharded[1], single[1], rtol=1e-6, atol=1e-7)
print("ok")
"""


def test_data_parallel_step_over_a_mesh_matches_one_device():
    # eight CPU devices, also on a machine with a GPU (whose jax.devices() would be the GPU)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", SHARDED_STEP], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")


SHARDED_MODULE_STEP = """
import copy
import functools
import jax, numpy as np, pytest
from training import train_step
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import arraykit as ak
import arraykit.nn.functional as F
mesh = Mesh(np.array(jax.devices()), ("data",))
replicated, by_row = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
rng = np.random.default_rng(0)
X = rng.normal(size=(64, 10)).astype(np.float32)
Y = rng.integers(0, 3, 64)
OPTIMIZERS = {
    "sgd": lambda ps: ak.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01),
    "adamw": lambda ps: ak.optim.AdamW(ps, lr=0.01),
}

def train(sharded, name):
    ak.manual_seed(0)
    model = ak.nn.Sequential(ak.nn.Linear(10, 16), ak.nn.ReLU(), ak.nn.Linear(16, 3))
    if sharded:
        assert model.to(replicated) is model
    opt = OPTIMIZERS[name](model.parameters())
    batch = by_row if sharded else None
    x, y = ak.asarray(X, device=batch), ak.asarray(Y, device=batch)

    step = ak.jit(functools.partial(train_step, model, opt))
    losses = [step(x, y).item() for _ in range(3)]
    model[0].weight.numpy()  # a copy for a sharded parameter: its storage stays on the mesh
    losses.append(step(x, y).item())
    if not sharded:
        return losses, [p.numpy() for p in model.parameters()], []
    placed = [t.untyped_storage().buffer.sharding for t in model.parameters()]
    placed += [s.untyped_storage().buffer.sharding for st in opt.state.values()
               for s in st.values()]
    return losses, [p.numpy() for p in model.parameters()], placed

assert len(jax.devices()) == 8
for name in OPTIMIZERS:
    single, sharded = train(False, name), train(True, name)
    np.testing.assert_allclose(sharded[0], single[0], rtol=1e-5)
    for a, b in zip(sharded[1], single[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert len(sharded[2]) > 4  # parameters and optimizer state
    for sharding in sharded[2]:
        assert sharding.is_equivalent_to(replicated, 2), (name, sharding)

model = ak.nn.Linear(10, 3)  # parameters left on one device
x = ak.asarray(X, device=by_row)
for run in (model, ak.jit(model)):
    with pytest.raises(ValueError,
                       match=r"model\\.to\\(NamedSharding\\(mesh, PartitionSpec\\(\\)\\)\\)"):
        run(x)
print("ok")
"""


def test_module_and_optimizer_step_over_a_mesh_match_one_device():
    """Issue 17.3: model.to(sharding), SGD/AdamW state on the parameters' sharding, a
    batch split over 8 devices: the single-device losses; unreplicated parameters raise
    an error naming model.to."""
    tests = os.path.dirname(os.path.abspath(__file__))  # for the shared training step
    path = os.pathsep.join(p for p in (tests, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu",
               PYTHONPATH=path)
    done = subprocess.run([sys.executable, "-c", SHARDED_MODULE_STEP], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")


def _model_and_data(seed):
    ak.manual_seed(seed)
    model = ak.nn.Sequential(ak.nn.Linear(6, 8), ak.nn.ReLU(), ak.nn.Linear(8, 3))
    rng = np.random.default_rng(seed)
    x = ak.asarray(rng.normal(size=(10, 6)).astype(np.float32))
    y = ak.asarray(rng.integers(0, 3, 10))
    return model, x, y


@pytest.mark.parametrize("make_opt", [
    lambda p: ak.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    lambda p: ak.optim.Adam(p, lr=0.01, amsgrad=True),
    lambda p: ak.optim.AdamW(p, lr=0.01),
], ids=["sgd", "adam", "adamw"])
def test_eager_and_jitted_optimizer_steps_agree(make_opt):
    results = []
    for jitted in (False, True):
        model, x, y = _model_and_data(3)
        opt = make_opt(model.parameters())
        sched = ak.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        step = functools.partial(train_step, model, opt)
        run = ak.jit(step) if jitted else step
        losses = []
        for _ in range(5):
            losses.append(run(x, y).item())
            sched.step()  # changes the learning rate between calls
        results.append((losses, [p.numpy() for p in model.parameters()]))
        if jitted:
            # the first call made the optimizer's state: traced again, the same program
            assert run.trace_count == 2 and run.compile_count == 1
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    for jitted_p, eager_p in zip(results[1][1], results[0][1]):
        np.testing.assert_allclose(jitted_p, eager_p, rtol=1e-5, atol=1e-6)


def test_random_draws_under_jit_advance_like_eager():
    def noisy(t):
        return t + ak.rand(3)

    ak.manual_seed(7)
    eager = [noisy(ak.zeros(3)).numpy() for _ in range(3)]
    ak.manual_seed(7)
    jitted = ak.jit(noisy)
    got = [jitted(ak.zeros(3)).numpy() for _ in range(3)]
    np.testing.assert_array_equal(np.array(got), np.array(eager))
    assert not np.array_equal(got[0], got[1]) and jitted.compile_count == 1


def test_checkpoint_resume_continues_identically(tmp_path):
    def train(model, opt, x, y, steps):
        step = ak.jit(lambda xb, yb: train_step(model, opt, xb, yb))
        return [step(x, y).item() for _ in range(steps)]

    model, x, y = _model_and_data(5)
    opt = ak.optim.Adam(model.parameters(), lr=0.01)
    straight = train(model, opt, x, y, 6)

    model, x, y = _model_and_data(5)
    opt = ak.optim.Adam(model.parameters(), lr=0.01)
    first = train(model, opt, x, y, 3)
    ak.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": 3}, tmp_path / "ckpt")
    model2, _, _ = _model_and_data(11)
    opt2 = ak.optim.Adam(model2.parameters(), lr=0.01)
    state = ak.load(tmp_path / "ckpt")
    model2.load_state_dict(state["model"])
    opt2.load_state_dict(state["opt"])
    assert state["step"] == 3
    resumed = train(model2, opt2, x, y, 3)
    np.testing.assert_allclose(first + resumed, straight, rtol=1e-6)


def test_copied_parameters_finds_the_copies_xla_inserts_for_donated_inputs():
    import jax
    import jax.numpy as jnp

    from arraykit.jit import _copied_parameters

    cpu = jax.devices("cpu")[0]  # the CPU compiler's HLO (a GPU's fuses copies differently)
    w, x = jax.device_put(jnp.ones((64, 64)), cpu), jax.device_put(jnp.ones((8, 64)), cpu)
    # w is donated and read by two unordered consumers: XLA copies it first
    both = jax.jit(lambda w, x: (w * 2, x @ w), donate_argnums=0).lower(w, x).compile()
    assert _copied_parameters(both.as_text()) == {0}
    alone = jax.jit(lambda w, x: (w * 2,), donate_argnums=0).lower(w, x).compile()
    assert _copied_parameters(alone.as_text()) == set()


def test_a_jitted_step_donates_no_input_that_xla_would_copy():
    from arraykit.jit import _copied_parameters

    rng = np.random.default_rng(0)
    # 64 KiB: above packing.max_bytes("cpu"), under which a copy costs less than
    # a new buffer and such inputs are donated anyway
    w0 = rng.standard_normal((128, 128)).astype(np.float32)
    xs = rng.standard_normal((8, 128)).astype(np.float32)

    def step(w, x):
        y = x @ w  # reads w, unordered with the update below
        w.sub_(0.01 * (x.T @ x))
        return y

    w_eager, w_jit = ak.asarray(w0), ak.asarray(w0)
    jitted = ak.jit(step)
    for _ in range(3):
        expected = step(w_eager, ak.asarray(xs))
        got = jitted(w_jit, ak.asarray(xs))
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w_jit.numpy(), w_eager.numpy(), rtol=1e-5, atol=1e-6)
    (entry,) = jitted._entries.values()
    for program in entry.by_donation.values():
        assert _copied_parameters(program.executable.as_text()) == set()


def test_large_outputs_of_a_jitted_step_reuse_pooled_buffers_and_match_eager(monkeypatch):
    from arraykit import nn, optim
    from arraykit.core import buffer_pool

    rng = np.random.default_rng(3)  # the buffer pool serves CPU storages
    xs = ak.asarray(rng.standard_normal((16, 1024)).astype(np.float32), device="cpu")
    ys = ak.asarray(rng.integers(0, 8, 16), device="cpu")

    def make():
        ak.manual_seed(0)
        model = nn.Sequential(nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 8))  # 2 MiB weight
        model.to("cpu")
        return model, optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    eager_model, eager_opt = make()
    jit_model, jit_opt = make()
    served = []
    take = buffer_pool.take

    def counting_take(shape, dtype, device):
        buf = take(shape, dtype, device)
        served.append(buf is not None)
        return buf

    monkeypatch.setattr(buffer_pool, "take", counting_take)
    served = [s for s in served if s]
    eager_step = functools.partial(train_step, eager_model, eager_opt)
    jitted = ak.jit(functools.partial(train_step, jit_model, jit_opt))
    for _ in range(5):
        np.testing.assert_allclose(jitted(xs, ys).item(), eager_step(xs, ys).item(), rtol=1e-5)
    for p_jit, p_eager in zip(jit_model.parameters(), eager_model.parameters()):
        np.testing.assert_allclose(p_jit.numpy(), p_eager.numpy(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(p_jit.grad.numpy(), p_eager.grad.numpy(), rtol=1e-4, atol=1e-6)
    entry = list(jitted._entries.values())[-1]
    programs = list(entry.by_donation.values())
    assert any(p.needs for p in programs)
    assert served  # the pool served later calls
    assert jitted.compile_count == 1  # no second program for the pooled buffers


def test_python_scalars_first_used_inside_a_trace_leave_no_tracer_behind():
    from arraykit.tensors import operands

    operands._SCALARS.clear()
    f = ak.jit(lambda t: t * 3.25)
    np.testing.assert_array_equal(f(ak.ones(3)).numpy(), [3.25] * 3)
    assert not any(isinstance(v, jax.core.Tracer) for v in operands._SCALARS.values())
    g = ak.jit(lambda t: t * 3.25)
    np.testing.assert_array_equal(g(ak.ones(3)).numpy(), [3.25] * 3)
    (entry,) = g._entries.values()
    assert not any(isinstance(v, jax.core.Tracer) for _, v in entry.consts)
    np.testing.assert_array_equal((ak.ones(3) * 3.25).numpy(), [3.25] * 3)


def test_a_donated_argument_counts_as_overwritten_for_a_later_backward():
    x = ak.ones((4, 4)).requires_grad_()
    b = ak.asarray(np.arange(16.0, dtype=np.float32).reshape(4, 4))
    y = (x * b).sum()
    ak.jit(lambda t: t * 2, donate_argnums=0)(b)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_no_pooled_buffer_becomes_a_constant_of_a_traced_program():
    from arraykit.core import buffer_pool

    w = ak.ones((512, 512), device="cpu")  # 1 MiB; the buffer pool serves CPU storages
    spare = w * 2  # compiles w * 2 eagerly; its buffer goes to the pool when dropped
    del spare
    assert buffer_pool.held_bytes() > 0
    f = ak.jit(lambda x: w * 2 + x)
    np.testing.assert_array_equal(f(ak.ones((512, 512), device="cpu")).numpy()[:2, :2],
                                  [[3, 3], [3, 3]])
    (entry,) = f._entries.values()
    baked = [value.shape for kind, value in entry.consts if kind == "value"]
    assert (512, 512) not in baked  # only w's storage, read at call time, and scalars


def test_an_unused_argument_does_not_shift_the_inputs_checked_for_copies():
    from arraykit.jit import _copied_parameters

    w = ak.asarray(np.eye(128, dtype=np.float32))  # above the size donated anyway
    x = ak.ones((8, 128))

    def step(unused, w, x):
        y = x @ w
        w.sub_(0.01 * (x.T @ x))
        return y

    jitted = ak.jit(step)
    for _ in range(2):
        jitted(ak.zeros(3), w, x)
    (entry,) = jitted._entries.values()
    for program in entry.by_donation.values():
        assert _copied_parameters(program.executable.as_text()) == set()


def test_jax_and_numpy_array_arguments_are_inputs_read_at_each_call():
    import jax.numpy as jnp

    f = ak.jit(lambda t, a, n: t * 2 + ak.asarray(a) + ak.asarray(n))
    t = ak.ones(3)
    out = f(t, jnp.ones(3, jnp.float32), np.full(3, 10.0, np.float32))
    np.testing.assert_array_equal(out.numpy(), [13, 13, 13])
    out = f(t, jnp.arange(3, dtype=jnp.float32), np.zeros(3, np.float32))
    np.testing.assert_array_equal(out.numpy(), [2, 3, 4])
    assert f.compile_count == 1
    f(t, jnp.ones(4, jnp.float32)[:3], np.zeros(3, np.float32))
    assert f.compile_count == 1


def test_closed_over_scalar_view_is_read_at_each_call():
    """A 0-d view of a closed-over CPU storage enters the trace as a buffer read at
    each call; its value at trace time is not baked into the program."""
    state = ak.asarray(np.array([1.0, 2.0, 3.0], np.float32), device="cpu")
    x = ak.ones(3, device="cpu")

    @ak.jit
    def f(t):
        return t * state[1]

    assert f(x).tolist() == [2.0, 2.0, 2.0]
    state[1] = 10.0
    assert f(x).tolist() == [10.0, 10.0, 10.0]


def test_gradient_accumulating_into_an_input_compiles_once():
    """``x.grad`` of an input outside the optimizer accumulates in place, as PyTorch's
    AccumulateGrad does, so a jitted step keeps one program and matches eager."""
    data = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)

    def run(jitted):
        ak.manual_seed(0)
        x = ak.asarray(data).requires_grad_()
        lin = ak.nn.Linear(3, 2)
        opt = ak.optim.SGD(lin.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = lin(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss

        fn = ak.jit(step) if jitted else step
        first = None
        losses = []
        for _ in range(4):
            losses.append(fn(x).item())
            first = x.grad if first is None else first
            assert x.grad is first  # the same tensor, updated in place
        return losses, x.grad.numpy().copy(), fn

    eager_losses, eager_grad, _ = run(False)
    jit_losses, jit_grad, fn = run(True)
    np.testing.assert_allclose(jit_losses, eager_losses, rtol=1e-5)
    np.testing.assert_allclose(jit_grad, eager_grad, rtol=1e-5)
    assert fn.compile_count <= 2  # the first call creates x.grad: traced once more


def test_step_zeroing_gradients_in_place_after_an_eager_step():
    """``zero_grad(set_to_none=False)`` keeps the ``.grad`` tensors of an eager step; the
    jitted step then zeroes and accumulates into those same storages."""
    data = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    losses = {}
    for jitted in (False, True):
        ak.manual_seed(0)
        x = ak.asarray(data)
        lin = ak.nn.Linear(3, 2)
        opt = ak.optim.SGD(lin.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad(set_to_none=False)
            loss = lin(x).pow(2).sum()
            loss.backward()
            opt.step()
            return loss

        first = step(x).item()
        fn = ak.jit(step) if jitted else step
        losses[jitted] = [first] + [fn(x).item() for _ in range(3)]
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-5)


def test_index_check_of_a_closed_over_tensor_inside_a_trace_is_not_queued():
    """An embedding indexed by a closed-over buffer (a model's positions) under
    ``arraykit.jit``, with device-side checks deferred as on a GPU: the check's value
    exists only while tracing, so it is not queued for a later read."""
    from arraykit.core import deferred_checks

    emb = ak.nn.Embedding(8, 3)
    positions = ak.arange(8, dtype=ak.int32)

    @ak.jit
    def f(x):
        return (emb(positions[:4]) * x).sum()

    with deferred_checks.forced(True):
        got = f(ak.ones(3)).item()
        assert deferred_checks.pending() == 0
    expected = (emb.weight[:4].sum(0) * ak.ones(3)).sum().item()
    assert got == pytest.approx(expected, rel=1e-6)


def test_gradients_of_another_signature_held_by_the_caller_are_not_written_again():
    """A step traced for a second batch shape sets ``.grad`` anew; going back to the
    first shape must not run the first program into the gradients it made then, which
    the caller still holds: ``.grad`` after the call is this call's gradient."""
    ak.manual_seed(0)
    model = ak.nn.Sequential(ak.nn.Linear(4, 8), ak.nn.ReLU(), ak.nn.Linear(8, 3))
    opt = ak.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    step = ak.jit(functools.partial(train_step, model, opt))
    x, y = ak.randn((16, 4)), ak.randint(0, 3, (16,))
    for _ in range(3):
        step(x, y)
    held = [p.grad for p in model.parameters()]
    held_values = [g.numpy().copy() for g in held]
    step(x[:8], y[:8])
    twin = copy.deepcopy(model)
    F.cross_entropy(twin(x), y).backward()
    step(x, y)
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7)
    for g, values in zip(held, held_values):  # the caller's old gradients keep their values
        np.testing.assert_array_equal(g.numpy(), values)
