"""Learning-rate schedulers against torch.optim.lr_scheduler: the sequence of rates (and
of cycled momenta) over many steps with two parameter groups, state_dict round trips,
ReduceLROnPlateau on a metric sequence, ChainedScheduler, PyTorch's errors, and a
jitted step following OneCycleLR (rates and momenta) without recompiling."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn

EPOCHS = 30


def _optimizers(name="SGD", **options):
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s) for s in ((3,), (2, 2))]
    ours = [nn.Parameter(ak.asarray(a)) for a in init]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    opt = getattr(ak.optim, name)([{"params": ours[:1]}, {"params": ours[1:], "lr": 0.5}], lr=0.1, **options)
    topt = getattr(torch.optim, name)([{"params": theirs[:1]}, {"params": theirs[1:], "lr": 0.5}], lr=0.1, **options)
    return opt, topt


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum") for g in opt.param_groups]


def _run(make, epochs=EPOCHS, optimizer="SGD", **options):
    opt, topt = _optimizers(optimizer, **options)
    sched, tsched = make(ak, opt), make(torch, topt)
    for _ in range(epochs):
        np.testing.assert_allclose(sched.get_last_lr(), tsched.get_last_lr(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(_momenta(opt), _momenta(topt), rtol=1e-12)
        assert [g["lr"] for g in opt.param_groups] == sched.get_last_lr()
        opt.step()
        topt.step()
        sched.step()
        tsched.step()
    return sched, tsched, opt


def _s(lib):
    return lib.optim.lr_scheduler


SCHEDULERS = {
    "MultiStepLR": lambda lib, o: _s(lib).MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.5),
    "ExponentialLR": lambda lib, o: _s(lib).ExponentialLR(o, gamma=0.9),
    "ConstantLR": lambda lib, o: _s(lib).ConstantLR(o, factor=0.25, total_iters=6),
    "PolynomialLR": lambda lib, o: _s(lib).PolynomialLR(o, total_iters=12, power=2.0),
    "MultiplicativeLR": lambda lib, o: _s(lib).MultiplicativeLR(o, lambda e: 0.95 if e % 2 else 1.01),
    "CosineAnnealingWarmRestarts": lambda lib, o: _s(lib).CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2,
                                                                                       eta_min=0.01),
    "CosineAnnealingWarmRestarts-1": lambda lib, o: _s(lib).CosineAnnealingWarmRestarts(o, T_0=5),
    "OneCycleLR": lambda lib, o: _s(lib).OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=EPOCHS + 1),
    "OneCycleLR-linear-3": lambda lib, o: _s(lib).OneCycleLR(o, max_lr=1.0, epochs=4, steps_per_epoch=8,
                                                             anneal_strategy="linear", three_phase=True),
    "OneCycleLR-no-momentum": lambda lib, o: _s(lib).OneCycleLR(o, max_lr=0.3, total_steps=40, pct_start=0.5,
                                                                cycle_momentum=False),
    "CyclicLR": lambda lib, o: _s(lib).CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=4),
    "CyclicLR-triangular2": lambda lib, o: _s(lib).CyclicLR(o, 0.01, 0.1, step_size_up=3, step_size_down=5,
                                                           mode="triangular2"),
    "CyclicLR-exp": lambda lib, o: _s(lib).CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="exp_range", gamma=0.9),
    "ChainedScheduler": lambda lib, o: _s(lib).ChainedScheduler(
        [_s(lib).ConstantLR(o, factor=0.5, total_iters=4), _s(lib).ExponentialLR(o, gamma=0.9)]),
    "Sequential": lambda lib, o: _s(lib).SequentialLR(
        o, [_s(lib).ConstantLR(o, factor=0.5, total_iters=2), _s(lib).PolynomialLR(o, total_iters=10)],
        milestones=[5]),
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_rates_match_torch(name):
    sgd = dict(momentum=0.9) if "Cyclic" in name or "OneCycle" in name else {}
    sched, tsched, _ = _run(SCHEDULERS[name], **sgd)
    sd, tsd = sched.state_dict(), tsched.state_dict()
    assert {k for k in sd if not k.startswith("_")} == {k for k in tsd if not k.startswith("_")}
    assert sd.get("last_epoch") == tsd.get("last_epoch")


@pytest.mark.parametrize("name", ["OneCycleLR", "CyclicLR"])
def test_momentum_cycling_with_adam_betas_matches_torch(name):
    _run(SCHEDULERS[name], optimizer="Adam")


def test_state_dict_round_trip_continues_identically():
    for name in ("CosineAnnealingWarmRestarts", "OneCycleLR", "CyclicLR", "MultiStepLR", "ChainedScheduler"):
        sgd = dict(momentum=0.9) if "Cycl" in name else {}
        sched, _, opt = _run(SCHEDULERS[name], epochs=7, **sgd)
        state = sched.state_dict()
        other_opt, _ = _optimizers(**sgd)
        other = SCHEDULERS[name](ak, other_opt)
        other_opt.load_state_dict(opt.state_dict())
        other.load_state_dict(state)
        for _ in range(5):
            sched.step()
            other.step()
            assert other.get_last_lr() == sched.get_last_lr(), name


def test_warm_restarts_with_fractional_epochs_match_torch():
    opt, topt = _optimizers()
    sched = ak.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)
    tsched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(topt, T_0=3, T_mult=2)
    for epoch in (0.5, 1.25, 2.9, 3.0, 7.5, 9.0, 20.2):
        sched.step(epoch)
        tsched.step(epoch)
        np.testing.assert_allclose(sched.get_last_lr(), tsched.get_last_lr(), rtol=1e-12)


@pytest.mark.parametrize("options", [dict(), dict(mode="max", threshold_mode="abs", threshold=0.1),
                                     dict(patience=1, cooldown=2, factor=0.5, min_lr=[0.02, 0.1]),
                                     dict(patience=0, factor=0.3, eps=0.05)], ids=str)
def test_reduce_on_plateau_matches_torch(options):
    opt, topt = _optimizers()
    sched = ak.optim.lr_scheduler.ReduceLROnPlateau(opt, **options)
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **options)
    metrics = [1.0, 0.9, 0.95, 0.97, 0.96, 0.99, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.9, 1.2, 1.3, 1.3, 1.3]
    for metric in metrics * 2:
        sched.step(ak.asarray(metric))
        tsched.step(metric)
        assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)
        assert (sched.num_bad_epochs, sched.cooldown_counter) == (tsched.num_bad_epochs, tsched.cooldown_counter)
    state = sched.state_dict()
    assert {k for k in state if not k.startswith("_")} == {k for k in tsched.state_dict() if not k.startswith("_")}
    fresh = ak.optim.lr_scheduler.ReduceLROnPlateau(_optimizers()[0], **options)
    fresh.load_state_dict(state)
    assert fresh.best == sched.best and fresh.is_better(fresh.best - 1, fresh.best) == (fresh.mode == "min")


def test_errors_match_torch():
    opt, _ = _optimizers()
    sched = ak.optim.lr_scheduler
    for make, error, message in [
        (lambda: sched.CosineAnnealingWarmRestarts(opt, T_0=0), ValueError, "Expected positive integer T_0"),
        (lambda: sched.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=0), ValueError, "T_mult >= 1"),
        (lambda: sched.OneCycleLR(opt, max_lr=1.0), ValueError, "total_steps OR"),
        (lambda: sched.OneCycleLR(opt, max_lr=[1.0], total_steps=5), ValueError,
         "max_lr must have the same length as optimizer.param_groups"),
        (lambda: sched.OneCycleLR(opt, max_lr=1.0, total_steps=5, pct_start=1), ValueError, "pct_start"),
        (lambda: sched.OneCycleLR(ak.optim.Adagrad(opt.param_groups[0]["params"]), max_lr=1.0, total_steps=5),
         ValueError, "optimizer must support momentum"),
        (lambda: sched.CyclicLR(opt, 0.1, 1.0, mode="zigzag"), ValueError, "mode is invalid"),
        (lambda: sched.ReduceLROnPlateau(opt, factor=1.0), ValueError, "Factor should be < 1.0"),
        (lambda: sched.ReduceLROnPlateau(opt, mode="up"), ValueError, "mode up is unknown"),
        (lambda: sched.ChainedScheduler([sched.ReduceLROnPlateau(opt)]), ValueError, "ReduceLROnPlateau"),
        (lambda: sched.MultiplicativeLR(opt, [lambda e: 1.0]), ValueError, "Expected 2 lr_lambdas"),
        (lambda: sched.ConstantLR(opt, factor=2), ValueError, "between 0 and 1"),
    ]:
        with pytest.raises(error, match=message):
            make()
    one_cycle = sched.OneCycleLR(_optimizers(momentum=0.9)[0], max_lr=1.0, total_steps=2)
    one_cycle.step()
    one_cycle.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        one_cycle.step()


def test_one_cycle_reaches_a_jitted_step_without_recompiling():
    """Rates and momenta cycled between calls reach the compiled SGD step as values."""
    opt, topt = _optimizers(momentum=0.9, nesterov=True)
    ours = [p for g in opt.param_groups for p in g["params"]]
    theirs = [p for g in topt.param_groups for p in g["params"]]
    sched = ak.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.5, total_steps=8)
    tsched = torch.optim.lr_scheduler.OneCycleLR(topt, max_lr=0.5, total_steps=8)

    @ak.jit
    def step(*grads):
        for p, g in zip(ours, grads):
            p.grad = g
        opt.step()

    rng = np.random.default_rng(1)
    for _ in range(6):
        grads = [rng.standard_normal(p.shape) for p in ours]
        step(*[ak.asarray(g) for g in grads])
        for p, g in zip(theirs, grads):
            p.grad = torch.tensor(g)
        topt.step()
        sched.step()
        tsched.step()
        for p, t in zip(ours, theirs):
            np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert step.compile_count == 1  # the second trace (momentum buffers made) gives the first program
