"""RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD and LBFGS (and the amsgrad and
maximize options of Adam/AdamW) against torch.optim: parameters and every state entry
after several steps with the same gradients (float64 and float32), state_dict layout
and round trips (from this library and from PyTorch), PyTorch's errors, and jitted
steps equal to eager ones without recompiling when the learning rate changes."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn

SHAPES = [(3, 4), (4,), ()]
STEPS = 6

# NAdam's mu_product and ASGD's eta are float32 tensors in PyTorch (kept in the
# parameters' dtype here), hence their looser float64 tolerance.
CASES = [
    ("RMSprop", dict(), 1e-12),
    ("RMSprop", dict(lr=0.05, momentum=0.9, centered=True, weight_decay=0.1), 1e-12),
    ("RMSprop", dict(lr=0.05, alpha=0.9, centered=True, maximize=True), 1e-12),
    ("RMSprop", dict(lr=0.05, momentum=0.5, weight_decay=0.2, maximize=True), 1e-12),
    ("Adagrad", dict(lr=0.1), 1e-12),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, initial_accumulator_value=0.5, weight_decay=0.1, maximize=True), 1e-12),
    ("Adadelta", dict(), 1e-12),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True), 1e-12),
    ("Adamax", dict(lr=0.1), 1e-12),
    ("Adamax", dict(lr=0.1, betas=(0.8, 0.9), weight_decay=0.1, maximize=True), 1e-12),
    ("NAdam", dict(lr=0.1), 1e-7),
    ("NAdam", dict(lr=0.1, weight_decay=0.1, maximize=True), 1e-7),
    ("NAdam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True, momentum_decay=0.01), 1e-7),
    ("RAdam", dict(lr=0.1), 1e-12),
    ("RAdam", dict(lr=0.1, weight_decay=0.1, maximize=True), 1e-12),
    ("RAdam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True, betas=(0.5, 0.6)), 1e-12),
    ("ASGD", dict(lr=0.1), 1e-7),
    ("ASGD", dict(lr=0.1, lambd=0.1, t0=2, alpha=0.5, weight_decay=0.1, maximize=True), 1e-7),
    ("Adam", dict(lr=0.1, amsgrad=True, maximize=True), 1e-12),
    ("AdamW", dict(lr=0.1, amsgrad=True, maximize=True, weight_decay=0.3), 1e-12),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True), 1e-12),
]


def _setup(dtype, seed=0):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(STEPS)]
    return ([nn.Parameter(ak.asarray(a)) for a in init], [torch.nn.Parameter(torch.tensor(a)) for a in init],
            grads)


def _give(params, grads):
    for p, g in zip(params, grads):
        p.grad = ak.asarray(g) if isinstance(p, ak.Tensor) else torch.tensor(g)


def _same(ours, theirs, tol):
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _same_state(opt, topt, tol):
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["state"].keys() == tsd["state"].keys()
    for i, tstate in tsd["state"].items():
        assert set(sd["state"][i]) == set(tstate), i
        for name, value in tstate.items():
            np.testing.assert_allclose(np.asarray(sd["state"][i][name]), value.numpy(), rtol=tol, atol=tol,
                                       err_msg=f"{i} {name}")
    for group, tgroup in zip(sd["param_groups"], tsd["param_groups"]):
        assert set(group) == set(tgroup)
        assert group["params"] == tgroup["params"]


@pytest.mark.parametrize("name, kwargs, tol", CASES, ids=lambda v: str(v) if isinstance(v, dict) else None)
def test_matches_torch_over_several_steps(name, kwargs, tol):
    ours, theirs, grads = _setup(np.float64)
    opt, topt = getattr(ak.optim, name)(ours, **kwargs), getattr(torch.optim, name)(theirs, **kwargs)
    for step_grads in grads:
        _give(ours, step_grads)
        _give(theirs, step_grads)
        opt.step()
        topt.step()
        _same(ours, theirs, tol)
    _same_state(opt, topt, tol)


@pytest.mark.parametrize("name, kwargs", [(n, k) for n, k, _ in CASES[1::3]], ids=lambda v: str(v))
def test_float32_matches_torch(name, kwargs):
    ours, theirs, grads = _setup(np.float32)
    opt, topt = getattr(ak.optim, name)(ours, **kwargs), getattr(torch.optim, name)(theirs, **kwargs)
    for step_grads in grads:
        _give(ours, step_grads)
        _give(theirs, step_grads)
        opt.step()
        topt.step()
    _same(ours, theirs, 2e-5)
    assert all(p.dtype == ak.float32 for p in ours)


@pytest.mark.parametrize("name, kwargs, tol", [CASES[1], CASES[5], CASES[7], CASES[9], CASES[12], CASES[15],
                                               CASES[17]], ids=lambda v: str(v) if isinstance(v, dict) else None)
def test_state_dict_round_trips_and_loads_torch_states(name, kwargs, tol):
    ours, theirs, grads = _setup(np.float64)
    opt, topt = getattr(ak.optim, name)(ours, **kwargs), getattr(torch.optim, name)(theirs, **kwargs)
    for step_grads in grads[:3]:
        _give(ours, step_grads)
        _give(theirs, step_grads)
        opt.step()
        topt.step()
    clones = [[nn.Parameter(ak.asarray(p.numpy())) for p in ours] for _ in range(2)]
    loaded = getattr(ak.optim, name)(clones[0], lr=1.0)
    loaded.load_state_dict(opt.state_dict())
    from_torch = getattr(ak.optim, name)(clones[1], lr=1.0)
    from_torch.load_state_dict(copy.deepcopy(topt.state_dict()))
    assert from_torch.param_groups[0]["lr"] == kwargs.get("lr", topt.defaults["lr"])
    for step_grads in grads[3:]:
        for params in (ours, theirs, *clones):
            _give(params, step_grads)
        for o in (opt, topt, loaded, from_torch):
            o.step()
    for params in (ours, *clones):
        _same(params, theirs, tol)
    _same_state(from_torch, topt, tol)


def test_adagrad_state_exists_from_construction():
    ours, theirs, _ = _setup(np.float64)
    opt = ak.optim.Adagrad(ours, initial_accumulator_value=0.25)
    topt = torch.optim.Adagrad(theirs, initial_accumulator_value=0.25)
    _same_state(opt, topt, 0)


@pytest.mark.parametrize("name, kwargs", [("RMSprop", dict(momentum=0.9, centered=True)),
                                          ("NAdam", dict(weight_decay=0.1)), ("Adadelta", dict()),
                                          ("ASGD", dict(t0=2))], ids=str)
def test_jitted_step_matches_eager_and_lr_changes_do_not_recompile(name, kwargs):
    results = []
    for jitted in (False, True):
        ours, _, grads = _setup(np.float32)
        opt = getattr(ak.optim, name)(ours, lr=0.1, **kwargs)

        def step(*gs):
            for p, g in zip(ours, gs):
                p.grad = g
            opt.step()

        run = ak.jit(step) if jitted else step
        for i, step_grads in enumerate(grads):
            run(*[ak.asarray(g) for g in step_grads])
            opt.param_groups[0]["lr"] = 0.1 / (i + 2)
        results.append(([p.numpy() for p in ours], opt.state_dict()["state"]))
        if jitted:
            assert run.compile_count == 1  # traced again once the state exists: the same program
    for eager, traced in zip(results[0][0], results[1][0]):
        np.testing.assert_allclose(traced, eager, rtol=1e-5, atol=1e-6)
    for i, state in results[0][1].items():
        for key, value in state.items():
            np.testing.assert_allclose(results[1][1][i][key].numpy(), value.numpy(), rtol=1e-5, atol=1e-6)


def test_errors_match_torch():
    ours, _, _ = _setup(np.float64)
    for make, message in [
        (lambda: ak.optim.RMSprop(ours, alpha=-1), "Invalid alpha value: -1"),
        (lambda: ak.optim.RMSprop(ours, momentum=-0.5), "Invalid momentum value: -0.5"),
        (lambda: ak.optim.Adagrad(ours, lr_decay=-1), "Invalid lr_decay value: -1"),
        (lambda: ak.optim.Adagrad(ours, initial_accumulator_value=-1), "Invalid initial_accumulator_value value"),
        (lambda: ak.optim.Adadelta(ours, rho=1.5), "Invalid rho value: 1.5"),
        (lambda: ak.optim.Adamax(ours, betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
        (lambda: ak.optim.NAdam(ours, momentum_decay=-1), "Invalid momentum_decay value: -1"),
        (lambda: ak.optim.RAdam(ours, eps=-1), "Invalid epsilon value: -1"),
        (lambda: ak.optim.ASGD(ours, lr=-1), "Invalid learning rate: -1"),
        (lambda: ak.optim.LBFGS([{"params": ours[:1]}, {"params": ours[1:]}]), "parameter groups"),
    ]:
        with pytest.raises(ValueError, match=message):
            make()
    with pytest.raises(TypeError, match="real floating-point"):
        ak.optim.RMSprop([nn.Parameter(ak.ones(2, dtype=ak.complex64))])
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt = ak.optim.LBFGS(ours[:1], line_search_fn="backtracking")
        opt.step(lambda: _rosenbrock_closure(opt, ours[0]))


def _rosenbrock(x):
    return ((1 - x[:-1]) ** 2).sum() + 10 * ((x[1:] - x[:-1] ** 2) ** 2).sum()


def _rosenbrock_closure(opt, x):
    opt.zero_grad()
    loss = _rosenbrock(x)
    loss.backward()
    return loss


@pytest.mark.parametrize("kwargs", [dict(), dict(history_size=2, max_iter=7),
                                    dict(line_search_fn="strong_wolfe"),
                                    dict(line_search_fn="strong_wolfe", history_size=3, lr=0.5)], ids=str)
def test_lbfgs_matches_torch(kwargs):
    x0 = np.random.default_rng(8).standard_normal(4)
    x, tx = nn.Parameter(ak.asarray(x0)), torch.nn.Parameter(torch.tensor(x0))
    opt, topt = ak.optim.LBFGS([x], **kwargs), torch.optim.LBFGS([tx], **kwargs)
    for _ in range(2):
        loss = opt.step(lambda: _rosenbrock_closure(opt, x))
        tloss = topt.step(lambda: _rosenbrock_closure(topt, tx))
        np.testing.assert_allclose(float(loss), tloss.item(), rtol=1e-7, atol=1e-12)
        np.testing.assert_allclose(x.numpy(), tx.detach().numpy(), rtol=1e-7, atol=1e-10)
    state, tstate = opt.state_dict()["state"][0], topt.state_dict()["state"][0]
    assert set(state) == set(tstate)
    assert (state["func_evals"], state["n_iter"]) == (tstate["func_evals"], tstate["n_iter"])
    assert len(state["old_dirs"]) == len(tstate["old_dirs"])
    # a fresh optimizer loaded from torch's state continues as torch does
    y = nn.Parameter(ak.asarray(x.numpy()))
    resumed = ak.optim.LBFGS([y], **kwargs)
    resumed.load_state_dict(copy.deepcopy(topt.state_dict()))
    resumed.step(lambda: _rosenbrock_closure(resumed, y))
    topt.step(lambda: _rosenbrock_closure(topt, tx))
    np.testing.assert_allclose(y.numpy(), tx.detach().numpy(), rtol=1e-6, atol=1e-9)
