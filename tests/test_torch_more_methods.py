"""Tensor methods added for issue 36 item 8, against torch 2.13: the in-place view
methods (``t_``, ``transpose_``, ``squeeze_``...), the random fills (``exponential_``,
``log_normal_``, ``cauchy_``, ``geometric_``, ``random_``) and ``bernoulli``,
``hardshrink``/``prelu``, ``sum_to_size``, ``narrow_copy``, ``fill_diagonal_``,
``dim_order``, ``is_set_to``, ``new_empty_strided``/``empty_strided`` and ``data``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arraykit as ak
from test_torch_namespace import B3, M, check

VIEW_METHODS = {
    "t_": lambda x: x.t_(),
    "transpose_": lambda x: x.transpose_(0, 1),
    "swapaxes_": lambda x: x.swapaxes_(1, 0),
    "swapdims_": lambda x: x.swapdims_(0, 1),
    "unsqueeze_": lambda x: x.unsqueeze_(1),
    "squeeze_": lambda x: x.unsqueeze_(0).squeeze_(0),
}


@pytest.mark.parametrize("name", VIEW_METHODS)
def test_inplace_views_against_torch(name):
    op = VIEW_METHODS[name]
    results = []
    for lib in (torch, ak):
        leaf = (torch.from_numpy(M.copy()) if lib is torch else ak.asarray(M)).requires_grad_()
        x = leaf * 2
        assert op(x) is x
        weights = np.arange(np.prod(x.shape), dtype=np.float32).reshape(x.shape)
        (x * (torch.from_numpy(weights) if lib is torch else ak.asarray(weights))).sum().backward()
        results.append((x.shape, x.stride(), x.detach().numpy(), leaf.grad.numpy()))
    (shape, stride, values, grad), (got_shape, got_stride, got_values, got_grad) = results
    assert (got_shape, got_stride) == (tuple(shape), stride)
    np.testing.assert_array_equal(got_values, values)
    np.testing.assert_array_equal(got_grad, grad)


def test_inplace_view_keeps_the_storage_and_refuses_a_leaf_that_requires_grad():
    x = ak.asarray(M)
    storage = x._storage
    x.t_()[0, 1] = 100.0
    assert x._storage is storage and x.shape == (4, 3)
    assert x.numpy()[0, 1] == 100.0
    for lib, leaf in ((torch, torch.ones(2, 3, requires_grad=True)),
                      (ak, ak.ones((2, 3)).requires_grad_())):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            leaf.t_()


def _fill(lib, name, shape, *args, dtype="float64"):
    lib.manual_seed(0)
    x = lib.empty(shape, dtype=getattr(lib, dtype))
    assert getattr(x, name)(*args) is x
    return x.numpy()


def test_random_fills_have_torchs_distributions():
    n = (50_000,)
    for lib in (torch, ak):
        e = _fill(lib, "exponential_", n, 2.0)
        assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.01 and abs(e.std() - 0.5) < 0.01
        ln = _fill(lib, "log_normal_", n, 0.5, 0.25)
        assert ln.min() > 0 and abs(np.log(ln).mean() - 0.5) < 0.01
        assert abs(np.log(ln).std() - 0.25) < 0.01
        c = _fill(lib, "cauchy_", n, 1.0, 2.0)
        assert abs(np.median(c) - 1.0) < 0.05
        assert abs(np.quantile(c, 0.75) - np.quantile(c, 0.25) - 4.0) < 0.1  # 2 sigma
        g = _fill(lib, "geometric_", n, 0.25)
        assert g.min() == 1 and np.all(g == np.round(g)) and abs(g.mean() - 4.0) < 0.05
        gi = _fill(lib, "geometric_", (1000,), 0.5, dtype="int64")
        assert gi.dtype == np.int64 and gi.min() >= 1
        r = _fill(lib, "random_", n, 3, 7, dtype="int64")
        assert set(np.unique(r)) == {3, 4, 5, 6}
        r = _fill(lib, "random_", n, 5, dtype="float32")
        assert set(np.unique(r)) == {0.0, 1.0, 2.0, 3.0, 4.0}
        r = _fill(lib, "random_", (1000,), dtype="int8")
        assert r.min() >= 0 and r.max() > 100
        r = _fill(lib, "random_", (1000,), dtype="float32")
        assert r.min() >= 0 and r.max() <= 2 ** 24 and r.max() > 2 ** 20
        probs = lib.asarray(np.array([0.0, 1.0, 0.0], np.float32))
        np.testing.assert_array_equal(probs.bernoulli().numpy(), [0.0, 1.0, 0.0])
        ones = lib.ones(50_000).bernoulli(0.3).numpy()
        assert abs(ones.mean() - 0.3) < 0.01


def test_random_fills_follow_the_seed_and_refuse_bad_arguments():
    ak.manual_seed(5)
    a = ak.empty(10).exponential_().numpy()
    ak.manual_seed(5)
    np.testing.assert_array_equal(ak.empty(10).exponential_().numpy(), a)
    with pytest.raises(ValueError, match="lambda > 0.0, but found lambda=0.0"):
        ak.empty(3).exponential_(0.0)
    with pytest.raises(ValueError, match=r"p to be in \(0, 1\), but got p=1.5"):
        ak.empty(3).geometric_(1.5)
    with pytest.raises(RuntimeError, match="from=5 >= to=5"):
        ak.empty(3).random_(5, 5)
    with pytest.raises(TypeError, match="floating dtype"):
        ak.empty(3, dtype=ak.int64).cauchy_()


def test_small_methods_against_torch():
    check(lambda lib, x, w: (x.hardshrink(0.8), x.prelu(w), x.sum_to_size(1, 4),
                             x.sum_to_size((3, 1)), x.narrow_copy(1, 1, 2)),
          M, np.array([0.25], np.float32))
    check(lambda lib, x: (x.sum_to_size(3, 1), x.sum_to_size(1, 1, 4), x.sum_to_size(4)), B3)
    for shape, wrap in (((3, 3), False), ((7, 3), True), ((7, 3), False), ((2, 5), True),
                        ((3, 3, 3), False)):
        want = torch.zeros(shape).fill_diagonal_(5.0, wrap)
        got = ak.zeros(shape).fill_diagonal_(5.0, wrap)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    bases = []
    for lib in (torch, ak):  # through a view: the base sees the diagonal
        base = lib.zeros((4, 6))
        view = base[:, 1:5]
        assert view.fill_diagonal_(1.0) is view
        bases.append(base.numpy())
    np.testing.assert_array_equal(bases[1], bases[0])
    with pytest.raises(RuntimeError, match="equal length"):
        ak.zeros((2, 3, 3)).fill_diagonal_(1.0)
    with pytest.raises(RuntimeError, match=r"size \{2, 4\} is not expandable to size \{3, 4\}"):
        ak.asarray(M).sum_to_size(2, 4)


def test_layout_queries_against_torch():
    for make in (lambda lib: lib.empty((2, 3, 4)).permute(2, 0, 1),
                 lambda lib: lib.empty((2, 3, 4)), lambda lib: lib.empty((5, 1)).t()):
        assert make(ak).dim_order() == make(torch).dim_order()
    x = ak.asarray(M)
    assert x.is_set_to(x.view(x.shape)) and not x.is_set_to(x.t()) and not x.is_set_to(x.clone())
    for lib in (ak, torch):
        y = lib.empty_strided((2, 3), (1, 2), dtype=lib.float64)
        assert y.stride() == (1, 2) and tuple(y.shape) == (2, 3)
        z = y.new_empty_strided((3, 2), (3, 1))
        assert z.stride() == (3, 1) and z.dtype == y.dtype
    assert ak.empty_strided((0, 3), (3, 1)).shape == (0, 3)
    with pytest.raises(RuntimeError, match="mismatch in length"):
        ak.empty_strided((2, 3), (1,))


def test_data_reads_and_replaces_as_torch():
    for lib in (torch, ak):
        p = (torch.from_numpy(M.copy()) if lib is torch else ak.asarray(M)).requires_grad_()
        d = p.data
        assert not d.requires_grad
        d.mul_(2)  # writes reach p, as PyTorch's p.data.mul_()
        np.testing.assert_array_equal(p.detach().numpy(), M * 2)
        p.data = lib.zeros((2, 2))
        assert tuple(p.shape) == (2, 2) and p.requires_grad and p.is_leaf
