"""Float32 matmul precision and autocast against PyTorch's spelling and CPU autocast."""

import re
import threading

import jax
import numpy as np
import pytest
import torch

import arraykit as ak
import arraykit.nn.functional as F
from arraykit.core import precision as P
from arraykit.api.autocasting import POLICY
from arraykit.kernels import launch

CPU = "cpu"


@pytest.fixture(autouse=True)
def _restore_precision():
    yield
    ak.set_float32_matmul_precision("highest")


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _t(a):
    return ak.asarray(a, device=CPU)


# ----------------------------------------------------------------------------- precision


def test_precision_default_and_setter_as_pytorch():
    assert ak.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
    for setting in ("high", "medium", "highest"):
        ak.set_float32_matmul_precision(setting)
        assert ak.get_float32_matmul_precision() == setting


def test_invalid_precision_names_the_value():
    with pytest.raises(ValueError, match="'low'.*'highest', 'high', 'medium'"):
        ak.set_float32_matmul_precision("low")
    assert ak.get_float32_matmul_precision() == "highest"


def test_precision_never_touches_jax_config():
    before = jax.config.jax_default_matmul_precision
    ak.set_float32_matmul_precision("medium")
    assert jax.config.jax_default_matmul_precision == before


def test_dot_precision_per_setting_and_dtype():
    cpu = jax.devices("cpu")[0]
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    assert P.dot_precision(f32, cpu) == jax.lax.Precision.HIGHEST
    ak.set_float32_matmul_precision("medium")
    assert P.dot_precision(f32, cpu) == jax.lax.DotAlgorithmPreset.BF16_BF16_F32
    assert P.dot_precision(f64, cpu) == jax.lax.Precision.HIGHEST  # float32 only
    assert P.dot_precision(f32, cpu, "conv") == jax.lax.Precision.DEFAULT
    ak.set_float32_matmul_precision("high")
    # the CPU does not compile TF32: the precision enum stands in for the preset
    assert P.dot_precision(f32, cpu) == jax.lax.Precision.HIGH
    assert P.dot_precision(f32, cpu, "conv") == jax.lax.Precision.HIGH


def test_tf32_preset_is_what_a_gpu_gets_for_high():
    # the preset lowers for CUDA (checked here by lowering for that platform)
    a = jax.ShapeDtypeStruct((4, 4), np.float32)
    preset = P._DOT["high"][0]
    lowered = jax.jit(lambda x, y: jax.numpy.matmul(x, y, precision=preset)).trace(a, a).lower(
        lowering_platforms=("cuda",)).as_text()
    assert "tf32" in lowered


def _newest_jaxpr(jitted, *args):
    """The jaxpr of the program ``jitted`` compiled last, on its current inputs."""
    entry = list(jitted._entries.values())[-1]
    inputs = [ref().buffer if kind == "storage" else ref for kind, ref in entry.consts]
    return str(jax.make_jaxpr(entry.program)(*inputs, *(a._storage.buffer for a in args)))


def test_eager_matmul_precision_is_part_of_the_kernel_key():
    rng = np.random.default_rng(0)
    x, w = _t(_rand(rng, 8, 16)), _t(_rand(rng, 16, 4))
    ref = x @ w
    ak.set_float32_matmul_precision("medium")
    before = ak.cache_info()["traces"]
    medium = x @ w
    assert ak.cache_info()["traces"] == before + 1  # a new program, not the highest one
    ak.set_float32_matmul_precision("highest")
    again = x @ w
    assert ak.cache_info()["traces"] == before + 1  # the highest one, cached
    np.testing.assert_array_equal(again.numpy(), ref.numpy())
    np.testing.assert_allclose(medium.numpy(), ref.numpy(), rtol=3e-2, atol=3e-2)
    keys = [k for k in launch._KERNELS if getattr(k[0], "__name__", None) == "_matmul"]
    precisions = {k[1][-1] for k in keys}
    assert {jax.lax.Precision.HIGHEST, jax.lax.DotAlgorithmPreset.BF16_BF16_F32} <= precisions


@pytest.mark.parametrize("op", ["matmul", "linear", "tensordot", "vecdot", "conv2d"])
def test_each_contraction_lowers_with_the_precision(op):
    rng = np.random.default_rng(1)
    calls = {
        "matmul": (lambda a, b: a @ b, (8, 16), (16, 4)),
        "linear": (lambda a, b: F.linear(a, b), (8, 16), (4, 16)),
        "tensordot": (lambda a, b: ak.tensordot(a, b, axes=1), (8, 16), (16, 4)),
        "vecdot": (lambda a, b: ak.vecdot(a, b), (8, 16), (8, 16)),
        "conv2d": (lambda a, b: F.conv2d(a, b), (1, 2, 6, 6), (3, 2, 3, 3)),
    }
    fn, s1, s2 = calls[op]
    a, b = _t(_rand(rng, *s1)), _t(_rand(rng, *s2))
    jitted = ak.jit(fn)
    expected = {"medium": ("BF16_BF16_F32", "DEFAULT"), "highest": ("HIGHEST", "HIGHEST")}
    for setting in ("medium", "highest"):
        ak.set_float32_matmul_precision(setting)
        jitted(a, b)
        jaxpr = _newest_jaxpr(jitted, a, b)
        found = re.findall(r"precision=([^\n]*)", jaxpr)
        assert found, jaxpr
        marker = expected[setting][1] if op == "conv2d" else expected[setting][0]
        assert all(marker in line for line in found), found
    assert jitted.compile_count == 2
    assert "precision" in jitted.last_compile_reason


def test_jit_retraces_when_precision_changes_and_reuses_when_back():
    rng = np.random.default_rng(2)
    x, w = _t(_rand(rng, 8, 16)), _t(_rand(rng, 16, 16))
    step = ak.jit(lambda x, w: (x @ w).tanh().sum())
    ak.set_float32_matmul_precision("medium")
    step(x, w)
    ak.set_float32_matmul_precision("highest")
    highest = step(x, w)
    assert step.compile_count == 2
    step(x, w)
    ak.set_float32_matmul_precision("medium")
    step(x, w)
    assert step.compile_count == 2  # both programs cached, each under its own key
    ak.set_float32_matmul_precision("highest")
    np.testing.assert_allclose(highest.numpy(), ((x @ w).tanh().sum()).numpy(), rtol=1e-6)


# ----------------------------------------------------------------------------- autocast


def _torch_cpu_autocast(fn, *arrays):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return fn(*[torch.from_numpy(a) for a in arrays])


def _ak_cpu_autocast(fn, *arrays):
    with ak.autocast("cpu", dtype=ak.bfloat16):
        return fn(*[_t(a) for a in arrays])


def _same(ours, theirs, rtol=2e-2, atol=2e-2):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    ref = theirs.detach().float().numpy()
    np.testing.assert_allclose(np.asarray(ours.numpy(), dtype=np.float32), ref, rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", [
    "matmul", "linear", "linear_bias", "softmax", "log_softmax", "layer_norm", "exp", "sum",
    "cross_entropy", "conv2d", "mse_loss", "relu_of_matmul",
])
def test_op_dtypes_and_values_match_torch_cpu_autocast(case):
    rng = np.random.default_rng(3)
    x, w, b = _rand(rng, 8, 16), _rand(rng, 4, 16), _rand(rng, 4)
    img, k = _rand(rng, 2, 3, 6, 6), _rand(rng, 4, 3, 3, 3)
    y = rng.integers(0, 4, size=8)
    cases = {
        "matmul": (lambda m, a, b: a @ b.mT, (x, w)),
        "linear": (lambda m, a, b: m.linear(a, b), (x, w)),
        "linear_bias": (lambda m, a, b, c: m.linear(a, b, c), (x, w, b)),
        "softmax": (lambda m, a: m.softmax(a, dim=1), (x,)),
        "log_softmax": (lambda m, a: m.log_softmax(a, dim=1), (x,)),
        "layer_norm": (lambda m, a: m.layer_norm(a, (16,)), (x,)),
        "exp": (lambda m, a: a.exp(), (x[:, :4],)),
        "sum": (lambda m, a: a.sum(), (x,)),
        "cross_entropy": (lambda m, a, b, t: m.cross_entropy(m.linear(a, b), t), (x, w, y)),
        "conv2d": (lambda m, a, b: m.conv2d(a, b), (img, k)),
        "mse_loss": (lambda m, a, b: m.mse_loss(m.linear(a, b), m.linear(a, b) * 0.5), (x, w)),
        "relu_of_matmul": (lambda m, a, b: m.softmax(m.relu(m.linear(a, b)), dim=1), (x, w)),
    }
    fn, arrays = cases[case]
    theirs = _torch_cpu_autocast(lambda *t: fn(torch.nn.functional, *t), *arrays)
    ours = _ak_cpu_autocast(lambda *t: fn(F, *t), *arrays)
    _same(ours, theirs)


def _mlp_pair(rng):
    sizes = [(16, 32), (32, 10)]
    weights = [(_rand(rng, o, i) * 0.3, _rand(rng, o) * 0.1) for i, o in sizes]
    torch_model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    ak_model = ak.nn.Sequential(ak.nn.Linear(16, 32), ak.nn.ReLU(), ak.nn.Linear(32, 10))
    for layer_t, layer_a, (w, b) in zip((torch_model[0], torch_model[2]), (ak_model[0], ak_model[2]),
                                        weights):
        with torch.no_grad():
            layer_t.weight.copy_(torch.from_numpy(w))
            layer_t.bias.copy_(torch.from_numpy(b))
        with ak.no_grad():
            layer_a.weight.copy_(_t(w))
            layer_a.bias.copy_(_t(b))
    return torch_model, ak_model.to(CPU)


def test_mlp_forward_backward_matches_torch_cpu_autocast():
    rng = np.random.default_rng(4)
    torch_model, ak_model = _mlp_pair(rng)
    x, y = _rand(rng, 8, 16), rng.integers(0, 10, size=8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits_t = torch_model(torch.from_numpy(x))
        loss_t = torch.nn.functional.cross_entropy(logits_t, torch.from_numpy(y))
    loss_t.backward()
    with ak.autocast("cpu", dtype=ak.bfloat16):
        logits_a = ak_model(_t(x))
        loss_a = F.cross_entropy(logits_a, _t(y))
    loss_a.backward()
    _same(logits_a, logits_t)
    _same(loss_a, loss_t)
    for p_t, p_a in zip(torch_model.parameters(), ak_model.parameters()):
        assert p_a.grad.dtype == ak.float32 == p_a.dtype  # gradients in the parameters' dtype
        _same(p_a.grad, p_t.grad, rtol=5e-2, atol=3e-2)


def test_autocast_under_jit_is_traced_and_keyed():
    rng = np.random.default_rng(5)
    torch_model, ak_model = _mlp_pair(rng)
    x, y = _t(_rand(rng, 8, 16)), _t(rng.integers(0, 10, size=8))
    opt = ak.optim.SGD(ak_model.parameters(), lr=0.1)

    @ak.jit
    def step(x, y):
        opt.zero_grad()
        with ak.autocast("cpu"):
            logits = ak_model(x)
            loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        return logits, loss

    logits, loss = step(x, y)
    logits, loss = step(x, y)
    assert logits.dtype == ak.bfloat16 and loss.dtype == ak.float32
    assert all(p.dtype == ak.float32 and p.grad.dtype == ak.float32 for p in ak_model.parameters())
    assert re.search(r"\w+:bf16\[8,32\] = dot_general", _newest_jaxpr(step, x, y))

    @ak.jit
    def forward(x):
        return ak_model(x)

    plain = forward(x)
    with ak.autocast("cpu"):
        cast = forward(x)
    assert plain.dtype == ak.float32 and cast.dtype == ak.bfloat16
    assert forward.compile_count == 2 and "autocast" in forward.last_compile_reason
    with ak.autocast("cpu", enabled=False):
        assert forward(x).dtype == ak.float32
    assert forward.compile_count == 2


def test_autocast_nests_disables_and_decorates():
    rng = np.random.default_rng(6)
    x, w = _t(_rand(rng, 4, 8)), _t(_rand(rng, 8, 3))
    with ak.autocast("cpu"):
        assert (x @ w).dtype == ak.bfloat16
        with ak.autocast("cpu", enabled=False):
            assert (x @ w).dtype == ak.float32
            with ak.autocast("cpu", dtype=ak.float16):
                assert (x @ w).dtype == ak.float16
            assert (x @ w).dtype == ak.float32
        assert (x @ w).dtype == ak.bfloat16
        with ak.autocast("cuda"):  # another device type: CPU tensors keep the CPU state
            assert (x @ w).dtype == ak.bfloat16
    assert (x @ w).dtype == ak.float32

    @ak.autocast("cpu")
    def product(a, b):
        return a @ b

    assert product(x, w).dtype == ak.bfloat16
    assert (x @ w).dtype == ak.float32
    assert P.mode()[:2] == ("highest", ())  # precision, no autocast left behind


def test_gpu_policy_casts_pow_and_exp_up_and_scalars_pass_through(monkeypatch):
    # the GPU table, exercised on CPU tensors by pointing the CPU's entry at it
    monkeypatch.setitem(POLICY, "cpu", POLICY["gpu"])
    x = _t(np.full((2, 2), 1.5, np.float32)).to(ak.bfloat16)
    with ak.autocast("cpu"):
        assert (x ** 2).dtype == ak.float32
        assert ak.pow(x, x).dtype == ak.float32
        assert ak.exp(x).dtype == ak.float32
        assert ak.sum(x).dtype == ak.float32
        assert ak.sum(x, dtype=ak.bfloat16).dtype == ak.bfloat16  # an explicit dtype wins
        assert F.softmax(x, dim=1).dtype == ak.float32
        assert (x * 2).dtype == ak.bfloat16  # not in the table: follows its input
    np.testing.assert_allclose((x ** 2).numpy(), 2.25)


def test_autocast_for_another_device_type_leaves_cpu_ops_alone():
    x = _t(np.ones((2, 2), np.float32))
    with ak.autocast("cuda"):
        assert (x @ x).dtype == ak.float32


def test_autocast_is_per_thread():
    x = _t(np.ones((2, 2), np.float32))
    seen = []
    entered, done = threading.Event(), threading.Event()

    def other():
        entered.wait()
        seen.append((x @ x).dtype)
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with ak.autocast("cpu"):
        entered.set()
        done.wait()
    thread.join()
    assert seen == [ak.float32]


def test_autocast_float64_and_integers_are_not_cast():
    a = _t(np.ones((2, 2), np.float64))
    i = _t(np.ones((2, 2), np.int64))
    with ak.autocast("cpu"):
        assert (a @ a).dtype == ak.float64
        assert (i @ i).dtype == ak.int64


def test_autocast_rejects_bad_arguments():
    with pytest.raises(ValueError, match="'tpu'"):
        ak.autocast("tpu")
    with pytest.raises(ValueError, match="float32"):
        ak.autocast("cpu", dtype=ak.float32)


def test_policy_table_follows_torch_cpu_lists():
    # torch's CPU autocast: softmax, layer_norm, exp and sum follow their inputs; losses in float32
    cpu = POLICY["cpu"]
    assert cpu["matmul"] == cpu["linear"] == cpu["conv2d"] == "lower"
    assert cpu["cross_entropy"] == cpu["nll_loss"] == cpu["mse_loss"] == "float32"
    assert "softmax" not in cpu and "layer_norm" not in cpu and "sum" not in cpu
    gpu = POLICY["gpu"]
    assert gpu["softmax"] == gpu["layer_norm"] == gpu["sum"] == gpu["exp"] == "float32"


def test_autocast_lowers_attention_and_the_fused_linear_cross_entropy():
    q = ak.asarray(np.random.default_rng(0).standard_normal((2, 4, 8)), dtype=ak.float32,
                   device="cpu")
    w = ak.asarray(np.random.default_rng(1).standard_normal((16, 8)), dtype=ak.float32,
                   device="cpu")
    target = ak.asarray(np.arange(8) % 16, device="cpu")
    with ak.autocast("cpu", dtype=ak.bfloat16):
        out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        loss = F.linear_cross_entropy(q.reshape(8, 8), w, target)
    assert out.dtype == ak.bfloat16
    assert loss.dtype == ak.bfloat16
    exact = F.linear_cross_entropy(q.reshape(8, 8), w, target)
    np.testing.assert_allclose(float(loss), float(exact), rtol=2e-2)


def test_autocast_default_dtypes_are_pytorchs():
    assert ak.autocast("cpu").dtype == ak.bfloat16
    assert ak.autocast("cuda").dtype == ak.float16
    assert ak.autocast("gpu").dtype == ak.float16
    import torch

    assert torch.autocast("cpu").fast_dtype == torch.bfloat16
    assert torch.autocast("cuda", enabled=False).fast_dtype == torch.float16
