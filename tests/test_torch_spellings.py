"""PyTorch's spellings on arraykit, against PyTorch itself on the same inputs.

Most cases are one function ``case(lib, x)`` run twice: with ``lib = torch`` on a
torch tensor and with ``lib = arraykit`` on an arraykit tensor holding the same
values. The results must agree in values, dtype and shape, and in strides and
storage offset where the result is a view. Error cases must raise in both.
PyTorch is a test-only oracle.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import arraykit as ak
from arraykit.core import deferred_checks

SETTINGS = settings(max_examples=30, deadline=None)

A = np.array([[3.0, -1.0, 2.0], [0.5, 5.0, -4.0]], np.float32)
I = np.array([[3, -1, 2], [0, 5, -4]], np.int64)


def pair(a):
    """The same values as a torch tensor and an arraykit tensor."""
    return torch.from_numpy(np.array(a)), ak.asarray(np.array(a))


def values(t):
    """Host values of a torch or arraykit tensor (bfloat16 widened to float32)."""
    if isinstance(t, torch.Tensor):
        t = t.detach().resolve_conj()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    return np.asarray(t.numpy(), np.float32 if t.dtype is ak.bfloat16 else None)


def same(got, want, view=False, rtol=1e-6):
    """``got`` (arraykit) matches ``want`` (torch): type, shape, dtype, values; with
    ``view``, also strides and storage offset. Tuples compare element by element."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        if hasattr(want, "_fields"):
            assert got._fields == want._fields
        for g, w in zip(got, want):
            same(g, w, view, rtol)
        return
    if not isinstance(want, torch.Tensor):
        assert type(got) is type(want) and got == want
        return
    assert isinstance(got, ak.Tensor), type(got)
    assert got.shape == tuple(want.shape)
    assert got.dtype.name == str(want.dtype).removeprefix("torch."), (got.dtype, want.dtype)
    np.testing.assert_allclose(values(got), values(want), rtol=rtol, atol=1e-6)
    if view:
        assert got.stride() == want.stride()
        assert got.storage_offset() == want.storage_offset()


def run_both(case, a=A):
    t, x = pair(a)
    want = case(torch, t)
    got = case(ak, x)
    return got, want, t, x


# ----------------------------------------------------------------------------- creation

CREATION = {
    "zeros varargs": lambda lib: lib.zeros(2, 3),
    "zeros tuple": lambda lib: lib.zeros((2, 3)),
    "zeros list": lambda lib: lib.zeros([2, 3]),
    "zeros dtype": lambda lib: lib.zeros(2, 3, dtype=lib.int32),
    "ones varargs": lambda lib: lib.ones(4, 1, 2, dtype=lib.float64),
    "ones one int": lambda lib: lib.ones(5),
    "empty shape": lambda lib: lib.empty(3, 2).shape,
    "full tuple": lambda lib: lib.full((2, 3), 7.5),
    "full int": lambda lib: lib.full((2,), 7),
    "tensor nested": lambda lib: lib.tensor([[1, 2], [3, 4]]),
    "tensor floats": lambda lib: lib.tensor([1.5, 2]),
    "tensor scalar int": lambda lib: lib.tensor(3),
    "tensor scalar float": lambda lib: lib.tensor(2.5),
    "tensor bool": lambda lib: lib.tensor([True, False]),
    "tensor complex": lambda lib: lib.tensor([1j, 2]),
    "tensor empty": lambda lib: lib.tensor([]),
    "tensor numpy": lambda lib: lib.tensor(np.arange(4, dtype=np.int32).reshape(2, 2)),
    "tensor dtype": lambda lib: lib.tensor([1, 2], dtype=lib.float64),
    "tensor bfloat16": lambda lib: lib.tensor([1.5, 2.25], dtype=lib.bfloat16),
    "tensor half": lambda lib: lib.tensor([1.5, 2.25], dtype=lib.float16),
}


@pytest.mark.parametrize("name", CREATION)
def test_creation(name):
    want = CREATION[name](torch)
    got = CREATION[name](ak)
    if isinstance(want, torch.Size):
        assert got == tuple(want)
    else:
        same(got, want, view=True)


@pytest.mark.parametrize("make", [
    lambda lib: lib.zeros((2,), 3),
    lambda lib: lib.ones(2, (3,)),
    lambda lib: lib.zeros(2, 3.0),
    lambda lib: lib.tensor([[1, 2], [3]]),
])
def test_creation_errors(make):
    with pytest.raises(Exception):
        make(torch)
    with pytest.raises((TypeError, ValueError)):
        make(ak)


def test_tensor_copies_and_requires_grad():
    a = np.arange(4.0)
    x = ak.tensor(a)
    a[0] = 9.0
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    y = ak.tensor(x)
    y[1] = -1.0
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0] and not ak.shares_memory(x, y)
    g = ak.tensor([1.0, 2.0], requires_grad=True)  # handed to requires_grad_ (autograd)
    assert g.requires_grad and g.is_leaf and not ak.tensor([1.0]).requires_grad
    (g * g).sum().backward()
    assert g.grad.tolist() == [2.0, 4.0]


def test_namespace_keeps_the_standard_forms():
    assert callable(ak.tensor) and ak.Tensor.__module__ == "arraykit.tensors.tensor_type"
    assert ak.zeros((2, 3)).shape == (2, 3) and ak.zeros(shape=(2, 3)).shape == (2, 3)
    assert ak.zeros(4).shape == (4,) and ak.zeros(()).shape == ()
    x = ak.asarray([[0, 1], [2, 0]])
    nz = ak.nonzero(x)
    assert isinstance(nz, tuple) and [t.tolist() for t in nz] == [[0, 1], [1, 0]]
    assert ak.nonzero(x, as_tuple=False).tolist() == [[0, 1], [1, 0]]
    with pytest.raises(ValueError):
        ak.nonzero(ak.asarray(1))  # the standard's rule for 0-d input stays
    assert ak.max(ak.asarray(A), axis=1).shape == (2,)  # a plain reduction, not a tuple
    assert "float16" not in ak.__array_namespace_info__().dtypes()


# ----------------------------------------------------------------------------- views

VIEWS = {
    "view varargs": lambda lib, x: x.view(3, 2),
    "view tuple": lambda lib, x: x.view((3, 2)),
    "view -1": lambda lib, x: x.view(-1),
    "reshape -1": lambda lib, x: x.reshape(2, -1),
    "reshape copy": lambda lib, x: x.t().reshape(6),
    "expand": lambda lib, x: x[:1].expand(4, 3),
    "expand new dim": lambda lib, x: x.expand(2, 2, 3),
    "expand -1": lambda lib, x: x[:, :1].expand(-1, 5),
    "permute varargs": lambda lib, x: x.permute(1, 0),
    "permute tuple": lambda lib, x: x.permute((1, 0)),
    "t": lambda lib, x: x.t(),
    "flatten": lambda lib, x: x.flatten(),
    "flatten transposed": lambda lib, x: x.t().flatten(),
    "view_as": lambda lib, x: x.view_as(lib.zeros(3, 2)),
    "reshape_as": lambda lib, x: x.t().reshape_as(lib.zeros(3, 2)),
    "expand_as": lambda lib, x: x[1].expand_as(lib.zeros(4, 3)),
    "contiguous": lambda lib, x: x.t().contiguous(),
}


@pytest.mark.parametrize("name", VIEWS)
def test_views(name):
    got, want, _, _ = run_both(VIEWS[name])
    same(got, want, view=True)


def test_view_errors_match():
    for case in (lambda lib, x: x.t().view(6), lambda lib, x: x.view(4, 2),
                 lambda lib, x: x.expand(3, 3), lambda lib, x: x.permute(0)):
        t, x = pair(A)
        with pytest.raises(RuntimeError):
            case(torch, t)
        with pytest.raises((RuntimeError, ValueError)):
            case(ak, x)


REPEAT = {
    "repeat 2 1": lambda lib, x: x.repeat(2, 1),
    "repeat tuple": lambda lib, x: x.repeat((1, 3)),
    "repeat new dims": lambda lib, x: x.repeat(2, 1, 2),
    "repeat 1-D": lambda lib, x: x[0].repeat(3),
}


@pytest.mark.parametrize("name", REPEAT)
def test_repeat(name):
    got, want, _, _ = run_both(REPEAT[name])
    same(got, want, view=True)


def test_repeat_needs_every_dim():
    with pytest.raises(RuntimeError):
        torch.zeros(2, 3).repeat(2)
    with pytest.raises(ValueError, match="cannot be smaller"):
        ak.zeros(2, 3).repeat(2)


# ----------------------------------------------------------------------------- methods

REDUCTIONS = {
    "sum": lambda lib, x: x.sum(),
    "sum dim": lambda lib, x: x.sum(0),
    "sum dim keepdim": lambda lib, x: x.sum(1, keepdim=True),
    "sum dims": lambda lib, x: x.sum((0, 1)),
    "sum dim list": lambda lib, x: x.sum(dim=[0, 1]),
    "sum axis keepdims": lambda lib, x: x.sum(axis=1, keepdims=True),
    "sum dtype": lambda lib, x: x.sum(0, dtype=lib.float64),
    "mean": lambda lib, x: x.mean(),
    "mean dim": lambda lib, x: x.mean(dim=0, keepdim=True),
    "mean dtype": lambda lib, x: x.mean(1, dtype=lib.float64),
    "prod dim": lambda lib, x: x.prod(1),
    "max": lambda lib, x: x.max(),
    "max dim": lambda lib, x: x.max(1),
    "max dim keepdim": lambda lib, x: x.max(dim=0, keepdim=True),
    "max axis": lambda lib, x: x.max(axis=1),
    "max other": lambda lib, x: x.max(lib.zeros(3)),
    "max values": lambda lib, x: x.max(1).values,
    "max indices": lambda lib, x: x.max(-1).indices,
    "min": lambda lib, x: x.min(),
    "min dim": lambda lib, x: x.min(0),
    "argmax": lambda lib, x: x.argmax(),
    "argmax dim": lambda lib, x: x.argmax(1),
    "argmax keepdim": lambda lib, x: x.argmax(dim=0, keepdim=True),
    "argmin dim": lambda lib, x: x.argmin(1, True),
    "std": lambda lib, x: x.std(),
    "std dim": lambda lib, x: x.std(dim=1),
    "std unbiased false": lambda lib, x: x.std(1, False),
    "std correction": lambda lib, x: x.std(0, correction=0, keepdim=True),
    "var dim keepdim": lambda lib, x: x.var(1, keepdim=True),
    "cumsum": lambda lib, x: x.cumsum(1),
    "cumsum dim": lambda lib, x: x.cumsum(dim=0),
    "cumprod": lambda lib, x: x.cumprod(1),
    "all": lambda lib, x: (x > -10).all(),
    "all dim": lambda lib, x: (x > 0).all(1),
    "any dim keepdim": lambda lib, x: (x > 4).any(0, keepdim=True),
    "any": lambda lib, x: (x > 4).any(),
    "sort": lambda lib, x: x.sort(),
    "sort dim descending": lambda lib, x: x.sort(0, descending=True),
    "argsort": lambda lib, x: x.argsort(1),
    "argsort descending": lambda lib, x: x.argsort(dim=0, descending=True),
    "count_nonzero": lambda lib, x: (x > 0).count_nonzero(),
}


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions(name):
    got, want, _, _ = run_both(REDUCTIONS[name])
    same(got, want, rtol=1e-5)


def test_integer_reductions():
    for case in (lambda lib, x: x.sum(), lambda lib, x: x.sum(0), lambda lib, x: x.max(1),
                 lambda lib, x: x.prod(), lambda lib, x: (x > 0).sum(1)):
        got, want, _, _ = run_both(case, I)
        same(got, want)
    with pytest.raises(RuntimeError):
        torch.from_numpy(I).mean()
    with pytest.raises(TypeError, match="dtype"):
        ak.asarray(I).mean()
    same(ak.asarray(I).mean(dtype=ak.float64), torch.from_numpy(I).mean(dtype=torch.float64))
    assert ak.mean(ak.asarray(I)).dtype is ak.float32  # the namespace function keeps its rule


def test_reduction_dim_and_axis_conflict():
    with pytest.raises(TypeError, match="both dim"):
        ak.asarray(A).sum(0, axis=1)


UNARY = ["abs", "neg", "negative", "sign", "sqrt", "exp", "expm1", "log", "log1p", "log2",
         "log10", "sin", "cos", "tan", "sinh", "cosh", "tanh", "atan", "asinh", "arctan",
         "ceil", "floor", "trunc", "round", "square", "reciprocal", "isnan", "isinf",
         "isfinite", "signbit", "absolute", "fix"]
POSITIVE = np.array([[0.25, 1.0, 2.5], [3.0, 0.5, 7.0]], np.float32)
SMALL = np.array([[0.25, -0.5, 0.0], [0.75, -0.125, 0.5]], np.float32)


@pytest.mark.parametrize("name", UNARY + ["asin", "acos", "atanh", "arcsin", "arccos"])
@pytest.mark.parametrize("data", ["positive", "small", "int"])
def test_unary_methods(name, data):
    a = {"positive": POSITIVE, "small": SMALL, "int": I}[data]
    if data == "int" and name in ("asin", "acos", "atanh", "arcsin", "arccos", "log", "log2",
                                  "log10", "sqrt", "log1p", "reciprocal", "atan", "arctan"):
        a = np.abs(I) // 5  # 0s and 1s: inside every domain
    if name in ("acos", "asin", "atanh", "arccos", "arcsin") and data == "positive":
        a = SMALL
    got, want, _, _ = run_both(lambda lib, x: getattr(x, name)(), a)
    same(got, want, rtol=2e-6)


@pytest.mark.parametrize("name", [n for n in UNARY if n not in
                                  ("isnan", "isinf", "isfinite", "signbit")])
def test_unary_inplace_twins(name):
    """``x.f_()`` on a strided view writes through it: the base changes as in torch."""
    t, x = pair(POSITIVE)
    tv, xv = t[:, ::2], x[:, ::2]
    out_t = getattr(tv, name + "_")()
    out_x = getattr(xv, name + "_")()
    assert out_x is xv and out_t is tv
    same(x, t, rtol=2e-6)
    same(xv, tv, view=True, rtol=2e-6)


def test_inplace_twin_refuses_a_lossy_write():
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2]).exp_()
    with pytest.raises(TypeError):
        ak.tensor([1, 2]).exp_()


BINARY = {
    "add": lambda lib, x, y: x.add(y),
    "add alpha": lambda lib, x, y: x.add(y, alpha=2),
    "add scalar": lambda lib, x, y: x.add(1.5),
    "sub": lambda lib, x, y: x.sub(y),
    "sub alpha": lambda lib, x, y: x.sub(y, alpha=3),
    "subtract": lambda lib, x, y: x.subtract(y),
    "mul": lambda lib, x, y: x.mul(y),
    "multiply scalar": lambda lib, x, y: x.multiply(3),
    "div": lambda lib, x, y: x.div(y),
    "divide": lambda lib, x, y: x.divide(2.0),
    "true_divide": lambda lib, x, y: x.true_divide(y),
    "floor_divide": lambda lib, x, y: x.floor_divide(y),
    "remainder": lambda lib, x, y: x.remainder(y),
    "pow": lambda lib, x, y: x.pow(2),
    "pow tensor": lambda lib, x, y: x.abs().pow(y),
    "maximum": lambda lib, x, y: x.maximum(y),
    "minimum": lambda lib, x, y: x.minimum(y),
    "atan2": lambda lib, x, y: x.atan2(y),
    "arctan2": lambda lib, x, y: x.arctan2(y),
    "hypot": lambda lib, x, y: x.hypot(y),
    "logaddexp": lambda lib, x, y: x.logaddexp(y),
    "copysign": lambda lib, x, y: x.copysign(y),
    "eq": lambda lib, x, y: x.eq(y),
    "ne": lambda lib, x, y: x.ne(2.0),
    "lt": lambda lib, x, y: x.lt(y),
    "le": lambda lib, x, y: x.le(y),
    "gt": lambda lib, x, y: x.gt(0),
    "ge": lambda lib, x, y: x.ge(y),
    "greater": lambda lib, x, y: x.greater(y),
    "less_equal": lambda lib, x, y: x.less_equal(y),
    "logical_and": lambda lib, x, y: (x > 0).logical_and(y > 0),
    "logical_or": lambda lib, x, y: (x > 0).logical_or(y > 0),
    "logical_xor": lambda lib, x, y: (x > 0).logical_xor(y > 0),
    "logical_not": lambda lib, x, y: (x > 0).logical_not(),
    "bitwise_and": lambda lib, x, y: x.int().bitwise_and(y.int()),
    "bitwise_or": lambda lib, x, y: x.int().bitwise_or(3),
    "bitwise_xor": lambda lib, x, y: x.int().bitwise_xor(y.int()),
    "bitwise_not": lambda lib, x, y: x.int().bitwise_not(),
    "bitwise_left_shift": lambda lib, x, y: x.int().abs().bitwise_left_shift(2),
    "bitwise_right_shift": lambda lib, x, y: x.int().abs().bitwise_right_shift(1),
    "clamp": lambda lib, x, y: x.clamp(-1, 2),
    "clamp min": lambda lib, x, y: x.clamp(min=0.5),
    "clamp max tensor": lambda lib, x, y: x.clamp(max=y),
    "clip": lambda lib, x, y: x.clip(0, 1),
    "matmul": lambda lib, x, y: x.matmul(y.t()),
    "mm": lambda lib, x, y: x.mm(y.t()),
    "dot": lambda lib, x, y: x[0].dot(y[1]),
    "triu": lambda lib, x, y: x.triu(),
    "triu 1": lambda lib, x, y: x.triu(1),
    "tril -1": lambda lib, x, y: x.tril(diagonal=-1),
}
B = np.array([[2.0, 1.5, -3.0], [1.0, -2.5, 4.0]], np.float32)


@pytest.mark.parametrize("name", BINARY)
def test_binary_methods(name):
    t, x = pair(A)
    tb, xb = pair(B)
    same(BINARY[name](ak, x, xb), BINARY[name](torch, t, tb), rtol=2e-6)


INPLACE = {
    "add_": lambda x, y: x.add_(y),
    "sub_ alpha": lambda x, y: x.sub_(y, alpha=2),
    "mul_": lambda x, y: x.mul_(y),
    "div_": lambda x, y: x.div_(2.0),
    "pow_": lambda x, y: x.pow_(2),
    "floor_divide_": lambda x, y: x.floor_divide_(y),
    "remainder_": lambda x, y: x.remainder_(y),
    "maximum_": lambda x, y: x.maximum_(y) if hasattr(x, "maximum_") else x.copy_(x.maximum(y)),
    "atan2_": lambda x, y: x.atan2_(y),
    "hypot_": lambda x, y: x.hypot_(y),
    "copysign_": lambda x, y: x.copysign_(y),
    "eq_": lambda x, y: x.eq_(y),
    "lt_": lambda x, y: x.lt_(0.0),
    "ge_": lambda x, y: x.ge_(y),
    "clamp_": lambda x, y: x.clamp_(-1, 2),
    "clamp_ min": lambda x, y: x.clamp_(min=0),
    "clip_": lambda x, y: x.clip_(0, 1),
    "triu_": lambda x, y: x.triu_(1),
    "tril_": lambda x, y: x.tril_(),
    "neg_": lambda x, y: x.neg_(),
    "abs_": lambda x, y: x.abs_(),
    "sign_": lambda x, y: x.sign_(),
    "fill_": lambda x, y: x.fill_(2.5),
    "zero_": lambda x, y: x.zero_(),
}


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_methods_through_a_view(name):
    t, x = pair(np.concatenate([A, B]))  # (4, 3): the view is rows 0 and 2 transposed
    tb, xb = pair(B.T)
    tv, xv = t[::2].t(), x[::2].t()
    assert INPLACE[name](xv, xb) is xv
    INPLACE[name](tv, tb)
    same(x, t)
    same(xv, tv, view=True)


CONVERSIONS = {
    "float": lambda lib, x: x.float(),
    "double": lambda lib, x: x.double(),
    "half": lambda lib, x: x.half(),
    "bfloat16": lambda lib, x: x.bfloat16(),
    "long": lambda lib, x: x.long(),
    "int": lambda lib, x: x.int(),
    "short": lambda lib, x: x.short(),
    "char": lambda lib, x: x.char(),
    "byte": lambda lib, x: x.abs().byte(),
    "bool": lambda lib, x: x.bool(),
    "cfloat": lambda lib, x: x.cfloat(),
    "cdouble": lambda lib, x: x.cdouble(),
    "to dtype": lambda lib, x: x.to(lib.float64),
    "to dtype kw": lambda lib, x: x.to(dtype=lib.int32),
    "to device": lambda lib, x: x.to("cpu"),
    "to device dtype": lambda lib, x: x.to("cpu", lib.float16),
    "to device dtype non_blocking": lambda lib, x: x.to("cpu", lib.int64, non_blocking=True),
    "to positional non_blocking": lambda lib, x: x.to("cpu", lib.int64, True),
    "to other": lambda lib, x: x.to(lib.zeros(1, dtype=lib.float64)),
    "to copy": lambda lib, x: x.to(lib.float32, copy=True),
    "to device object": lambda lib, x: x.to(lib.device("cpu")),
    "type dtype": lambda lib, x: x.type(lib.int32),
    "type name": lambda lib, x: x.type(f"{lib.__name__}.DoubleTensor"),
    "cpu": lambda lib, x: x.cpu(),
    "half arithmetic": lambda lib, x: x.half() * 2 + 1,
    "bfloat16 arithmetic": lambda lib, x: x.bfloat16() * 2 + 1,
    "half + bfloat16": lambda lib, x: x.half() + x.bfloat16(),
    "half + float": lambda lib, x: x.half() + x,
    "bfloat16 sum": lambda lib, x: x.bfloat16().sum(0),
}


@pytest.mark.parametrize("name", CONVERSIONS)
def test_conversions(name):
    got, want, _, _ = run_both(CONVERSIONS[name])
    same(got, want, view=True, rtol=1e-2 if "16" in name or "half" in name else 1e-6)


def test_conversions_return_self_when_nothing_changes():
    x = ak.asarray(A, device="cpu")
    assert x.float() is x and x.to(ak.float32) is x and x.to("cpu") is x and x.cpu() is x
    assert x.to(x) is x and x.type(ak.float32) is x
    assert x.to(ak.float32, copy=True) is not x


def test_memory_format_conversion():
    t, x = pair(np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5))
    same(x.to(memory_format=ak.channels_last), t.to(memory_format=torch.channels_last), view=True)
    same(x.to(ak.float64, memory_format=ak.channels_last),
         t.to(torch.float64, memory_format=torch.channels_last), view=True)
    cl = x.to(memory_format=ak.channels_last)
    assert cl.to(memory_format=ak.channels_last) is cl
    assert x.to(memory_format=ak.contiguous_format) is x
    with pytest.raises(RuntimeError):
        torch.zeros(2, 3).to(memory_format=torch.channels_last)
    with pytest.raises(ValueError, match="rank 4"):
        ak.zeros(2, 3).to(memory_format=ak.channels_last)
    with pytest.raises(ValueError, match="memory_format"):
        x.to(memory_format="sideways")


def test_type_names_and_properties():
    for dtype in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
                  "uint8", "bool", "complex64", "complex128", "uint16"):
        t = torch.zeros(2, dtype=getattr(torch, dtype))
        x = ak.zeros(2, dtype=getattr(ak, dtype))
        assert x.type() == t.type().replace("torch.", "arraykit.")
        assert (x.nbytes, x.itemsize, x.element_size()) == (t.nbytes, t.itemsize, t.element_size())
    t, x = pair(A)
    assert x[:, ::2].nbytes == t[:, ::2].nbytes and x.numel() == t.numel()
    on_gpu = x.device.platform == "gpu"
    assert (x.is_cpu, x.is_cuda) == (not on_gpu, on_gpu)
    cpu = ak.asarray(A, device="cpu")
    assert (cpu.is_cpu, cpu.is_cuda) == (t.is_cpu, t.is_cuda) == (True, False)
    assert x.shape == tuple(t.size()) and x.shape[1] == t.size(1)
    assert x.size == t.numel() and x.size() == t.size()  # the standard's count, callable as PyTorch's


def test_devices():
    cpu = jax_cpu()
    assert ak.device("cpu") == cpu == ak.zeros(1, device="cpu").device
    assert ak.zeros(1).device == ak.__array_namespace_info__().default_device()
    assert ak.device("cpu", 0) == cpu and ak.device(cpu) is cpu
    assert ak.zeros(2, device=ak.device("cpu")).device == cpu
    with pytest.raises(ValueError, match="unknown device"):
        ak.device("quantum")
    if not any(d.platform == "gpu" for d in ak.__array_namespace_info__().devices()):
        for spec in ("cuda:0", "cuda", "gpu"):
            with pytest.raises(ValueError, match=r"not available on this machine \(devices: cpu:0"):
                ak.device(spec)
        with pytest.raises(ValueError, match="devices: cpu:0"):
            ak.zeros(2).cuda()
        with pytest.raises(ValueError, match="not available"):
            ak.zeros(2, device="cuda:0")


def jax_cpu():
    import jax

    return jax.devices("cpu")[0]


@pytest.mark.skipif(not any(d.platform == "gpu" for d in __import__("jax").devices()),
                    reason="needs a GPU")
def test_cuda_round_trip():
    x = ak.asarray(A)
    g = x.cuda()
    assert g.is_cuda and not g.is_cpu and g.device == ak.device("cuda:0") == ak.device("gpu")
    assert g.cpu().tolist() == x.tolist() and x.to("cuda:0").is_cuda
    assert x.cuda(0).device == g.device


NEW = {
    "new_zeros": lambda lib, x: x.new_zeros(2, 3),
    "new_zeros tuple": lambda lib, x: x.new_zeros((4,)),
    "new_ones dtype": lambda lib, x: x.new_ones(2, dtype=lib.int32),
    "new_empty": lambda lib, x: x.new_empty((2, 2)).shape,
    "new_full": lambda lib, x: x.new_full((2,), 3),
    "new_full float": lambda lib, x: x.new_full((2, 1), 1.5),
    "new_tensor": lambda lib, x: x.new_tensor([1, 2]),
}


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("data", ["float", "int"])
def test_new_methods(name, data):
    got, want, _, _ = run_both(NEW[name], A if data == "float" else I)
    if isinstance(want, torch.Size):
        assert got == tuple(want)
    else:
        same(got, want, view=True)


def test_equal_and_allclose():
    t, x = pair(A)
    for other in (A, A + 1e-7, A + 1e-3, A[:1], np.where(A > 0, np.nan, A)):
        to, xo = pair(other.astype(np.float32))
        assert x.equal(xo) is t.equal(to) is torch.equal(t, to)
        assert x.allclose(xo) is t.allclose(to)
        assert x.allclose(xo, rtol=1e-2, atol=1e-2) is t.allclose(to, rtol=1e-2, atol=1e-2)
        if other.shape == A.shape:
            same(x.isclose(xo), t.isclose(to))
    n_t, n_x = pair(np.array([np.nan, np.inf, 1.0], np.float32))
    assert n_x.allclose(n_x) is n_t.allclose(n_t) is False
    assert n_x.allclose(n_x, equal_nan=True) is n_t.allclose(n_t, equal_nan=True) is True
    assert ak.asarray(I).equal(ak.asarray(I).float()) is torch.equal(
        torch.from_numpy(I), torch.from_numpy(I).float())
    with pytest.raises(RuntimeError):
        torch.from_numpy(I).allclose(torch.from_numpy(A))
    with pytest.raises(TypeError, match="one dtype"):
        ak.asarray(I).allclose(x)


# ----------------------------------------------------------------------------- indexing

MASK = np.array([[True, False, True], [False, False, True]])

INDEXING = {
    "masked_select": lambda lib, x: lib.masked_select(x, lib.tensor(MASK)),
    "masked_select method": lambda lib, x: x.masked_select(lib.tensor(MASK)),
    "masked_select broadcast": lambda lib, x: x.masked_select(lib.tensor([True, False, True])),
    "masked_select broadcast both": lambda lib, x: x[0].masked_select(lib.tensor([[True], [False]])),
    "masked_select 0-d": lambda lib, x: lib.masked_select(x[0, 0], lib.tensor(True)),
    "masked_fill": lambda lib, x: x.masked_fill(lib.tensor(MASK), -7.0),
    "masked_fill broadcast": lambda lib, x: x.masked_fill(lib.tensor([True, False, True]), 1),
    "index_select": lambda lib, x: lib.index_select(x, 1, lib.tensor([2, 0, 2])),
    "index_select method": lambda lib, x: x.index_select(0, lib.tensor([1])),
    "index_select int32": lambda lib, x: x.index_select(1, lib.tensor([1, 0], dtype=lib.int32)),
    "index_select 0-d index": lambda lib, x: x.index_select(1, lib.tensor(1)),
    "index_select -1 dim": lambda lib, x: x.index_select(-1, lib.tensor([0])),
    "index_select empty": lambda lib, x: x.index_select(0, lib.tensor([], dtype=lib.int64)),
    "gather": lambda lib, x: lib.gather(x, 1, lib.tensor([[0, 0], [2, 1]])),
    "gather method dim 0": lambda lib, x: x.gather(0, lib.tensor([[1, 0, 1]])),
    "gather smaller": lambda lib, x: x.gather(1, lib.tensor([[2]])),
    "gather int32": lambda lib, x: x.gather(1, lib.tensor([[1], [2]], dtype=lib.int32)),
    "gather 0-d": lambda lib, x: lib.gather(x[1, 1], 0, lib.tensor(0)),
    "scatter": lambda lib, x: lib.scatter(x, 1, lib.tensor([[2], [0]]), lib.tensor([[9.0], [8.0]])),
    "scatter scalar": lambda lib, x: x.scatter(0, lib.tensor([[1, 0, 1]]), 7.0),
    "scatter src larger": lambda lib, x: x.scatter(1, lib.tensor([[1]]), lib.ones(2, 2)),
    "scatter_add": lambda lib, x: lib.scatter_add(x, 1, lib.tensor([[0, 0, 0]]), lib.ones(1, 3)),
    "scatter_add method": lambda lib, x: x.scatter_add(0, lib.tensor([[1, 1, 0], [1, 0, 0]]),
                                                       lib.full((2, 3), 2.0)),
    "index_add": lambda lib, x: lib.index_add(x, 1, lib.tensor([0, 0, 2]), lib.ones(2, 3)),
    "index_add alpha": lambda lib, x: x.index_add(0, lib.tensor([1, 1]), lib.ones(2, 3), alpha=3),
    "index_copy": lambda lib, x: lib.index_copy(x, 1, lib.tensor([2, 0]), lib.zeros(2, 2)),
    "index_copy method": lambda lib, x: x.index_copy(0, lib.tensor([1]), lib.full((1, 3), 4.0)),
    "put": lambda lib, x: x.put(lib.tensor([0, -1]), lib.tensor([9.0, 8.0])),
    "put accumulate": lambda lib, x: x.put(lib.tensor([1, 1, 4]), lib.ones(3), accumulate=True),
    "put 2-d index": lambda lib, x: x.put(lib.tensor([[0, 5]]), lib.tensor([[1.0, 2.0]])),
    "nonzero": lambda lib, x: x.nonzero(),
    "nonzero as_tuple": lambda lib, x: x.nonzero(as_tuple=True),
    "nonzero function": lambda lib, x: lib.nonzero(x > 1, as_tuple=False),
    "nonzero 1-d": lambda lib, x: (x[0] > 0).nonzero(),
    "nonzero 0-d": lambda lib, x: x[0, 0].nonzero(),
    "nonzero 0-d zero": lambda lib, x: (x[0, 0] * 0).nonzero(),
    "nonzero 0-d as_tuple": lambda lib, x: x[0, 0].nonzero(as_tuple=True),
}


@pytest.mark.parametrize("name", INDEXING)
def test_indexing(name):
    got, want, t, x = run_both(INDEXING[name])
    same(got, want)
    same(x, t)  # out-of-place forms leave the input alone


INDEXING_INPLACE = {
    "scatter_": lambda lib, x: x.scatter_(1, lib.tensor([[1], [0]]), lib.tensor([[9.0], [8.0]])),
    "scatter_ scalar": lambda lib, x: x.scatter_(0, lib.tensor([[1, 0]]), -2.0),
    "scatter_add_": lambda lib, x: x.scatter_add_(1, lib.tensor([[0, 0], [1, 1]]), lib.ones(2, 2)),
    "index_add_": lambda lib, x: x.index_add_(1, lib.tensor([1, 1]), lib.ones(2, 2)),
    "index_add_ alpha": lambda lib, x: x.index_add_(0, lib.tensor([0]), lib.ones(1, 2), alpha=-2),
    "index_copy_": lambda lib, x: x.index_copy_(0, lib.tensor([1, 0]), lib.zeros(2, 2)),
    "put_": lambda lib, x: x.put_(lib.tensor([3, 0]), lib.tensor([5.0, 6.0])),
    "put_ accumulate": lambda lib, x: x.put_(lib.tensor([1, 1]), lib.ones(2), accumulate=True),
    "masked_fill_": lambda lib, x: x.masked_fill_(lib.tensor([True, False]), 0.5),
    "index_fill_": lambda lib, x: x.index_fill_(1, lib.tensor([1]), -1.0),
}


@pytest.mark.parametrize("name", INDEXING_INPLACE)
def test_indexing_inplace_through_a_transposed_view(name):
    """The in-place forms write through a (2, 2) transposed, strided view of a (3, 4)
    base: the view's values and every element of the base match PyTorch."""
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    t, x = pair(base)
    tv, xv = t[::2, 1:3].t(), x[::2, 1:3].t()
    assert INDEXING_INPLACE[name](ak, xv) is xv
    INDEXING_INPLACE[name](torch, tv)
    same(xv, tv, view=True)
    same(x, t)


INDEXING_ERRORS = {
    "masked_select int mask": lambda lib, x: x.masked_select(lib.tensor([1, 0, 1])),
    "masked_select bad shape": lambda lib, x: x.masked_select(lib.tensor([True, False])),
    "index_select out of range": lambda lib, x: x.index_select(1, lib.tensor([3])),
    "index_select negative": lambda lib, x: x.index_select(1, lib.tensor([-1])),
    "index_select float index": lambda lib, x: x.index_select(1, lib.tensor([1.0])),
    "index_select int16 index": lambda lib, x: x.index_select(1, lib.tensor([1], dtype=lib.int16)),
    "index_select 2-d index": lambda lib, x: x.index_select(1, lib.tensor([[1]])),
    "index_select bad dim": lambda lib, x: x.index_select(2, lib.tensor([0])),
    "gather out of range": lambda lib, x: x.gather(1, lib.tensor([[3], [0]])),
    "gather negative": lambda lib, x: x.gather(1, lib.tensor([[-1], [0]])),
    "gather too large": lambda lib, x: x.gather(0, lib.tensor([[1, 0, 1, 1]])),
    "gather ndim": lambda lib, x: x.gather(0, lib.tensor([1, 0])),
    "scatter dtype": lambda lib, x: x.scatter(1, lib.tensor([[0]]), lib.ones(1, 1, dtype=lib.float64)),
    "scatter out of range": lambda lib, x: x.scatter(1, lib.tensor([[0], [3]]), 5.0),
    "scatter src too small": lambda lib, x: x.scatter(1, lib.tensor([[0, 1]]), lib.ones(1, 1)),
    "scatter ndim": lambda lib, x: x.scatter(0, lib.tensor([0, 1, 1]), lib.ones(1, 3)),
    "index_add count": lambda lib, x: x.index_add(1, lib.tensor([0, 1]), lib.ones(2, 3)),
    "index_add shape": lambda lib, x: x.index_add(1, lib.tensor([0, 1]), lib.ones(1, 2)),
    "index_add dtype": lambda lib, x: x.index_add(1, lib.tensor([0]), lib.ones(2, 1, dtype=lib.float64)),
    "index_add negative": lambda lib, x: x.index_add(1, lib.tensor([-1]), lib.ones(2, 1)),
    "index_copy out of range": lambda lib, x: x.index_copy(1, lib.tensor([3]), lib.ones(2, 1)),
    "index_copy int32": lambda lib, x: x.index_copy(1, lib.tensor([0], dtype=lib.int32), lib.ones(2, 1)),
    "put out of range": lambda lib, x: x.put(lib.tensor([6]), lib.ones(1)),
    "put below range": lambda lib, x: x.put(lib.tensor([-7]), lib.ones(1)),
    "put count": lambda lib, x: x.put(lib.tensor([1, 2]), lib.ones(1)),
    "put dtype": lambda lib, x: x.put(lib.tensor([1]), lib.ones(1, dtype=lib.float64)),
    "put int32": lambda lib, x: x.put(lib.tensor([1], dtype=lib.int32), lib.ones(1)),
    "mm vector": lambda lib, x: x.mm(lib.ones(3)),
    "dot matrix": lambda lib, x: x.dot(lib.ones(3)),
    "clamp no bounds": lambda lib, x: x.clamp(),
}


@pytest.mark.parametrize("name", INDEXING_ERRORS)
def test_indexing_errors(name):
    t, x = pair(A)
    with pytest.raises((RuntimeError, IndexError, TypeError, ValueError)):
        INDEXING_ERRORS[name](torch, t)
    with pytest.raises((IndexError, TypeError, ValueError)) as info:
        INDEXING_ERRORS[name](ak, x)
        deferred_checks.report()  # a GPU reports a failed index check at the next read
    assert str(info.value)
    same(x, t)


def test_index_errors_name_the_index():
    x = ak.asarray(A)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x.index_select(1, ak.tensor([0, 3]))
        deferred_checks.report()
    with pytest.raises(IndexError, match="index -1 is out of bounds for dimension 0 with size 2"):
        x.gather(0, ak.tensor([[-1, 0, 0]]))
        deferred_checks.report()
    with pytest.raises(IndexError, match="index 6 is out of range for a tensor of 6 elements"):
        x.clone().put_(ak.tensor([6]), ak.ones(1))
        deferred_checks.report()
    with pytest.raises(TypeError, match="float32"):
        x.scatter(1, ak.tensor([[0]]), ak.ones(1, 1, dtype=ak.float64))


@st.composite
def gather_cases(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    dim = draw(st.integers(-ndim, ndim - 1))
    d = dim % ndim
    idx_shape = tuple(draw(st.integers(1, 4)) if k == d else draw(st.integers(1, n))
                      for k, n in enumerate(shape))
    seed = draw(st.integers(0, 2**32 - 1))
    return shape, dim, idx_shape, seed


@SETTINGS
@given(case=gather_cases())
def test_gather_scatter_family_random(case):
    """gather, scatter_add_ and scatter_ (unique targets) on random shapes, through
    strided views, against PyTorch; integer-valued floats so sums are exact."""
    shape, dim, idx_shape, seed = case
    rng = np.random.default_rng(seed)
    d = dim % len(shape)
    base = rng.integers(-9, 9, size=(2,) + shape).astype(np.float64)
    index = rng.integers(0, shape[d], size=idx_shape)
    src = rng.integers(-9, 9, size=idx_shape).astype(np.float64)
    t, x = pair(base)
    ti, xi = pair(index)
    ts, xs = pair(src)
    same(x[1].gather(dim, xi), t[1].gather(dim, ti))
    t[1].scatter_add_(dim, ti, ts)
    x[1].scatter_add_(dim, xi, xs)
    same(x, t)
    # scatter_ with one index per target: a permutation along dim
    unique = np.argsort(rng.random(shape), axis=d)[tuple(slice(0, n) for n in idx_shape)]
    tu, xu = pair(unique)
    t[0].scatter_(dim, tu, ts)
    x[0].scatter_(dim, xu, xs)
    same(x, t)


@SETTINGS
@given(n=st.integers(1, 6), k=st.integers(0, 8), dim=st.integers(0, 1),
       seed=st.integers(0, 2**32 - 1))
def test_index_add_and_put_random(n, k, dim, seed):
    """index_add_ and put_(accumulate=True) with repeated indices accumulate as in PyTorch."""
    rng = np.random.default_rng(seed)
    base = rng.integers(-5, 5, size=(n, 3)).astype(np.float32)
    size = base.shape[dim]
    index = rng.integers(0, size, size=k)
    source_shape = (k, 3) if dim == 0 else (n, k)
    source = rng.integers(-5, 5, size=source_shape).astype(np.float32)
    t, x = pair(base)
    t.index_add_(dim, torch.from_numpy(index), torch.from_numpy(source), alpha=2)
    x.index_add_(dim, ak.asarray(index), ak.asarray(source), alpha=2)
    same(x, t)
    flat = rng.integers(-base.size, base.size, size=k)
    vals = rng.integers(-5, 5, size=k).astype(np.float32)
    t.put_(torch.from_numpy(flat), torch.from_numpy(vals), accumulate=True)
    x.put_(ak.asarray(flat), ak.asarray(vals), accumulate=True)
    same(x, t)


def test_gather_scatter_under_jit():
    """Traced (no index check): the same values as eagerly for in-range indices."""
    import jax

    x = ak.asarray(A)
    idx = ak.tensor([[2, 0], [1, 1]])

    @jax.jit
    def f(x, idx):
        y = x.clone()
        y.scatter_add_(1, idx, ak.ones(2, 2))
        return x.gather(1, idx), y, x.index_select(0, idx[0, 1:])

    for got, want in zip(f(x, idx), (x.gather(1, idx), x.scatter_add(1, idx, ak.ones(2, 2)),
                                     x.index_select(0, idx[0, 1:]))):
        assert got.tolist() == want.tolist()


def test_index_checks_hold_against_racing_writes():
    """A write racing index_select/gather/put into their indices either makes the call
    raise IndexError or is not seen: the indices checked are the indices used."""
    import itertools
    import sys
    import threading

    x = ak.asarray(np.arange(10.0))
    good = np.array([0, 9, 3, 7])
    flat, grid = ak.asarray(good), ak.asarray(good[None])
    done = threading.Event()
    ok = []

    def put(indices):
        return ak.zeros(10, dtype=ak.float64).put(indices, ak.ones(4, dtype=ak.float64))[good]

    def reader():
        try:
            for _ in range(150):
                for call, expected in (
                    (lambda: x.index_select(0, flat), good.astype(float)),
                    (lambda: x[None].gather(1, grid)[0], good.astype(float)),
                    (lambda: put(flat), np.ones(4)),
                ):
                    try:
                        got = call()._values()
                    except IndexError:
                        continue
                    np.testing.assert_array_equal(got, expected)
                    ok.append(1)
        finally:
            done.set()

    def writer(target):
        for k in itertools.count():
            if done.is_set():
                return
            target[2] = 10 if k % 3 == 0 else 3

    threads = [threading.Thread(target=reader), threading.Thread(target=writer, args=(flat,)),
               threading.Thread(target=writer, args=(grid[0],))]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(interval)
    assert ok


# ------------------------------------------------------ PyTorch's keyword names (issue 17)

from torch_keyword_audit import gaps  # noqa: E402  (tests/ is on the path under pytest)


def test_every_shared_function_and_method_takes_torchs_keywords():
    """The audit (tests/torch_keyword_audit.py) compares signatures with torch's: every
    one of dim/keepdim/diagonal/input/other/dtype/out that torch takes, arraykit takes."""
    missing, _ = gaps()
    assert missing == {}


def _shared_elementwise(arity):
    """Names of arraykit's element-wise functions of ``arity`` operands that torch has."""
    from arraykit.api import elementwise

    names = []
    for name in elementwise.__all__:
        fn = getattr(torch, name, None)
        if fn is None or name in ("clip", "equal", "round"):
            continue
        binary = "x2" in __import__("inspect").signature(getattr(ak, name)).parameters
        if binary == (arity == 2):
            names.append(name)
    return names


UNARY_TORCH = _shared_elementwise(1)
BINARY_TORCH = [n for n in _shared_elementwise(2) if n != "pow"]  # torch.pow's is exponent=
INTEGER_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                "bitwise_right_shift", "bitwise_invert"}


COMPLEX_PARTS = {"real", "imag", "conj"}  # (torch.imag refuses real tensors)


def _operand(name, a):
    if name in COMPLEX_PARTS:
        return np.clip(a, -0.9, 0.9) + 1j * a[::-1]
    return np.abs(I) if name in INTEGER_ONLY else np.clip(a, -0.9, 0.9)


@pytest.mark.parametrize("name", UNARY_TORCH)
def test_unary_functions_take_input_and_out(name):
    data = _operand(name, A)
    t, x = pair(data)
    want = getattr(torch, name)(input=t)
    same(getattr(ak, name)(input=x), want, rtol=1e-5)
    out = ak.empty(x.shape, dtype=getattr(ak, name)(x).dtype)
    assert getattr(ak, name)(x, out=out) is out
    same(out, want, rtol=1e-5)


@pytest.mark.parametrize("name", BINARY_TORCH)
def test_binary_functions_take_input_other_and_out(name):
    left, right = _operand(name, A), _operand(name, B)
    if name in ("bitwise_left_shift", "bitwise_right_shift"):
        right = right % 3
    (t, x), (u, y) = pair(left), pair(right)
    want = getattr(torch, name)(input=t, other=u)
    same(getattr(ak, name)(input=x, other=y), want, rtol=1e-5)
    same(getattr(ak, name)(x, other=y), want, rtol=1e-5)
    out = ak.empty(0, dtype=getattr(ak, name)(x, y).dtype)  # empty: resized, as torch does
    assert getattr(ak, name)(x, y, out=out) is out
    same(out, want, rtol=1e-5)


TORCH_KEYWORD_CASES = {
    "sum dim keepdim": lambda lib, t: lib.sum(t, dim=1, keepdim=True),
    "sum input dim list": lambda lib, t: lib.sum(input=t, dim=[0, 1]),
    "prod dim dtype": lambda lib, t: lib.prod(t, dim=0, dtype=lib.float64),
    "mean dim": lambda lib, t: lib.mean(t, dim=0, keepdim=True),
    "mean dtype": lambda lib, t: lib.mean(t, dtype=lib.float64),
    "max dim": lambda lib, t: lib.max(t, dim=1),
    "min dim keepdim": lambda lib, t: lib.min(t, dim=0, keepdim=True),
    "max input": lambda lib, t: lib.max(input=t),
    "std dim": lambda lib, t: lib.std(t, dim=1),
    "var dim keepdim": lambda lib, t: lib.var(t, dim=0, keepdim=True),
    "all dim": lambda lib, t: lib.all(t > 0, dim=1),
    "any dim keepdim": lambda lib, t: lib.any(t > 0, dim=0, keepdim=True),
    "argmax dim": lambda lib, t: lib.argmax(t, dim=1),
    "argmin dim keepdim": lambda lib, t: lib.argmin(t, dim=1, keepdim=True),
    "argmin input": lambda lib, t: lib.argmin(input=t),
    "count_nonzero dim": lambda lib, t: lib.count_nonzero(t, dim=0),
    "sort dim": lambda lib, t: lib.sort(t, dim=0),
    "sort descending": lambda lib, t: lib.sort(input=t, descending=True),
    "argsort dim": lambda lib, t: lib.argsort(t, dim=0),
    "triu diagonal": lambda lib, t: lib.triu(t, diagonal=1),
    "tril diagonal negative": lambda lib, t: lib.tril(t, diagonal=-1),
    "tril positional diagonal": lambda lib, t: lib.tril(t, 1),
    "triu input": lambda lib, t: lib.triu(input=t),
    "take flat": lambda lib, t: lib.take(input=t, index=lib.tensor([[0, 5], [-1, 2]])),
    "concat dim": lambda lib, t: lib.concat([t, t], dim=1),
    "stack dim": lambda lib, t: lib.stack([t, t], dim=2),
    "squeeze dim": lambda lib, t: lib.squeeze(t.reshape(2, 1, 3), dim=1),
    "squeeze dim not one": lambda lib, t: lib.squeeze(t, dim=0),
    "squeeze all": lambda lib, t: lib.squeeze(input=t.reshape(1, 2, 1, 3)),
    "flip dims": lambda lib, t: lib.flip(input=t, dims=(1,)),
    "roll shifts dims": lambda lib, t: lib.roll(t, shifts=1, dims=1),
    "tile dims": lambda lib, t: lib.tile(input=t, dims=(2, 1)),
    "reshape input": lambda lib, t: lib.reshape(input=t, shape=(3, 2)),
    "broadcast_to size": lambda lib, t: lib.broadcast_to(input=t, size=(2, 2, 3)),
    "moveaxis input": lambda lib, t: lib.moveaxis(input=t, source=0, destination=1),
    "gather keywords": lambda lib, t: lib.gather(input=t, dim=1,
                                                 index=lib.tensor([[0, 0], [2, 1]])),
    "index_select keywords": lambda lib, t: lib.index_select(t, dim=1, index=lib.tensor([2, 0])),
    "scatter keywords": lambda lib, t: lib.scatter(t, dim=0, index=lib.tensor([[1, 0, 1]]),
                                                   src=t[:1] * 10),
    "scatter_add keywords": lambda lib, t: lib.scatter_add(input=t, dim=1,
                                                           index=lib.tensor([[0, 0], [1, 1]]),
                                                           src=t[:, :2]),
    "index_add keywords": lambda lib, t: lib.index_add(t, dim=0, index=lib.tensor([1]),
                                                       source=t[:1], alpha=2),
    "index_copy keywords": lambda lib, t: lib.index_copy(input=t, dim=1, index=lib.tensor([0]),
                                                         source=t[:, 2:]),
    "masked_select input": lambda lib, t: lib.masked_select(input=t, mask=t > 0),
    "nonzero input": lambda lib, t: lib.nonzero(input=t > 0),
    "where input other": lambda lib, t: lib.where(t > 0, input=t, other=-t),
    "searchsorted input right": lambda lib, t: lib.searchsorted(
        lib.tensor([0.0, 1.0, 2.0, 3.0]), input=t, right=True),
    "diff dim": lambda lib, t: lib.diff(input=t, dim=0),
    "matmul input other": lambda lib, t: lib.matmul(input=t, other=t.T),
    "tensordot dims": lambda lib, t: lib.tensordot(t, t.T, dims=1),
    "zeros_like input": lambda lib, t: lib.zeros_like(input=t),
    "ones_like input": lambda lib, t: lib.ones_like(input=t, dtype=lib.float64),
    "full_like input": lambda lib, t: lib.full_like(input=t, fill_value=2.5),
    "linspace steps": lambda lib, t: lib.linspace(0, 1, steps=5),
    "method take": lambda lib, t: t.T.take(lib.tensor([[1, 4]])),
    "method triu diagonal": lambda lib, t: t.triu(diagonal=1),
}


@pytest.mark.parametrize("name", TORCH_KEYWORD_CASES)
def test_torch_keywords_give_torchs_results(name):
    got, want, _, _ = run_both(TORCH_KEYWORD_CASES[name])
    same(got, want, rtol=1e-5)


OUT_CASES = {
    "sum": lambda lib, t, o: lib.sum(t, dim=0, out=o),
    "mean": lambda lib, t, o: lib.mean(t, dim=1, out=o),
    "max values indices": lambda lib, t, o: lib.max(t, dim=1, out=o),
    "sort": lambda lib, t, o: lib.sort(t, dim=1, out=o),
    "triu": lambda lib, t, o: lib.triu(t, diagonal=1, out=o),
    "clip": lambda lib, t, o: lib.clip(t, -1.0, 1.0, out=o),
    "concat": lambda lib, t, o: lib.concat([t, t], out=o),
    "stack": lambda lib, t, o: lib.stack([t, t], out=o),
    "matmul": lambda lib, t, o: lib.matmul(t, t.T, out=o),
    "where": lambda lib, t, o: lib.where(t > 0, t, -t, out=o),
    "gather": lambda lib, t, o: lib.gather(t, 1, lib.tensor([[0], [2]]), out=o),
    "zeros": lambda lib, t, o: lib.zeros(2, 2, out=o),
    "arange": lambda lib, t, o: lib.arange(4, out=o),
}


def _empty_outs(result):
    """Empty tensors (resized by the call) standing for ``result``'s fields."""
    if isinstance(result, tuple):
        return tuple(_empty_outs(r) for r in result)
    return ak.empty(0, dtype=result.dtype)


@pytest.mark.parametrize("name", OUT_CASES)
def test_out_writes_into_the_given_tensor(name):
    case = OUT_CASES[name]
    t, x = pair(A)
    want = case(torch, t, None)
    outs = _empty_outs(case(ak, x, None))
    got = case(ak, x, outs)
    same(got, want, rtol=1e-5)
    for given, returned in zip(outs if isinstance(outs, tuple) else (outs,),
                               got if isinstance(got, tuple) else (got,)):
        assert returned is given


def test_out_of_the_wrong_shape_or_a_lossy_dtype_raises():
    x = ak.asarray(A)
    with pytest.raises(RuntimeError,
                       match=r"out= has shape \(3,\) but the result has shape \(2, 3\)"):
        ak.exp(x, out=ak.empty(3))
    with pytest.raises(TypeError, match="dtype arraykit.float32 cannot be written into out= "
                                        "of dtype arraykit.int64"):
        ak.add(x, x, out=ak.empty((2, 3), dtype=ak.int64))
    wide = ak.empty((2, 3), dtype=ak.float64)  # a lossless widening, as torch allows
    ak.add(x, x, out=wide)
    np.testing.assert_allclose(wide.numpy(), 2 * A)


@pytest.mark.parametrize("call, message", [
    (lambda x: ak.sum(x, axis=0, dim=1), "sum() got both axis=0 and PyTorch's dim="),
    (lambda x: ak.triu(x, 1, k=1), "triu() got both k=1 and PyTorch's diagonal="),
    (lambda x: ak.add(x, x, input=x), "add() got both a positional x1 and PyTorch's input="),
    (lambda x: ak.add(x, x, x), "add() got both a positional x1 and PyTorch's input="),
    (lambda x: ak.exp(x, input=x), "exp() got both a positional x and PyTorch's input="),
    (lambda x: ak.sum(x, keepdims=True, keepdim=True), "keepdims=True and PyTorch's keepdim="),
    (lambda x: ak.concat([x], axis=1, dim=1), "concat() got both axis=1 and PyTorch's dim="),
    (lambda x: ak.sort(x, axis=0, dim=0), "sort() got both axis=0 and PyTorch's dim="),
])
def test_both_spellings_of_one_parameter_raise(call, message):
    with pytest.raises(TypeError, match=__import__("re").escape(message)):
        call(ak.asarray(A))


def test_creation_out_takes_the_dtype_of_out():
    out = ak.empty((2, 3), dtype=ak.float64)
    assert ak.ones(2, 3, out=out) is out
    assert out.dtype is ak.float64 and out.numpy().tolist() == [[1.0] * 3] * 2
    drawn = ak.empty(0, dtype=ak.int64)
    assert ak.randperm(5, out=drawn) is drawn and sorted(drawn.tolist()) == [0, 1, 2, 3, 4]


def test_topk_and_multinomial_write_into_out_as_torch():
    x = np.array([[3.0, 1.0, 4.0, 1.0, 5.0], [9.0, 2.0, 6.0, 5.0, 3.0]], np.float32)
    values, indices = ak.empty((2, 2)), ak.empty((2, 2), dtype=ak.int64)
    returned = ak.topk(ak.asarray(x), 2, dim=1, out=(values, indices))
    tv, ti = torch.topk(torch.from_numpy(x), 2, dim=1)
    assert returned.values is values and returned.indices is indices
    np.testing.assert_array_equal(values.numpy(), tv.numpy())
    np.testing.assert_array_equal(indices.numpy(), ti.numpy())
    drawn = ak.empty((2, 3), dtype=ak.int64)
    weights = ak.asarray(np.array([[0.0, 1.0, 0.0, 1.0, 1.0]] * 2, np.float32))
    assert ak.multinomial(weights, 3, out=drawn) is drawn
    assert sorted(drawn.numpy()[0].tolist()) == [1, 3, 4]
    with pytest.raises(TypeError, match="topk"):
        ak.topk(ak.asarray(x), 2, out=values)


def test_keywords_only_the_testing_overrides_name_are_refused_by_torch():
    """The audit's exceptions are names that PyTorch itself refuses."""
    x = torch.zeros(2, 3)
    with pytest.raises(TypeError):
        torch.permute(x, dim=(1, 0))
    with pytest.raises(TypeError):
        torch.diag_embed(x, diagonal=1)
