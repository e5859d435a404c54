"""``arraykit.amp``: ``autocast`` and ``GradScaler`` against ``torch.amp`` (CPU)."""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest

import arraykit as ak

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
W = RNG.standard_normal((3, 4)).astype(np.float32)
X = RNG.standard_normal((5, 4)).astype(np.float32)
# loss multipliers: an infinity and a NaN among finite steps
MULTS = [1.0, 1.0, float("inf"), 1.0, float("nan"), 1.0, 1.0]
OPTIMIZERS = {
    "adam": (lambda lib, p: lib.optim.Adam(p, lr=0.1)),
    "sgd_momentum": (lambda lib, p: lib.optim.SGD(p, lr=0.1, momentum=0.9)),
}
HAS_GPU = any(d.platform == "gpu" for d in jax.devices())


def _torch_run(make_opt):
    w = torch.nn.Parameter(torch.tensor(W))
    x = torch.tensor(X)
    opt = make_opt(torch, [w])
    scaler = torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    history = []
    for m in MULTS:
        opt.zero_grad()
        loss = (x @ w.T).pow(2).mean() * m
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        history.append((scaler.get_scale(), scaler._get_growth_tracker(), w.detach().numpy().copy()))
    return history, scaler.state_dict()


def _arraykit_run(make_opt, jitted):
    w = ak.nn.Parameter(ak.asarray(W))
    x = ak.asarray(X)
    opt = make_opt(ak, [w])
    scaler = ak.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)

    def step(m):
        opt.zero_grad()
        loss = ((x @ w.T) ** 2).mean() * m
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    run = ak.jit(step) if jitted else step
    history = []
    for m in MULTS:
        run(ak.asarray(np.float32(m)))
        history.append((scaler.get_scale(), scaler._get_growth_tracker(), np.asarray(w.detach()).copy()))
    return history, scaler.state_dict(), run


@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_sequence_matches_torch(optimizer, jitted):
    expected, expected_state = _torch_run(OPTIMIZERS[optimizer])
    got, state, run = _arraykit_run(OPTIMIZERS[optimizer], jitted)
    for (scale_t, tracker_t, w_t), (scale, tracker, w) in zip(expected, got):
        assert scale == scale_t
        assert tracker == tracker_t
        np.testing.assert_allclose(w, w_t, rtol=1e-5, atol=1e-6)
    assert state == expected_state
    if jitted:
        # the second call traces again for the optimizer state the first made; the
        # first step undoes its new state differently when skipped (set to zeros)
        assert run.trace_count == 2 and run.compile_count <= 2


def test_skipped_step_under_jit_leaves_parameters_and_state():
    w = ak.nn.Parameter(ak.asarray(W))
    opt = ak.optim.Adam([w], lr=0.1)
    scaler = ak.amp.GradScaler("cpu", init_scale=8.0)

    @ak.jit
    def step(m):
        opt.zero_grad()
        scaler.scale((w * m).sum()).backward()
        scaler.step(opt)
        scaler.update()

    step(ak.asarray(np.float32(1.0)))
    step(ak.asarray(np.float32(1.0)))
    before = np.asarray(w.detach()).copy()
    state = {k: np.asarray(v).copy() for k, v in opt.state[w].items()}
    step(ak.asarray(np.float32(np.inf)))
    np.testing.assert_array_equal(np.asarray(w.detach()), before)
    for k, v in opt.state[w].items():
        np.testing.assert_array_equal(np.asarray(v), state[k])
    assert scaler.get_scale() == 4.0


def test_scale_dtypes_as_torch():
    t_scaler = torch.amp.GradScaler("cpu")
    a_scaler = ak.amp.GradScaler("cpu")
    for shape in [(), (3,)]:
        for t_dtype, a_dtype in [(torch.float16, ak.float16), (torch.float32, ak.float32),
                                 (torch.bfloat16, ak.bfloat16)]:
            expected = t_scaler.scale(torch.ones(shape, dtype=t_dtype))
            got = a_scaler.scale(ak.ones(shape, dtype=a_dtype))
            assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
            np.testing.assert_array_equal(np.asarray(ak.astype(got, ak.float32)), expected.float().numpy())
    pair = a_scaler.scale([ak.ones(2), ak.ones(())])
    assert isinstance(pair, list) and float(pair[1]) == 65536.0
    with pytest.raises(ValueError, match="Tensor or an iterable"):
        a_scaler.scale(3.0)


def _scaled_step(scaler, opt, w):
    opt.zero_grad()
    scaler.scale((w * w).sum()).backward()


def test_stage_errors_as_torch():
    w = ak.nn.Parameter(ak.asarray(W))
    opt = ak.optim.SGD([w], lr=0.1)
    scaler = ak.amp.GradScaler("cpu")
    with pytest.raises(RuntimeError, match="_scale is None"):
        scaler.unscale_(opt)
    _scaled_step(scaler, opt, w)
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="after step"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure"):
        scaler.step(opt, closure=lambda: None)
    scaler.update()
    with pytest.raises(RuntimeError, match="No inf checks"):
        scaler.update()


def test_unscale_divides_gradients_and_rejects_float16_gradients():
    w = ak.nn.Parameter(ak.asarray(W))
    opt = ak.optim.SGD([w], lr=0.1)
    scaler = ak.amp.GradScaler("cpu", init_scale=1024.0)
    _scaled_step(scaler, opt, w)
    scaler.unscale_(opt)
    np.testing.assert_allclose(np.asarray(w.grad), 2 * W, rtol=1e-6)
    h = ak.nn.Parameter(ak.ones(3, dtype=ak.float16))
    opt16 = ak.optim.SGD([h], lr=0.1)
    scaler.scale(h.sum()).backward()
    with pytest.raises(ValueError, match="FP16 gradients"):
        scaler.unscale_(opt16)


def test_update_with_new_scale_and_state_dict_round_trip():
    w = ak.nn.Parameter(ak.asarray(W))
    opt = ak.optim.SGD([w], lr=0.1)
    scaler = ak.amp.GradScaler("cpu", init_scale=16.0, growth_interval=3)
    _scaled_step(scaler, opt, w)
    scaler.step(opt)
    scaler.update(new_scale=2.0)
    assert scaler.get_scale() == 2.0
    _scaled_step(scaler, opt, w)
    scaler.step(opt)
    scaler.update(ak.asarray(np.float32(5.0)))
    assert scaler.get_scale() == 5.0
    with pytest.raises(ValueError, match="float32"):
        scaler.update(ak.asarray([1.0, 2.0]))
    state = scaler.state_dict()
    t_scaler = torch.amp.GradScaler("cpu")
    t_scaler.load_state_dict(state)
    assert t_scaler.state_dict() == state
    other = ak.amp.GradScaler("cpu")
    other.load_state_dict(t_scaler.state_dict())
    assert other.state_dict() == state
    assert (other.get_growth_interval(), other.get_growth_factor(), other.get_backoff_factor()) == (3, 2.0, 0.5)
    with pytest.raises(RuntimeError, match="empty"):
        other.load_state_dict({})


def test_setters_reach_a_jitted_step():
    w = ak.nn.Parameter(ak.asarray(W))
    opt = ak.optim.SGD([w], lr=0.0)
    scaler = ak.amp.GradScaler("cpu", init_scale=4.0, growth_interval=1)

    @ak.jit
    def step():
        _scaled_step(scaler, opt, w)
        scaler.step(opt)
        scaler.update()

    step()
    assert scaler.get_scale() == 8.0
    scaler.set_growth_factor(3.0)
    step()
    assert scaler.get_scale() == 24.0


def test_disabled_scaler_passes_through():
    scaler = ak.amp.GradScaler("cpu", enabled=False)
    w = ak.nn.Parameter(ak.asarray(W))
    opt = ak.optim.SGD([w], lr=0.5)
    loss = (w * w).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.step(opt)
    np.testing.assert_allclose(np.asarray(w.detach()), W - 0.5 * 2 * W, rtol=1e-6)
    scaler.update()
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {} and not scaler.is_enabled()


def test_factor_checks():
    with pytest.raises(ValueError, match="growth factor"):
        ak.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(ValueError, match="backoff factor"):
        ak.amp.GradScaler("cpu", backoff_factor=1.0)


@pytest.mark.skipif(HAS_GPU, reason="about a machine without a GPU")
def test_cuda_scaler_without_gpu_disables_itself_as_torch():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaler = ak.cuda.amp.GradScaler()
        default = ak.amp.GradScaler()
    assert not scaler.is_enabled() and not default.is_enabled()
    assert any("CUDA is not available" in str(w.message) for w in caught)


def test_autocast_spellings():
    assert ak.amp.autocast is ak.autocast
    with ak.amp.autocast(device_type="cpu", dtype=ak.bfloat16):
        y = ak.ones((2, 2), device="cpu") @ ak.ones((2, 2), device="cpu")
    assert y.dtype == ak.bfloat16
    old = ak.cuda.amp.autocast()
    assert isinstance(old, ak.autocast)
    assert (old.device_type, old.dtype, old.enabled) == ("cuda", ak.float16, True)
    with ak.cuda.amp.autocast(dtype=ak.bfloat16):
        z = ak.ones((2, 2), device="cpu") @ ak.ones((2, 2), device="cpu")
    assert z.dtype == ak.float32  # CUDA autocast leaves CPU tensors alone, as in PyTorch
