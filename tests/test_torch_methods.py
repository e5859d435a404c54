"""PyTorch's Tensor methods on arraykit (issue 25 item 3), against PyTorch itself.

Each case ``case(x, *others)`` calls methods; it runs on torch tensors and on
arraykit tensors holding the same values, and the results (values, dtypes, shapes)
and gradients must agree. The in-place twins are checked for writing into the
tensor itself and for the gradient through the write.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arraykit as ak
from test_torch_namespace import (B3, C3, COUNTS, I, M, POS, SQ, TIES, V, W,
                                  check_unless_torch_lacks_the_gradient)

METHODS = {
    "type_as": (lambda lib, x, i: i.type_as(x), M, I),
    "ndimension": (lambda lib, x: x.ndimension(), B3),
    "is_floating_point": (lambda lib, x, i: (x.is_floating_point(), i.is_floating_point()), M, I),
    "softmax": (lambda lib, x: x.softmax(-1), M),
    "softmax dtype": (lambda lib, x: x.softmax(0, dtype=lib.float64), M),
    "log_softmax": (lambda lib, x: x.log_softmax(1), M),
    "logsumexp": (lambda lib, x: x.logsumexp(1, keepdim=True), M),
    "relu": (lambda lib, x: x.relu(), M),
    "sigmoid": (lambda lib, x: x.sigmoid(), M),
    "sigmoid int": (lambda lib, x: x.sigmoid(), I),
    "amax ties": (lambda lib, x: x.amax(), TIES),
    "amax dim ties": (lambda lib, x: x.amax(dim=1, keepdim=True), TIES),
    "amin ties": (lambda lib, x: x.amin(0), TIES),
    "aminmax": (lambda lib, x: x.aminmax(dim=0), M),
    "erf": (lambda lib, x: x.erf(), M),
    "erfinv": (lambda lib, x: (x / 6).erfinv(), M),
    "rsqrt": (lambda lib, x: x.rsqrt(), POS),
    "lgamma digamma": (lambda lib, x: (x.lgamma(), x.digamma()), POS),
    "lerp": (lambda lib, x, y: x.lerp(y, 0.25), M, M[::-1].copy()),
    "frac": (lambda lib, x: (x * 1.7).frac(), M),
    "sgn fmod xlogy": (lambda lib, x: (x.sgn(), x.fmod(2), x.abs().xlogy(2.0)), M),
    "nan_to_num": (lambda lib, x: (x / 0).nan_to_num(posinf=5.0), M),
    "addcmul": (lambda lib, x, a, b: x.addcmul(a, b, value=0.5), M, M[::-1].copy(), M + 1),
    "addcdiv": (lambda lib, x, a, b: x.addcdiv(a, b, value=-2), M, M[::-1].copy(), M + 10),
    "unique": (lambda lib, x: x.unique(), TIES),
    "unique inverse counts": (lambda lib, x: x.unique(return_inverse=True, return_counts=True),
                              TIES),
    "unique dim": (lambda lib, x: x.unique(dim=1), TIES[:, [0, 1, 0, 4, 1]].copy()),
    "bincount": (lambda lib, x: x.bincount(minlength=7), COUNTS),
    "diff": (lambda lib, x: x.diff(), M),
    "diff n dim": (lambda lib, x: x.diff(2, 0), M),
    "diff prepend": (lambda lib, x, p: x.diff(dim=1, prepend=p), M, M[:, :1]),
    "roll": (lambda lib, x: x.roll(1), M),
    "roll dims": (lambda lib, x: x.roll((1, -1), (0, 1)), M),
    "outer": (lambda lib, x, y: x.outer(y), V, W),
    "bmm": (lambda lib, x, y: x.bmm(y), B3, C3),
    "baddbmm": (lambda lib, x, a, b: x.baddbmm(a, b, beta=2), np.ones((2, 3, 2), np.float32),
                B3, C3),
    "addmm": (lambda lib, x, a, b: x.addmm(a, b), SQ, M[:, :2], M[:2, :3]),
    "where": (lambda lib, x, y: x.where(x > 0, y), M, M[::-1].copy()),
    "where scalar": (lambda lib, x: x.where(x > 0, 0.0), M),
    "cumsum cumprod": (lambda lib, x: (x.cumsum(1), x.cumprod(dim=0)), M),
    "cummax cummin": (lambda lib, x: (x.cummax(1), x.cummin(0)), TIES),
    "median mode kthvalue": (lambda lib, x: (x.median(), x.mode(1), x.kthvalue(1, 0)), M),
    "quantile": (lambda lib, x: x.quantile(0.25, dim=0), M),
    "norm dist renorm": (lambda lib, x, y: (x.norm(), x.dist(y, 1), x.renorm(2, 0, 1.0)), M,
                         M[::-1].copy()),
    "cross kron trace": (lambda lib, x, y: (x.cross(y, 1), x.kron(y), x.trace()), SQ, SQ.T.copy()),
    "shapes": (lambda lib, x: (x.unflatten(1, (2, 2)), x.movedim(1, 0), x.swapaxes(0, 1),
                               x.tensor_split(2, 1), x.chunk(2), x.split([1, 2]),
                               x.unbind(1)), M),
    "flips diag": (lambda lib, x: (x.fliplr(), x.flipud(), x.rot90(), x.diag(), x.diag_embed()),
                   M),
    "take_along_dim repeat_interleave": (lambda lib, x: (
        x.take_along_dim(x.argsort(1), 1), x.repeat_interleave(2, 1)), M),
    "histc": (lambda lib, x: x.histc(bins=4), M),
    "float_power ldexp frexp": (lambda lib, x: (x.float_power(2), x.ldexp(lib.tensor(2)),
                                                x.frexp()), M),
    "logcumsumexp": (lambda lib, x: x.logcumsumexp(0), M),
    "scatter_reduce": (lambda lib, x, s: x.scatter_reduce(
        0, lib.tensor([[0, 1, 2, 0], [2, 2, 1, 0]]), s, "sum", include_self=False), M, M[:2]),
    "index_reduce": (lambda lib, x, s: x.index_reduce(0, lib.tensor([0, 0, 1]), s, "prod"), M,
                     M + 1),
    "index_reduce prod zeros": (lambda lib, x, s: x.index_reduce(
        1, lib.tensor([0, 0, 1, 0]), s, "prod"), M, M * (M > 0.6)),
    "index_fill": (lambda lib, x: x.index_fill(0, lib.tensor([1]), 2.5), M),
    "masked_scatter": (lambda lib, x, s: x.masked_scatter(x < 1, s), M, M[::-1].copy()),
    "index_add alpha": (lambda lib, x, s: x.index_add(1, lib.tensor([0, 0, 3]), s, alpha=2), M,
                        SQ),
    "isclose allclose": (lambda lib, x: (x.isclose(x + 1e-7), x.allclose(x * 2)), M),
}


NO_GRADIENT = {"unique", "unique inverse counts", "unique dim"}  # none in PyTorch either


@pytest.mark.parametrize("name", METHODS)
def test_methods(name):
    case, *arrays = METHODS[name]
    check_unless_torch_lacks_the_gradient(name, case, arrays, name not in NO_GRADIENT)


INPLACE = {
    "lerp_": lambda x, y: x.lerp_(y, 0.3),
    "addcmul_": lambda x, y: x.addcmul_(y, y, value=2),
    "addcdiv_": lambda x, y: x.addcdiv_(y, y + 10),
    "masked_scatter_": lambda x, y: x.masked_scatter_(y > 0, y),
    "scatter_reduce_": lambda x, y: x.scatter_reduce_(1, (y > 0).long(), y, "amax"),
    "index_add_": lambda x, y: x.index_add_(0, torch.tensor([2, 0, 0]) if isinstance(
        x, torch.Tensor) else ak.tensor([2, 0, 0]), y),
    "rsqrt_": lambda x, y: x.abs_().add_(1).rsqrt_(),
    "frac_": lambda x, y: x.frac_(),
    "erf_": lambda x, y: x.erf_(),
    "relu_": lambda x, y: x.relu_(),
    "sigmoid_": lambda x, y: x.sigmoid_(),
    "nan_to_num_": lambda x, y: x.div_(0).nan_to_num_(),
    "cumsum_": lambda x, y: x.cumsum_(1),
}


@pytest.mark.parametrize("name", INPLACE)
def test_inplace(name):
    op = INPLACE[name]
    results = []
    for lib in (torch, ak):
        leaf = (torch.from_numpy(M.copy()) if lib is torch else ak.asarray(M)).requires_grad_()
        y = torch.from_numpy(M[::-1].copy()) if lib is torch else ak.asarray(M[::-1].copy())
        x = leaf * 1.5  # a non-leaf, written in place
        out = op(x, y)
        assert out is x
        (x * x).sum().backward()
        results.append((x.detach().numpy(), leaf.grad.numpy()))
    (want_x, want_grad), (got_x, got_grad) = results
    np.testing.assert_allclose(got_x, want_x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-4, atol=1e-5)


def test_methods_under_jit():
    x = ak.asarray(M)

    @ak.jit
    def step(x):
        return x.softmax(-1).amax(1) + x.rsqrt().nan_to_num().sum(1) + x.relu().type_as(x).erf()[:, 0]

    t = torch.from_numpy(M)
    want = t.softmax(-1).amax(1) + t.rsqrt().nan_to_num().sum(1) + t.relu().type_as(t).erf()[:, 0]
    np.testing.assert_allclose(step(x).numpy(), want.numpy(), rtol=1e-5)
    grads = ak.grad(lambda x: step(x).sum())(ak.asarray(POS.reshape(2, 2)))
    tp = torch.from_numpy(POS.reshape(2, 2)).requires_grad_()
    (tp.softmax(-1).amax(1) + tp.rsqrt().nan_to_num().sum(1)
     + tp.relu().type_as(tp).erf()[:, 0]).sum().backward()
    np.testing.assert_allclose(grads.numpy(), tp.grad.numpy(), rtol=1e-4)


def test_every_issue_method_exists():
    names = """type_as softmax log_softmax relu sigmoid amax amin erf rsqrt lerp lerp_ addcmul_
    addcdiv_ masked_scatter_ scatter_reduce index_add_ index_add index_copy_ index_fill
    index_reduce_ ndimension frac unique bincount diff roll outer bmm baddbmm where
    is_floating_point""".split()
    assert [n for n in names if not callable(getattr(ak.Tensor, n, None))] == []
    assert I.dtype == np.int64 and ak.asarray(I).long().dtype is ak.long
