"""Rprop, Adafactor, SparseAdam and Muon against torch.optim: parameters and state after
several steps with the same gradients (float64, and float32 for one case each), state
dicts loaded from PyTorch, and PyTorch's errors."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn

STEPS = 6


def _setup(shapes, dtype, seed=0, zero_rows=False):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grads = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(STEPS)]
    if zero_rows:  # SparseAdam: gradients that leave rows (and single entries) out
        for step, gs in enumerate(grads):
            for g in gs:
                if g.ndim:
                    g[step % g.shape[0]] = 0
                    g.reshape(-1)[-1] = 0
    return ([nn.Parameter(ak.asarray(a)) for a in init], [torch.nn.Parameter(torch.tensor(a)) for a in init],
            grads)


def _give(ours, theirs, grads, sparse):
    for p, t, g in zip(ours, theirs, grads):
        p.grad = ak.asarray(g)
        t.grad = torch.tensor(g).to_sparse() if sparse else torch.tensor(g)


def _run(name, shapes, kwargs, dtype, tol, sparse=False):
    ours, theirs, grads = _setup(shapes, dtype, zero_rows=sparse)
    opt, topt = getattr(ak.optim, name)(ours, **kwargs), getattr(torch.optim, name)(theirs, **kwargs)
    for step_grads in grads:
        _give(ours, theirs, step_grads, sparse)
        opt.step()
        topt.step()
        for p, t in zip(ours, theirs):
            np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=tol, atol=tol)
    sd, tsd = opt.state_dict(), topt.state_dict()
    for i, tstate in tsd["state"].items():
        assert set(sd["state"][i]) == set(tstate), i
        for key, value in tstate.items():
            np.testing.assert_allclose(np.asarray(sd["state"][i][key]), np.asarray(value), rtol=tol, atol=tol,
                                       err_msg=f"{i} {key}")
    assert [set(g) for g in sd["param_groups"]] == [set(g) for g in tsd["param_groups"]]
    return ours, theirs, grads, opt, topt


MIXED = [(3, 4), (2, 3, 5), (4,), ()]
CASES = [
    ("Rprop", MIXED, dict(), 1e-12),
    ("Rprop", MIXED, dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True), 1e-12),
    ("Adafactor", MIXED, dict(), 1e-10),
    ("Adafactor", MIXED, dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=1.5, weight_decay=0.1,
                              maximize=True), 1e-10),
    ("SparseAdam", [(5, 3), (6,)], dict(lr=0.1), 1e-12),
    ("SparseAdam", [(5, 3), (6,)], dict(lr=0.1, betas=(0.5, 0.8), eps=1e-6, maximize=True), 1e-12),
]


@pytest.mark.parametrize("name, shapes, kwargs, tol", CASES, ids=lambda v: str(v) if isinstance(v, dict) else None)
def test_matches_torch_over_several_steps(name, shapes, kwargs, tol):
    _run(name, shapes, kwargs, np.float64, tol, sparse=name == "SparseAdam")


@pytest.mark.parametrize("name, shapes, kwargs", [(n, s, k) for n, s, k, _ in CASES[1::2]], ids=lambda v: str(v))
def test_float32_matches_torch(name, shapes, kwargs):
    ours, _, _, _, _ = _run(name, shapes, kwargs, np.float32, 2e-5, sparse=name == "SparseAdam")
    assert all(p.dtype == ak.float32 for p in ours)


@pytest.mark.parametrize("kwargs", [dict(lr=0.02), dict(lr=0.05, momentum=0.9, nesterov=False, weight_decay=0.2,
                                                         adjust_lr_fn="match_rms_adamw", ns_steps=3)], ids=str)
def test_muon_matches_torch(kwargs):
    # the Newton-Schulz iteration runs in bfloat16 (as PyTorch's): 2**-8 relative rounding per step
    ours, theirs, grads = _setup([(6, 4), (3, 5)], np.float32)
    start = [p.numpy().copy() for p in ours]
    opt, topt = ak.optim.Muon(ours, **kwargs), torch.optim.Muon(theirs, **kwargs)
    for step_grads in grads:
        _give(ours, theirs, step_grads, False)
        opt.step()
        topt.step()
    for p, t in zip(ours, theirs):
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=0, atol=2e-2 * kwargs["lr"] * STEPS)
    moved = min(np.abs(p.numpy() - s).max() for p, s in zip(ours, start))
    assert moved > 10 * 2e-2 * kwargs["lr"]
    for i, tstate in topt.state_dict()["state"].items():
        np.testing.assert_allclose(np.asarray(opt.state_dict()["state"][i]["momentum_buffer"]),
                                   tstate["momentum_buffer"].numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name, shapes, kwargs, tol", [CASES[1], CASES[3], CASES[5]],
                         ids=lambda v: str(v) if isinstance(v, dict) else None)
def test_loads_torch_state_and_continues(name, shapes, kwargs, tol):
    sparse = name == "SparseAdam"
    ours, theirs, grads, opt, topt = _run(name, shapes, kwargs, np.float64, tol, sparse=sparse)
    clone = [nn.Parameter(ak.asarray(t.detach().numpy())) for t in theirs]
    loaded = getattr(ak.optim, name)(clone, lr=1.0)
    loaded.load_state_dict(copy.deepcopy(topt.state_dict()))
    for step_grads in grads[:3]:
        _give(clone, theirs, step_grads, sparse)
        loaded.step()
        topt.step()
    for p, t in zip(clone, theirs):
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def test_sparse_adam_leaves_entries_without_gradient_alone():
    p = nn.Parameter(ak.asarray(np.arange(6.0).reshape(3, 2)))
    opt = ak.optim.SparseAdam([p], lr=0.5)
    p.grad = ak.asarray(np.array([[0.0, 0.0], [1.0, -2.0], [0.0, 3.0]]))
    opt.step()
    got = p.numpy()
    np.testing.assert_array_equal(got[0], [0.0, 1.0])
    assert got[2, 0] == 4.0 and got[2, 1] != 5.0


@pytest.mark.parametrize("name, kwargs", [
    ("Rprop", dict(lr=-1.0)), ("Rprop", dict(etas=(1.2, 0.5))), ("Adafactor", dict(lr=-1.0)),
    ("Adafactor", dict(beta2_decay=0.5)), ("Adafactor", dict(eps=(-1.0, 1e-3))), ("Adafactor", dict(d=0.5)),
    ("Adafactor", dict(weight_decay=-1.0)), ("SparseAdam", dict(lr=-1.0)), ("SparseAdam", dict(eps=0.0)),
    ("SparseAdam", dict(betas=(1.0, 0.9))), ("Muon", dict(lr=-1.0)), ("Muon", dict(momentum=-1.0)),
    ("Muon", dict(adjust_lr_fn="other")),
], ids=str)
def test_errors_match_torch(name, kwargs):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2, 2))], **kwargs)
    with pytest.raises(ValueError) as ours:
        getattr(ak.optim, name)([nn.Parameter(ak.zeros((2, 2)))], **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_muon_refuses_parameters_that_are_not_matrices():
    with pytest.raises(ValueError, match=r"2D parameters .* size: \(3,\)"):
        ak.optim.Muon([nn.Parameter(ak.zeros((3,)))])
