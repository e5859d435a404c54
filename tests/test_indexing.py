"""Advanced indexing against NumPy: integer arrays, lists, boolean masks and mixtures.

``__getitem__`` with an advanced key returns a copy equal to NumPy's result;
``__setitem__`` with any key writes through the storage (every other view sees
it) with the value broadcast; out-of-range indices raise ``IndexError`` and are
never clamped, for reads and writes, ints and arrays, negative ones too.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit as ak
from strategies import make_view

EXAMPLES = int(os.environ.get("ARRAYKIT_TEST_EXAMPLES", "30"))
SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)
LAYOUTS = st.sampled_from(["contiguous", "transposed", "stepped", "flipped"])


@st.composite
def advanced_keys(draw, shape, unique_targets=False):
    """A NumPy-valid key mixing int arrays, lists, masks, ints, slices, None and Ellipsis."""
    items = []
    arrays_shape = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=3))
    d = 0
    has_ellipsis = False
    while d < len(shape):
        n = shape[d]
        kind = draw(st.sampled_from(["int_array", "int_array", "list", "mask", "int", "slice", "none", "ellipsis", "scalar_bool"]))
        if kind in ("int_array", "list"):
            sub = arrays_shape[draw(st.integers(0, len(arrays_shape))):]
            idx = draw(hnp.arrays(np.int64, sub, elements=st.integers(-n, n - 1)))
            items.append(idx.tolist() if kind == "list" and idx.ndim else idx)
            d += 1
        elif kind == "mask":
            k = draw(st.integers(1, min(2, len(shape) - d)))
            items.append(draw(hnp.arrays(np.bool_, shape[d:d + k])))
            d += k
        elif kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
            d += 1
        elif kind == "slice":
            items.append(slice(draw(st.one_of(st.none(), st.integers(-n - 1, n + 1))),
                               draw(st.one_of(st.none(), st.integers(-n - 1, n + 1))),
                               draw(st.one_of(st.none(), st.integers(-3, 3).filter(bool)))))
            d += 1
        elif kind == "none":
            items.append(None)
        elif kind == "scalar_bool":
            items.append(draw(st.booleans()))
        elif not has_ellipsis:
            has_ellipsis = True
            items.append(Ellipsis)
            d = len(shape) - draw(st.integers(0, len(shape) - d))
    return tuple(items)


def np_result(arr, key):
    try:
        return arr[key]
    except IndexError:
        assume(False)


def ak_key(key, form):
    """Give the key's arrays as NumPy arrays, lists or arraykit tensors."""
    out = []
    for k in key:
        if isinstance(k, np.ndarray) and form == "tensor":
            out.append(ak.asarray(k))
        elif isinstance(k, np.ndarray) and form == "list" and k.ndim and np.shape(k.tolist()) == k.shape:
            out.append(k.tolist())
        else:
            out.append(k)
    return tuple(out)


@given(SHAPES.flatmap(lambda s: st.tuples(hnp.arrays(np.int32, s, elements=st.integers(-50, 50)), advanced_keys(s))),
       LAYOUTS, st.sampled_from(["numpy", "list", "tensor"]))
@settings(max_examples=EXAMPLES, deadline=None)
def test_getitem_advanced_matches_numpy(arr_key, layout, form):
    arr, key = arr_key
    expected = np_result(arr, key)
    x = make_view(arr, layout)
    out = x[ak_key(key, form)]
    assert out.shape == np.shape(expected)
    assert out.dtype == ak.int32
    np.testing.assert_array_equal(out.numpy(), expected)
    if any(isinstance(k, list) or isinstance(k, np.ndarray) and k.ndim for k in key):
        assert out.untyped_storage() is not x.untyped_storage()  # advanced keys copy


def _unique_targets(shape, key):
    positions = np.arange(int(np.prod(shape))).reshape(shape)[key]
    return np.unique(positions).size == np.size(positions)


@given(SHAPES.flatmap(lambda s: st.tuples(hnp.arrays(np.int64, s, elements=st.integers(-50, 50)), advanced_keys(s))),
       LAYOUTS, st.sampled_from(["numpy", "list", "tensor"]), st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_setitem_advanced_writes_through(arr_key, layout, form, data):
    arr, key = arr_key
    target_shape = np.shape(np_result(arr, key))
    assume(_unique_targets(arr.shape, key))  # duplicates: NumPy's last-wins is not specified by JAX
    kind = data.draw(st.sampled_from(["scalar", "array", "broadcast", "tensor"]))
    if kind == "scalar":
        value = data.draw(st.integers(-9, 9))
    else:
        shape = target_shape
        if kind == "broadcast":
            shape = tuple(1 if data.draw(st.booleans()) else n for n in shape[data.draw(st.integers(0, len(shape))):])
        value = data.draw(hnp.arrays(np.int64, shape, elements=st.integers(-9, 9)))
        if kind == "tensor":
            value = ak.asarray(value)
    x = make_view(arr, layout)
    others = [x.untyped_storage(), x.T if x.ndim == 2 else x[...], x.flip(0)]
    expected = arr.copy()
    expected[key] = np.asarray(value.numpy() if isinstance(value, ak.Tensor) else value)
    x[ak_key(key, form)] = value
    np.testing.assert_array_equal(x.numpy(), expected)
    np.testing.assert_array_equal(others[1].numpy(), expected.T if x.ndim == 2 else expected)
    np.testing.assert_array_equal(others[2].numpy(), expected[::-1])
    assert x.untyped_storage() is others[0]


@given(SHAPES.flatmap(lambda s: st.tuples(hnp.arrays(np.float64, s, elements=st.integers(-9, 9)),
                                          hnp.basic_indices(s, allow_newaxis=True))), LAYOUTS, st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_setitem_basic_writes_through(arr_key, layout, data):
    arr, key = arr_key
    items = key if isinstance(key, tuple) else (key,)
    target = arr[items] if any(k is Ellipsis for k in items) else arr[items + (Ellipsis,)]
    shape = target.shape
    shape = tuple(1 if data.draw(st.booleans()) else n for n in shape[data.draw(st.integers(0, len(shape))):])
    value = data.draw(st.one_of(st.floats(-9, 9, width=32), hnp.arrays(np.float64, shape, elements=st.integers(-9, 9))))
    x = make_view(arr, layout)
    alias = x.flip(-1)
    expected = arr.copy()
    expected[key] = value
    x[key] = value
    np.testing.assert_array_equal(x.numpy(), expected)
    np.testing.assert_array_equal(alias.numpy(), np.flip(expected, -1))


def test_setitem_value_broadcast_and_views_see_it():
    x = ak.zeros((4, 5), dtype=ak.int64)
    row, col = x[1], x[:, 2]
    x[[0, 2], 1:4] = ak.asarray(np.array([7, 8, 9]))
    x[x.numpy() == 0] = 3
    x[:, [True, False, True, False, False]] = ak.asarray(np.array([[1], [2], [3], [4]]))
    expected = np.full((4, 5), 3)
    expected[[0, 2], 1:4] = [7, 8, 9]
    expected[:, [0, 2]] = [[1], [2], [3], [4]]
    np.testing.assert_array_equal(x.numpy(), expected)
    np.testing.assert_array_equal(row.numpy(), expected[1])
    np.testing.assert_array_equal(col.numpy(), expected[:, 2])


def test_scalar_bool_keys_match_numpy():
    arr = np.arange(12).reshape(3, 4)
    x = ak.asarray(arr)
    for key in [True, False, (True, 0), (Ellipsis, True), (0, True, [1, 2]), (slice(None), False)]:
        np.testing.assert_array_equal(x[key].numpy(), arr[key])
        assert x[key].shape == arr[key].shape
        y, expected = ak.asarray(arr), arr.copy()
        y[key] = -1
        expected[key] = -1
        np.testing.assert_array_equal(y.numpy(), expected)


def test_mask_setitem_shape_mismatch_raises_index_error():
    x = ak.zeros((3, 4))
    with pytest.raises(IndexError):
        x[ak.asarray(np.ones((4,), bool))] = 1.0
    with pytest.raises(IndexError):
        x[np.ones((3, 3), bool)]
    np.testing.assert_array_equal(x.numpy(), np.zeros((3, 4)))


# ----------------------------------------------------------------------------
# out-of-range indices raise, never clamp
# ----------------------------------------------------------------------------


@given(SHAPES, st.data())
@settings(max_examples=EXAMPLES, deadline=None)
def test_out_of_range_indices_raise(shape, data):
    arr = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    x = make_view(arr, data.draw(LAYOUTS))
    version = x.untyped_storage().version
    d = data.draw(st.integers(0, len(shape) - 1))
    n = shape[d]
    bad = data.draw(st.one_of(st.integers(n, n + 4), st.integers(-n - 4, -n - 1)))
    pre = (slice(None),) * d
    good = data.draw(st.lists(st.integers(-n, n - 1), max_size=3))
    form = data.draw(st.sampled_from(["int", "numpy", "list", "tensor"]))
    if form == "int":
        item = bad
    else:
        values = data.draw(st.permutations(good + [bad]))
        item = np.array(values) if form == "numpy" else list(values) if form == "list" else ak.asarray(np.array(values))
    key = pre + (item,)
    with pytest.raises(IndexError):
        arr[key if form != "tensor" else pre + (np.array(values),)]  # the oracle agrees
    with pytest.raises(IndexError):
        x[key]
    with pytest.raises(IndexError):
        x[key] = 0
    with pytest.raises(IndexError):
        x[key] = ak.asarray(np.int64(5))
    assert x.untyped_storage().version == version
    np.testing.assert_array_equal(x.numpy(), arr)


def test_out_of_range_examples():
    x = ak.asarray(np.arange(10))
    for key in (10, -11, [0, 10], [-11], np.array([3, 12]), ak.asarray(np.array([-20])), (Ellipsis, 10)):
        with pytest.raises(IndexError):
            x[key]
        with pytest.raises(IndexError):
            x[key] = 1
    with pytest.raises(IndexError):
        x.index_fill_(0, ak.asarray(np.array([10])), 1)
    with pytest.raises(IndexError):
        x[np.array([1.5])]
    with pytest.raises(IndexError):
        ak.zeros((2, 3))[0, 0, 0]
    np.testing.assert_array_equal(x.numpy(), np.arange(10))


_HOST_WRITE_KEYS = [
    (np.array([0, 3, -1]),),
    ([2, 2, 0],),  # a repeated index: the last write wins, as in NumPy
    (np.array([True, False, True, False, True, True, False]),),
    (np.array([1, 4]), slice(None)),
    (slice(1, None, 2), np.array([0, 2])),
    (Ellipsis, np.array([2, 0])),
    (np.array([[0, 1], [5, 6]]), np.array([[0, 2], [1, 1]])),
    (None, np.array([3]), 1),
    (np.zeros(7, bool),),
]


@pytest.mark.parametrize("key", _HOST_WRITE_KEYS, ids=range(len(_HOST_WRITE_KEYS)))
@pytest.mark.parametrize("value_kind", ["scalar", "tensor", "numpy", "same storage"])
def test_small_cpu_index_writes_compile_no_kernel_and_match_numpy(key, value_kind):
    """An index write into a small CPU tensor is stored by NumPy on the host: NumPy's
    values (a broadcast value, repeats, an overlapping source), no kernel compiled."""
    from arraykit.kernels import launch

    rng = np.random.default_rng(0)
    base = rng.standard_normal((7, 3))
    expected = base.copy()
    selected = expected[key].shape
    source = rng.standard_normal(selected[-1:]) if selected else rng.standard_normal(())
    t = ak.asarray(base, device="cpu")
    alias = t[1:]  # a view: sees the write
    value = {"scalar": 2.5, "tensor": ak.asarray(source, device="cpu"), "numpy": source,
             "same storage": t[6, :selected[-1]] if selected else t[6, 0]}[value_kind]
    expected[key] = base[6, :selected[-1]] if value_kind == "same storage" and selected else (
        base[6, 0] if value_kind == "same storage" else (2.5 if value_kind == "scalar" else source))
    version = t.untyped_storage().version
    launch.cache_clear()  # no kernel built by an earlier test counts
    t[key] = value
    assert launch.cache_info()["misses"] == 0
    assert t.untyped_storage().version == version + 1
    np.testing.assert_array_equal(t.numpy(), expected)
    np.testing.assert_array_equal(alias.numpy(), expected[1:])


_WRITE_DTYPES = ["bool", "int8", "uint8", "int32", "int64", "uint64", "float16", "float32",
                 "float64", "complex64", "complex128"]


@pytest.mark.parametrize("source", _WRITE_DTYPES)
@pytest.mark.parametrize("target", _WRITE_DTYPES)
def test_host_index_writes_convert_as_the_write_kernels(source, target, monkeypatch):
    """Where the host path converts the value's dtype, NumPy's conversion gives the write
    kernel's bits (values at the edges of each dtype included); elsewhere the kernel runs."""
    from arraykit.tensors import host_paths

    values = np.array([0, 1, -1, 3.5, -2.5, 1e-8, 6e-5, 65504.5, 1e40, -1e300, 2**31 + 0.5,
                       2**63, -(2**63), 255.5, np.inf, -np.inf, np.nan], np.float64)
    with np.errstate(all="ignore"):
        if np.dtype(source).kind == "c":
            values = values + 1j * values[::-1]
        values = values.astype(source) if np.dtype(source).kind in "fcb" else (
            np.nan_to_num(values.real, posinf=0, neginf=0).astype(np.int64).astype(source))
    kind = np.dtype(source).kind
    if kind in "fc":  # a subnormal and a NaN with a payload: XLA's conversions change them
        part = np.dtype(source).char.lower() if kind == "f" else {"F": "f", "D": "d"}[
            np.dtype(source).char]
        bits = {"e": (np.uint16, 0x7C01), "f": (np.uint32, 0x7F802000),
                "d": (np.uint64, 0x7FF0000000000101)}[part]
        edge = np.array([np.finfo(part).smallest_subnormal * 3,
                         np.array(bits[1], bits[0]).view(part)], part)
        values = np.concatenate([values, edge.astype(source)])
    idx = np.arange(len(values))[::-1]

    def written(host):
        if not host:
            monkeypatch.setattr(host_paths, "stores", lambda x, value: False)
        t = ak.zeros(len(values), dtype=getattr(ak, target), device="cpu")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # complex into real: the kernels' warning
            t[idx] = ak.asarray(values, device="cpu")
        monkeypatch.undo()
        return t.numpy()

    host, kernel = written(True), written(False)
    assert host.dtype == kernel.dtype
    np.testing.assert_array_equal(host.view(np.uint8), kernel.view(np.uint8))


def test_host_index_writes_keep_exports_and_numpy_memory_semantics():
    """A DLPack export keeps its snapshot; NumPy memory (``numpy()``) is written in place,
    at its address; a large storage, autograd and read-only memory keep the kernel path."""
    from arraykit.tensors import host_paths

    t = ak.arange(6.0, device="cpu")
    snapshot = np.from_dlpack(t)
    t[[1, 2]] = -1.0
    np.testing.assert_array_equal(snapshot, np.arange(6.0))
    np.testing.assert_array_equal(t.numpy(), [0, -1, -1, 3, 4, 5])
    shared = t.numpy()  # t now lives in NumPy memory
    address = t.data_ptr()
    t[np.array([True, False, False, False, False, True])] = 9.0
    assert t.data_ptr() == address
    np.testing.assert_array_equal(shared, [9, -1, -1, 3, 4, 9])
    big = ak.zeros(host_paths.HOST_ELEMENTS + 1, device="cpu")
    big[0] = 1.0  # warm the kernels
    address = big.data_ptr()
    big[[3, 5]] = 2.0  # a large storage: the write kernel updates it in place
    assert big.data_ptr() == address and big[5].item() == 2.0
    w = ak.ones(4, device="cpu", requires_grad=True)
    out = ak.zeros(4, device="cpu")
    out[[0, 2]] = w[[1, 3]] * 3
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [0, 3, 0, 3])
    frozen = np.arange(4.0)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        ak.from_numpy(frozen)[[0]] = 1.0
    np.testing.assert_array_equal(frozen, np.arange(4.0))
