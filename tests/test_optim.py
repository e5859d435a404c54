"""arraykit.optim against torch.optim: SGD, Adam and AdamW over several steps on the same
parameters and gradients (float64, tight tolerances), parameter groups, learning-rate
changes, zero_grad, state_dict round trips, schedulers, and state kept in place."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn

SHAPES = [(3, 4), (4,), ()]
STEPS = 5


def _setup(dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(STEPS)]
    ours = [nn.Parameter(ak.asarray(a)) for a in init]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    return ours, theirs, grads


def _give_grads(params, grads):
    """Each parameter's ``.grad`` set to its NumPy gradient, as a tensor of its library."""
    for p, g in zip(params, grads):
        p.grad = ak.asarray(g) if isinstance(p, ak.Tensor) else torch.tensor(g)


def _set_grads(ours, theirs, grads):
    _give_grads(ours, grads)
    _give_grads(theirs, grads)


def _assert_same(ours, theirs, tol):
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _compare(ours_cls, theirs_cls, kwargs, dtype=np.float64, tol=1e-12):
    ours, theirs, grads = _setup(dtype)
    opt, topt = ours_cls(ours, **kwargs), theirs_cls(theirs, **kwargs)
    for step_grads in grads:
        _set_grads(ours, theirs, step_grads)
        opt.step()
        topt.step()
        _assert_same(ours, theirs, tol)
    return opt, topt


SGD_OPTIONS = [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.5),
    dict(lr=0.1, momentum=0.8, nesterov=True),
    dict(lr=0.1, weight_decay=0.1),
    dict(lr=0.1, momentum=0.9, dampening=0.2, weight_decay=0.05, maximize=True),
    dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1),
]


@pytest.mark.parametrize("kwargs", SGD_OPTIONS)
def test_sgd_matches_torch(kwargs):
    opt, topt = _compare(ak.optim.SGD, torch.optim.SGD, kwargs)
    assert bool(opt.state) == bool(kwargs.get("momentum"))


ADAM_OPTIONS = [
    dict(lr=0.1),
    dict(lr=0.01, betas=(0.8, 0.95), eps=1e-6),
    dict(lr=0.1, weight_decay=0.1),
    dict(lr=0.1, amsgrad=True),
    dict(lr=0.05, amsgrad=True, weight_decay=0.2, maximize=True),
]


@pytest.mark.parametrize("kwargs", ADAM_OPTIONS)
@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_and_adamw_match_torch(name, kwargs):
    _compare(getattr(ak.optim, name), getattr(torch.optim, name), kwargs)


def test_adamw_default_weight_decay_and_float32():
    opt, topt = _compare(ak.optim.AdamW, torch.optim.AdamW, dict(lr=0.1), dtype=np.float32, tol=1e-6)
    assert opt.param_groups[0]["weight_decay"] == topt.param_groups[0]["weight_decay"] == 1e-2
    _compare(ak.optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True),
             dtype=np.float32, tol=1e-6)


def test_param_groups_different_lrs_and_changing_lr():
    ours, theirs, grads = _setup()
    opt = ak.optim.Adam([{"params": ours[:1]}, {"params": ours[1:], "lr": 0.01, "betas": (0.5, 0.6)}], lr=0.1)
    topt = torch.optim.Adam([{"params": theirs[:1]}, {"params": theirs[1:], "lr": 0.01, "betas": (0.5, 0.6)}],
                            lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    for i, step_grads in enumerate(grads):
        if i >= 2:
            for o in (opt, topt):
                o.param_groups[0]["lr"] = 0.1 * i
                o.param_groups[1]["betas"] = (0.7, 0.9 + 0.01 * i)
        _set_grads(ours, theirs, step_grads)
        opt.step()
        topt.step()
        _assert_same(ours, theirs, 1e-12)
        if i == 2:
            before = ak.cache_info()
    # changing hyperparameters rewrites a tensor: no new kernel is compiled
    assert ak.cache_info()["misses"] == before["misses"]


def test_parameters_without_gradient_are_skipped():
    ours, theirs, grads = _setup()
    opt, topt = ak.optim.Adam(ours, lr=0.1), torch.optim.Adam(theirs, lr=0.1)
    for i, step_grads in enumerate(grads):
        _set_grads(ours, theirs, step_grads)
        if i % 2:
            ours[1].grad = None
            theirs[1].grad = None
        opt.step()
        topt.step()
    _assert_same(ours, theirs, 1e-12)
    assert float(opt.state[ours[1]]["step"]) == float(topt.state[theirs[1]]["step"]) == 3


def test_zero_grad():
    ours, _, grads = _setup()
    opt = ak.optim.SGD(ours, lr=0.1)
    _give_grads(ours, grads[0])
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and float(ak.abs(p.grad).sum()) == 0 for p in ours)
    opt.zero_grad()
    assert all(p.grad is None for p in ours)


def test_state_is_updated_in_place():
    ours, theirs, grads = _setup()
    opt = ak.optim.Adam(ours, lr=0.1, amsgrad=True)
    _set_grads(ours, theirs, grads[0])
    opt.step()
    state = opt.state[ours[0]]
    tensors = {k: (v, v.untyped_storage(), v.untyped_storage().version) for k, v in state.items()}
    params = [(p.untyped_storage(), p.untyped_storage().version) for p in ours]
    _set_grads(ours, theirs, grads[1])
    opt.step()
    for k, (v, storage, version) in tensors.items():
        assert opt.state[ours[0]][k] is v and v.untyped_storage() is storage
        assert storage.version > version
    for p, (storage, version) in zip(ours, params):
        assert p.untyped_storage() is storage and storage.version > version
    assert float(state["step"]) == 2 and state["exp_avg"].shape == (3, 4)


@pytest.mark.parametrize("name, kwargs", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                                          ("Adam", dict(lr=0.1, amsgrad=True)),
                                          ("AdamW", dict(lr=0.1))])
def test_state_dict_round_trip_continues_identically(name, kwargs):
    ours, theirs, grads = _setup()
    opt, topt = getattr(ak.optim, name)(ours, **kwargs), getattr(torch.optim, name)(theirs, **kwargs)
    for step_grads in grads[:2]:
        _set_grads(ours, theirs, step_grads)
        opt.step()
        topt.step()
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"] == [0, 1, 2]
    assert set(sd["state"]) == set(tsd["state"]) and set(sd["state"][0]) == set(tsd["state"][0])
    assert set(sd["param_groups"][0]) == set(tsd["param_groups"][0])
    # a fresh optimizer over copies of the parameters, loaded from ours and from torch's
    clones = [[nn.Parameter(ak.asarray(p.numpy())) for p in ours] for _ in range(2)]
    loaded = getattr(ak.optim, name)(clones[0], lr=1.0)
    loaded.load_state_dict(sd)
    from_torch = getattr(ak.optim, name)(clones[1], lr=1.0)
    from_torch.load_state_dict(copy.deepcopy(tsd))
    for step_grads in grads[2:]:
        _set_grads(ours, theirs, step_grads)
        for o, ps in ((loaded, clones[0]), (from_torch, clones[1])):
            _give_grads(ps, step_grads)
            o.step()
        opt.step()
        topt.step()
    _assert_same(ours, theirs, 1e-12)
    _assert_same(clones[0], theirs, 1e-12)
    _assert_same(clones[1], theirs, 1e-12)


def test_add_param_group_and_errors():
    ours, _, _ = _setup()
    opt = ak.optim.SGD(ours[:1], lr=0.1)
    opt.add_param_group({"params": ours[1:], "momentum": 0.5})
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[1]["momentum"] == 0.5
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": ours[:1]})
    with pytest.raises(ValueError, match="empty parameter list"):
        ak.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.5"):
        ak.optim.Adam(ours, betas=(0.9, 1.5))
    with pytest.raises(ValueError, match="Nesterov"):
        ak.optim.SGD(ours, nesterov=True)
    with pytest.raises(ValueError, match="non-leaf"):
        ak.optim.SGD([ours[0] * 2])
    with pytest.raises(ValueError, match="different number of parameter groups"):
        ak.optim.SGD(ours[:1]).load_state_dict(opt.state_dict())
    assert "Parameter Group 1" in repr(opt)


def _step_both(opt, topt, sched, tsched, epochs):
    """Step both optimizers and schedulers ``epochs`` times; the learning rates seen."""
    history = [(sched.get_last_lr(), tsched.get_last_lr())]
    for _ in range(epochs):
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        history.append((sched.get_last_lr(), tsched.get_last_lr()))
        assert [g["lr"] for g in opt.param_groups] == sched.get_last_lr()
    return history


def _scheduler_pair(name, kwargs, epochs=12):
    ours, theirs, _ = _setup()
    opt = ak.optim.SGD([{"params": ours[:1]}, {"params": ours[1:], "lr": 0.5}], lr=0.1)
    topt = torch.optim.SGD([{"params": theirs[:1]}, {"params": theirs[1:], "lr": 0.5}], lr=0.1)
    sched = getattr(ak.optim.lr_scheduler, name)(opt, **kwargs)
    tsched = getattr(torch.optim.lr_scheduler, name)(topt, **kwargs)
    return sched, tsched, _step_both(opt, topt, sched, tsched, epochs)


@pytest.mark.parametrize("name, kwargs", [("StepLR", dict(step_size=3, gamma=0.5)),
                                          ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
                                          ("CosineAnnealingLR", dict(T_max=4)),
                                          ("LinearLR", dict(start_factor=0.1, total_iters=4)),
                                          ("LinearLR", dict(start_factor=0.5, end_factor=0.2)),
                                          ("LambdaLR", dict(lr_lambda=lambda e: 0.9 ** e + e % 3))])
def test_schedulers_match_torch(name, kwargs):
    sched, tsched, history = _scheduler_pair(name, kwargs)
    for ours, theirs in history:
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
    sd = sched.state_dict()
    assert set(sd) >= {"last_epoch", "base_lrs", "_last_lr"} and sd["last_epoch"] == tsched.last_epoch
    sched.load_state_dict(dict(sd, last_epoch=0))
    assert sched.last_epoch == 0


def _warmup_cosine(lib, opt, warmup, total):
    sched = lib.optim.lr_scheduler
    return sched.SequentialLR(opt, [
        sched.LinearLR(opt, start_factor=0.01, total_iters=warmup),
        sched.CosineAnnealingLR(opt, T_max=total - warmup, eta_min=0.001),
    ], milestones=[warmup])


def _torch_and_ours(make, epochs):
    ours, theirs, _ = _setup()
    opt = ak.optim.AdamW([{"params": ours[:1]}, {"params": ours[1:], "lr": 0.5, "weight_decay": 0}], lr=0.1)
    topt = torch.optim.AdamW([{"params": theirs[:1]}, {"params": theirs[1:], "lr": 0.5, "weight_decay": 0}],
                             lr=0.1)
    sched, tsched = make(ak, opt), make(torch, topt)
    return sched, tsched, _step_both(opt, topt, sched, tsched, epochs), (opt, topt)


def test_sequential_warmup_then_cosine_matches_torch():
    sched, tsched, history, (opt, topt) = _torch_and_ours(lambda lib, o: _warmup_cosine(lib, o, 4, 12), 15)
    for ours, theirs in history:
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
    assert history[0][0] == pytest.approx([0.001, 0.005])  # warm-up starts at 1 %
    sd = sched.state_dict()
    assert len(sd["_schedulers"]) == 2 and sd["last_epoch"] == tsched.last_epoch
    # a fresh optimizer and scheduler loaded from their states continue with the same rates
    resumed, tresumed, _, (ropt, tropt) = _torch_and_ours(lambda lib, o: _warmup_cosine(lib, o, 4, 12), 0)
    ropt.load_state_dict(opt.state_dict())
    tropt.load_state_dict(topt.state_dict())
    resumed.load_state_dict(sd)
    tresumed.load_state_dict(tsched.state_dict())
    for _ in range(3):
        sched.step()
        resumed.step()
        tresumed.step()
        assert resumed.get_last_lr() == sched.get_last_lr()
        np.testing.assert_allclose(resumed.get_last_lr(), tresumed.get_last_lr(), rtol=1e-12)


def test_adamw_weight_decay_groups_match_torch():
    ours, theirs, grads = _setup()
    groups = [dict(weight_decay=0.1, lr=0.05, betas=(0.9, 0.95)), dict(weight_decay=0.0)]
    opt = ak.optim.AdamW([dict(g, params=ps) for g, ps in zip(groups, (ours[:1], ours[1:]))], lr=0.1)
    topt = torch.optim.AdamW([dict(g, params=ps) for g, ps in zip(groups, (theirs[:1], theirs[1:]))], lr=0.1)
    assert [g["weight_decay"] for g in opt.param_groups] == [0.1, 0.0]
    assert opt.param_groups[1]["betas"] == (0.9, 0.999) and opt.param_groups[1]["lr"] == 0.1
    for step_grads in grads:
        _set_grads(ours, theirs, step_grads)
        opt.step()
        topt.step()
        _assert_same(ours, theirs, 1e-12)


def test_lambda_lr_saves_callable_objects_only():
    class Factor:
        def __init__(self):
            self.scale = 2.0

        def __call__(self, epoch):
            return self.scale * epoch

    ours, _, _ = _setup()
    opt = ak.optim.SGD([{"params": ours[:1]}, {"params": ours[1:]}], lr=0.1)
    factor = Factor()
    sched = ak.optim.lr_scheduler.LambdaLR(opt, [factor, lambda e: 1.0])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"scale": 2.0}, None]
    factor.scale = 5.0
    sched.load_state_dict(sd)
    assert factor.scale == 2.0
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas"):
        ak.optim.lr_scheduler.LambdaLR(opt, [factor])


def test_scheduler_step_inside_jit_raises():
    ours, _, _ = _setup()
    opt = ak.optim.SGD(ours, lr=0.1)
    sched = ak.optim.lr_scheduler.LinearLR(opt, total_iters=3)

    @ak.jit
    def step(x):
        sched.step()
        return x + 1

    with pytest.raises(RuntimeError, match="inside an arraykit.jit trace"):
        step(ak.ones(3))


def test_warmup_cosine_reaches_a_jitted_adamw_step_without_recompiling():
    """The scheduler steps between calls; the compiled AdamW step follows every rate."""
    ours, theirs, grads = _setup(np.float32)
    opt = ak.optim.AdamW(ours, lr=0.1)
    topt = torch.optim.AdamW(theirs, lr=0.1)
    sched, tsched = _warmup_cosine(ak, opt, 2, 5), _warmup_cosine(torch, topt, 2, 5)

    @ak.jit
    def step(*gs):
        for p, g in zip(ours, gs):
            p.grad = g
        opt.step()

    for step_grads in grads:
        step(*[ak.asarray(g) for g in step_grads])
        _give_grads(theirs, step_grads)
        topt.step()
        sched.step()
        tsched.step()
        _assert_same(ours, theirs, 1e-5)
    assert step.compile_count == 1  # traced again once the state exists: the same program


def test_scheduler_changes_lr_without_recompiling():
    ours, theirs, grads = _setup()
    opt = ak.optim.SGD(ours, lr=0.1, momentum=0.9)
    topt = torch.optim.SGD(theirs, lr=0.1, momentum=0.9)
    sched = ak.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3)
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=3)
    misses = None
    for i, step_grads in enumerate(grads):
        _set_grads(ours, theirs, step_grads)
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
        if i == 2:
            misses = ak.cache_info()["misses"]
    _assert_same(ours, theirs, 1e-12)
    assert ak.cache_info()["misses"] == misses


def test_training_a_model_end_to_end():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 5)).astype(np.float32)
    y = rng.integers(0, 3, 32)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3))
    tmodel = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    model.load_state_dict({k: v.numpy() for k, v in tmodel.state_dict().items()})
    opt = ak.optim.AdamW(model.parameters(), lr=0.01)
    topt = torch.optim.AdamW(tmodel.parameters(), lr=0.01)
    loss_fn, tloss_fn = nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss()
    for _ in range(5):
        opt.zero_grad()
        topt.zero_grad()
        loss = loss_fn(model(ak.asarray(x)), ak.asarray(y))
        tloss = tloss_fn(tmodel(torch.tensor(x)), torch.tensor(y))
        loss.backward()
        tloss.backward()
        opt.step()
        topt.step()
        np.testing.assert_allclose(float(loss), tloss.item(), rtol=1e-5)
    for (name, p), tp in zip(model.named_parameters(), tmodel.parameters()):
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
