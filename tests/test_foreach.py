"""One program for the same in-place write into many tensors (arraykit.kernels.foreach)
and the optimizers that batch their writes across parameters with it:
the same values as one write at a time, bit for bit, and as torch.optim; the fallback
where storages are shared or tensors are not whole storages."""

from __future__ import annotations

import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import nn, optim
from arraykit.kernels import foreach
from arraykit.kernels.launch import apply_inplace
from arraykit.optim import SGD, Adam, AdamW

SHAPES = [(7, 5), (5,), (3, 2, 4), ()]


def _axpy(cur, x, h, scale):
    return cur * h[0] + x * h[1] * scale


def _counting_programs(monkeypatch):
    runs = []
    run = foreach._run

    def counting(fn, static, targets, *rest):
        runs.append(len(targets))
        return run(fn, static, targets, *rest)

    monkeypatch.setattr(foreach, "_run", counting)
    return runs


def _tensors(seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [_on_device(rng.standard_normal(s).astype(dtype)) for s in SHAPES]


def _on_device(a):
    """A tensor with a device buffer (``asarray`` of a CPU NumPy array shares NumPy's
    memory, which writes go to one at a time)."""
    return ak.asarray(a).clone()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_program_writes_what_one_write_each_writes(monkeypatch, dtype):
    runs = _counting_programs(monkeypatch)
    targets, others = _tensors(0, dtype), _tensors(1, dtype)
    h = _on_device(np.array([0.5, -2.0]))
    expected = [t.clone() for t in targets]
    for t, x in zip(expected, others):
        apply_inplace(_axpy, t, (x, h), (3.0,))
    versions = [t._storage.version for t in targets]
    foreach.apply_inplace_many(_axpy, targets, [(x, h) for x in others], (3.0,))
    assert runs == [len(SHAPES)]
    for t, e, v in zip(targets, expected, versions):
        assert t.dtype == e.dtype and t.shape == e.shape
        np.testing.assert_array_equal(t.numpy(), e.numpy())
        assert t._storage.version == v + 1
    # an operand that is its own target is read before the write
    before = [t.numpy().copy() for t in targets]
    foreach.apply_inplace_many(_axpy, targets, [(t, h) for t in targets], (1.0,))
    for t, b in zip(targets, before):
        np.testing.assert_allclose(t.numpy(), b * 0.5 - 2.0 * b, rtol=1e-6)


def test_writes_that_do_not_qualify_run_one_at_a_time_with_the_same_values(monkeypatch):
    runs = _counting_programs(monkeypatch)
    h = _on_device(np.array([2.0, 1.0]))
    base = _on_device(np.arange(12, dtype=np.float32).reshape(3, 4))
    cases = [
        # two views of one storage
        lambda: ([base[0], base[1]], [(base[2], h), (base[2], h)]),
        # a transposed (not contiguous) target
        lambda: ([base.T, ak.ones(2)], [(ak.ones((4, 3)), h), (ak.ones(2), h)]),
        # a target another write reads
        lambda: ([base, ak.ones((3, 4))], [(ak.ones((3, 4)), h), (base, h)]),
        # a NumPy scalar operand
        lambda: ([ak.ones(3), ak.ones(2)], [(np.float32(1.5), h), (np.float32(2.5), h)]),
    ]
    start = base.numpy().copy()
    for make in cases:
        base.copy_(_on_device(start))
        targets, operands = make()
        for t, ops in zip(targets, operands):  # in order, one at a time
            apply_inplace(_axpy, t, ops, (1.0,))
        expected = [t.numpy().copy() for t in targets]
        base.copy_(_on_device(start))
        targets, operands = make()
        foreach.apply_inplace_many(_axpy, targets, operands, (1.0,))
        for t, e in zip(targets, expected):
            np.testing.assert_array_equal(t.numpy(), e)
    assert runs == []


def test_nothing_is_batched_while_autograd_records():
    a = ak.ones(3)
    b = ak.ones(4)
    x = ak.ones(3, requires_grad=True)
    y = ak.ones(4, requires_grad=True)
    h = ak.asarray(np.array([1.0, 1.0]))
    foreach.apply_inplace_many(_axpy, [a, b], [(x, h), (y, h)], (1.0,))
    (a.sum() + b.sum()).backward()  # recorded one write at a time
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))
    np.testing.assert_array_equal(y.grad.numpy(), np.ones(4))


OPTIMIZERS = [
    (SGD, torch.optim.SGD, dict(lr=0.1)),
    (SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    (SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    (SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    (Adam, torch.optim.Adam, dict(lr=0.01)),
    (Adam, torch.optim.Adam, dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    (AdamW, torch.optim.AdamW, dict(lr=0.01, weight_decay=0.1)),
    (optim.RMSprop, torch.optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1)),
    (optim.Adagrad, torch.optim.Adagrad, dict(lr=0.1, weight_decay=0.1)),
    (optim.Adamax, torch.optim.Adamax, dict(lr=0.1, weight_decay=0.1)),
    (optim.NAdam, torch.optim.NAdam, dict(lr=0.1, weight_decay=0.1)),
    (optim.RAdam, torch.optim.RAdam, dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True)),
    (optim.ASGD, torch.optim.ASGD, dict(lr=0.1, t0=2, weight_decay=0.1)),
    (optim.Rprop, torch.optim.Rprop, dict(lr=0.05)),
]


def _steps(make, kwargs, batched, monkeypatch, steps=4, seed=0):
    monkeypatch.setattr(make, "_batched", batched)
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(steps)]
    params = [nn.Parameter(_on_device(a)) for a in init]
    opt = make(params, **kwargs)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = _on_device(g)
        opt.step()
    return params, opt, init, grads


@pytest.mark.parametrize("make, make_torch, kwargs", OPTIMIZERS)
def test_batched_optimizer_steps_equal_one_write_each_and_torch(monkeypatch, make, make_torch, kwargs):
    runs = _counting_programs(monkeypatch)
    batched, opt, init, grads = _steps(make, kwargs, True, monkeypatch)
    if make is not optim.RMSprop:  # its kernels take each parameter's slot sizes: one write each
        assert runs and all(n == len(SHAPES) for n in runs)
    single, single_opt, _, _ = _steps(make, kwargs, False, monkeypatch)
    for a, b in zip(batched, single):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for p, q in zip(batched, single):
        for name, value in opt.state[p].items():
            np.testing.assert_array_equal(value.numpy(), single_opt.state[q][name].numpy())
    tparams = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    topt = make_torch(tparams, **kwargs)
    for step in grads:
        for p, g in zip(tparams, step):
            p.grad = torch.tensor(g)
        topt.step()
    for ours, theirs in zip(batched, tparams):
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_parameters_sharing_a_storage_are_updated_one_after_another(monkeypatch):
    runs = _counting_programs(monkeypatch)

    def run(batched):
        monkeypatch.setattr(SGD, "_batched", batched)
        base = _on_device(np.linspace(-1, 1, 12, dtype=np.float32))
        first, second = nn.Parameter(base[:8]), nn.Parameter(base[4:])  # overlapping views
        opt = SGD([first, second], lr=0.1, momentum=0.9, weight_decay=0.5)
        for k in range(3):
            first.grad = ak.ones(8) * (k + 1)
            second.grad = ak.ones(8) * -(k + 2)
            opt.step()
        return first.numpy().copy(), second.numpy().copy()

    for a, b in zip(run(True), run(False)):
        np.testing.assert_array_equal(a, b)
    assert runs == []


def test_a_batched_step_under_arraykit_jit_equals_the_eager_one(monkeypatch):
    def run(jitted):
        params = [nn.Parameter(t) for t in _tensors(5)]
        opt = Adam(params, lr=0.05)

        def step(gs):
            for p, g in zip(params, gs):
                p.grad = g
            opt.step()

        fn = ak.jit(step) if jitted else step
        for k in range(3):
            fn([ak.asarray(np.full(s, k + 1.0, np.float32)) for s in SHAPES])
        return [p.numpy().copy() for p in params]

    for a, b in zip(run(True), run(False)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_foreach_false_writes_one_parameter_at_a_time(monkeypatch):
    runs = _counting_programs(monkeypatch)
    params = [nn.Parameter(t) for t in _tensors(6)]
    opt = SGD(params, lr=0.1, momentum=0.9, foreach=False)
    for p in params:
        p.grad = ak.ones_like(p)
    opt.step()
    assert runs == []
    SGD(params, lr=0.1, momentum=0.9).step()
    assert runs == [len(SHAPES), len(SHAPES)]


def test_a_batched_step_keeps_exported_buffers(monkeypatch):
    runs = _counting_programs(monkeypatch)
    params = [nn.Parameter(_on_device(np.arange(n, dtype=np.float32))) for n in (3, 4)]
    opt = SGD(params, lr=0.1)
    for p in params:
        p.grad = ak.ones(p.shape)
    leaf = jax.tree.leaves(params[0])[0]  # an export: the values of the moment it was taken
    opt.step()
    assert runs == [2]
    assert not leaf.is_deleted()
    np.testing.assert_array_equal(np.asarray(leaf), [0.0, 1.0, 2.0])
    np.testing.assert_allclose(params[0].numpy(), [-0.1, 0.9, 1.9], rtol=1e-6)


def test_an_operand_viewing_its_target_in_another_shape_is_read_as_that_view(monkeypatch):
    runs = _counting_programs(monkeypatch)

    def add_row_sums(cur, x):
        return cur + jnp.cumsum(x, -1).reshape(cur.shape)

    targets = [_on_device(np.arange(12, dtype=np.float32)) for _ in range(2)]
    expected = [t.clone() for t in targets]
    for t in expected:
        apply_inplace(add_row_sums, t, (t.view(3, 4),))
    foreach.apply_inplace_many(add_row_sums, targets, [(t.view(3, 4),) for t in targets])
    for t, e in zip(targets, expected):
        np.testing.assert_array_equal(t.numpy(), e.numpy())
    assert runs == []


def test_one_optimizer_stepped_from_two_threads_loses_no_update():
    params = [nn.Parameter(_on_device(np.zeros(n, np.float32))) for n in range(1, 9)]
    opt = SGD(params, lr=1.0)
    for p in params:
        p.grad = ak.ones(p.shape)
    opt.step()
    errors = []

    def steps():
        try:
            for _ in range(200):
                opt.step()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=steps) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for p in params:
        np.testing.assert_array_equal(p.numpy(), np.full(p.shape, -401.0, np.float32))


@pytest.mark.parametrize("make, kwargs", [(SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
                                          (Adam, dict(lr=0.01, amsgrad=True, weight_decay=0.1))])
def test_small_and_large_parameters_get_the_values_of_one_write_each(monkeypatch, make, kwargs):
    # a write of more than SMALL_KERNEL_ELEMENTS compiles with other CPU options than a
    # small one (and XLA contracts multiply-adds differently there): each size keeps its own
    runs = _counting_programs(monkeypatch)
    shapes = [(80, 70), (5,), (3, 4), (100, 50)]

    def run(batched):
        monkeypatch.setattr(make, "_batched", batched)
        rng = np.random.default_rng(7)
        params = [nn.Parameter(_on_device(rng.standard_normal(s).astype(np.float32))) for s in shapes]
        opt = make(params, **kwargs)
        for _ in range(3):
            for p in params:
                p.grad = _on_device(rng.standard_normal(p.shape).astype(np.float32))
            opt.step()
        return [p.numpy().copy() for p in params]

    for a, b in zip(run(True), run(False)):
        np.testing.assert_array_equal(a, b)
    assert runs and sorted(set(runs)) == [2]


@pytest.mark.parametrize("make, make_torch, kwargs", OPTIMIZERS + [
    (optim.Adadelta, torch.optim.Adadelta, dict(lr=0.5, weight_decay=0.1))])
def test_a_gradient_that_is_another_parameter_gives_the_values_of_one_write_each(
        monkeypatch, make, make_torch, kwargs):
    def run(batched):
        monkeypatch.setattr(make, "_batched", batched)
        rng = np.random.default_rng(11)
        params = [nn.Parameter(_on_device(rng.standard_normal(5).astype(np.float32)))
                  for _ in range(3)]
        opt = make(params, **kwargs)
        for _ in range(3):
            params[0].grad = _on_device(rng.standard_normal(5).astype(np.float32))
            params[1].grad = params[0].detach()  # read by one write, written by another
            params[2].grad = _on_device(rng.standard_normal(5).astype(np.float32))
            opt.step()
        return [p.numpy().copy() for p in params]

    for a, b in zip(run(True), run(False)):
        np.testing.assert_array_equal(a, b)


def test_with_the_persistent_cache_a_batched_program_is_stored_and_loaded_by_name(monkeypatch,
                                                                                   tmp_path):
    from arraykit.kernels import compilation_cache

    previous = compilation_cache.get_compilation_cache_dir()
    compilation_cache.set_compilation_cache_dir(tmp_path)
    try:
        def step():
            monkeypatch.setattr(foreach, "_PROGRAMS", {})  # as a new process starts
            params = [nn.Parameter(_on_device(np.full(s, 1.0, np.float32))) for s in [(7, 3), (3,)]]
            opt = SGD(params, lr=0.5)
            for p in params:
                p.grad = ak.ones(p.shape)
            opt.step()
            return [p.numpy().copy() for p in params]

        before = compilation_cache.compilation_cache_info()
        first = step()
        written = compilation_cache.compilation_cache_info()
        assert written["writes"] > before["writes"]
        second = step()
        loaded = compilation_cache.compilation_cache_info()
        assert loaded["hits"] > written["hits"] and loaded["misses"] == written["misses"]
        for a, b in zip(first, second):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, np.full(a.shape, 0.5, np.float32))
    finally:
        compilation_cache.set_compilation_cache_dir(previous)
