"""``requires_grad=`` on creation functions, and higher-order eager gradients
(``create_graph=True``) against PyTorch and ``jax.hessian``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit import autograd

RNG = np.random.default_rng(7)


# ---------------------------------------------------------------------- creation keyword


@pytest.mark.parametrize(
    "make",
    [
        lambda rg: ak.zeros((2, 3), requires_grad=rg),
        lambda rg: ak.zeros(2, 3, requires_grad=rg),
        lambda rg: ak.ones((2, 3), requires_grad=rg),
        lambda rg: ak.empty((2, 3), requires_grad=rg),
        lambda rg: ak.full((2, 3), 1.5, requires_grad=rg),
        lambda rg: ak.zeros_like(ak.ones((2, 3)), requires_grad=rg),
        lambda rg: ak.ones_like(ak.ones((2, 3)), requires_grad=rg),
        lambda rg: ak.empty_like(ak.ones((2, 3)), requires_grad=rg),
        lambda rg: ak.full_like(ak.ones((2, 3)), 2.0, requires_grad=rg),
        lambda rg: ak.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=rg),
        lambda rg: ak.asarray(np.ones((2, 3)), requires_grad=rg),
        lambda rg: ak.eye(2, 3, requires_grad=rg),
        lambda rg: ak.arange(0.0, 6.0, requires_grad=rg).reshape(2, 3),
        lambda rg: ak.linspace(0.0, 1.0, 6, requires_grad=rg).reshape(2, 3),
    ],
)
def test_creation_requires_grad(make):
    plain = make(False)
    assert not plain.requires_grad and plain.is_leaf
    x = make(True)
    if x.ndim == 2 and x.shape == (2, 3) and x.is_leaf:
        assert x.requires_grad
        (x * x).sum().backward()
        np.testing.assert_allclose(np.asarray(x.grad), 2 * np.asarray(x.detach()))
    else:  # reshape of a leaf: a view
        assert x.requires_grad


def test_creation_requires_grad_integer_raises():
    with pytest.raises(RuntimeError, match="floating point and complex"):
        ak.zeros((2,), dtype=ak.int64, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point and complex"):
        ak.arange(5, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point and complex"):
        ak.asarray([1, 2], requires_grad=True)


def test_creation_requires_grad_is_keyword_only():
    with pytest.raises(TypeError):
        ak.full((2,), 1.0, ak.float32, None, True)


def test_tensor_requires_grad_still_works():
    x = ak.tensor([1.0, 2.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf


# ---------------------------------------------------------------------- create_graph


def f64(values, requires_grad=True):
    return ak.asarray(values, dtype=ak.float64, requires_grad=requires_grad)


def t64(values):
    return torch.tensor(np.asarray(values), dtype=torch.float64, requires_grad=True)


def close(a, b, rtol=1e-10, atol=1e-12):
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    np.testing.assert_allclose(np.asarray(a.detach()), b, rtol=rtol, atol=atol)


def test_cube_second_and_third_derivative_vs_torch():
    values = RNG.uniform(-2, 2, 5)
    x, tx = f64(values), t64(values)
    (g,) = autograd.grad((x ** 3).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((tx ** 3).sum(), tx, create_graph=True)
    close(g, tg)
    assert g.requires_grad and g.grad_fn is not None
    (h,) = autograd.grad(g.sum(), x, create_graph=True)
    (th,) = torch.autograd.grad(tg.sum(), tx, create_graph=True)
    close(h, th)
    close(h, 6 * values)
    (k,) = autograd.grad(h.sum(), x)
    close(k, np.full(5, 6.0))
    assert not k.requires_grad


def test_backward_create_graph_then_backward_of_grad():
    values = RNG.uniform(-2, 2, 4)
    x, tx = f64(values), t64(values)
    (x ** 3).sum().backward(create_graph=True)
    (tx ** 3).sum().backward(create_graph=True)
    close(x.grad, tx.grad)
    assert x.grad.requires_grad
    g = x.grad
    x.grad = None
    tg = tx.grad
    tx.grad = None
    (g * g).sum().backward()
    (tg * tg).sum().backward()
    close(x.grad, tx.grad)


def test_two_inputs_mixed_second_derivatives_vs_torch():
    a_values, b_values = RNG.uniform(0.5, 2, (3, 4)), RNG.uniform(-1, 1, (4,))
    a, b = f64(a_values), f64(b_values)
    ta, tb = t64(a_values), t64(b_values)

    def fn(lib, a, b):
        return (lib.sin(a * b) * a + lib.exp(b)).sum()

    ga, gb = autograd.grad(fn(ak, a, b), [a, b], create_graph=True)
    tga, tgb = torch.autograd.grad(fn(torch, ta, tb), [ta, tb], create_graph=True)
    close(ga, tga)
    close(gb, tgb)
    w = RNG.uniform(-1, 1, (3, 4))
    out = (ga * f64(w, False)).sum() + (gb ** 2).sum()
    tout = (tga * torch.tensor(w)).sum() + (tgb ** 2).sum()
    da, db = autograd.grad(out, [a, b])
    tda, tdb = torch.autograd.grad(tout, [ta, tb])
    close(da, tda, rtol=1e-9)
    close(db, tdb, rtol=1e-9)


def test_hessian_vector_product_of_small_mlp_vs_jax_hessian():
    n_in, n_hidden = 3, 5
    w1 = RNG.normal(size=(n_hidden, n_in))
    b1 = RNG.normal(size=(n_hidden,))
    w2 = RNG.normal(size=(n_hidden,))
    x_values = RNG.normal(size=(n_in,))
    v = RNG.normal(size=(n_in,))

    def jax_fn(x):
        h = jnp.tanh(w1 @ x + b1)
        return jnp.sum(w2 * h) + 0.5 * jnp.sum(x ** 2) * jnp.sum(h ** 2)

    def ak_fn(x):
        h = ak.tanh(f64(w1, False) @ x + f64(b1, False))
        return (f64(w2, False) * h).sum() + 0.5 * (x ** 2).sum() * (h ** 2).sum()

    x = f64(x_values)
    (g,) = autograd.grad(ak_fn(x), x, create_graph=True)
    (hv,) = autograd.grad(g, x, grad_outputs=f64(v, False))
    with jax.enable_x64(True):
        hessian = np.asarray(jax.hessian(jax_fn)(jnp.asarray(x_values)))
        grad = np.asarray(jax.grad(jax_fn)(jnp.asarray(x_values)))
    close(g, grad, rtol=1e-9)
    close(hv, hessian @ v, rtol=1e-9)


def test_gradient_penalty_vs_torch():
    """WGAN-GP: grad(D(x), x, create_graph=True), then a penalty on its norm, backward to D's weights."""
    w1_values = RNG.normal(size=(4, 6))
    w2_values = RNG.normal(size=(6, 1))
    x_values = RNG.normal(size=(8, 4))

    def disc(lib, x, w1, w2):
        return (lib.tanh(x @ w1) @ w2).sum()

    w1, w2, x = f64(w1_values), f64(w2_values), f64(x_values)
    tw1, tw2, tx = t64(w1_values), t64(w2_values), t64(x_values)
    (gx,) = autograd.grad(outputs=disc(ak, x, w1, w2), inputs=x, create_graph=True)
    (tgx,) = torch.autograd.grad(outputs=disc(torch, tx, tw1, tw2), inputs=tx, create_graph=True)
    close(gx, tgx)
    penalty = ((ak.linalg.vector_norm(gx, axis=1) - 1) ** 2).mean()
    tpenalty = ((torch.linalg.vector_norm(tgx, dim=1) - 1) ** 2).mean()
    close(penalty, tpenalty)
    penalty.backward()
    tpenalty.backward()
    close(w1.grad, tw1.grad, rtol=1e-9)
    close(w2.grad, tw2.grad, rtol=1e-9)
    close(x.grad, tx.grad, rtol=1e-9)


def test_create_graph_through_views_and_inplace_writes():
    values = RNG.uniform(-1, 1, (3, 4))

    def fn(lib, x):
        y = x * 1
        y[1:, ::2] += x[:2, 1::2] ** 2
        y.T[0] *= 3.0
        return (y ** 2).sum()

    x, tx = f64(values), t64(values)
    (g,) = autograd.grad(fn(ak, x), x, create_graph=True)
    (tg,) = torch.autograd.grad(fn(torch, tx), tx, create_graph=True)
    close(g, tg)
    w = RNG.uniform(-1, 1, (3, 4))
    (h,) = autograd.grad(g, x, grad_outputs=f64(w, False))
    (th,) = torch.autograd.grad(tg, tx, grad_outputs=torch.tensor(w))
    close(h, th, rtol=1e-9)


def test_create_graph_through_one_view_kernel_over_storages_of_two_sizes_vs_torch():
    # one kernel (the views' layouts are equal) recorded over storages of 10 and then 20
    # elements: the second double backward must use its own storage's shape
    for n in (10, 20):
        values = np.arange(n, dtype=np.float32) / n
        results = []
        for lib in (ak, torch):
            a = (ak.asarray(values, device="cpu") if lib is ak else torch.tensor(values)).requires_grad_()
            b = a * 1.0
            y = (b[:3] + b[1:4] * b[2:5]).sum()
            g, = (ak.autograd if lib is ak else torch.autograd).grad(y, a, create_graph=True)
            (g * g).sum().backward()
            results.append((np.asarray(g.detach().numpy()), np.asarray(a.grad.numpy())))
        for got, want in zip(*results):
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_create_graph_grad_outputs_that_require_grad():
    x_values, v_values = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    x, v = f64(x_values), f64(v_values)
    tx, tv = t64(x_values), t64(v_values)
    (g,) = autograd.grad(ak.sin(x), x, grad_outputs=v, create_graph=True)
    (tg,) = torch.autograd.grad(torch.sin(tx), tx, grad_outputs=tv, create_graph=True)
    close(g, tg)
    (g * g).sum().backward()
    (tg * tg).sum().backward()
    close(x.grad, tx.grad)
    close(v.grad, tv.grad)


class Cube(autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x ** 2


def test_function_backward_is_recorded_under_create_graph():
    values = RNG.uniform(-2, 2, 4)
    x = f64(values)
    (g,) = autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    close(g, 3 * values ** 2)
    assert g.requires_grad
    (h,) = autograd.grad(g.sum(), x)
    close(h, 6 * values)


def test_create_graph_cross_entropy_double_backward_vs_torch():
    logits_values = RNG.normal(size=(4, 5))
    labels = np.array([0, 3, 1, 4])
    x, tx = f64(logits_values), t64(logits_values)
    y = ak.asarray(labels)
    (g,) = autograd.grad(ak.nn.functional.cross_entropy(x, y), x, create_graph=True)
    (tg,) = torch.autograd.grad(
        torch.nn.functional.cross_entropy(tx, torch.tensor(labels)), tx, create_graph=True
    )
    close(g, tg)
    (h,) = autograd.grad((g ** 2).sum(), x)
    (th,) = torch.autograd.grad((tg ** 2).sum(), tx)
    close(h, th, rtol=1e-9)


def test_hooks_and_retain_grad_under_create_graph_vs_torch():
    results = []
    for lib, x in ((ak, f64([1.0, 2.0])), (torch, t64([1.0, 2.0]))):
        y = x ** 2
        y.retain_grad()
        y.register_hook(lambda g: g * 2)
        (y ** 2).sum().backward(create_graph=True)
        g = x.grad
        x.grad = None
        g.sum().backward()
        results.append((y.grad, g, x.grad))
    for mine, theirs in zip(*results):
        close(mine, theirs)


def test_create_graph_through_inplace_ops_that_need_the_values_they_overwrote():
    import torch

    def run(lib, x0, w0):
        if lib == "torch":
            x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
            w = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
            grad = torch.autograd.grad
        else:
            x, w = f64(x0), f64(w0)
            grad = autograd.grad
        y = x * 1
        y.mul_(w)  # d/dw is the old y
        y.sin_()  # d/dy is cos of the old y
        (gw,) = grad(y.sum(), w, create_graph=True)
        (gx,) = grad(gw.sum(), x)
        return gw, gx

    for mine, theirs in zip(run("ak", [1.0, 2.0], [3.0, 4.0]), run("torch", [1.0, 2.0], [3.0, 4.0])):
        close(mine, theirs)
    # without create_graph the old values are not kept: the write donates its buffer
    x = f64([1.0, 2.0])
    (gx,) = autograd.grad((x * 1).mul_(2.0).sum(), x)
    close(gx, [2.0, 2.0])


def test_create_graph_saved_tensor_modified_raises():
    x = f64([1.0, 2.0])
    y = x * 1
    z = (y * y).sum()
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        autograd.grad(z, x, create_graph=True)


def test_retained_grad_accumulates_across_backward_calls_vs_torch():
    results = []
    for x in (f64([1.0, 2.0]), t64([1.0, 2.0])):
        y = x ** 2
        y.retain_grad()
        z = (y ** 2).sum()
        z.backward(retain_graph=True)
        z.backward()
        results.append(y.grad)
    close(*results)
