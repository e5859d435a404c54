"""PyTorch's products, matrix functions, stacks and splits, scatters, NaN-ignoring
reductions, covariance, trapezoid rule and creation functions added for issue 36
item 8, against torch 2.13 (values, dtypes, views where torch documents one, and
gradients through ``test_torch_namespace.check``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import arraykit as ak
from test_torch_namespace import B3, C3, I, M, SQ, V, W, check, same

RNG = np.random.default_rng(7)
SPD = (SQ @ SQ.T + 3 * np.eye(3)).astype(np.float32)
LOWER = (np.tril(SQ) + 3 * np.eye(3)).astype(np.float32)
NANS = np.array([[1.0, np.nan, 2.0, 0.5], [np.nan, np.nan, 3.0, -1.0]], np.float32)
B4 = RNG.standard_normal((2, 3, 4, 2)).astype(np.float32)

PRODUCTS = {
    "mv inner vdot": (lambda lib, a, v: (lib.mv(a, v), a.mv(v), lib.inner(a, a), a.inner(v),
                                         lib.inner(v, v), lib.vdot(v, v), v.vdot(v)), SQ, V),
    "addmv addr": (lambda lib, x, a, v, w: (lib.addmv(x, a, v, beta=2, alpha=0.5),
                                            x.addmv(a, v), lib.addr(a, v, w, alpha=3),
                                            a.addr(v, w, beta=0)), V, SQ, V, W),
    "addbmm chain_matmul": (lambda lib, x, b, c, a: (lib.addbmm(x, b, c, beta=0.5),
                                                     x.addbmm(b, c), lib.chain_matmul(a, a, a)),
                            np.ones((3, 2), np.float32), B3, C3, SQ),
    "det logdet slogdet": (lambda lib, a: (lib.det(a), a.det(), lib.logdet(a), a.slogdet(),
                                           lib.logdet(-a)), SPD),
    "inverse pinverse matrix_power": (lambda lib, a: (lib.inverse(a), a.pinverse(),
                                                      lib.matrix_power(a, 3), a.matrix_power(-1)),
                                      SPD),
    "matrix_exp": (lambda lib, a: (lib.matrix_exp(a / 4), a.matrix_exp()), SQ / 2),
    "cholesky family": (lambda lib, a, b: (
        lib.cholesky(a), a.cholesky(upper=True), lib.cholesky_inverse(lib.cholesky(a)),
        lib.cholesky_solve(b, lib.cholesky(a)), b.cholesky_solve(lib.cholesky(a, True), True),
        lib.cholesky_inverse(lib.cholesky(a, upper=True), upper=True)), SPD, M[:, :2]),
    "triangular_solve": (lambda lib, a, b: (
        lib.triangular_solve(b, a, upper=False), b.triangular_solve(a.mT, transpose=True),
        lib.triangular_solve(b, a, False, False, True)), LOWER, M[:, :2]),
    "adjoint H mH": (lambda lib, a, b: (lib.adjoint(a), a.H, b.mH, a.mT), SQ, B3),
}


@pytest.mark.parametrize("name", PRODUCTS)
def test_products_against_torch(name):
    case, *arrays = PRODUCTS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's deprecations (triangular_solve)
        check(case, *arrays, rtol=1e-4)


def test_adjoint_of_a_real_tensor_is_a_view():
    same(ak.adjoint(ak.asarray(B3)), torch.adjoint(torch.from_numpy(B3)), view=True)
    same(ak.asarray(SQ).H, torch.from_numpy(SQ).H, view=True)
    with pytest.raises(RuntimeError, match="only supported on matrices"):
        ak.asarray(B3).H


def test_decompositions_reconstruct_and_match_torch_shapes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for some in (True, False):
            a = M[:, :3] if some else M
            q, r = ak.qr(ak.asarray(a), some)
            tq, tr = torch.qr(torch.from_numpy(a), some)
            assert q.shape == tuple(tq.shape) and r.shape == tuple(tr.shape)
            np.testing.assert_allclose((q @ r).numpy(), a, atol=1e-5)
            u, s, v = ak.asarray(a).svd(some)
            tu, ts, tv = torch.svd(torch.from_numpy(a), some)
            assert (u.shape, s.shape, v.shape) == (tuple(tu.shape), tuple(ts.shape), tuple(tv.shape))
            k = s.shape[0]
            np.testing.assert_allclose((u[:, :k] * s) @ v[:, :k].mT.numpy(), a, atol=1e-5)
            np.testing.assert_allclose(s.numpy(), ts.numpy(), rtol=1e-5)
        u, s, v = ak.svd(ak.asarray(M), compute_uv=False)
        tu, ts, tv = torch.svd(torch.from_numpy(M), compute_uv=False)
        same((u, s, v), (tu, ts, tv))


SHAPES = {
    "stacks": (lambda lib, a, v: (lib.hstack([a, a]), lib.hstack((v, v)), lib.vstack([v, v]),
                                  lib.row_stack([a, v[None].expand(1, 4) if lib is torch else
                                                 v[None].broadcast_to((1, 4))]),
                                  lib.dstack([a, a]), lib.column_stack([v, v]),
                                  lib.column_stack([a, a[:, :1]])), M, M[0].copy()),
    "splits": (lambda lib, a, b: (lib.hsplit(a, 2), a.hsplit([1, 3]), lib.vsplit(a, [1]),
                                  b.dsplit(2), lib.hsplit(a[0], 4),
                                  lib.split_with_sizes(a, [1, 3], 1), a.split_with_sizes([2, 1]),
                                  lib.unsafe_split(a, 2, 1), a.unsafe_chunk(2),
                                  lib.unsafe_split_with_sizes(a, [2, 2], 1)), M, B4),
    "ravel msort argwhere diagflat": (lambda lib, a: (lib.ravel(a), a.T.ravel(), lib.msort(a),
                                                      a.msort(), lib.argwhere(a > 1),
                                                      a.argwhere(), lib.diagflat(a[:2, :2], 1),
                                                      a[0].diagflat(-1)), M),
    "scatters": (lambda lib, a, s: (
        lib.diagonal_scatter(a, s[0, :3]), a.diagonal_scatter(s[:, 0], 1),
        lib.select_scatter(a, s[1], 0, 2), a.select_scatter(s[:, 0], 1, -1),
        lib.slice_scatter(a, s[:, :2], 1, 1, 4, 2), a.slice_scatter(s[:1], start=2)),
        M, M[::-1].copy() * 2),
    "index_put": (lambda lib, a, v: (
        lib.index_put(a, (lib.tensor([0, 2, 0]), lib.tensor([1, 1, 1])), v, accumulate=True),
        a.index_put((lib.tensor([2, 0]),), v[:2, None] * lib.ones(4)),
        a.index_put((a > 1,), lib.tensor(0.0))), M, V),
    "cartesian_prod combinations": (lambda lib, v, w: (
        lib.cartesian_prod(v, w), lib.cartesian_prod(v), lib.cartesian_prod(v, w[:2], v),
        lib.combinations(v), lib.combinations(w, 3, with_replacement=True),
        lib.combinations(v, 4)), V, W),
    "block_diag": (lambda lib, a, v: lib.block_diag(a, v, v[0], a[:1, :2]), M, V),
    "vander unravel_index": (lambda lib, v, i: (
        lib.vander(v), lib.vander(v, 4, True), lib.vander(i[0]),
        lib.unravel_index(lib.tensor([0, 5, 11, -1]), (3, 4)),
        lib.unravel_index(i.abs(), (2, 3))), V + 1, I),
    "nanmean of an all-NaN slice": (lambda lib, x: x.nanmean(0), NANS),
    "nansum nanmean": (lambda lib, x: (lib.nansum(x), x.nansum(1), lib.nanmean(x),
                                       x.nanmean(1, keepdim=True), lib.nansum(x, [0, 1])), NANS),
    "nansum int": (lambda lib, x: (lib.nansum(x), x.nansum(0)), I),
    "cov corrcoef": (lambda lib, a, fw, aw: (
        lib.cov(a), a.cov(correction=0), lib.cov(a[0]), lib.corrcoef(a), a.corrcoef(),
        lib.cov(a, fweights=fw, aweights=aw), lib.cov(a, aweights=aw, correction=2)),
        M, np.array([1, 2, 1, 3], np.int64), np.array([0.5, 1.0, 2.0, 0.25], np.float32)),
    "trapezoid": (lambda lib, y, x: (
        lib.trapezoid(y), lib.trapezoid(y, dx=0.5, dim=0), lib.trapezoid(y, x),
        lib.trapz(y, x[None].expand(3, 4) if lib is torch else x[None].broadcast_to((3, 4))),
        lib.cumulative_trapezoid(y), lib.cumulative_trapezoid(y, x, dim=1),
        lib.cumulative_trapezoid(y, dx=2.0, dim=0)), M, np.array([0.0, 0.5, 2.0, 2.5], np.float32)),
    "rsub": (lambda lib, a, b: (lib.rsub(a, b), lib.rsub(a, 2.0, alpha=3)), M, M[::-1].copy()),
    "tile get_device": (lambda lib, a: (a.tile(2), a.tile((1, 2)), a.tile(2, 1, 1),
                                        a.get_device(), lib.get_device(a)), M),
}


# torch 2.13's vander cannot be differentiated (its backward finds a tensor it wrote in
# place); torch's nanmean gradient of an all-NaN slice is NaN, arraykit's 0: values only.
VALUES_ONLY = {"vander unravel_index", "nanmean of an all-NaN slice"}


@pytest.mark.parametrize("name", SHAPES)
def test_shapes_against_torch(name):
    case, *arrays = SHAPES[name]
    check(case, *arrays, rtol=1e-5, grad=name not in VALUES_ONLY)


def test_vander_gradient_by_finite_differences():
    v = np.array([1.5, -0.5, 2.0], np.float64)
    x = ak.asarray(v).requires_grad_()
    weights = np.arange(9.0).reshape(3, 3)
    (ak.vander(x) * ak.asarray(weights)).sum().backward()
    eps = 1e-6
    numeric = [((np.vander(v + eps * e) - np.vander(v - eps * e)) * weights).sum() / (2 * eps)
               for e in np.eye(3)]
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-6)


def test_split_results_are_views_as_torch():
    same(ak.hsplit(ak.asarray(M), [1, 3]), torch.hsplit(torch.from_numpy(M), [1, 3]), view=True)
    same(ak.asarray(B4).dsplit(2), torch.from_numpy(B4).dsplit(2), view=True)
    same(ak.ravel(ak.asarray(M)), torch.ravel(torch.from_numpy(M)), view=True)


def test_index_put_inplace_writes_through_a_view_with_gradient():
    results = []
    for lib in (torch, ak):
        leaf = torch.from_numpy(M.copy()) if lib is torch else ak.asarray(M)
        leaf.requires_grad_()
        base = leaf * 1
        view = base[1:]
        src = (torch.from_numpy(V[:2].copy()) if lib is torch else ak.asarray(V[:2])).requires_grad_()
        index = (lib.tensor([0, 0]), lib.tensor([3, 3]))
        assert view.index_put_(index, src, accumulate=True) is view
        (base * base).sum().backward()
        results.append((base.detach().numpy(), leaf.grad.numpy(), src.grad.numpy()))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_shape_errors_name_the_values():
    a = ak.asarray(M)
    with pytest.raises(RuntimeError, match="size of the dimension 4 is not divisible by the "
                                           "split_size 3"):
        ak.hsplit(a, 3)
    with pytest.raises(RuntimeError, match="at least 3 dimensions, but got a tensor with 2"):
        ak.dsplit(a, 2)
    with pytest.raises(RuntimeError, match=r"sum exactly to 4 .* split_sizes=\[1, 2\]"):
        ak.split_with_sizes(a, [1, 2], 1)
    with pytest.raises(RuntimeError, match=r"expected src to have a size equal to the slice of "
                                           r"self, \(4,\), got \(3,\)"):
        ak.select_scatter(a, ak.asarray(V), 0, 0)
    with pytest.raises(RuntimeError, match=r"must be in range \[-12, 11\] for shape \(3, 4\), "
                                           r"got values in \[0, 12\]"):
        ak.unravel_index(ak.asarray([0, 12]), (3, 4))
    with pytest.raises(RuntimeError, match="mv: size mismatch"):
        ak.mv(ak.asarray(M), ak.asarray(V))
    with pytest.raises(RuntimeError, match="Input has 3 dimensions"):
        ak.block_diag(ak.asarray(B3))


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "bartlett_window",
                                  "blackman_window", "kaiser_window"])
def test_windows_against_torch(name):
    for length in (0, 1, 2, 7, 16):
        for periodic in (True, False):
            got = getattr(ak, name)(length, periodic)
            want = getattr(torch, name)(length, periodic)
            same(got, want)
    same(getattr(ak, name)(5, dtype=ak.float64), getattr(torch, name)(5, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="floating point dtypes"):
        getattr(ak, name)(5, dtype=ak.int64)


def test_creation_against_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch.range's deprecation
        for args in ((0, 1, 0.25), (0, 5), (-2, 3), (3, 0, -1)):
            same(ak.range(*args), torch.range(*args))
    same(ak.scalar_tensor(3), torch.scalar_tensor(3))
    same(ak.scalar_tensor(2, dtype=ak.int32), torch.scalar_tensor(2, dtype=torch.int32))
    assert ak.scalar_tensor(1.5, requires_grad=True).requires_grad
    check(lambda lib, re, im: (lib.complex(re, im), lib.polar(re.abs(), im)), M, M[::-1].copy())
    for a, b in (("uint8", "int8"), ("float16", "float32"), ("int32", "int64"),
                 ("bool", "uint8"), ("float32", "complex64")):  # within a kind: torch's
        got = ak.promote_types(getattr(ak, a), getattr(ak, b))
        assert got.name == str(torch.promote_types(getattr(torch, a), getattr(torch, b)))[6:]
    # across kinds arraykit promotes as NumPy (docs/pytorch.md): int32 with float32 is float64
    assert ak.promote_types(ak.int32, ak.float32) is ak.result_type(ak.int32, ak.float32)
    with pytest.raises(RuntimeError, match="one dtype, got arraykit.float32 and arraykit.float64"):
        ak.complex(ak.asarray(M), ak.asarray(M, dtype=ak.float64))
