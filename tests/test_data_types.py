"""Data type functions, constants and the inspection namespace.

result_type and can_cast are checked against the promotion tables of the array API
standard (2025.12, "Type Promotion Rules"), written out below; finfo/iinfo and
astype against NumPy.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arraykit as ak
from tests.strategies import ALL_DTYPES, strided_pairs

SETTINGS = settings(max_examples=25, deadline=None)

_CODES = {
    "b": "bool", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
    "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
    "f4": "float32", "f8": "float64", "c8": "complex64", "c16": "complex128",
}

# The standard's tables, row by row (row dtype, column dtypes, results).
_TABLES = [
    ("i1 i2 i4 i8", {"i1": "i1 i2 i4 i8", "i2": "i2 i2 i4 i8", "i4": "i4 i4 i4 i8",
                     "i8": "i8 i8 i8 i8"}),
    ("u1 u2 u4 u8", {"u1": "u1 u2 u4 u8", "u2": "u2 u2 u4 u8", "u4": "u4 u4 u4 u8",
                     "u8": "u8 u8 u8 u8"}),
    ("u1 u2 u4", {"i1": "i2 i4 i8", "i2": "i2 i4 i8", "i4": "i4 i4 i8", "i8": "i8 i8 i8"}),
    ("f4 f8 c8 c16", {"f4": "f4 f8 c8 c16", "f8": "f8 f8 c16 c16", "c8": "c8 c16 c8 c16",
                      "c16": "c16 c16 c16 c16"}),
    ("b", {"b": "b"}),
]


def _table():
    table = {}
    for cols, rows in _TABLES:
        for row, results in rows.items():
            for col, res in zip(cols.split(), results.split()):
                a, b, r = (getattr(ak, _CODES[c]) for c in (row, col, res))
                table[a, b] = r
                table[b, a] = r
    return table


PROMOTION = _table()
DTYPES = [getattr(ak, n) for n in ALL_DTYPES]


# ---------------------------------------------------------------------- result_type


@pytest.mark.parametrize("pair", sorted(PROMOTION, key=repr))
def test_result_type_matches_standard_table(pair):
    a, b = pair
    expected = PROMOTION[pair]
    assert ak.result_type(a, b) is expected
    assert ak.result_type(ak.empty(1, dtype=a), b) is expected
    assert ak.result_type(ak.empty((), dtype=a), ak.empty((2,), dtype=b)) is expected


def test_result_type_is_associative_within_kinds():
    for a, b, c in itertools.product(DTYPES, repeat=3):
        if (a, b) in PROMOTION and (PROMOTION[a, b], c) in PROMOTION and (b, c) in PROMOTION \
                and (a, PROMOTION[b, c]) in PROMOTION:
            expected = PROMOTION[PROMOTION[a, b], c]
            assert PROMOTION[a, PROMOTION[b, c]] is expected
            for perm in itertools.permutations((a, b, c)):
                assert ak.result_type(*perm) is expected


@pytest.mark.parametrize("dtype,scalar,expected", [
    ("bool", True, "bool"),
    ("int8", 1, "int8"), ("uint64", 7, "uint64"), ("int64", True, "int64"),
    ("float32", 1, "float32"), ("float32", 1.5, "float32"), ("float64", 2.0, "float64"),
    ("float32", 1j, "complex64"), ("float64", 1j, "complex128"),
    ("complex64", 1.0, "complex64"), ("complex128", 1j, "complex128"),
])
def test_result_type_python_scalars(dtype, scalar, expected):
    """The standard's scalar rules: a scalar takes the array's dtype (complex keeps precision)."""
    dt = getattr(ak, dtype)
    for args in ((dt, scalar), (scalar, dt), (ak.ones(2, dtype=dt), scalar),
                 (scalar, scalar, ak.ones((), dtype=dt))):
        assert ak.result_type(*args) is getattr(ak, expected)


def test_result_type_scalars_follow_array_promotion():
    assert ak.result_type(ak.int8, ak.int16, 1) is ak.int16
    assert ak.result_type(ak.float32, 1j, ak.float64) is ak.complex128
    assert ak.result_type(ak.uint8, 1, ak.int8) is ak.int16


def test_result_type_single_and_errors():
    for d in DTYPES:
        assert ak.result_type(d) is d
        assert ak.result_type(ak.zeros(1, dtype=d)) is d
    # NumPy float64 subclasses Python float: weak, as in the element-wise functions
    assert ak.result_type(np.float64(1.0), ak.float32) is ak.float32
    assert (ak.ones(1) + np.float64(1.0)).dtype is ak.float32
    assert ak.result_type(np.int64(1), ak.int8) is ak.int64
    with pytest.raises(ValueError, match="at least one"):
        ak.result_type()
    with pytest.raises(ValueError, match="at least one"):
        ak.result_type(1, 2.0)
    with pytest.raises(TypeError):
        ak.result_type(ak.int8, "not a dtype")


# ---------------------------------------------------------------------- can_cast


@pytest.mark.parametrize("from_,to", list(itertools.product(DTYPES, DTYPES)))
def test_can_cast_matches_standard_table(from_, to):
    """True exactly when some promotion of ``from_`` in the table gives ``to``."""
    expected = any(PROMOTION.get((from_, other)) is to for other in DTYPES)
    assert ak.can_cast(from_, to) is expected
    assert ak.can_cast(ak.empty(1, dtype=from_), to) is expected


def test_can_cast_errors():
    with pytest.raises(TypeError):
        ak.can_cast("nope", ak.int8)


# ---------------------------------------------------------------------- finfo / iinfo


@pytest.mark.parametrize("name", ["float32", "float64", "complex64", "complex128"])
def test_finfo_matches_numpy(name):
    real = {"complex64": "float32", "complex128": "float64"}.get(name, name)
    ref = np.finfo(np.dtype(real))
    dt = getattr(ak, name)
    for arg in (dt, ak.ones(2, dtype=dt), ak.ones((), dtype=dt).dtype):
        info = ak.finfo(arg)
        assert info.dtype is getattr(ak, real)
        assert type(info.bits) is int and info.bits == ref.bits
        for attr in ("eps", "max", "min", "smallest_normal"):
            value = getattr(info, attr)
            assert type(value) is float
            assert value == float(getattr(ref, attr))
    assert "finfo(" in repr(ak.finfo(dt))


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8", "uint16",
                                  "uint32", "uint64"])
def test_iinfo_matches_numpy(name):
    ref = np.iinfo(np.dtype(name))
    dt = getattr(ak, name)
    for arg in (dt, ak.zeros(3, dtype=dt)):
        info = ak.iinfo(arg)
        assert info.dtype is dt
        assert (info.bits, info.min, info.max) == (ref.bits, int(ref.min), int(ref.max))
        assert all(type(v) is int for v in (info.bits, info.min, info.max))


def test_finfo_iinfo_reject_wrong_kinds():
    for bad in (ak.int32, ak.bool, ak.uint8):
        with pytest.raises(TypeError, match="iinfo"):
            ak.finfo(bad)
    for bad in (ak.float32, ak.bool, ak.complex64):
        with pytest.raises(TypeError, match="finfo"):
            ak.iinfo(bad)
    with pytest.raises(TypeError):
        ak.finfo(object())


# ---------------------------------------------------------------------- isdtype

KINDS = {
    "bool": {"bool"},
    "signed integer": {"int8", "int16", "int32", "int64"},
    "unsigned integer": {"uint8", "uint16", "uint32", "uint64"},
    "integral": {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"},
    "real floating": {"float32", "float64"},
    "complex floating": {"complex64", "complex128"},
}
KINDS["numeric"] = KINDS["integral"] | KINDS["real floating"] | KINDS["complex floating"]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_isdtype_kinds(kind):
    for d in DTYPES:
        assert ak.isdtype(d, kind) is (d.name in KINDS[kind])
        assert ak.isdtype(d, (kind, ak.bool)) is (d.name in KINDS[kind] or d is ak.bool)
        assert ak.isdtype(d, d) is True


def test_isdtype_errors():
    with pytest.raises(ValueError, match="unknown dtype kind"):
        ak.isdtype(ak.int8, "integer")
    with pytest.raises(TypeError):
        ak.isdtype(np.int8, "integral")
    with pytest.raises(TypeError):
        ak.isdtype(ak.int8, 3)


# ---------------------------------------------------------------------- astype


def _castable(src, dst):
    return not (src.kind == "c" and dst.kind not in "cb")


@SETTINGS
@given(pair=strided_pairs(min_value=-100, max_value=100), dtype=st.sampled_from(ALL_DTYPES))
def test_astype_matches_numpy(pair, dtype):
    x, ref = pair
    target = np.dtype(dtype)
    if not _castable(ref.dtype, target):
        with pytest.raises(TypeError, match="real"):
            ak.astype(x, getattr(ak, dtype))
        return
    if ref.dtype.kind in "iu" and target.kind in "iu":
        ref = np.clip(ref, 0, 100)
        x = ak.asarray(ref)
    elif ref.dtype.kind in "fc" and target.kind in "iu":
        ref = np.abs(ref.real).astype(ref.dtype) if ref.dtype.kind == "c" else np.abs(ref)
        x = ak.asarray(ref)
    out = ak.astype(x, getattr(ak, dtype))
    expected = ref.astype(target)
    assert out.shape == expected.shape and out.dtype.np == target
    if target.kind in "fc":  # XLA:CPU flushes results that are subnormal in the target dtype
        tiny = np.finfo(target).tiny

        def flushed(v):
            return np.where(np.abs(v) < tiny, 0, v)

        if target.kind == "c":  # part by part
            expected = (flushed(expected.real) + 1j * flushed(expected.imag)).astype(target)
        else:
            expected = flushed(expected).astype(target)
    np.testing.assert_array_equal(out.numpy(), expected)


def test_astype_copy_and_device():
    x = ak.arange(6).reshape(2, 3)
    assert ak.astype(x, ak.int64, copy=False) is x
    y = ak.astype(x, ak.int64)
    assert y is not x and y.untyped_storage() is not x.untyped_storage()
    y[0, 0] = 9
    assert x[0, 0].item() == 0
    z = ak.astype(x, "float32", copy=False)
    assert z.dtype is ak.float32
    assert ak.astype(x, ak.int64, device=x.device, copy=False) is x
    np.testing.assert_array_equal(ak.astype(ak.asarray([0.0, -0.0, math.nan, 2.0]), ak.bool).numpy(),
                                  [False, False, True, True])
    np.testing.assert_array_equal(ak.astype(ak.asarray([0j, 1j]), ak.bool).numpy(), [False, True])
    np.testing.assert_array_equal(ak.astype(ak.asarray([True, False]), ak.complex64).numpy(),
                                  [1 + 0j, 0j])
    with pytest.raises(TypeError):
        ak.astype(np.zeros(2), ak.float32)


# ---------------------------------------------------------------------- constants, info


def test_constants():
    assert ak.e == math.e and ak.pi == math.pi
    assert ak.inf == float("inf") and math.isnan(ak.nan)
    assert ak.newaxis is None
    assert ak.ones((2, 3))[:, ak.newaxis].shape == (2, 1, 3)
    assert all(type(v) is float for v in (ak.e, ak.pi, ak.inf, ak.nan))


def test_inspection_namespace():
    import jax

    info = ak.__array_namespace_info__()
    assert info.capabilities() == {
        "boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}
    assert info.default_device() == jax.devices()[0]
    devices = info.devices()
    assert isinstance(devices, tuple) and set(jax.devices()) <= set(devices)
    for d in devices:
        assert ak.zeros(1, device=d).device == d
    defaults = info.default_dtypes()
    assert defaults == {"real floating": ak.float32, "complex floating": ak.complex64,
                        "integral": ak.int64, "indexing": ak.int64}
    assert info.default_dtypes(device=devices[0]) == defaults
    assert ak.ones(1).dtype is defaults["real floating"]
    assert ak.asarray(1).dtype is defaults["integral"]
    assert ak.asarray(1j).dtype is defaults["complex floating"]
    everything = info.dtypes()
    assert list(everything) == list(ALL_DTYPES)
    assert all(everything[n] is getattr(ak, n) for n in ALL_DTYPES)
    for kind, names in KINDS.items():
        assert set(info.dtypes(kind=kind)) == names
        assert set(info.dtypes(kind=(kind, "bool"), device=devices[0])) == names | {"bool"}
    info.dtypes()["bogus"] = None
    assert "bogus" not in info.dtypes()
    with pytest.raises(ValueError):
        info.dtypes(kind="integer")
    with pytest.raises(TypeError):
        info.dtypes(kind=ak.int8)
    with pytest.raises(ValueError):
        info.default_dtypes(device="cpu:99")


def test_namespace_and_version():
    x = ak.ones(2)
    assert ak.__array_api_version__ == "2025.12"
    for version in (None, "2025.12"):
        assert x.__array_namespace__(api_version=version) is ak
    for name in ("astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
                 "__array_namespace_info__", "e", "pi", "inf", "nan", "newaxis",
                 "from_dlpack", "meshgrid", "tril", "triu", "eye", "linspace", "full_like"):
        assert name in ak.__all__ and hasattr(ak, name)
