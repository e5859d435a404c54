"""Gradients through random chains of views and in-place writes.

A non-leaf base ``b`` (a product of the leaf ``a``, possibly a transposed view of
it) is read and written through random views; the loss sums the final base, some
final views and reads taken between the writes. ``a.grad`` (and the grad of a
second leaf ``e`` used as an operand) must equal ``jax.grad`` of the same program
written out of place over the flat storage (``.at[].set``).
"""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import arraykit as ak

# (arraykit view of the (4, 5) base, index map of that view into the flat storage of
# 20 elements given the base's index map, writable)
VIEWS = [
    (lambda x: x[0:2, 0:3], lambda i: i[0:2, 0:3], True),
    (lambda x: x[1:3, 2:5], lambda i: i[1:3, 2:5], True),
    (lambda x: x[::2, ::2], lambda i: i[::2, ::2], True),
    (lambda x: x[3:1:-1, 4:1:-1], lambda i: i[3:1:-1, 4:1:-1], True),
    (lambda x: x[1:4, 0:2].T, lambda i: i[1:4, 0:2].T, True),
    (lambda x: x.flip(0)[::3, 1:4], lambda i: i[::-1][::3, 1:4], True),
    (lambda x: x[1:3].mT.mT[:, ::-1][:, 0:3], lambda i: i[1:3, ::-1][:, 0:3], True),
    (lambda x: x.as_strided((2, 3), (1, 2), 5), lambda i: 5 + np.arange(2)[:, None] + 2 * np.arange(3), True),
    (lambda x: x[1].unfold(0, 3, 2), lambda i: np.stack([i[1, 0:3], i[1, 2:5]]), False),
    (lambda x: x[2, 1:4].expand(2, 3), lambda i: np.broadcast_to(i[2, 1:4], (2, 3)), False),
]
WRITABLE = [k for k, v in enumerate(VIEWS) if v[2]]
E, K = len(VIEWS), len(VIEWS) + 1  # operand indices of the second leaf and of a constant

OPS = ["add", "sub_alpha", "copy", "setrow", "fill", "mul_scalar", "mul_const", "add_sin_clone",
       "iadd"]
LAST_ONLY = ["mul_same"]  # keeps its operands for backward: no write may follow it

RNG = np.random.default_rng(0)
A = RNG.uniform(-1, 1, (4, 5))
E_VALUES = RNG.uniform(-1, 1, (2, 3))
CONST = RNG.uniform(0.5, 1.5, (2, 3))
W_BASE = RNG.uniform(-1, 1, (4, 5))
W_VIEW = RNG.uniform(-1, 1, (2, 3))


def step_strategy(ops):
    return st.tuples(st.sampled_from(ops), st.sampled_from(WRITABLE),
                     st.integers(0, len(VIEWS) + 1), st.none() | st.integers(0, len(VIEWS) - 1))


chains = st.tuples(
    st.booleans(),
    st.lists(step_strategy(OPS), min_size=1, max_size=5),
    st.lists(step_strategy(LAST_ONLY), max_size=1),
    st.lists(st.integers(0, len(VIEWS) - 1), max_size=2),
)


def run_arraykit(transposed, steps, finals):
    a = ak.asarray(A, dtype=ak.float64).requires_grad_()
    e = ak.asarray(E_VALUES, dtype=ak.float64).requires_grad_()
    const = ak.asarray(CONST, dtype=ak.float64)
    w = ak.asarray(W_VIEW, dtype=ak.float64)
    b = (a.T * 1).T if transposed else a * 1
    loss = ak.zeros((), dtype=ak.float64)

    def operand(k):
        return e if k == E else const if k == K else VIEWS[k][0](b)

    for op, target, src, read in steps:
        t = VIEWS[target][0](b)
        s = operand(src)
        if op == "add":
            t.add_(s)
        elif op == "sub_alpha":
            t.sub_(s, alpha=2)
        elif op == "copy":
            t.copy_(s)
        elif op == "setrow":
            t[1] = s[0]
        elif op == "fill":
            t[:, 0] = 0.5
        elif op == "mul_scalar":
            t.mul_(1.5)
        elif op == "mul_const":
            t.mul_(const)
        elif op == "add_sin_clone":
            t.add_(ak.sin(s.clone()))
        elif op == "iadd":
            t += s
        elif op == "mul_same":
            t.mul_(s)
        if read is not None:
            loss = loss + (VIEWS[read][0](b) * w).sum()
    loss = loss + (ak.sin(b) * ak.asarray(W_BASE, dtype=ak.float64)).sum()
    for k in finals:
        loss = loss + (VIEWS[k][0](b) ** 2 * w).sum()
    loss.backward()
    return np.asarray(a.grad), None if e.grad is None else np.asarray(e.grad)


def run_jax(transposed, steps, finals):
    base_idx = np.arange(20).reshape(5, 4).T if transposed else np.arange(20).reshape(4, 5)
    idx = [v[1](base_idx) for v in VIEWS]

    def program(a, e):
        flat = (a.T * 1).reshape(-1) if transposed else (a * 1).reshape(-1)
        loss = 0.0

        def operand(k):
            return e if k == E else CONST if k == K else flat[idx[k]]

        for op, target, src, read in steps:
            ti = idx[target]
            t = flat[ti]
            s = operand(src)
            if op in ("add", "iadd"):
                flat = flat.at[ti].set(t + s)
            elif op == "sub_alpha":
                flat = flat.at[ti].set(t - 2 * s)
            elif op == "copy":
                flat = flat.at[ti].set(jnp.broadcast_to(s, t.shape))
            elif op == "setrow":
                flat = flat.at[ti[1]].set(s[0])
            elif op == "fill":
                flat = flat.at[ti[:, 0]].set(0.5)
            elif op == "mul_scalar":
                flat = flat.at[ti].set(t * 1.5)
            elif op == "mul_const":
                flat = flat.at[ti].set(t * CONST)
            elif op == "add_sin_clone":
                flat = flat.at[ti].set(t + jnp.sin(s))
            elif op == "mul_same":
                flat = flat.at[ti].set(t * s)
            if read is not None:
                loss = loss + jnp.sum(flat[idx[read]] * W_VIEW)
        loss = loss + jnp.sum(jnp.sin(flat[base_idx]) * W_BASE)
        for k in finals:
            loss = loss + jnp.sum(flat[idx[k]] ** 2 * W_VIEW)
        return loss

    with jax.enable_x64(True):
        ga, ge = jax.grad(program, argnums=(0, 1))(jnp.asarray(A), jnp.asarray(E_VALUES))
        return np.asarray(ga), np.asarray(ge)


@settings(max_examples=25, deadline=None)
@given(chains)
def test_chain_of_views_and_inplace_writes(chain):
    transposed, steps, last, finals = chain
    steps = steps + last
    ga, ge = run_arraykit(transposed, steps, finals)
    ja, je = run_jax(transposed, steps, finals)
    np.testing.assert_allclose(ga, ja, rtol=1e-10, atol=1e-12)
    if ge is None:
        np.testing.assert_array_equal(je, 0)  # e unused, or its contribution overwritten
    else:
        np.testing.assert_allclose(ge, je, rtol=1e-10, atol=1e-12)
