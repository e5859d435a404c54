"""Normalization layers against torch.nn: BatchNorm1d/2d/3d (running statistics over
several steps, momentum None, affine and tracking off, train and eval), SyncBatchNorm
(on an 8-device mesh too), InstanceNorm1d/2d/3d, GroupNorm, LayerNorm, RMSNorm and
LocalResponseNorm: forward values, every gradient, buffers, state_dict keys, repr,
float32 and float64, strided inputs, PyTorch's errors, and the running statistics'
update inside an arraykit.jit step."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn
from arraykit.nn import functional as F

TOL = {np.float32: 2e-5, np.float64: 1e-10}


def _load(module, tmodule):
    module.load_state_dict({k: v.detach().numpy() for k, v in tmodule.state_dict().items()})


def _strided(x, lib):
    """``x`` doubled along its last axis then sliced back: a non-contiguous view."""
    wide = np.repeat(x, 2, axis=-1)
    t = lib.asarray(wide) if lib is ak else torch.tensor(wide)
    return t[..., ::2]


def _random_params(tmodule, rng):
    with torch.no_grad():
        for p in tmodule.parameters():
            p.copy_(torch.tensor(rng.uniform(0.5, 1.5, p.shape).astype(p.detach().numpy().dtype)))


def _step_both(module, tmodule, x, rng, tol, strided=False):
    """One forward and backward of ``sum(out * w)`` through both; compares the output,
    the input's and every parameter's gradient."""
    if strided:
        xa, xt = _strided(x, ak), _strided(x, torch)
        assert not xa.is_contiguous()
    else:
        xa, xt = ak.asarray(x), torch.tensor(x)
    xa.requires_grad_()
    xt.requires_grad_()
    out, tout = module(xa), tmodule(xt)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=tol, atol=tol)
    w = rng.standard_normal(tout.shape).astype(x.dtype)
    (out * ak.asarray(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xa.grad.numpy(), xt.grad.numpy(), rtol=tol * 10, atol=tol * 10)
    tparams = dict(tmodule.named_parameters())
    for name, p in module.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tparams[name].grad.numpy(), rtol=tol * 10, atol=tol * 10,
                                   err_msg=name)
    module.zero_grad()
    tmodule.zero_grad()


def _torch_module(name, *args, **options):
    """``torch.nn.<name>(*args, **options)``; skips a case that passes ``bias`` to a PyTorch
    whose module has no such option (PyTorch 2.11's BatchNorm, InstanceNorm, GroupNorm)."""
    cls = getattr(torch.nn, name)
    if "bias" in options and "bias" not in inspect.signature(cls).parameters:
        pytest.skip(f"this PyTorch's torch.nn.{name} has no `bias` option")
    return cls(*args, **options)


def _same_repr(module, tmodule, expected):
    """arraykit's repr is ``expected``, PyTorch 2.13's; the installed PyTorch's is compared
    too unless its repr leaves ``bias`` out (PyTorch 2.11's, LayerNorm's even though it
    takes ``bias``)."""
    assert repr(module) == expected
    if "bias=" in repr(tmodule) or "bias=" not in expected:
        assert repr(tmodule) == expected


def _same_buffers(module, tmodule, tol):
    theirs = dict(tmodule.named_buffers())
    ours = dict(module.named_buffers())
    assert set(ours) == set(theirs)
    for name, b in ours.items():
        assert b.dtype.name == str(theirs[name].dtype).removeprefix("torch."), name
        np.testing.assert_allclose(b.numpy(), theirs[name].numpy(), rtol=tol, atol=tol, err_msg=name)


BATCH_NORMS = [
    ("BatchNorm1d", (6, 3), dict(),
     "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"),
    ("BatchNorm1d", (4, 3, 5), dict(momentum=None),
     "BatchNorm1d(3, eps=1e-05, momentum=None, affine=True, bias=True, track_running_stats=True)"),
    ("BatchNorm2d", (3, 3, 4, 2), dict(),
     "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"),
    ("BatchNorm2d", (2, 3, 2, 3), dict(momentum=0.3, affine=False),
     "BatchNorm2d(3, eps=1e-05, momentum=0.3, affine=False, bias=False, track_running_stats=True)"),
    ("BatchNorm3d", (2, 3, 2, 3, 2), dict(track_running_stats=False),
     "BatchNorm3d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=False)"),
    ("BatchNorm2d", (2, 3, 3, 1), dict(eps=1e-3, bias=False, momentum=None),
     "BatchNorm2d(3, eps=0.001, momentum=None, affine=True, bias=False, track_running_stats=True)"),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, shape, options, expected", BATCH_NORMS,
                         ids=[f"{n}-{s}-{o}" for n, s, o, _ in BATCH_NORMS])
def test_batch_norm_train_steps_then_eval_match_torch(name, shape, options, expected, dtype):
    rng = np.random.default_rng(0)
    tdtype = torch.float64 if dtype == np.float64 else torch.float32
    tmodule = _torch_module(name, 3, dtype=tdtype, **options)
    _random_params(tmodule, rng)
    module = getattr(nn, name)(3, dtype=ak.float64 if dtype == np.float64 else ak.float32, **options)
    _load(module, tmodule)
    tol = TOL[dtype]
    for i in range(3):
        x = (rng.standard_normal(shape) * (i + 1) + i).astype(dtype)
        _step_both(module, tmodule, x, rng, tol, strided=i == 1)
        _same_buffers(module, tmodule, tol)
    module.eval()
    tmodule.eval()
    x = rng.standard_normal(shape).astype(dtype)
    _step_both(module, tmodule, x, rng, tol)
    _same_buffers(module, tmodule, tol)
    assert list(module.state_dict()) == list(tmodule.state_dict())
    _same_repr(module, tmodule, expected)


def test_functional_batch_norm_updates_given_running_stats_in_place():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 4, 3)).astype(np.float32)
    mean, var = ak.zeros(4), ak.ones(4)
    tmean, tvar = torch.zeros(4), torch.ones(4)
    storages = (mean.untyped_storage(), var.untyped_storage())
    out = F.batch_norm(ak.asarray(x), mean, var, training=True, momentum=0.25)
    tout = torch.nn.functional.batch_norm(torch.tensor(x), tmean, tvar, training=True, momentum=0.25)
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mean.numpy(), tmean.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(var.numpy(), tvar.numpy(), rtol=1e-6)
    assert (mean.untyped_storage(), var.untyped_storage()) == storages
    out = F.batch_norm(ak.asarray(x), mean, var, ak.full((4,), 2.0), ak.ones(4))
    tout = torch.nn.functional.batch_norm(torch.tensor(x), tmean, tvar, torch.full((4,), 2.0), torch.ones(4))
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.batch_norm(ak.asarray(x), None, None, training=True).numpy(),
                               torch.nn.functional.batch_norm(torch.tensor(x), None, None, training=True).numpy(),
                               rtol=1e-5, atol=1e-5)


INSTANCE_NORMS = [
    ("InstanceNorm1d", (3, 4, 5), dict(),
     "InstanceNorm1d(4, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)"),
    ("InstanceNorm1d", (4, 5), dict(affine=True, track_running_stats=True, momentum=0.2),
     "InstanceNorm1d(4, eps=1e-05, momentum=0.2, affine=True, bias=True, track_running_stats=True)"),
    ("InstanceNorm2d", (2, 4, 3, 3), dict(affine=True, track_running_stats=True),
     "InstanceNorm2d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"),
    ("InstanceNorm2d", (4, 3, 2), dict(affine=True, bias=False),
     "InstanceNorm2d(4, eps=1e-05, momentum=0.1, affine=True, bias=False, track_running_stats=False)"),
    ("InstanceNorm3d", (2, 4, 2, 2, 3), dict(track_running_stats=True, momentum=None),
     "InstanceNorm3d(4, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=True)"),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, shape, options, expected", INSTANCE_NORMS,
                         ids=[f"{n}-{s}-{o}" for n, s, o, _ in INSTANCE_NORMS])
def test_instance_norm_matches_torch(name, shape, options, expected, dtype):
    rng = np.random.default_rng(2)
    tdtype = torch.float64 if dtype == np.float64 else torch.float32
    tmodule = _torch_module(name, 4, dtype=tdtype, **options)
    _random_params(tmodule, rng)
    module = getattr(nn, name)(4, dtype=ak.float64 if dtype == np.float64 else ak.float32, **options)
    _load(module, tmodule)
    tol = TOL[dtype]
    for i in range(2):
        _step_both(module, tmodule, (rng.standard_normal(shape) + i).astype(dtype), rng, tol, strided=i == 1)
        _same_buffers(module, tmodule, tol)
    module.eval()
    tmodule.eval()
    _step_both(module, tmodule, rng.standard_normal(shape).astype(dtype), rng, tol)
    assert list(module.state_dict()) == list(tmodule.state_dict())
    _same_repr(module, tmodule, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, args, options, shape, expected", [
    ("GroupNorm", (2, 6), dict(), (3, 6, 4), "GroupNorm(2, 6, eps=1e-05, affine=True, bias=True)"),
    ("GroupNorm", (3, 6), dict(affine=False, eps=1e-3), (2, 6, 2, 3),
     "GroupNorm(3, 6, eps=0.001, affine=False, bias=False)"),
    ("GroupNorm", (6, 6), dict(bias=False), (2, 6, 5), "GroupNorm(6, 6, eps=1e-05, affine=True, bias=False)"),
    ("LayerNorm", ((4, 3),), dict(), (2, 5, 4, 3),
     "LayerNorm((4, 3), eps=1e-05, elementwise_affine=True, bias=True)"),
    ("RMSNorm", (3,), dict(), (2, 5, 3), "RMSNorm((3,), eps=None, elementwise_affine=True)"),
    ("RMSNorm", ((4, 3),), dict(eps=1e-3), (2, 4, 3), "RMSNorm((4, 3), eps=0.001, elementwise_affine=True)"),
    ("RMSNorm", (3,), dict(elementwise_affine=False), (4, 3),
     "RMSNorm((3,), eps=None, elementwise_affine=False)"),
], ids=["group2", "group3-noaffine", "group6", "layer", "rms", "rms-eps", "rms-noaffine"])
def test_group_layer_rms_norm_match_torch(name, args, options, shape, expected, dtype):
    rng = np.random.default_rng(3)
    kw = dict(dtype=torch.float64) if dtype == np.float64 else {}
    tmodule = _torch_module(name, *args, **options, **kw)
    _random_params(tmodule, rng)
    module = getattr(nn, name)(*args, **options, **(dict(dtype=ak.float64) if dtype == np.float64 else {}))
    _load(module, tmodule)
    for strided in (False, True):
        _step_both(module, tmodule, rng.standard_normal(shape).astype(dtype), rng, TOL[dtype], strided)
    assert list(module.state_dict()) == list(tmodule.state_dict())
    _same_repr(module, tmodule, expected)


@pytest.mark.parametrize("size, shape, dtype", [(2, (2, 5, 4), np.float32), (3, (2, 6, 3, 2), np.float64),
                                                (5, (1, 4, 2, 2, 2), np.float32)])
def test_local_response_norm_matches_torch(size, shape, dtype):
    rng = np.random.default_rng(4)
    module, tmodule = nn.LocalResponseNorm(size, alpha=0.5, beta=0.6, k=1.5), \
        torch.nn.LocalResponseNorm(size, alpha=0.5, beta=0.6, k=1.5)
    _step_both(module, tmodule, rng.standard_normal(shape).astype(dtype), rng, TOL[dtype], strided=True)
    assert repr(module) == repr(tmodule)


def test_functional_norms_match_torch():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    xa, xt = ak.asarray(x), torch.tensor(x)
    w = rng.standard_normal(4).astype(np.float32)
    tf = torch.nn.functional
    pairs = [
        (F.group_norm(xa, 2, ak.asarray(w)), tf.group_norm(xt, 2, torch.tensor(w))),
        (F.instance_norm(xa), tf.instance_norm(xt)),
        (F.rms_norm(xa, (5,)), tf.rms_norm(xt, (5,))),
        (F.local_response_norm(xa, 3), tf.local_response_norm(xt, 3)),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)
    assert F.batch_norm is ak.nn.functional.normalization.batch_norm


def test_errors_match_torch():
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(ak.ones((2, 3, 4)))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(ak.ones((2, 3, 4, 1)))
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        nn.BatchNorm3d(3)(ak.ones((2, 3, 4, 1)))
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size \[1, 3\]"):
        nn.BatchNorm1d(3)(ak.ones((1, 3)))
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(ak.ones((2, 3)), ak.zeros(4), ak.ones(4))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.InstanceNorm2d(3)(ak.ones((2, 3)))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(3\), but got: 4"):
        nn.InstanceNorm1d(3, affine=True)(ak.ones((2, 4, 5)))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(3)(ak.ones((2, 4, 5)))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(ak.ones((2, 3, 1)))
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(4, 6)
    with pytest.raises(RuntimeError, match=r"divisible by num_groups, but got input of shape \[2, 6, 4\] and num_groups=4"):
        F.group_norm(ak.ones((2, 6, 4)), 4)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        F.rms_norm(ak.ones((2, 3)), (4,))
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality input \(got 2 dimensions\)"):
        F.local_response_norm(ak.ones((2, 3)), 2)
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        nn.SyncBatchNorm(3)(ak.ones(3))
    with pytest.raises(TypeError, match="floating-point"):
        F.batch_norm(ak.ones((2, 3), dtype=ak.int64), None, None, training=True)


def test_batch_norm_defaults_buffers_and_torch_checkpoint():
    m, tm = nn.BatchNorm2d(4), torch.nn.BatchNorm2d(4)
    assert m.num_batches_tracked.dtype == ak.int64 and m.num_batches_tracked.shape == ()
    np.testing.assert_array_equal(m.weight.numpy(), np.ones(4))
    np.testing.assert_array_equal(m.running_var.numpy(), np.ones(4))
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    tm(torch.randn(3, 4, 2, 2))
    m.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    assert int(m.num_batches_tracked) == 1
    _same_buffers(m, tm, 0)
    m.reset_running_stats()
    assert int(m.num_batches_tracked) == 0 and float(m.running_mean.sum()) == 0
    off = nn.BatchNorm1d(3, affine=False, track_running_stats=False)
    assert off.weight is None and off.running_mean is None and list(off.state_dict()) == []


def _bn_model(lib):
    return lib.nn.Sequential(lib.nn.Linear(5, 6), lib.nn.BatchNorm1d(6, momentum=None), lib.nn.ReLU(),
                             lib.nn.Linear(6, 2))


def test_batch_norm_training_step_under_jit_matches_eager_and_torch():
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal((8, 5)).astype(np.float32) for _ in range(3)]
    tmodel = _bn_model(torch)
    results = {}
    for mode in ("eager", "jit"):
        model = _bn_model(ak)
        _load(model, tmodel)
        opt = ak.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        run = ak.jit(step) if mode == "jit" else step
        losses = [float(run(ak.asarray(x))) for x in xs]
        results[mode] = (losses, {k: v.numpy() for k, v in model.state_dict().items()})
        if mode == "jit":
            assert run.compile_count == 1
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1)
    tlosses = []
    for x in xs:
        topt.zero_grad()
        loss = (tmodel(torch.tensor(x)) ** 2).mean()
        loss.backward()
        topt.step()
        tlosses.append(loss.item())
    for mode, (losses, state) in results.items():
        np.testing.assert_allclose(losses, tlosses, rtol=1e-5, err_msg=mode)
        for k, v in tmodel.state_dict().items():
            np.testing.assert_allclose(state[k], v.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"{mode} {k}")
    assert int(results["jit"][1]["1.num_batches_tracked"]) == 3


def test_batch_norm_buffers_keep_their_storage_and_eval_mode_under_jit():
    m = nn.BatchNorm1d(3)
    storages = [b.untyped_storage() for b in m.buffers()]
    f = ak.jit(lambda x: m(x))
    x = ak.asarray(np.random.default_rng(7).standard_normal((5, 3)).astype(np.float32))
    f(x)
    f(x)
    assert [b.untyped_storage() for b in m.buffers()] == storages
    assert int(m.num_batches_tracked) == 2
    before = m.running_mean.numpy().copy()
    m.eval()
    out = f(x)
    np.testing.assert_array_equal(m.running_mean.numpy(), before)
    expected = (x.numpy() - before) / np.sqrt(m.running_var.numpy() + 1e-5)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_convert_sync_batchnorm_shares_parameters_and_buffers():
    model = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3, momentum=0.2),
                          nn.Sequential(nn.BatchNorm1d(4, affine=False)))
    model.eval()
    bn = model[1]
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model
    assert type(model[1]) is nn.SyncBatchNorm and type(model[2][0]) is nn.SyncBatchNorm
    assert model[1].weight is bn.weight and model[1].running_mean is bn.running_mean
    assert model[1].momentum == 0.2 and not model[1].training and model[2][0].weight is None
    assert list(model.state_dict()) == list(torch.nn.SyncBatchNorm.convert_sync_batchnorm(torch.nn.Sequential(
        torch.nn.Conv2d(2, 3, 1), torch.nn.BatchNorm2d(3),
        torch.nn.Sequential(torch.nn.BatchNorm1d(4, affine=False)))).state_dict())
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(3))
    assert type(single) is nn.SyncBatchNorm


SHARDED_BATCH_NORM = """
import jax, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import arraykit as ak
mesh = Mesh(np.array(jax.devices()), ("data",))
rng = np.random.default_rng(0)
X = (rng.normal(size=(16, 3, 4)) * np.arange(1, 17)[:, None, None]).astype(np.float32)

def run(sharded):
    m = ak.nn.SyncBatchNorm(3, momentum=0.3)
    if sharded:
        m.to(NamedSharding(mesh, P()))
    x = ak.asarray(X, device=NamedSharding(mesh, P("data")) if sharded else None).requires_grad_()
    step = ak.jit(lambda x: (m(x) ** 3).sum())
    for _ in range(2):
        x.grad = None
        loss = step(x)
    return float(loss), m.running_mean.numpy(), m.running_var.numpy(), int(m.num_batches_tracked)

single, sharded = run(False), run(True)
assert len(jax.devices()) == 8
np.testing.assert_allclose(sharded[0], single[0], rtol=1e-4)
np.testing.assert_allclose(sharded[1], single[1], rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(sharded[2], single[2], rtol=1e-5)
assert sharded[3] == single[3] == 2
mean = X.mean(axis=(0, 2))
var = X.var(axis=(0, 2), ddof=1)
expected_mean = 0.7 * 0.3 * mean + 0.3 * mean
np.testing.assert_allclose(single[1], expected_mean, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(single[2], 0.49 + 0.7 * 0.3 * var + 0.3 * var, rtol=1e-5)
print("ok")
"""


def test_sync_batch_norm_statistics_cover_the_whole_sharded_batch():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", SHARDED_BATCH_NORM], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")


def test_layer_and_rms_norm_shape_errors_are_pytorchs():
    import torch

    x = ak.zeros((2, 3))
    for fn, tfn in ((F.layer_norm, torch.nn.functional.layer_norm),
                    (F.rms_norm, torch.nn.functional.rms_norm)):
        with pytest.raises(RuntimeError):
            tfn(torch.zeros(2, 3), [4])
        with pytest.raises(RuntimeError, match=r"normalized_shape=\[4\]"):
            fn(x, [4])
        with pytest.raises(RuntimeError):
            tfn(torch.zeros(2, 3), [3], weight=torch.ones(4))
        with pytest.raises(RuntimeError, match="same shape as normalized_shape"):
            fn(x, [3], weight=ak.ones(4))
