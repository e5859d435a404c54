"""all, any and diff against NumPy, on strided inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit as ak
from strategies import reductions, strided_pairs

SETTINGS = settings(max_examples=25, deadline=None)
SPARSE = st.sampled_from(("bool", "int8", "uint16", "int64", "float32", "float64", "complex64"))


def check(got, want):
    assert got.shape == want.shape
    assert got.dtype.np == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-30)
    else:
        np.testing.assert_array_equal(got.numpy(), want)


@SETTINGS
@given(pair=strided_pairs(dtype=SPARSE, min_value=-1, max_value=1), data=st.data())
def test_all_any(pair, data):
    x, a = pair
    axis, keepdims = data.draw(reductions(a.ndim))
    check(ak.all(x, axis=axis, keepdims=keepdims), np.all(a, axis=axis, keepdims=keepdims))
    check(ak.any(x, axis=axis, keepdims=keepdims), np.any(a, axis=axis, keepdims=keepdims))


def test_all_any_special_values():
    z = ak.asarray(np.array([0j, 1j, 0j], "complex64"))
    assert ak.any(z).item() is True and ak.all(z).item() is False
    special = ak.asarray(np.array([np.nan, np.inf, -np.inf], "float32"))
    assert ak.all(special).item() is True
    tiny = np.array([3e-45, -0.0, 1e-40j], "complex64")
    check(ak.any(ak.asarray(tiny)[:, None], axis=1), tiny != 0)
    check(ak.any(ak.asarray(tiny.real)[:, None], axis=1), tiny.real != 0)
    empty = ak.zeros((0, 3))
    assert ak.all(empty).item() is True and ak.any(empty).item() is False
    check(ak.all(empty, axis=0), np.ones(3, bool))
    check(ak.any(empty, axis=0), np.zeros(3, bool))
    assert ak.all(ak.zeros((2, 0)), axis=1).shape == (2,)


def test_all_any_errors():
    x = ak.zeros((2, 3))
    with pytest.raises(IndexError, match="axis 2"):
        ak.all(x, axis=2)
    with pytest.raises(IndexError, match="axis -3"):
        ak.any(x, axis=(0, -3))
    with pytest.raises(ValueError, match="repeated"):
        ak.any(x, axis=(1, -1))
    with pytest.raises(IndexError, match="0 dimensions"):
        ak.all(ak.zeros(()), axis=0)
    with pytest.raises(TypeError, match="list"):
        ak.all([True])


@SETTINGS
@given(
    pair=strided_pairs(
        dtype=st.sampled_from(("bool", "int8", "uint8", "int64", "float32", "complex128")),
        shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5),
    ),
    data=st.data(),
)
def test_diff(pair, data):
    x, a = pair
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = data.draw(st.integers(0, 4))
    kw, npkw = {}, {}
    for name in ("prepend", "append"):
        kind = data.draw(st.sampled_from(["none", "array", "scalar"]))
        if kind == "array":
            shape = list(a.shape)
            shape[axis] = data.draw(st.integers(0, 3))
            t, v = data.draw(strided_pairs(dtype=st.sampled_from((a.dtype.name, "int16")), shape=tuple(shape)))
            kw[name], npkw[name] = t, v
        elif kind == "scalar":
            t = ak.asarray(np.array(1, a.dtype))
            kw[name], npkw[name] = t, np.array(1, a.dtype)
    got = ak.diff(x, axis=axis, n=n, **kw)
    edge = a.shape[: axis % a.ndim] + (1,) + a.shape[axis % a.ndim + 1:]
    parts = [np.broadcast_to(npkw[k], edge) if npkw[k].ndim == 0 else npkw[k] for k in npkw]
    if "prepend" in npkw:
        parts = [parts[0], a] + parts[1:]
    else:
        parts = [a] + parts
    want = np.diff(np.concatenate(parts, axis=axis), axis=axis, n=n)
    check(got, want)


def test_diff_python_scalar_edges_and_bool():
    a = np.array([[1, 4, 9], [2, 2, 0]], "int32")
    x = ak.asarray(a)
    check(ak.diff(x, prepend=0, append=10), np.diff(a, prepend=np.int32(0), append=np.int32(10)))
    check(ak.diff(x, axis=0, prepend=1.5), np.diff(a.astype("float32"), axis=0, prepend=np.float32(1.5)))
    b = np.array([True, False, False, True])
    check(ak.diff(ak.asarray(b), n=2), np.diff(b, n=2))
    check(ak.diff(x, n=7), np.diff(a, n=7))


def test_diff_errors():
    x = ak.zeros((2, 3))
    with pytest.raises(ValueError, match="0-d"):
        ak.diff(ak.zeros(()))
    with pytest.raises(ValueError, match="non-negative"):
        ak.diff(x, n=-1)
    with pytest.raises(IndexError, match="axis 2"):
        ak.diff(x, axis=2)
    with pytest.raises(ValueError, match=r"prepend of shape \(3, 3\).*\(2, 3\).*axis 1"):
        ak.diff(x, prepend=ak.zeros((3, 3)))
    with pytest.raises(ValueError, match="append"):
        ak.diff(x, append=ak.zeros((3,)))
    with pytest.raises(TypeError, match="str"):
        ak.diff(x, append="a")
