"""PyTorch's namespace functions on arraykit (issue 25 item 2), against PyTorch itself.

Each case ``case(lib, *tensors)`` runs with ``lib = torch`` on torch tensors and with
``lib = arraykit`` on arraykit tensors holding the same values. Results must agree
in type, shape, dtype and values (named tuples field by field), in strides and
storage offset where PyTorch documents a view, and in the gradients of a weighted
sum of the results (inputs chosen with ties and kinks where the function has them).
PyTorch is a test-only oracle.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import arraykit as ak

RNG = np.random.default_rng(0)
M = np.array([[3.0, -1.0, 2.0, 0.5], [0.5, 5.0, -4.0, 2.0], [1.0, 1.0, -2.0, 0.0]], np.float32)
TIES = np.array([[1.0, 3.0, 3.0, 2.0, 1.0], [2.0, 2.0, 5.0, 5.0, 0.0]], np.float32)
V = np.array([1.0, -2.0, 0.5], np.float32)
W = np.array([0.25, 4.0, -1.5], np.float32)
B3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
C3 = RNG.standard_normal((2, 4, 2)).astype(np.float32)
SQ = RNG.standard_normal((3, 3)).astype(np.float32)
I = np.array([[3, -1, 2], [0, 5, -4]], np.int64)
POS = np.array([0.25, 1.5, 3.0, 0.75], np.float32)
UNIT = np.array([-0.9, -0.2, 0.0, 0.5, 0.95], np.float32)
COUNTS = np.array([0, 2, 2, 5, 1, 2], np.int64)
NANS = np.array([[1.0, np.nan, 2.0, 0.0], [np.nan, np.nan, 3.0, -1.0]], np.float32)


def to_torch(a, grad):
    t = torch.from_numpy(np.array(a))
    return t.requires_grad_() if grad and t.is_floating_point() else t


def to_ak(a, grad):
    x = ak.asarray(np.array(a))
    return x.requires_grad_() if grad and x.dtype.kind == "float" else x


def values(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().numpy()
    return np.asarray(t.numpy())


def same(got, want, view=False, rtol=1e-5):
    """``got`` (arraykit) matches ``want`` (torch) in type, shape, dtype, values (and
    strides and offset with ``view``); tuples element by element."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (got, want)
        if hasattr(want, "_fields"):
            assert got._fields == want._fields
        for g, w in zip(got, want):
            same(g, w, view, rtol)
        return
    if not isinstance(want, torch.Tensor):
        assert type(got) is type(want) and got == want, (got, want)
        return
    assert isinstance(got, ak.Tensor), type(got)
    assert got.shape == tuple(want.shape), (got.shape, want.shape)
    assert got.dtype.name == str(want.dtype).removeprefix("torch."), (got.dtype, want.dtype)
    np.testing.assert_allclose(values(got), values(want), rtol=rtol, atol=1e-5)
    if view and want.numel():  # (an empty view's offset carries no meaning)
        assert got.stride() == want.stride() and got.storage_offset() == want.storage_offset()


def _float_outputs(result):
    if isinstance(result, (tuple, list)):
        return [r for item in result for r in _float_outputs(item)]
    if isinstance(result, (torch.Tensor, ak.Tensor)) and result.dtype in (
            torch.float32, torch.float64, ak.float32, ak.float64):
        return [result]
    return []


def check(case, *arrays, view=False, grad=True, rtol=1e-5):
    """Run ``case`` on both libraries and compare results and gradients."""
    ts = [to_torch(a, grad) for a in arrays]
    xs = [to_ak(a, grad) for a in arrays]
    want = case(torch, *ts)
    got = case(ak, *xs)
    same(got, want, view, rtol)
    if not grad:
        return
    outs_t, outs_x = _float_outputs(want), _float_outputs(got)
    outs_t = [o for o in outs_t if o.requires_grad]
    if not outs_t:
        return
    weights = [RNG.standard_normal(o.shape).astype(np.float32) for o in outs_t]
    sum(((o * torch.from_numpy(w).to(o.dtype)).sum() for o, w in zip(outs_t, weights))).backward()
    outs_x = [o for o in outs_x if o.requires_grad]
    sum(((o * ak.asarray(w).to(o.dtype)).sum() for o, w in zip(outs_x, weights))).backward()
    for t, x in zip(ts, xs):
        if t.requires_grad:
            if t.grad is None:
                assert x.grad is None or not np.any(x.grad.numpy())
            else:
                want = t.grad.numpy(force=True)  # (force: PyTorch's ZeroTensor gradients)
                np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- shapes

VIEWS = {
    "flatten": (lambda lib, x: lib.flatten(x), B3),
    "flatten range": (lambda lib, x: lib.flatten(x, 1, 2), B3),
    "unflatten": (lambda lib, x: lib.unflatten(x, 1, (2, 2)), M),
    "unflatten -1": (lambda lib, x: lib.unflatten(x, -1, (-1, 2)), M),
    "unsqueeze": (lambda lib, x: lib.unsqueeze(x, -1), M),
    "permute": (lambda lib, x: lib.permute(x, (2, 0, 1)), B3),
    "transpose": (lambda lib, x: lib.transpose(x, 0, -1), B3),
    "movedim": (lambda lib, x: lib.movedim(x, 0, -1), B3),
    "swapaxes": (lambda lib, x: lib.swapaxes(x, 0, 1), M),
    "narrow": (lambda lib, x: lib.narrow(x, 1, 1, 2), M),
    "narrow negative": (lambda lib, x: lib.narrow(x, -1, -3, 2), M),
    "select": (lambda lib, x: lib.select(x, 1, -1), M),
    "chunk": (lambda lib, x: lib.chunk(x, 3, 1), M),
    "split size": (lambda lib, x: lib.split(x, 3, 1), M),
    "split sizes": (lambda lib, x: lib.split(x, [1, 3], dim=1), M),
    "tensor_split sections": (lambda lib, x: lib.tensor_split(x, 3, dim=1), M),
    "tensor_split indices": (lambda lib, x: lib.tensor_split(x, [1, -1, 10], dim=1), M),
    "unbind": (lambda lib, x: lib.unbind(x, 1), M),
    "broadcast_tensors": (lambda lib, x, y: lib.broadcast_tensors(x, y), V, M[:, :1]),
    "atleast_1d": (lambda lib, x: lib.atleast_1d(x[0, 0]), M),
    "atleast_2d": (lambda lib, x: lib.atleast_2d(x[0]), M),
    "atleast_3d 1d": (lambda lib, x: lib.atleast_3d(x[0]), M),
    "atleast_3d 2d": (lambda lib, x: lib.atleast_3d(x), M),
    "atleast_2d many": (lambda lib, x, y: lib.atleast_2d(x, y[0, 0]), V, M),
    "atleast_1d list": (lambda lib, x, y: lib.atleast_1d([x, y]), V, M),
    "diagonal": (lambda lib, x: lib.diagonal(x, 1), M),
    "diagonal dims": (lambda lib, x: lib.diagonal(x, -1, 0, 2), B3),
    "as_strided": (lambda lib, x: lib.as_strided(x, (2, 2), (1, 2), 1), M),
    "rot90": (lambda lib, x: lib.rot90(x), M),
    "rot90 k=-1": (lambda lib, x: lib.rot90(x, -1, (1, 0)), M),
    "rot90 k=2": (lambda lib, x: lib.rot90(x, 2, [0, 2]), B3),
}


@pytest.mark.parametrize("name", VIEWS)
def test_views(name):
    case, *arrays = VIEWS[name]
    check(case, *arrays, view=True)


COPIES = {
    "cat": (lambda lib, x, y: lib.cat([x, y]), M, M[:1]),
    "cat dim": (lambda lib, x, y: lib.cat((x, y), 1), M, M[:, :2]),
    "cat negative dim": (lambda lib, x, y: lib.cat((x, y), dim=-1), M, M[:, :1]),
    "cat promotes": (lambda lib, x, y: lib.cat((x, y.to(lib.float64))), M, M),
    "concatenate axis": (lambda lib, x, y: lib.concatenate((x, y), 1), M, M),
    "take_along_dim": (lambda lib, x: lib.take_along_dim(x, lib.argsort(x, dim=1), 1), M),
    "take_along_dim broadcast": (lambda lib, x: lib.take_along_dim(
        x, lib.tensor([[0], [2], [3]]), 1), M),
    "take_along_dim flat": (lambda lib, x: lib.take_along_dim(x, lib.tensor([0, 5, 11])), M),
    "repeat_interleave int": (lambda lib, x: lib.repeat_interleave(x, 2, dim=0), M),
    "repeat_interleave flat": (lambda lib, x: lib.repeat_interleave(x, 2), M),
    "repeat_interleave tensor": (lambda lib, x: lib.repeat_interleave(
        x, lib.tensor([1, 0, 2]), dim=0), M),
    "repeat_interleave counts": (lambda lib, x: lib.repeat_interleave(lib.tensor([2, 0, 3])), M),
    "fliplr": (lambda lib, x: lib.fliplr(x), M),
    "flipud": (lambda lib, x: lib.flipud(x), M),
    "diag of vector": (lambda lib, x: lib.diag(x), V),
    "diag of vector offset": (lambda lib, x: lib.diag(x, -1), V),
    "diag of matrix": (lambda lib, x: lib.diag(x, 1), M),
    "diag_embed": (lambda lib, x: lib.diag_embed(x), M),
    "diag_embed offset dims": (lambda lib, x: lib.diag_embed(x, 1, 0, 2), M),
    "diag_embed negative offset": (lambda lib, x: lib.diag_embed(x, -2), M),
    "tril_indices": (lambda lib: lib.tril_indices(3, 4, 1),),
    "triu_indices": (lambda lib: lib.triu_indices(4, 3, -1),),
    "logspace": (lambda lib: lib.logspace(-2, 2, 5),),
    "logspace base dtype": (lambda lib: lib.logspace(0, 3, 4, base=2.0, dtype=lib.float64),),
    "numel": (lambda lib, x: lib.numel(x), B3),
    "is_tensor": (lambda lib, x: (lib.is_tensor(x), lib.is_tensor(3)), M),
    "is_floating_point": (lambda lib, x, i: (lib.is_floating_point(x),
                                             lib.is_floating_point(i)), M, I),
}


@pytest.mark.parametrize("name", COPIES)
def test_copies(name):
    case, *arrays = COPIES[name]
    check(case, *arrays)


def test_aliases_are_the_array_api_functions():
    assert ak.movedim is ak.moveaxis
    assert ak.broadcast_tensors is ak.broadcast_arrays
    assert ak.as_tensor is ak.asarray
    assert ak.true_divide is ak.divide
    assert ak.softmax is ak.nn.functional.softmax and ak.relu is ak.nn.functional.relu
    assert ak.sigmoid is ak.nn.functional.sigmoid
    assert ak.log_softmax is ak.nn.functional.log_softmax
    assert ak.logsumexp is ak.nn.functional.logsumexp


def test_dtype_aliases():
    pairs = {"long": "int64", "int": "int32", "float": "float32", "double": "float64",
             "half": "float16", "cfloat": "complex64", "cdouble": "complex128",
             "short": "int16"}
    for alias, name in pairs.items():
        assert getattr(ak, alias) is getattr(ak, name)
        assert str(getattr(torch, alias)) == f"torch.{name}"
    assert ak.zeros(2, dtype=ak.long).dtype is ak.int64
    assert int("3") == 3 and float("2.5") == 2.5  # the builtins are untouched here
    import arraykit.api.creation as creation
    assert creation.__dict__.get("int") is None and creation.__dict__.get("float") is None


def test_as_tensor_shares_memory():
    x = ak.arange(4.0)
    assert ak.as_tensor(x) is x
    assert ak.as_tensor(x, dtype=ak.float64).dtype is ak.float64
    a = np.arange(3.0)
    assert ak.as_tensor(a).tolist() == [0.0, 1.0, 2.0]


SHAPE_ERRORS = {
    "cat shapes": lambda lib, x: lib.cat([x, x[:, :2]]),
    "cat dim": lambda lib, x: lib.cat([x, x], 2),
    "flatten dim": lambda lib, x: lib.flatten(x, 3),
    "unflatten sizes": lambda lib, x: lib.unflatten(x, 1, (3, 2)),
    "narrow range": lambda lib, x: lib.narrow(x, 1, 3, 2),
    "select index": lambda lib, x: lib.select(x, 0, 3),
    "split sizes": lambda lib, x: lib.split(x, [1, 1], 1),
    "chunk zero": lambda lib, x: lib.chunk(x, 0),
    "rot90 dims": lambda lib, x: lib.rot90(x, 1, (0, 0)),
    "diag 3d": lambda lib, x: lib.diag(x[None]),
    "fliplr 1d": lambda lib, x: lib.fliplr(x[0]),
    "take_along_dim ndim": lambda lib, x: lib.take_along_dim(x, lib.tensor([0]), 1),
    "tensor_split 0d": lambda lib, x: lib.tensor_split(x[0, 0], 2),
}


@pytest.mark.parametrize("name", SHAPE_ERRORS)
def test_shape_errors(name):
    with pytest.raises((RuntimeError, IndexError, ValueError, TypeError)) as want:
        SHAPE_ERRORS[name](torch, torch.from_numpy(M))
    with pytest.raises((RuntimeError, IndexError, ValueError, TypeError)) as got:
        SHAPE_ERRORS[name](ak, ak.asarray(M))
    if want.type is IndexError:
        assert got.type is IndexError


# ----------------------------------------------------------------------------- products


PRODUCTS = {
    "einsum": (lambda lib, a, b: lib.einsum("bij,bjk->bik", a, b), B3, C3),
    "einsum list": (lambda lib, a, b: lib.einsum("i,j->ij", [a, b]), V, W),
    "einsum ellipsis": (lambda lib, a: lib.einsum("...ij->...ji", a), B3),
    "einsum trace": (lambda lib, a: lib.einsum("ii", a), SQ),
    "outer": (lambda lib, a, b: lib.outer(a, b), V, W),
    "mm": (lambda lib, a, b: lib.mm(a, b), M, M.T.copy()),
    "bmm": (lambda lib, a, b: lib.bmm(a, b), B3, C3),
    "addmm": (lambda lib, c, a, b: lib.addmm(c, a, b), SQ, M[:, :2], M[:2, :3]),
    "addmm scaled": (lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=2.0),
                     V, M[:, :2], M[:2, :3]),
    "baddbmm": (lambda lib, c, a, b: lib.baddbmm(c, a, b, alpha=-1.0), np.ones((2, 3, 2), np.float32),
                B3, C3),
    "cross": (lambda lib, a, b: lib.cross(a, b, dim=1), M[:, :3], SQ),
    "cross default dim": (lambda lib, a, b: lib.cross(a, b), SQ.T.copy(), SQ),
    "kron": (lambda lib, a, b: lib.kron(a, b), SQ[:2, :2], M),
    "cdist": (lambda lib, a, b: lib.cdist(a, b), M, np.concatenate([M[:1], SQ[:, :1].repeat(4, 1)])),
    "cdist p=1": (lambda lib, a, b: lib.cdist(a, b, p=1.0), B3, B3[:, :2] + 1),
    "cdist p=inf": (lambda lib, a, b: lib.cdist(a, b, p=math.inf), B3, B3[:, :2] * 2),
    "dist": (lambda lib, a, b: lib.dist(a, b), M, M[:1]),
    "dist p=3": (lambda lib, a, b: lib.dist(a, b, 3), V, W),
    "dist zero": (lambda lib, a: lib.dist(a, a), V),
    "norm": (lambda lib, a: lib.norm(a), M),
    "norm dim": (lambda lib, a: lib.norm(a, dim=1, keepdim=True), M),
    "norm p": (lambda lib, a: lib.norm(a, 1, dim=(0, 1)), B3),
    "norm inf ties": (lambda lib, a: lib.norm(a, math.inf, dim=1), TIES),
    "norm nuc": (lambda lib, a: lib.norm(a, "nuc"), SQ),
    "norm zero": (lambda lib, a: lib.norm(a * 0), M),
    "renorm": (lambda lib, a: lib.renorm(a, 2, 0, 3.0), M),
    "renorm p=1 dim=1": (lambda lib, a: lib.renorm(a, 1, 1, 2.5), M),
    "trace": (lambda lib, a: lib.trace(a), M),
    "trace int": (lambda lib, a: lib.trace(a.to(lib.int32)), M),
}


@pytest.mark.parametrize("name", PRODUCTS)
def test_products(name):
    case, *arrays = PRODUCTS[name]
    check(case, *arrays, rtol=1e-4)


# ----------------------------------------------------------------------------- reductions

REDUCTIONS = {
    "cumsum": (lambda lib, a: lib.cumsum(a, 1), M),
    "cumsum int": (lambda lib, a: lib.cumsum(a.to(lib.int32), 0), M),
    "cumsum bool": (lambda lib, a: lib.cumsum(a > 0, 1), M),
    "cumsum dtype": (lambda lib, a: lib.cumsum(a, 0, dtype=lib.float64), M),
    "cumprod": (lambda lib, a: lib.cumprod(a, -1), M),
    "cummax": (lambda lib, a: lib.cummax(a, 1), TIES),
    "cummin": (lambda lib, a: lib.cummin(a, 1), TIES),
    "cummax dim 0": (lambda lib, a: lib.cummax(a, 0), M),
    "cummax nan": (lambda lib, a: lib.cummax(a, 1), NANS),
    "cummin int": (lambda lib, a: lib.cummin(a, 1), I),
    "logcumsumexp": (lambda lib, a: lib.logcumsumexp(a, 1), M),
    "amax": (lambda lib, a: lib.amax(a), TIES),
    "amax dims": (lambda lib, a: lib.amax(a, (0, 1), keepdim=True), B3),
    "amax dim ties": (lambda lib, a: lib.amax(a, 1), TIES),
    "amin dim ties": (lambda lib, a: lib.amin(a, -1, True), TIES),
    "aminmax": (lambda lib, a: lib.aminmax(a), M),
    "aminmax dim": (lambda lib, a: lib.aminmax(a, dim=1, keepdim=True), I),
    "median": (lambda lib, a: lib.median(a), M),
    "median ties": (lambda lib, a: lib.median(a), TIES),
    "median nan": (lambda lib, a: lib.median(a), NANS),
    "median dim": (lambda lib, a: lib.median(a, 1), M),
    "median dim keepdim": (lambda lib, a: lib.median(a, 0, keepdim=True), M),
    "median int": (lambda lib, a: lib.median(a, 1), I),
    "nanmedian": (lambda lib, a: lib.nanmedian(a), NANS),
    "nanmedian dim": (lambda lib, a: lib.nanmedian(a, 1), NANS[:, 1:]),
    "mode": (lambda lib, a: lib.mode(a, 1), TIES),
    "mode keepdim": (lambda lib, a: lib.mode(a, 0, True), TIES[:, :2]),
    "kthvalue": (lambda lib, a: lib.kthvalue(a, 2, 1), M),
    "kthvalue keepdim": (lambda lib, a: lib.kthvalue(a, 3, 0, True), M),
    "quantile": (lambda lib, a: lib.quantile(a, 0.3), M),
    "quantile dim": (lambda lib, a: lib.quantile(a, 0.75, dim=1, keepdim=True), M),
    "quantile tensor q": (lambda lib, a: lib.quantile(a, lib.tensor([0.1, 0.5, 1.0]), dim=0), M),
    "quantile lower": (lambda lib, a: lib.quantile(a, 0.4, 1, interpolation="lower"), M),
    "quantile midpoint": (lambda lib, a: lib.quantile(a, 0.4, 1, interpolation="midpoint"), M),
    "quantile nearest": (lambda lib, a: lib.quantile(a, 0.4, 1, interpolation="nearest"), M),
    "quantile higher": (lambda lib, a: lib.quantile(a, 0.4, 1, interpolation="higher"), M),
    "quantile nan": (lambda lib, a: lib.quantile(a, 0.5, 1), NANS),
    "nanquantile": (lambda lib, a: lib.nanquantile(a, 0.5, 1), NANS[:, 2:]),
    "std_mean": (lambda lib, a: lib.std_mean(a), M),
    "std_mean dim": (lambda lib, a: lib.std_mean(a, 1, keepdim=True), M),
    "var_mean correction": (lambda lib, a: lib.var_mean(a, 0, correction=0), M),
    "var_mean unbiased": (lambda lib, a: lib.var_mean(a, [0, 1], False), B3),
    "logsumexp": (lambda lib, a: lib.logsumexp(a, 1), M),
    "bincount": (lambda lib, a: lib.bincount(a), COUNTS),
    "bincount minlength": (lambda lib, a: lib.bincount(a, minlength=9), COUNTS),
    "bincount weights": (lambda lib, a, w: lib.bincount(a, w), COUNTS,
                         np.linspace(0, 1, 6).astype(np.float32)),
    "bincount int weights": (lambda lib, a: lib.bincount(a, a), COUNTS),
    "histc": (lambda lib, a: lib.histc(a, 4), M),
    "histc range": (lambda lib, a: lib.histc(a, 5, min=-1, max=3), M),
    "bucketize": (lambda lib, a: lib.bucketize(a, lib.tensor([-1.0, 0.5, 2.0])), M),
    "bucketize right int32": (lambda lib, a: lib.bucketize(
        a, lib.tensor([-1.0, 0.5, 2.0]), right=True, out_int32=True), M),
    "unique_consecutive": (lambda lib, a: lib.unique_consecutive(a), COUNTS),
    "unique_consecutive all": (lambda lib, a: lib.unique_consecutive(
        a, return_inverse=True, return_counts=True), COUNTS),
    "unique_consecutive dim": (lambda lib, a: lib.unique_consecutive(
        a, return_counts=True, dim=1), TIES),
}


# PyTorch has no derivative for these, or NaN gradients where arraykit's are 0.
NO_GRADIENT_CHECK = {"bincount weights", "unique_consecutive dim", "quantile nan", "digamma zero"}


def _torch_differentiates_aminmax():
    x = torch.ones(2, requires_grad=True)
    try:
        torch.aminmax(x).min.backward()
    except RuntimeError as e:
        if "derivative for aten::aminmax is not implemented" in str(e):  # PyTorch 2.11
            return False
        raise
    return True


# The names of the cases that call aminmax on a float tensor, when this PyTorch
# cannot differentiate aminmax: their values are compared, their gradients not.
NO_TORCH_AMINMAX_GRADIENT = set() if _torch_differentiates_aminmax() else {"aminmax"}
NO_TORCH_AMINMAX_GRADIENT_REASON = "gradient not compared: this PyTorch has no derivative for aten::aminmax"


def check_unless_torch_lacks_the_gradient(name, case, arrays, grad):
    """:func:`check` with ``rtol=1e-5``; a case whose gradient this PyTorch cannot take
    has its values compared, then is skipped with the reason."""
    no_torch_gradient = name in NO_TORCH_AMINMAX_GRADIENT
    check(case, *arrays, rtol=1e-5, grad=grad and not no_torch_gradient)
    if no_torch_gradient:
        pytest.skip(NO_TORCH_AMINMAX_GRADIENT_REASON)


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions(name):
    case, *arrays = REDUCTIONS[name]
    check_unless_torch_lacks_the_gradient(name, case, arrays, name not in NO_GRADIENT_CHECK)


def test_median_and_kthvalue_indices_name_their_values():
    x = ak.asarray(TIES)
    for result in (ak.median(x, 1), ak.kthvalue(x, 2, 1), ak.mode(x, 1)):
        assert ak.all(ak.take_along_dim(x, result.indices[:, None], 1)[:, 0] == result.values)


REDUCTION_ERRORS = {
    "cummax dim": lambda lib, a: lib.cummax(a, 2),
    "kthvalue k": lambda lib, a: lib.kthvalue(a, 5, 1),
    "quantile q": lambda lib, a: lib.quantile(a, 1.5),
    "quantile int": lambda lib, a: lib.quantile(a.to(lib.int64), 0.5),
    "quantile interpolation": lambda lib, a: lib.quantile(a, 0.5, interpolation="cubic"),
    "median dim": lambda lib, a: lib.median(a, 3),
    "bincount 2d": lambda lib, a: lib.bincount(a.to(lib.int64)),
    "bincount negative": lambda lib, a: lib.bincount(a[0].to(lib.int64)),
    "histc int": lambda lib, a: lib.histc(a.to(lib.int64)),
    "histc range": lambda lib, a: lib.histc(a, min=2, max=1),
}


@pytest.mark.parametrize("name", REDUCTION_ERRORS)
def test_reduction_errors(name):
    with pytest.raises((RuntimeError, IndexError, NotImplementedError)) as want:
        REDUCTION_ERRORS[name](torch, torch.from_numpy(M))
    with pytest.raises((RuntimeError, IndexError)) as got:
        REDUCTION_ERRORS[name](ak, ak.asarray(M))
    assert got.type is (RuntimeError if want.type is NotImplementedError else want.type)


# ----------------------------------------------------------------------------- element-wise

POINTWISE = {
    "rsqrt": (lambda lib, a: lib.rsqrt(a), POS),
    "rsqrt int": (lambda lib, a: lib.rsqrt(a.to(lib.int64) + 1), POS),
    "erf": (lambda lib, a: lib.erf(a), M),
    "erfc": (lambda lib, a: lib.erfc(a), M),
    "erfinv": (lambda lib, a: lib.erfinv(a), UNIT),
    "lgamma": (lambda lib, a: lib.lgamma(a), POS),
    "digamma": (lambda lib, a: lib.digamma(a), POS),
    "digamma zero": (lambda lib, a: lib.digamma(a * 0), POS),
    "xlogy": (lambda lib, a, b: lib.xlogy(a, b), np.array([0.0, 1.0, 2.0, 0.0], np.float32), POS),
    "xlogy scalar": (lambda lib, a: lib.xlogy(2.0, a), POS),
    "xlogy int": (lambda lib, a: lib.xlogy(a.to(lib.int64), 3), POS),
    "sgn": (lambda lib, a: lib.sgn(a), M),
    "sgn complex": (lambda lib, a: lib.sgn(a.to(lib.complex64) * 1j + 1), M),
    "frexp": (lambda lib, a: lib.frexp(a), M),
    "ldexp": (lambda lib, a: lib.ldexp(a, lib.tensor([1, 2, 0, 3])), M),
    "float_power": (lambda lib, a: lib.float_power(a, 2), M),
    "float_power tensors": (lambda lib, a, b: lib.float_power(a, b), POS, POS[::-1].copy()),
    "true_divide": (lambda lib, a, b: lib.true_divide(a, b), M, M[:1] + 10),
    "fmod": (lambda lib, a: lib.fmod(a, 1.5), M),
    "fmod negative divisor": (lambda lib, a, b: lib.fmod(a, b), M, -POS),
    "fmod int": (lambda lib, a: lib.fmod(a, 3), I),
    "nan_to_num": (lambda lib, a: lib.nan_to_num(a / 0.0), M),
    "nan_to_num values": (lambda lib, a: lib.nan_to_num(a / 0.0, 1.0, 2.0, -3.0), M),
    "nan_to_num grad": (lambda lib, a: lib.nan_to_num(lib.log(a)), M),
    "isclose": (lambda lib, a, b: lib.isclose(a, b, rtol=0.1), M, M + 0.2),
    "allclose": (lambda lib, a, b: lib.allclose(a, b, atol=0.3), M, M + 0.2),
    "lerp scalar": (lambda lib, a, b: lib.lerp(a, b, 0.3), M, M[::-1].copy()),
    "lerp high weight": (lambda lib, a, b: lib.lerp(a, b, 0.8), M, M[::-1].copy()),
    "lerp tensor weight": (lambda lib, a, b, w: lib.lerp(a, b, w), M[0], M[1], POS / 3),
    "clamp": (lambda lib, a: lib.clamp(a, -1, 2), M),
    "clamp ties": (lambda lib, a: lib.clamp(a, min=1.0), TIES),
    "clamp tensor bounds": (lambda lib, a, lo: lib.clamp(a, lo), M, M[:1]),
    "sigmoid": (lambda lib, a: lib.sigmoid(a), M),
    "relu kink": (lambda lib, a: lib.relu(a), M),
    "softmax": (lambda lib, a: lib.softmax(a, 1), M),
    "log_softmax": (lambda lib, a: lib.log_softmax(a, 0), M),
}


@pytest.mark.parametrize("name", POINTWISE)
def test_pointwise(name):
    case, *arrays = POINTWISE[name]
    check(case, *arrays, rtol=1e-5, grad=name not in NO_GRADIENT_CHECK)


@pytest.mark.parametrize("make", [
    lambda lib, a: lib.lerp(a, a.to(lib.float64), 0.5),
    lambda lib, a: lib.clamp(a),
    lambda lib, a: lib.frexp(a.to(lib.int64)),
    lambda lib, a: lib.frac(a.to(lib.int64)),
])
def test_pointwise_errors(make):
    with pytest.raises(RuntimeError):
        make(torch, torch.from_numpy(M))
    with pytest.raises(RuntimeError):
        make(ak, ak.asarray(M))


# ----------------------------------------------------------------------------- indexing

INDEXING = {
    "scatter_reduce sum": (lambda lib, a, s: lib.scatter_reduce(
        a, 1, lib.tensor([[0, 0, 2], [1, 1, 1], [3, 0, 0]]), s, "sum"), M, SQ),
    "scatter_reduce mean": (lambda lib, a, s: lib.scatter_reduce(
        a, 1, lib.tensor([[0, 0, 2], [1, 1, 1], [3, 0, 0]]), s, "mean"), M, SQ),
    "scatter_reduce mean excluding self": (lambda lib, a, s: lib.scatter_reduce(
        a, 0, lib.tensor([[0, 0, 2], [1, 0, 1]]), s, "mean", include_self=False), M, SQ[:2]),
    "scatter_reduce amax": (lambda lib, a, s: lib.scatter_reduce(
        a, 1, lib.tensor([[0, 0, 2], [1, 1, 1]]), s, "amax"), M, SQ[:2]),
    "scatter_reduce amin excluding self": (lambda lib, a, s: lib.scatter_reduce(
        a, 1, lib.tensor([[0, 0, 2], [1, 1, 1]]), s, "amin", include_self=False), M, SQ[:2]),
    "scatter_reduce amax ties": (lambda lib, a, s: lib.scatter_reduce(
        a, 1, lib.tensor([[1, 2, 2]]), s, "amax"), TIES, TIES[:1, 1:4]),
    "scatter_reduce prod int": (lambda lib, a: lib.scatter_reduce(
        a, 1, lib.tensor([[0, 0, 2], [1, 1, 1]]), a, "prod"), I),
    "index_reduce mean": (lambda lib, a, s: lib.index_reduce(
        a, 0, lib.tensor([0, 2, 0]), s, "mean"), M, M[::-1].copy()),
    "index_reduce amax": (lambda lib, a, s: lib.index_reduce(
        a, 1, lib.tensor([3, 3, 0]), s, "amax", include_self=False), M, SQ),
    "index_fill": (lambda lib, a: lib.index_fill(a, 1, lib.tensor([0, 2]), -1.0), M),
    "masked_scatter": (lambda lib, a, s: lib.masked_scatter(a, a > 0.7, s), M, B3),
    "masked_scatter broadcast": (lambda lib, a, s: lib.masked_scatter(
        a, lib.tensor([True, False, True, False]), s), M, B3),
}


@pytest.mark.parametrize("name", INDEXING)
def test_indexing(name):
    case, *arrays = INDEXING[name]
    check(case, *arrays)


def test_masked_scatter_needs_enough_source():
    x = ak.zeros((2, 3))
    with pytest.raises(RuntimeError):
        ak.masked_scatter(x, x == 0, ak.ones(5))
    with pytest.raises(RuntimeError):
        torch.zeros(2, 3).masked_scatter(torch.ones(2, 3) == 1, torch.ones(5))


# ----------------------------------------------------------------------------- out=, random, jit

OUT = {
    "cat": (lambda lib, a, out: lib.cat([a, a], out=out), (6, 4)),
    "outer": (lambda lib, a, out: lib.outer(a[0], a[1], out=out), (4, 4)),
    "bmm": (lambda lib, a, out: lib.bmm(a[None], a.T[None], out=out), (1, 3, 3)),
    "cumsum": (lambda lib, a, out: lib.cumsum(a, 0, out=out), (3, 4)),
    "amax": (lambda lib, a, out: lib.amax(a, 1, out=out), (3,)),
    "rsqrt": (lambda lib, a, out: lib.rsqrt(a.abs() + 1, out=out), (3, 4)),
    "diag": (lambda lib, a, out: lib.diag(a, out=out), (3,)),
    "quantile": (lambda lib, a, out: lib.quantile(a, 0.5, 1, out=out), (3,)),
}


@pytest.mark.parametrize("name", OUT)
def test_out(name):
    case, shape = OUT[name]
    t_out, x_out = torch.empty(shape), ak.empty(shape)
    want = case(torch, torch.from_numpy(M), t_out)
    got = case(ak, ak.asarray(M), x_out)
    assert got is x_out and want is t_out
    same(x_out, t_out)


def test_out_of_a_wrong_shape_raises():  # (PyTorch resizes it, with a warning)
    out = ak.zeros(2)
    with pytest.raises(RuntimeError):
        ak.amax(ak.asarray(M), 1, out=out)
    assert out.tolist() == [0.0, 0.0]


def test_random_like():
    x = ak.zeros((2, 3), dtype=ak.float64)
    r = ak.rand_like(x)
    assert r.shape == (2, 3) and r.dtype is ak.float64 and ak.all((r >= 0) & (r < 1))
    n = ak.randn_like(x, dtype=ak.float32)
    assert n.shape == (2, 3) and n.dtype is ak.float32
    i = ak.randint_like(x, 5)
    assert i.dtype is ak.float64 and ak.all((i >= 0) & (i < 5) & (i == ak.floor(i)))
    j = ak.randint_like(ak.zeros(100, dtype=ak.int32), 3, 6)
    assert j.dtype is ak.int32 and set(j.tolist()) <= {3, 4, 5}
    ak.manual_seed(1)
    a = ak.rand_like(x)
    ak.manual_seed(1)
    assert ak.all(ak.rand_like(x) == a)


JITTED = {
    "cat flatten": (lambda lib, a: lib.flatten(lib.cat([a, a * 2], 1)), M),
    "cummax": (lambda lib, a: lib.cummax(a, 1).values, TIES),
    "median dim": (lambda lib, a: lib.median(a, 1).values, M),
    "outer rsqrt": (lambda lib, a: lib.outer(lib.rsqrt(a), a), POS),
    "einsum": (lambda lib, a, b: lib.einsum("bij,bjk->bik", a, b), B3, C3),
    "lerp xlogy": (lambda lib, a: lib.xlogy(a, lib.lerp(a, a * 2, 0.25)), POS),
}


@pytest.mark.parametrize("name", JITTED)
def test_under_jit(name):
    case, *arrays = JITTED[name]
    want = case(torch, *(torch.from_numpy(a) for a in arrays))

    @ak.jit
    def step(*xs):
        return case(ak, *xs)

    got = step(*(ak.asarray(a) for a in arrays))
    same(got, want, rtol=1e-5)


def test_sigmoid_and_logsumexp_write_out():
    a = np.array([[0.5, -1.0], [2.0, 0.0]], np.float32)
    out = ak.empty((2, 2))
    assert ak.sigmoid(ak.asarray(a), out=out) is out
    np.testing.assert_allclose(out.numpy(), torch.sigmoid(torch.tensor(a)).numpy(), rtol=1e-6)
    out1 = ak.empty(2)
    assert ak.logsumexp(ak.asarray(a), 1, out=out1) is out1
    np.testing.assert_allclose(out1.numpy(), torch.logsumexp(torch.tensor(a), 1).numpy(), rtol=1e-6)
    with pytest.raises(TypeError):
        ak.sigmoid(ak.asarray(a), out=ak.empty((2, 2), dtype=ak.int64))  # float into int
