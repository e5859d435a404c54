"""Tensor operators: forward, reflected and in-place forms against NumPy on strided
operands, Python scalars and NumPy arrays on either side, the in-place dtype and
shape rules, NotImplemented for foreign operands, and matmul through arraykit.matmul.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit as ak
from arraykit.core import dtypes as D
from strategies import make_view, strided_pairs

SETTINGS = settings(max_examples=5, deadline=None)
LAYOUTS = ("contiguous", "transposed", "stepped", "flipped", "broadcast")

# operator: (NumPy function, dtypes it is exercised with)
BINARY_OPS = {
    "add": (operator.add, np.add, ("int16", "float32", "complex64")),
    "sub": (operator.sub, np.subtract, ("int32", "float64")),
    "mul": (operator.mul, np.multiply, ("uint8", "float32", "complex128")),
    "truediv": (operator.truediv, np.true_divide, ("float32", "complex64")),
    "floordiv": (operator.floordiv, np.floor_divide, ("int8", "float64")),
    "mod": (operator.mod, np.remainder, ("int64", "float32")),
    "pow": (operator.pow, np.power, ("float64",)),
    "and": (operator.and_, np.bitwise_and, ("bool", "int16")),
    "or": (operator.or_, np.bitwise_or, ("bool", "uint32")),
    "xor": (operator.xor, np.bitwise_xor, ("bool", "int64")),
    "lshift": (operator.lshift, np.left_shift, ("int8", "uint16")),
    "rshift": (operator.rshift, np.right_shift, ("int32", "uint8")),
    "eq": (operator.eq, np.equal, ("bool", "int8", "float32", "complex64")),
    "ne": (operator.ne, np.not_equal, ("int64", "float64")),
    "lt": (operator.lt, np.less, ("uint8", "float32")),
    "le": (operator.le, np.less_equal, ("int16", "float64")),
    "gt": (operator.gt, np.greater, ("int32", "float32")),
    "ge": (operator.ge, np.greater_equal, ("uint64", "float64")),
}
INPLACE_OPS = {
    "add": operator.iadd, "sub": operator.isub, "mul": operator.imul, "truediv": operator.itruediv,
    "floordiv": operator.ifloordiv, "mod": operator.imod, "pow": operator.ipow,
    "and": operator.iand, "or": operator.ior, "xor": operator.ixor,
    "lshift": operator.ilshift, "rshift": operator.irshift,
}


def _elements(dtype, name):
    dt = np.dtype(dtype)
    if name == "pow":
        return st.floats(0.5, 4, width=dt.itemsize * 8)
    if name in ("lshift", "rshift") and dt.kind in "iu":
        return st.integers(0, dt.itemsize * 8 - 1)
    if dt.kind == "f":
        return st.floats(-100, 100, width=dt.itemsize * 8, allow_subnormal=False)
    if dt.kind == "c":
        part = st.floats(-100, 100, width=dt.itemsize * 4, allow_subnormal=False)
        return st.builds(complex, part, part)
    return None


@st.composite
def tensor_pair(draw, dtype, shape, name):
    target = draw(hnp.arrays(np.dtype(dtype), shape, elements=_elements(dtype, name)))
    return make_view(target, draw(st.sampled_from(LAYOUTS))), target


def check(got, want):
    want = np.asarray(want)
    assert isinstance(got, ak.Tensor)
    assert got.shape == want.shape and got.dtype.np == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    if want.dtype.kind in "fc":
        tol = 1e-5 if want.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got.numpy(), want)


def _np(func, *args):
    with np.errstate(all="ignore"):
        return func(*args)


@pytest.mark.parametrize("name", sorted(BINARY_OPS))
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_binary_operator(name, data):
    op, ref, dtypes = BINARY_OPS[name]
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    s1, s2 = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4)).input_shapes
    x1, a1 = data.draw(tensor_pair(dtype, s1, name), label="x1")
    x2, a2 = data.draw(tensor_pair(dtype, s2, name), label="x2")
    check(op(x1, x2), _np(ref, a1, a2))
    # Python scalar and NumPy array on the right, then on the left (reflected operators).
    s = a2.reshape(-1)[0].item() if a2.size else 1
    check(op(x1, s), _np(ref, a1, np.asarray(s, dtype)))
    check(op(s, x1), _np(ref, np.asarray(s, dtype), a1))
    check(op(x1, a2), _np(ref, a1, a2))
    check(op(a1, x2), _np(ref, a1, a2))


@pytest.mark.parametrize("name", sorted(INPLACE_OPS))
@SETTINGS
@given(data=st.data())
def test_inplace_operator_writes_through_views(name, data):
    iop = INPLACE_OPS[name]
    _, ref, dtypes = BINARY_OPS[name]
    dtype = data.draw(st.sampled_from([d for d in dtypes if not (name == "truediv" and d == "int8")]))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), label="shape")
    other_shape = data.draw(st.sampled_from([shape, shape[1:], ()]), label="other shape")
    base_values = data.draw(hnp.arrays(np.dtype(dtype), (2 * shape[0] + 1,) + shape[1:], elements=_elements(dtype, name)))
    _, b = data.draw(tensor_pair(dtype, other_shape, name), label="other")
    base = ak.asarray(base_values)
    view = base[1::2]
    other = ak.asarray(b)
    result = iop(view, other)
    assert result is view
    want = base_values.copy()
    want[1::2] = _np(ref, base_values[1::2], b).astype(dtype)
    check(base, want)
    check(view, want[1::2])


def test_inplace_with_scalars_and_reflected_dtype():
    steps = [(operator.ifloordiv, 2), (operator.imod, 3), (operator.ipow, 2), (operator.ilshift, 1),
             (operator.irshift, 1), (operator.iand, 7), (operator.ior, 8), (operator.ixor, 1)]
    x = ak.asarray(np.array([7, -7, 9], np.int32))
    w = np.array([7, -7, 9], np.int32)
    for op, value in steps:
        x = op(x, value)
        w = op(w, value)
    check(x, w)
    f = ak.asarray(np.array([1.5, -2.0], np.float32))
    f += 1
    f -= 0.5
    f *= True
    f /= 2
    f **= 2
    check(f, ((np.array([1.5, -2.0], np.float32) + 1 - 0.5) / 2) ** 2)


@pytest.mark.parametrize(
    "dtype, op, other",
    [
        ("int8", operator.iadd, 1.5),
        ("int32", operator.itruediv, 2),
        ("int8", operator.iadd, np.array([1.5, 2], np.float32)),
        ("float32", operator.iand, 1),
        ("float64", operator.ilshift, 1),
        ("bool", operator.ipow, True),
        ("bool", operator.iadd, np.array([1, 2], np.int8)),
        ("float32", operator.ipow, 1j),
    ],
)
def test_inplace_dtype_errors(dtype, op, other):
    x = ak.asarray(np.array([1, 2], dtype=dtype))
    before = x.numpy()
    with pytest.raises(TypeError):
        op(x, other)
    check(x, before)


@pytest.mark.parametrize(
    "dtype, op, other",
    [
        ("int8", operator.ifloordiv, np.array([1, 2], np.int16)),
        ("uint8", operator.imod, np.array([1, 2], np.int8)),
        ("float32", operator.imul, np.array([1.1, 2.0], np.float64)),
        ("int32", operator.iadd, np.array([3, -4], np.int64)),
    ],
)
def test_inplace_results_cast_within_their_kind_like_pytorch(dtype, op, other):
    """PyTorch's same-kind rule: a result of the target's kind (or a lower one) is
    cast into it, however wide (int16 into int8, float64 into float32)."""
    x = ak.asarray(np.array([5, 7], dtype=dtype))
    t = torch.from_numpy(np.array([5, 7], dtype=dtype))
    op(x, other)
    op(t, torch.from_numpy(other))
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    assert x.dtype is getattr(ak, dtype)


def test_inplace_shape_errors():
    x = ak.asarray(np.zeros(3))
    with pytest.raises(ValueError):
        x //= ak.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError):
        x **= ak.asarray(np.ones(4))
    y = ak.asarray(np.ones((2, 3), np.int64))
    y <<= ak.asarray(np.array([0, 1, 2]))
    check(y, np.array([[1, 2, 4]] * 2))


def test_inplace_on_overlapping_view_raises():
    x = ak.asarray(np.array([1.0])).expand(3)
    with pytest.raises(RuntimeError):
        x **= 2


@pytest.mark.parametrize("dtype", ["int8", "uint8", "float32", "complex128", "bool"])
def test_unary_operators(dtype):
    a = np.array([[1, 0], [3, 4]], dtype=dtype)
    if dtype.startswith("int") or dtype.startswith("float"):
        a = a * np.array(-1, dtype)
    x = make_view(a, "transposed")
    if dtype == "bool":
        check(~x, ~a)
        for op in (operator.neg, operator.pos, operator.abs):
            with pytest.raises(TypeError, match="bool"):
                op(x)
        return
    check(-x, -a)
    check(+x, +a)
    check(abs(x), np.abs(a))
    if dtype in ("int8", "uint8"):
        check(~x, ~a)
    else:
        with pytest.raises(TypeError, match=dtype):
            ~x


@SETTINGS
@given(pair=strided_pairs(dtype=st.sampled_from(["int64", "float32", "complex64"])))
def test_operators_equal_functions(pair):
    x, a = pair
    check(x * 2 - 1, ak.subtract(ak.multiply(x, 2), 1).numpy())
    check(x == x, np.ones(a.shape, bool) if a.dtype.kind != "f" else ~np.isnan(a))
    check(-x, ak.negative(x).numpy())


def test_foreign_operands():
    x = ak.asarray(np.array([1.0, 2.0]))
    assert (x == None) is False  # noqa: E711 (NotImplemented falls back to identity)
    assert (x != "text") is True
    with pytest.raises(TypeError):
        x + object()
    with pytest.raises(TypeError):
        x < None
    with pytest.raises(TypeError):
        x + [1.0, 2.0]
    with pytest.raises(TypeError):
        x @ 2
    with pytest.raises(TypeError):
        x += object()
    check(x, np.array([1.0, 2.0]))


def test_category_errors_are_not_swallowed():
    x = ak.asarray(np.array([1.0, 2.0], np.float32))
    with pytest.raises(TypeError, match="float32"):
        x & 1
    with pytest.raises(TypeError, match="complex"):
        ak.asarray(np.array([1j])) < 1
    with pytest.raises(TypeError, match="bool"):
        ak.asarray(np.array([True])) - True


def test_numpy_arrays_and_scalars_defer_to_tensors():
    x = ak.asarray(np.array([1.0, 2.0], np.float32))
    for got in (np.array([1.0, 1.0], np.float32) + x, np.float32(1.0) + x, x + np.float32(1.0)):
        assert isinstance(got, ak.Tensor)
        check(got, np.array([2.0, 3.0], np.float32))
    check(np.array([3, 3]) > x, np.array([True, True]))


def test_matmul_operators():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(3, 4)
    x, y = ak.asarray(a), make_view(b, "transposed")
    check(x @ y, a @ b)
    check(a @ y, a @ b)
    check(x @ b, a @ b)
    s = ak.asarray(np.eye(3))
    m = ak.asarray(np.arange(9.0).reshape(3, 3))
    storage = m.untyped_storage()
    m @= s
    assert m.untyped_storage() is storage
    check(m, np.arange(9.0).reshape(3, 3))
    with pytest.raises(ValueError, match="shape"):
        m @= ak.asarray(np.ones((3, 2)))


def test_hash_is_identity():
    x = ak.asarray(np.zeros(2))
    y = ak.asarray(np.zeros(2))
    assert hash(x) == id(x)
    assert len({x, y, x}) == 2
    assert {x: 1}[x] == 1


def test_operator_names():
    assert ak.Tensor.__add__.__name__ == "__add__"
    assert ak.Tensor.__rpow__.__name__ == "__rpow__"
    assert ak.Tensor.__ixor__.__name__ == "__ixor__"
    assert not hasattr(ak.Tensor, "_operator")


def test_python_int_comparisons_out_of_dtype_range():
    x = ak.asarray(np.array([0, 255], np.uint8))
    check(x < 256, np.array([True, True]))
    check(x == -1, np.array([False, False]))
    check(300 > x, np.array([True, True]))
    with pytest.raises(OverflowError):
        x + 256


def test_mixed_kind_scalar_result_dtypes():
    i = ak.asarray(np.array([1, 2], np.int64))
    assert (i / 2).dtype is ak.float64
    assert (i * 0.5).dtype is D.DEFAULT_FLOAT
    assert (i + 1j).dtype is ak.complex64
    assert (2 ** i).dtype is ak.int64
    assert (i ** 0.5).dtype is ak.float32


_OPERAND_KINDS = {
    "tensor": lambda v: ak.asarray(v, device="cpu"),
    "numpy array": lambda v: np.asarray(v),
    "numpy scalar": lambda v: np.asarray(v)[()] if np.ndim(v) == 0 else None,
    "python scalar": lambda v: v.item() if np.ndim(v) == 0 else None,
}


@pytest.mark.parametrize("kind", sorted(_OPERAND_KINDS))
@pytest.mark.parametrize("value", [np.float32(2.5), np.int32(3), np.array([1.5, -2.0, 4.0], np.float32),
                                   np.float64(0.5), np.array([True, False, True])])
@pytest.mark.parametrize("target", ["float32", "int32", "float64"])
def test_inplace_and_out_of_place_resolve_operands_alike(kind, value, target):
    """``x += v``, ``x.add_(v)`` and ``x + v`` take one operand path: where the
    out-of-place result's dtype can be written into ``x``, both in-place forms
    give its values; where it cannot, both raise TypeError (NumPy's oracle for values)."""
    other = _OPERAND_KINDS[kind](value)
    if other is None:
        pytest.skip("a scalar kind of an array value")
    base = np.array([1, 2, 3], dtype=target)
    x = ak.asarray(base, device="cpu")
    expected = x + other
    np.testing.assert_allclose(expected.numpy(), base + np.asarray(value), rtol=1e-6)
    for write in (lambda t: t.__iadd__(other), lambda t: t.add_(other)):
        y = ak.asarray(base, device="cpu")
        if D.writable(expected.dtype, y.dtype):
            write(y)
            np.testing.assert_array_equal(y.numpy(), expected.numpy().astype(target))
        else:
            with pytest.raises(TypeError, match=f"{expected.dtype}.*{target}"):
                write(y)
            np.testing.assert_array_equal(y.numpy(), base)


def test_inplace_operands_of_other_types_raise_like_out_of_place():
    x = ak.asarray(np.ones(3, np.float32), device="cpu")
    for bad in ([1, 2, 3], "a", object()):
        with pytest.raises(TypeError):
            x + bad
        with pytest.raises(TypeError):
            x.add_(bad)
        with pytest.raises(TypeError):
            x.clamp_(min=bad)
    np.testing.assert_array_equal(x.numpy(), np.ones(3, np.float32))
