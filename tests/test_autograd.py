"""Eager autograd: gradients against ``jax.grad`` of the same pure JAX computation
(float64), PyTorch's rules and worked examples against torch, and the errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import autograd

RNG = np.random.default_rng(0)


def rand(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape)


def leaf(values):
    return ak.asarray(values, dtype=ak.float64).requires_grad_()


def jax_grads(fn, arrays, weights):
    """Gradients of sum(fn(*arrays) * weights) by jax.grad, in float64."""
    with jax.enable_x64(True):
        loss = lambda *xs: jnp.sum(jnp.asarray(fn(*xs)) * weights)  # noqa: E731
        xs = [jnp.asarray(a, jnp.float64) for a in arrays]
        return [np.asarray(g) for g in jax.grad(loss, argnums=tuple(range(len(xs))))(*xs)]


def check(ak_fn, jax_fn, *arrays, rtol=1e-9, atol=1e-12):
    """``ak_fn`` on float64 leaves: its gradients equal jax.grad of ``jax_fn``."""
    leaves = [leaf(a) for a in arrays]
    out = ak_fn(*leaves)
    weights = rand(*out.shape)
    (out * ak.asarray(weights, dtype=ak.float64)).sum().backward()
    expected = jax_grads(jax_fn, arrays, weights)
    for x, g in zip(leaves, expected):
        assert x.grad is not None
        assert x.grad.shape == x.shape
        np.testing.assert_allclose(np.asarray(x.grad), g, rtol=rtol, atol=atol)


def central_differences(fn, x, eps=1e-6):
    """d sum(fn(x)) / dx by central finite differences (x a NumPy float64 array)."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        grad[i] = (fn(hi) - fn(lo)) / (2 * eps)
    return grad


# ------------------------------------------------------------------ namespace functions

POSITIVE = rand(2, 3, low=0.5, high=2.0)
ANY = rand(2, 3)

UNARY = [
    ("exp", ANY), ("log", POSITIVE), ("sin", ANY), ("cos", ANY), ("tanh", ANY),
    ("sqrt", POSITIVE), ("abs", ANY), ("negative", ANY), ("square", ANY), ("log1p", POSITIVE),
    ("expm1", ANY), ("sinh", ANY), ("atan", ANY), ("asinh", ANY), ("log2", POSITIVE),
    ("reciprocal", POSITIVE),
]


@pytest.mark.parametrize("name,values", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, values):
    jfn = getattr(jnp, name)
    check(getattr(ak, name), jfn, values)


BINARY = ["add", "subtract", "multiply", "divide", "pow", "maximum", "minimum", "atan2", "hypot",
          "logaddexp"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_broadcasting(name):
    a = rand(2, 3, low=0.5, high=2.0)
    b = rand(3, low=0.5, high=2.0) + np.array([0.0, 3.0, -3.0])  # no ties with a
    check(getattr(ak, name), getattr(jnp, name), a, b)


def test_where_and_clip():
    a, b = rand(2, 3), rand(2, 3)
    check(lambda x, y: ak.where(x > y, x * y, ak.exp(y)),
          lambda x, y: jnp.where(x > y, x * y, jnp.exp(y)), a, b)
    check(lambda x: ak.clip(x, -0.5, 0.7), lambda x: jnp.clip(x, -0.5, 0.7), a)


def test_operators_with_python_scalars():
    check(lambda x: (2.0 - x) * 3 / (x ** 2 + 1) + x ** 0.5 * 0 - (-x) % 1.5,
          lambda x: (2.0 - x) * 3 / (x ** 2 + 1) - (-x) % 1.5, POSITIVE)


REDUCTIONS = [
    ("sum", {}), ("sum", {"axis": 1}), ("sum", {"axis": (0, 2), "keepdims": True}),
    ("mean", {"axis": 0}), ("mean", {"axis": -1, "keepdims": True}), ("prod", {"axis": 1}),
    ("prod", {}), ("max", {"axis": 1}), ("min", {"axis": (0, 1), "keepdims": True}),
    ("max", {}), ("var", {"axis": 1}), ("var", {"correction": 1, "keepdims": True}),
    ("std", {"axis": 0, "correction": 1}), ("std", {}),
]


@pytest.mark.parametrize("name,kwargs", REDUCTIONS, ids=[f"{n}-{k}" for n, k in REDUCTIONS])
def test_reductions(name, kwargs):
    values = rand(2, 3, 4, low=0.5, high=1.5)
    jkwargs = dict(kwargs)
    if "correction" in jkwargs:
        jkwargs["ddof"] = jkwargs.pop("correction")
    check(lambda x: getattr(ak, name)(x, **kwargs), lambda x: getattr(jnp, name)(x, **jkwargs),
          values)


def test_cumulative_sum_and_sort():
    values = rand(3, 4)
    check(lambda x: ak.cumulative_sum(x, axis=1), lambda x: jnp.cumsum(x, axis=1), values)
    check(lambda x: ak.sort(x, axis=0), lambda x: jnp.sort(x, axis=0), values)
    check(lambda x: ak.sort(x, axis=-1, descending=True), lambda x: -jnp.sort(-x, axis=-1), values)


def test_linear_algebra():
    a = rand(3, 4)
    b = rand(4, 2)
    check(ak.matmul, jnp.matmul, a, b)
    check(lambda x, y: x @ y, jnp.matmul, rand(2, 3, 4), rand(4,))
    check(lambda x, y: ak.tensordot(x, y, axes=([1, 0], [0, 1])),
          lambda x, y: jnp.tensordot(x, y, axes=([1, 0], [0, 1])), rand(3, 2, 4), rand(2, 3))
    check(lambda x, y: ak.vecdot(x, y), lambda x, y: jnp.sum(x * y, axis=-1), a, rand(3, 4))
    m = rand(3, 3) + 4 * np.eye(3)
    spd = m @ m.T
    check(ak.linalg.inv, jnp.linalg.inv, m)
    check(ak.linalg.det, jnp.linalg.det, m)
    check(ak.linalg.solve, jnp.linalg.solve, m, rand(3, 2))
    # arraykit's cholesky reads only the lower triangle (as NumPy)
    check(ak.linalg.cholesky, lambda x: jnp.linalg.cholesky(jnp.tril(x) + jnp.tril(x, -1).T),
          spd, rtol=1e-8)
    check(lambda x: ak.linalg.slogdet(x)[1], lambda x: jnp.linalg.slogdet(x)[1], m)
    check(ak.linalg.trace, jnp.trace, m)
    check(lambda x: ak.linalg.vector_norm(x, axis=1), lambda x: jnp.linalg.norm(x, axis=1), a)


def test_det_against_finite_differences():
    m = rand(3, 3) + 3 * np.eye(3)
    x = leaf(m)
    ak.linalg.det(x).backward()
    numeric = central_differences(np.linalg.det, m)
    # central differences of step 1e-6 are good to about 1e-8 absolute: an entry near
    # zero (the matrix depends on the tests run before in this worker) needs the atol
    np.testing.assert_allclose(np.asarray(x.grad), numeric, rtol=1e-6, atol=1e-7)


MANIPULATION = [
    ("reshape", lambda x: ak.reshape(x, (3, 4)), lambda x: jnp.reshape(x, (3, 4))),
    ("permute_dims", lambda x: ak.permute_dims(x, (2, 0, 1)), lambda x: jnp.transpose(x, (2, 0, 1))),
    ("concat", lambda x: ak.concat([x, x * 2], axis=1), lambda x: jnp.concatenate([x, x * 2], 1)),
    ("stack", lambda x: ak.stack([x, ak.exp(x)], axis=-1), lambda x: jnp.stack([x, jnp.exp(x)], -1)),
    ("flip", lambda x: ak.flip(x, axis=(0, 2)), lambda x: jnp.flip(x, (0, 2))),
    ("broadcast_to", lambda x: ak.broadcast_to(x[:, :1], (2, 3, 2)),
     lambda x: jnp.broadcast_to(x[:, :1], (2, 3, 2))),
    ("expand_dims", lambda x: ak.expand_dims(x, axis=1), lambda x: jnp.expand_dims(x, 1)),
    ("squeeze", lambda x: ak.squeeze(x[:, :1], axis=1), lambda x: jnp.squeeze(x[:, :1], 1)),
    ("tile", lambda x: ak.tile(x, (2, 1, 2)), lambda x: jnp.tile(x, (2, 1, 2))),
    ("repeat", lambda x: ak.repeat(x, 3, axis=1), lambda x: jnp.repeat(x, 3, axis=1)),
    ("roll", lambda x: ak.roll(x, 2, axis=2), lambda x: jnp.roll(x, 2, axis=2)),
    ("moveaxis", lambda x: ak.moveaxis(x, 0, -1), lambda x: jnp.moveaxis(x, 0, -1)),
]


@pytest.mark.parametrize("fns", MANIPULATION, ids=[m[0] for m in MANIPULATION])
def test_manipulation(fns):
    check(fns[1], fns[2], rand(2, 3, 2))


def test_indexing_integer_arrays_masks_take():
    values = rand(4, 3)
    idx = np.array([2, 0, 2, 3])
    mask = values > 0
    check(lambda x: x[ak.asarray(idx)], lambda x: x[idx], values)
    check(lambda x: x[ak.asarray(idx), 1:], lambda x: x[idx, 1:], values)
    check(lambda x: x[ak.asarray(idx[:3]), ak.asarray([0, 2, 2])],
          lambda x: x[idx[:3], np.array([0, 2, 2])], values)
    check(lambda x: x[ak.asarray(mask)], lambda x: x[mask], values)
    check(lambda x: ak.take(x, ak.asarray(idx), axis=0), lambda x: jnp.take(x, idx, axis=0), values)
    check(lambda x: x[1, 2] * x[3, 0], lambda x: x[1, 2] * x[3, 0], values)


def test_dtype_conversions_are_differentiable():
    check(lambda x: ak.astype(x, ak.float32) * 1, lambda x: x.astype(jnp.float32), POSITIVE,
          rtol=1e-6)
    check(lambda x: x.to(ak.float32).to(ak.float64) ** 2, lambda x: x ** 2, POSITIVE, rtol=1e-6)
    check(lambda x: x.clone() * x.T.contiguous().T, lambda x: x * x, ANY)


# ------------------------------------------------------------------ every kind of view

VIEWS = [
    ("step-slice", lambda x: x[::2, 1::3], lambda x: x[::2, 1::3]),
    ("negative-step", lambda x: x[::-1, ::-2], lambda x: x[::-1, ::-2]),
    ("transpose", lambda x: x.transpose(0, 1), lambda x: x.T),
    ("mT", lambda x: x.mT[1:], lambda x: x.T[1:]),
    ("expand", lambda x: x[:, :1].expand(4, 3), lambda x: jnp.broadcast_to(x[:, :1], (4, 3))),
    ("view", lambda x: x.view(2, 2, 6), lambda x: x.reshape(2, 2, 6)),
    ("reshape-copy", lambda x: x.T.reshape(-1), lambda x: x.T.reshape(-1)),
    ("unfold", lambda x: x.unfold(1, 4, 2), lambda x: jnp.stack([x[:, 0:4], x[:, 2:6]], axis=1)),
    ("as_strided-overlapping", lambda x: x.as_strided((5, 3), (2, 1), 1),
     lambda x: jnp.stack([x.reshape(-1)[1 + 2 * i: 4 + 2 * i] for i in range(5)])),
    ("diagonal", lambda x: x.diagonal(1), lambda x: jnp.diagonal(x, 1)),
    ("flip", lambda x: x.flip(1), lambda x: x[:, ::-1]),
    ("select-narrow", lambda x: x.select(1, 2).narrow(0, 1, 2), lambda x: x[1:3, 2]),
    ("unsqueeze-squeeze", lambda x: x[:1].unsqueeze(0).squeeze(), lambda x: x[0]),
]


@pytest.mark.parametrize("fns", VIEWS, ids=[v[0] for v in VIEWS])
def test_views_of_leaf(fns):
    # each element is used through the view and non-linearly, so overlaps must sum
    check(lambda x: fns[1](x) ** 2, lambda x: fns[2](x) ** 2, rand(4, 6))


@pytest.mark.parametrize("fns", [v for v in VIEWS if "as_strided" not in v[0]],
                         ids=[v[0] for v in VIEWS if "as_strided" not in v[0]])
def test_views_of_strided_non_leaf(fns):
    # the view is taken of a non-contiguous tensor (a transposed, stepped view of a product)
    def ak_fn(x):
        y = (x * 3)[::-1].T[:, ::2].T  # (4, 6), a non-contiguous view of a 8x6 product
        return ak.sin(fns[1](y))

    def jax_fn(x):
        y = (x * 3)[::-1].T[:, ::2].T
        return jnp.sin(fns[2](y))

    check(ak_fn, jax_fn, rand(8, 6))


def test_as_strided_of_a_non_leaf_reads_its_storage():
    check(lambda x: ak.tanh((x * 3).T.as_strided((5, 3), (2, 1), 1)),
          lambda x: jnp.tanh(jnp.stack([(x * 3).reshape(-1)[1 + 2 * i: 4 + 2 * i] for i in range(5)])),
          rand(4, 6))


def test_tensor_methods_with_pytorch_names():
    check(lambda x: x.sum(axis=1) * x.mean() + x.max(dim=0, keepdim=True).values.sum(),
          lambda x: jnp.sum(x, 1) * jnp.mean(x) + jnp.max(x, 0, keepdims=True).sum(), ANY)
    check(lambda x, y: x.transpose(0, 1) @ y, lambda x, y: x.T @ y, ANY, rand(2, 4))
    check(lambda x: x.t().flatten().cumsum(0).prod() + x.var() - x.std(),
          lambda x: jnp.prod(jnp.cumsum(x.T.reshape(-1))) + jnp.var(x, ddof=1) - jnp.std(x, ddof=1),
          POSITIVE)
    check(lambda x: x.permute(1, 0).reshape(6).view(2, 3).expand_as(ak.ones((4, 2, 3))),
          lambda x: jnp.broadcast_to(x.T.reshape(2, 3), (4, 2, 3)), ANY)


def test_multi_output_kernel():
    # eigh returns several outputs; only one of them is used
    m = rand(3, 3)
    sym = m + m.T
    check(lambda x: ak.linalg.eigh(x).eigenvalues, lambda x: jnp.linalg.eigh(x)[0], sym,
          rtol=1e-7)


# ------------------------------------------------------------------ PyTorch's rules

def both(values):
    """A float64 leaf in arraykit and the same one in torch."""
    return leaf(values), torch.tensor(values, dtype=torch.float64, requires_grad=True)


def close(a, t):
    np.testing.assert_allclose(np.asarray(a), t.detach().numpy(), rtol=1e-12)


def test_worked_examples():
    x, tx = both(2.0)
    (x ** 2).backward()
    assert float(x.grad) == 4.0
    x, tx = both(2.0)
    y = 2 * x + 3
    y.retain_grad()
    z = y ** 3
    z.backward()
    ty = 2 * tx + 3
    ty.retain_grad()
    (ty ** 3).backward()
    assert float(x.grad) == 294.0 == float(tx.grad)
    assert float(y.grad) == 147.0 == float(ty.grad)
    assert y.retains_grad and not x.retains_grad


def test_accumulation_and_reset():
    v = rand(3)
    x, tx = both(v)
    for lib_x, lib in ((x, ak), (tx, torch)):
        (lib.sin(lib_x) * 2).sum().backward()
        (lib_x * lib_x).sum().backward()
    close(x.grad, tx.grad)
    x.grad = None
    assert x.grad is None
    (x * 3).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), [3.0, 3.0, 3.0])


def test_is_leaf_and_grad_fn():
    x = leaf(rand(2, 3))
    plain = ak.ones((2, 3))
    y = x * 2
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    assert plain.is_leaf and not plain.requires_grad and plain.grad_fn is None
    assert not y.is_leaf and y.requires_grad and y.grad_fn.name() == "MultiplyBackward0"
    assert ak.exp(x).grad_fn.name() == "ExpBackward0"
    view = x[0]
    assert not view.is_leaf and view.requires_grad and view.grad_fn is not None
    assert "Backward" in view.grad_fn.name()


def test_hooks_against_torch():
    v = rand(2, 3)
    x, tx = both(v)
    seen = []
    h = x.register_hook(lambda g: seen.append(np.asarray(g)) or g * 2)
    y = x * x
    y.register_hook(lambda g: g + 1)
    y.sum().backward()
    th = tx.register_hook(lambda g: g * 2)
    ty = tx * tx
    ty.register_hook(lambda g: g + 1)
    ty.sum().backward()
    close(x.grad, tx.grad)
    np.testing.assert_allclose(seen[0], 2 * 2 * v)
    h.remove()
    th.remove()
    x.grad = None
    tx.grad = None
    (x * 5).sum().backward()
    (tx * 5).sum().backward()
    close(x.grad, tx.grad)


@pytest.mark.parametrize("create_graph", [False, True])
def test_leaf_hooks_see_the_gradient_autograd_grad_returns(create_graph):
    # PyTorch runs a leaf's own hooks on the gradient autograd.grad returns for it,
    # and again when a double backward reaches the leaf
    v = rand(3)
    results = []
    for lib, grad in ((ak, autograd.grad), (torch, torch.autograd.grad)):
        x = lib.tensor(v, requires_grad=True)
        x.register_hook(lambda g: g * 3)
        (g,) = grad((x * x * x).sum(), x, create_graph=create_graph)
        results.append(np.asarray(g.detach()))
        if create_graph:
            (g * g).sum().backward()
            results.append(np.asarray(x.grad.detach()))
    half = len(results) // 2
    np.testing.assert_allclose(results[0], 9 * v * v, rtol=1e-6)
    for ours, theirs in zip(results[:half], results[half:]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_leaf_hooks_see_only_the_leafs_own_gradient_in_autograd_grad():
    # a view of the leaf as an input gets its gradient unhooked; the leaf twice in the
    # inputs runs its hooks once; backward(inputs=[x]) runs them too: as PyTorch does
    v = rand(3)
    results = {}
    for lib, grad in ((ak, autograd.grad), (torch, torch.autograd.grad)):
        calls = []
        x = lib.tensor(v, requires_grad=True)
        x.register_hook(lambda g: calls.append(1) or g * 3)
        tail = x[1:]
        got = [grad((tail * tail).sum(), [x, tail]), grad((x * x).sum(), [x, x]),
               grad((tail * tail).sum(), tail)]
        (x * x).sum().backward(inputs=[x])
        got = [np.asarray(g.detach()) for gs in got for g in gs] + [np.asarray(x.grad.detach())]
        results[lib.__name__] = got, len(calls)
    (ours, our_calls), (theirs, their_calls) = results["arraykit"], results["torch"]
    assert our_calls == their_calls == 3
    np.testing.assert_allclose(ours[0], 6 * v * [0, 1, 1], rtol=1e-6)
    np.testing.assert_allclose(ours[1], 2 * v[1:], rtol=1e-6)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_hooks_and_retain_grad_on_views_of_a_leaf():
    x = leaf(rand(2, 3))
    v = x[:, 1:]
    v.retain_grad()
    v.register_hook(lambda g: g * 10)
    (v * 2).sum().backward()
    np.testing.assert_allclose(np.asarray(v.grad), np.full((2, 2), 20.0))
    np.testing.assert_allclose(np.asarray(x.grad), [[0, 20, 20], [0, 20, 20]])


def test_hook_returning_a_strided_tensor():
    x = leaf(rand(2, 3))
    y = x * 2
    replacement = ak.asarray(rand(3, 2), dtype=ak.float64)
    y.register_hook(lambda g: replacement.T)
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), 2 * np.asarray(replacement).T)


def test_detach():
    x, tx = both(np.ones((2, 3)))
    d = x.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert not d[0].requires_grad and not d.T.requires_grad
    with ak.no_grad():
        d[0, 0] = 7.0  # d shares x's storage
    assert float(x[0, 0]) == 7.0
    y = x * 2
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None
    (x * d).sum().backward()  # d is a constant
    np.testing.assert_allclose(np.asarray(x.grad), np.asarray(d))
    tx.detach()[0, 0] = 7.0
    (tx * tx.detach()).sum().backward()
    close(x.grad, tx.grad)


def test_requires_grad_on_a_detached_tensor_with_history():
    x = leaf(rand(3))
    y = x * 2
    with pytest.raises(RuntimeError, match=r"detach\(\)\.clone\(\)\.requires_grad_\(\)"):
        y.detach().requires_grad_()
    assert y.grad_fn.name() == "MultiplyBackward0"
    z = y.detach().clone().requires_grad_()
    (z * y).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), 2 * np.asarray(z.detach()))
    np.testing.assert_allclose(np.asarray(z.grad), np.asarray(y.detach()))


def test_grad_modes():
    x = leaf(rand(3))
    with ak.no_grad():
        y = x * 2
        with ak.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad
    with ak.set_grad_enabled(False):
        assert not (x * 2).requires_grad
        assert not ak.is_grad_enabled()
    assert ak.is_grad_enabled()

    @ak.no_grad()
    def off(t):
        return t * 2

    @ak.enable_grad()
    def on(t):
        return t * 2

    @ak.set_grad_enabled(False)
    def off_too(t):
        return t * 2

    assert not off(x).requires_grad and not off_too(x).requires_grad
    assert ak.is_grad_enabled()
    with ak.no_grad():
        assert on(x).requires_grad
    ak.set_grad_enabled(False)
    try:
        assert not (x + 1).requires_grad
    finally:
        ak.set_grad_enabled(True)
    assert (x + 1).requires_grad


def test_autograd_grad_against_torch():
    va, vb = rand(2, 3), rand(2, 3)
    a, ta = both(va)
    b, tb = both(vb)
    unused, tunused = both(rand(3))
    out = a * b + ak.sin(a)
    tout = ta * tb + torch.sin(ta)
    w = rand(2, 3)
    ga, gb, gu = autograd.grad(out, (a, b, unused), grad_outputs=ak.asarray(w, dtype=ak.float64),
                               allow_unused=True)
    tga, tgb, tgu = torch.autograd.grad(tout, (ta, tb, tunused),
                                        grad_outputs=torch.tensor(w), allow_unused=True)
    close(ga, tga)
    close(gb, tgb)
    assert gu is None and tgu is None
    assert a.grad is None and b.grad is None  # autograd.grad leaves .grad alone
    with pytest.raises(RuntimeError, match="not have been used"):
        autograd.grad((a * 2).sum(), (a, unused))


def test_autograd_grad_of_an_intermediate():
    a = leaf(rand(3))
    y = a * 2
    (gy,) = autograd.grad((y ** 2).sum(), y)
    np.testing.assert_allclose(np.asarray(gy), 2 * np.asarray(y.detach()))


def test_backward_with_gradient_on_non_scalars():
    v, w = rand(2, 3), rand(2, 3)
    x, tx = both(v)
    y = ak.exp(x)[:, ::-1]
    y.backward(gradient=ak.asarray(w, dtype=ak.float64))
    torch.exp(tx).flip(1).backward(gradient=torch.tensor(w))
    close(x.grad, tx.grad)
    # a gradient given as a non-contiguous view of a larger tensor
    x.grad = None
    big = ak.asarray(rand(4, 6), dtype=ak.float64)
    (x * 3).backward(gradient=big[::2, ::2])
    np.testing.assert_allclose(np.asarray(x.grad), 3 * np.asarray(big)[::2, ::2])


def test_retain_graph_allows_a_second_backward():
    x, tx = both(rand(3))
    y = (ak.sin(x) * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    ty = (torch.sin(tx) * tx).sum()
    ty.backward(retain_graph=True)
    ty.backward()
    close(x.grad, tx.grad)


def test_inplace_on_leaf_allowed_inside_no_grad():
    x = leaf(np.ones(3))
    with ak.no_grad():
        x.mul_(3)
        x[0] = 5.0
        x[1:].add_(1)
    assert x.is_leaf and x.requires_grad
    (x * x).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), [10.0, 8.0, 8.0])


def test_scalar_element_of_a_leaf_is_differentiated():
    # a 0-d view of a CPU storage is normally read on the host, by value
    x = leaf(rand(2, 3))
    (x[0, 1] * 3 + x[1, 2] ** 2).backward()
    expected = np.zeros((2, 3))
    expected[0, 1] = 3
    expected[1, 2] = 2 * float(x[1, 2])
    np.testing.assert_allclose(np.asarray(x.grad), expected)


# ------------------------------------------------------------------ errors

def test_inplace_on_leaf_or_its_view_is_an_error():
    x = leaf(np.ones((2, 3)))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(2)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x[:, 1] = 3.0


def test_saved_tensor_modified_in_place():
    a = leaf(rand(3))
    b = a * 1
    c = b * b
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*version 1; "
                                           "expected version 0"):
        c.sum().backward()
    # multiply by a constant keeps no input: modifying it is fine
    a = leaf(rand(3))
    b = a * 1
    c = b * 2
    b.add_(1)
    c.sum().backward()
    np.testing.assert_allclose(np.asarray(a.grad), [2.0, 2.0, 2.0])


def test_writes_keep_only_what_their_backward_needs():
    # a strided assignment keeps only its mask for backward (not the storage it
    # writes), so writing the storage again before backward is fine
    def ak_fn(x):
        b = (x.T * 1).T
        b[::2, ::2][:, 0] = 0.5
        b[0:2, 0:3].mul_(b[1:3, 0:3])
        return b

    def jax_fn(x):
        b = x.at[::2, 0].set(0.5)
        return b.at[0:2, 0:3].set(b[0:2, 0:3] * b[1:3, 0:3])

    check(ak_fn, jax_fn, rand(4, 5))


def test_leaf_modified_in_place_under_no_grad_before_backward():
    a = leaf(rand(3))
    c = a * a
    with ak.no_grad():
        a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_backward_twice_through_a_freed_graph():
    x = leaf(rand(3))
    y = (ak.exp(x) * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time.*retain_graph"):
        y.backward()


def test_backward_of_non_scalar_needs_gradient():
    x = leaf(rand(2, 3))
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="mismatch in shape"):
        (x * 2).backward(gradient=ak.ones((3, 2), dtype=ak.float64))


@pytest.mark.parametrize("dtype", [ak.int64, ak.int32, ak.bool, ak.uint8])
def test_requires_grad_on_integer_or_bool_is_an_error(dtype):
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype"):
        ak.ones(3, dtype=dtype).requires_grad_()


def test_backward_on_tensor_without_grad():
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        ak.ones(3).sum().backward()
    x = leaf(rand(3))
    with ak.no_grad():
        y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward()


def test_requires_grad_false_only_on_leaves():
    x = leaf(rand(3))
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        (x * 2).requires_grad_(False)
    x.requires_grad_(False)
    assert not x.requires_grad


def test_retain_grad_and_hooks_need_grad():
    with pytest.raises(RuntimeError, match="retain_grad on Tensor that has requires_grad=False"):
        ak.ones(3).retain_grad()
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ak.ones(3).register_hook(lambda g: g)


def test_recorded_kernels_keep_no_copy_of_their_arguments():
    from arraykit.autograd.graph import Residuals

    a = ak.asarray(np.ones((4, 4), np.float32), requires_grad=True)
    b = ak.asarray(np.full((4, 4), 2.0, np.float32), requires_grad=True)
    y = a @ b
    residuals = y._storage.node.kernel.vjp
    assert isinstance(residuals, Residuals)
    assert residuals.kept == [] and None not in residuals.forwarded  # a and b are read back
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full((4, 4), 8.0))
    np.testing.assert_allclose(b.grad.numpy(), np.full((4, 4), 4.0))


def test_an_operand_read_back_for_backward_and_modified_in_place_raises_as_in_torch():
    # a @ b keeps no copy of b (see above): backward reads it back, so a write into b
    # between forward and backward is an error, as PyTorch's saved-tensor check makes it
    import torch

    a = ak.ones((3, 3), requires_grad=True)
    b = ak.ones((3, 3))
    y = a @ b
    b.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    ta, tb = torch.ones((3, 3), requires_grad=True), torch.ones((3, 3))
    ty = ta @ tb
    tb.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ty.sum().backward()


@pytest.mark.parametrize("name", ["sin", "exp", "tanh", "sqrt", "abs", "neg", "square", "clamp"])
def test_inplace_method_twins_on_a_non_leaf_give_torchs_gradient(name):
    import torch

    args = {"clamp": (0.2, 0.9)}.get(name, ())
    values = np.array([0.05, 0.3, 1.5], np.float64)  # clamp: no element on a bound
    x = ak.asarray(values, requires_grad=True)
    y = x * 2
    getattr(y, name + "_")(*args)
    (y * y).sum().backward()
    t = torch.tensor(values, requires_grad=True)
    ty = t * 2
    getattr(ty, name + "_")(*args)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12)


def test_forward_replay_keeps_weak_type_promotion():
    """A kernel's forward-with-VJP replays the jaxpr its analysis traced; a weakly typed
    argument (a JAX scalar made from a Python float) must promote as in the kernel
    itself (bfloat16 here), not as a strongly typed float32 would (float32)."""
    import jax.numpy as jnp

    from arraykit.autograd import graph as G
    from arraykit.core import x64

    token = x64.on()
    try:
        forward = G.Forward(lambda a, b: a * b, (True, True), "MulBackward0", None)
        y = jnp.asarray([1.0, 2.0, 3.0], dtype=jnp.bfloat16)
        weak = jnp.asarray(2.0)
        outs, _ = forward.call(weak, y)
        assert outs[0].dtype == (weak * y).dtype == jnp.bfloat16
        outs, _ = forward.call(jnp.asarray(2.0, jnp.float32), y)  # strong: another trace
        assert outs[0].dtype == jnp.float32
    finally:
        x64.off(token)
