"""Structural jaxpr equality (arraykit.core.jaxpr_equality) and its use by jit: a
second trace that gives the first program is not lowered again, one that differs is."""

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arraykit as ak
import arraykit.jit  # noqa: F401 (the module, reached through sys.modules)
from arraykit.core.jaxpr_equality import same_jaxpr


def _jaxpr(fn, *args):
    return jax.make_jaxpr(fn)(*args).jaxpr


X = np.ones(3, np.float32)


def test_same_function_traced_twice_is_same():
    def f(x):
        return jnp.sin(x) * 2.0 + jnp.sum(x)

    assert same_jaxpr(_jaxpr(f, X), _jaxpr(f, X))


def test_nested_jit_traced_twice_is_same():
    inner = jax.jit(lambda x: jnp.exp(x) - 1.0)

    def f(x):
        return inner(x) + inner(x * 3.0)

    assert same_jaxpr(_jaxpr(f, X), _jaxpr(f, X))


@pytest.mark.parametrize("g", [
    lambda x: jnp.sin(x) * 2.0,   # another constant
    lambda x: jnp.cos(x) * 3.0,   # another primitive
    lambda x: jnp.sin(x) * -0.0 + 3.0,  # a literal's sign bit
    lambda x: x * 3.0 + jnp.sin(x),  # another data flow
])
def test_different_programs_differ(g):
    def ref(x):
        return jnp.sin(x) * 3.0

    assert not same_jaxpr(_jaxpr(ref, X), _jaxpr(g, X))


def test_operand_order_matters():
    assert not same_jaxpr(_jaxpr(lambda x, y: x - y, X, X), _jaxpr(lambda x, y: y - x, X, X))


def test_input_types_matter():
    f = lambda x: x + 1  # noqa: E731
    assert not same_jaxpr(_jaxpr(f, X), _jaxpr(f, X.astype(np.float16)))
    assert not same_jaxpr(_jaxpr(f, X), _jaxpr(f, np.ones(4, np.float32)))


def test_nested_jaxprs_compared():
    def f(flag):
        return lambda x: jax.lax.cond(x[0] > 0, lambda y: y * 2.0, lambda y: y * flag, x)

    assert same_jaxpr(_jaxpr(f(3.0), X), _jaxpr(f(3.0), X))
    assert not same_jaxpr(_jaxpr(f(3.0), X), _jaxpr(f(4.0), X))


def test_training_step_second_trace_not_lowered_again(monkeypatch):
    """The second call of a training step traces again and reuses the first
    executable without lowering; its results equal eager steps'."""
    lowered = []

    def run(jitted_step):
        ak.manual_seed(0)
        model = ak.nn.Sequential(ak.nn.Linear(4, 8, device="cpu"), ak.nn.ReLU(),
                                 ak.nn.Linear(8, 3, device="cpu"))
        opt = ak.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(a, b):
            opt.zero_grad()
            loss = ak.nn.functional.cross_entropy(model(a), b)
            loss.backward()
            opt.step()
            return loss

        fn = ak.jit(step) if jitted_step else step
        x = ak.asarray(np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4), device="cpu")
        y = ak.asarray(np.array([0, 1, 2, 1, 0]), device="cpu")
        losses = [float(fn(x, y)) for _ in range(4)]
        return losses, [np.asarray(p.detach()) for p in model.parameters()], fn

    jit_module = sys.modules["arraykit.jit"]
    real_get = jit_module._RecentPrograms.get

    def counting_get(self, *args):
        lowered.append(1)
        return real_get(self, *args)

    monkeypatch.setattr(jit_module._RecentPrograms, "get", counting_get)
    losses, params, fn = run(True)
    eager_losses, eager_params, _ = run(False)
    assert fn.trace_count == 2 and fn.compile_count == 1
    assert len(lowered) == 1, "the second trace was lowered again"
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5)
    for p, q in zip(params, eager_params):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)


def test_second_trace_with_another_program_is_compiled():
    """A first call that takes another path than later ones (state made on the first
    call, read differently afterwards) gets its own program for the later calls."""
    state = {}

    def step(x):
        if "acc" not in state:
            state["acc"] = x * 2.0          # first call: made
        else:
            state["acc"].mul_(3.0).add_(x)  # later calls: another formula
        return state["acc"].sum()

    fn = ak.jit(step)
    x = ak.ones(3, device="cpu")
    got = [float(fn(x)) for _ in range(3)]
    assert got == [6.0, 21.0, 66.0]
    assert fn.trace_count == 2 and fn.compile_count == 2


def test_equations_traced_in_another_context_differ():
    """``jax.threefry_partitionable`` changes how ``random_bits`` lowers (the equation's
    context, not its parameters): a second signature traced under the other setting
    must not reuse the first executable."""

    def body(x, partitionable):
        with jax.threefry_partitionable(partitionable):
            bits = jax.random.uniform(jax.random.key(0), (8,))
        return x + 1, bits

    f = ak.jit(body, static_argnums=1)
    x = ak.zeros(3, device="cpu")
    _, first = f(x, False)
    _, got = f(x, True)
    _, want = ak.jit(body, static_argnums=1)(x, True)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert not np.array_equal(np.asarray(got), np.asarray(first))  # the two settings differ
