"""arraykit.jit packs the small gradients a step makes into one storage
(arraykit.jit_gradients): values, aliasing and the holders it must leave alone,
against the same steps run eagerly."""

from __future__ import annotations

import numpy as np
import pytest

import arraykit as ak

DATA = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
LABELS = np.array([0, 1, 1, 0, 1])


def _model(device=None, hidden=4):
    ak.manual_seed(0)
    return ak.nn.Sequential(ak.nn.Linear(3, hidden, device=device), ak.nn.ReLU(),
                            ak.nn.Linear(hidden, 2, device=device))


def _steps(jitted, n=4, set_to_none=True, device=None, hidden=4, extra=None):
    """Losses and each step's gradients (NumPy copies) of ``n`` SGD-momentum steps;
    ``extra(model)`` runs inside the step after ``backward`` and its value is returned
    beside the loss. Returns (losses, gradients per step, model, step function)."""
    model = _model(device, hidden)
    opt = ak.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = ak.asarray(DATA, device=device)
    y = ak.asarray(LABELS, device=device)

    def step(a, b):
        opt.zero_grad(set_to_none=set_to_none)
        loss = ak.nn.functional.cross_entropy(model(a), b)
        loss.backward()
        out = extra(model) if extra is not None else None
        opt.step()
        return loss, out

    fn = ak.jit(step) if jitted else step
    losses, grads, outs = [], [], []
    for _ in range(n):
        loss, out = fn(x, y)
        losses.append(loss.item())
        outs.append(out.numpy().copy() if isinstance(out, ak.Tensor) else out)
        grads.append([p.grad.numpy().copy() for p in model.parameters()])
    return losses, grads, model, fn, outs


def _storages(model):
    return {id(p.grad.untyped_storage()) for p in model.parameters()}


def _assert_same_steps(jitted, eager):
    np.testing.assert_allclose(jitted[0], eager[0], rtol=1e-5)
    for got, want in zip(jitted[1], eager[1]):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)


def test_small_gradients_share_one_storage_and_keep_their_values():
    eager = _steps(False)
    jitted = _steps(True)
    _assert_same_steps(jitted, eager)
    model, fn = jitted[2], jitted[3]
    assert fn.compile_count == 1
    grads = [p.grad for p in model.parameters()]
    assert len(_storages(model)) == 1
    spans = sorted((g.storage_offset(), g.storage_offset() + g.numel()) for g in grads)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))  # disjoint
    assert len({g.data_ptr() for g in grads}) == len(grads)
    assert all(g.is_contiguous() and g.shape == p.shape
               for g, p in zip(grads, model.parameters()))
    # an eager write into one gradient leaves the others as they are
    grads[0].mul_(2.0)
    np.testing.assert_allclose(grads[0].numpy(), 2 * eager[1][-1][0], rtol=1e-5)
    for g, w in zip(grads[1:], eager[1][-1][1:]):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-7)


def test_gradients_kept_by_zero_grad_accumulate_in_the_packed_storage():
    eager = _steps(False, set_to_none=False)
    jitted = _steps(True, set_to_none=False)
    _assert_same_steps(jitted, eager)
    assert len(_storages(jitted[2])) == 1


def test_a_gradient_storage_held_elsewhere_stays_its_own():
    held = []
    eager = _steps(False)
    jitted = _steps(True, extra=lambda m: held.append(m[0].weight.grad.untyped_storage()))
    _assert_same_steps(jitted, eager)
    model = jitted[2]
    assert model[0].weight.grad.untyped_storage() is held[-1]
    others = [p for p in model.parameters() if p is not model[0].weight]
    assert len({id(p.grad.untyped_storage()) for p in others}) == 1
    assert id(held[-1]) not in {id(p.grad.untyped_storage()) for p in others}


def test_a_returned_gradient_stays_its_own_and_views_follow_the_bucket():
    views = []

    def extra(m):
        views.append(m[2].weight.grad[0])  # a view of a gradient, made and kept
        return m[0].bias.grad

    eager = _steps(False, extra=extra)
    jitted = _steps(True, extra=extra)
    _assert_same_steps(jitted, eager)
    model, returned = jitted[2], jitted[4]
    for got, want in zip(returned, eager[4]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    assert model[0].bias.grad.untyped_storage() is not model[2].weight.grad.untyped_storage()
    view = views[-1]
    assert view.untyped_storage() is model[2].weight.grad.untyped_storage()
    np.testing.assert_array_equal(view.numpy(), model[2].weight.grad.numpy()[0])


def test_large_gradients_on_the_cpu_are_not_packed():
    # 2100 wide: the weights' gradients (2100*3 and 2*2100 float32) are over 16 KiB,
    # the biases' under it
    eager = _steps(False, device="cpu", hidden=2100)
    jitted = _steps(True, device="cpu", hidden=2100)
    _assert_same_steps(jitted, eager)
    model = jitted[2]
    assert model[0].weight.grad.untyped_storage() is not model[2].weight.grad.untyped_storage()
    assert model[0].bias.grad.untyped_storage() is model[2].bias.grad.untyped_storage()
    assert model[0].weight.grad.storage_offset() == 0


def _pair():
    """An MLP, its eager twin, and an SGD optimizer for each."""
    model = _model()
    twin = _model()
    return (model, ak.optim.SGD(model.parameters(), lr=0.1),
            twin, ak.optim.SGD(twin.parameters(), lr=0.1))


def _step(model, opt, x, y, set_to_none=True):
    opt.zero_grad(set_to_none=set_to_none)
    loss = ak.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def _assert_same_model(model, twin):
    # read with tolist(): .numpy() would move the storages into NumPy memory
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.tolist(), q.tolist(), rtol=1e-5, atol=1e-7)
        if q.grad is None:
            assert p.grad is None
        else:
            np.testing.assert_allclose(p.grad.tolist(), q.grad.tolist(), rtol=1e-5, atol=1e-7)


def test_a_gradient_the_caller_drops_or_replaces_is_made_again():
    """``.grad = None`` (or another tensor) between calls: the next call traces again
    and every ``.grad`` is that call's, though the others keep the bucket alive."""
    model, opt, twin, twin_opt = _pair()
    x, y = ak.asarray(DATA), ak.asarray(LABELS)
    step = ak.jit(_step)
    for k in range(5):
        step(model, opt, x, y)
        _step(twin, twin_opt, x, y)
        _assert_same_model(model, twin)
        replacement = None if k % 2 else ak.zeros(2)
        model[2].bias.grad = replacement
        twin[2].bias.grad = None if replacement is None else ak.zeros(2)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_a_frozen_parameter_is_not_trained_by_a_compiled_step(set_to_none):
    """Also when the step zeroes the packed gradients in place: its program, which
    writes the bucket rather than making one, is dropped with the frozen leaf."""
    model, opt, twin, twin_opt = _pair()
    x, y = ak.asarray(DATA), ak.asarray(LABELS)
    step = ak.jit(_step)
    for k in range(6):
        if k == 3:
            for m in (model, twin):
                m[0].weight.requires_grad_(False)
        step(model, opt, x, y, set_to_none)
        _step(twin, twin_opt, x, y, set_to_none)
    _assert_same_model(model, twin)


def test_gradients_a_step_assigns_itself_are_watched_too():
    """``p.grad = g`` inside the step (from ``ak.autograd.grad``), the caller keeping
    the gradients and setting one to None between calls: every call's ``.grad`` is
    that call's."""
    model, opt, twin, twin_opt = _pair()
    x, y = ak.asarray(DATA), ak.asarray(LABELS)

    def step(m, o, a, b):
        params = list(m.parameters())
        grads = ak.autograd.grad(ak.nn.functional.cross_entropy(m(a), b), params)
        for p, g in zip(params, grads):
            p.grad = g
        o.step()

    jitted = ak.jit(step)
    held = []  # the caller keeps the gradients (a log): their storages stay alive
    for _ in range(4):
        jitted(model, opt, x, y)
        step(twin, twin_opt, x, y)
        _assert_same_model(model, twin)
        held.append([p.grad for p in model.parameters()])
        for m in (model, twin):
            m[0].bias.grad = None


def test_a_compiled_update_that_drops_the_gradients_it_reads():
    """``opt.step(); opt.zero_grad()`` over gradients an eager backward made: the first
    call reads them though the traced code let them go (it used to find its inputs
    gone and fail)."""
    model, opt, twin, twin_opt = _pair()
    x, y = ak.asarray(DATA), ak.asarray(LABELS)

    def update(o):
        o.step()
        o.zero_grad()

    jitted = ak.jit(update)
    for _ in range(3):
        for m, o, run in ((model, opt, jitted), (twin, twin_opt, update)):
            ak.nn.functional.cross_entropy(m(x), y).backward()
            run(o)
        _assert_same_model(model, twin)


def test_two_compiled_steps_over_one_model_while_the_caller_keeps_a_gradient():
    """Each step's trace sets ``.grad`` anew, so the other's program, whose bucket a
    kept gradient holds alive, is not run into stale storages."""
    model, opt, twin, twin_opt = _pair()
    x, y = ak.asarray(DATA), ak.asarray(LABELS)

    def clipped(m, o, a, b):
        o.zero_grad()
        ak.nn.functional.cross_entropy(m(a), b).backward()
        ak.nn.utils.clip_grad_norm_(m.parameters(), 0.05)
        o.step()

    steps = [(ak.jit(_step), _step), (ak.jit(clipped), clipped)]
    log = []
    for k in range(6):
        jitted, eager = steps[k % 2]
        jitted(model, opt, x, y)
        eager(twin, twin_opt, x, y)
        log.append(model[2].bias.grad)
        _assert_same_model(model, twin)


def test_one_compiled_step_for_two_models_does_not_trace_every_call():
    x, y = ak.asarray(DATA), ak.asarray(LABELS)
    pairs = [_pair(), _pair()]
    step = ak.jit(_step)
    for k in range(10):
        model, opt, twin, twin_opt = pairs[k % 2]
        step(model, opt, x, y)
        _step(twin, twin_opt, x, y)
        _assert_same_model(model, twin)
    assert step.trace_count == 4 and step.compile_count == 1


def test_a_dropped_model_frees_its_packed_gradients():
    import gc
    import weakref

    model, opt, _, _ = _pair()
    x, y = ak.asarray(DATA), ak.asarray(LABELS)
    step = ak.jit(_step)
    for _ in range(3):
        step(model, opt, x, y)
    bucket = weakref.ref(model[0].weight.grad.untyped_storage())
    del model, opt, step
    gc.collect()
    assert bucket() is None
