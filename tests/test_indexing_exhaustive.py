"""Every indexing key of up to four components, checked against NumPy (not sampled).

The components: an int, a negative int, a slice with a step, ``None``, ``...`` (at
most one), ``True``, ``False``, an integer array and a boolean array, over arrays of
0 to 3 dimensions. arraykit follows NumPy's rules, which the array API standard
adopts for the keys it specifies; where PyTorch differs (an int beside an integer
array is applied first: ``t[0, :, [0, 1]]`` has shape ``(3, 2)`` in PyTorch, ``(2, 3)``
in NumPy and arraykit) docs/pytorch.md says so.

Two parts, so that the whole set runs in seconds:

* every key goes through arraykit's own key handling on the host: a basic key
  through :func:`arraykit.core.layout.index` (compared with NumPy's view: shape,
  strides, offset), an advanced key through :func:`indexing_keys.plan` and the
  kernels' key logic (:func:`indexing_keys.with_bool_axes`, :func:`indexing_keys.jax_key`)
  executed by NumPy, read and written; errors must be NumPy's error type;
* a fixed, evenly spread subset of the advanced keys runs through ``Tensor``
  itself (the JAX kernels): reads, writes, an in-place operator, on a strided view,
  eagerly and under :func:`arraykit.jit`.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import arraykit as ak
from arraykit.core import layout as L
from arraykit.tensors import indexing_keys as K

SHAPES = [(), (3,), (2, 3), (2, 3, 2)]
COMPONENTS = ("int", "negative int", "slice", "None", "...", "True", "False", "int array", "bool array")
AXIS_CONSUMING = {"int", "negative int", "slice", "int array", "bool array"}


def _item(component, shape, axis):
    """The key item for ``component`` when it lands on input axis ``axis``."""
    if component == "int":
        return 1
    if component == "negative int":
        return -1
    if component == "slice":
        return slice(None, None, -2)
    if component == "None":
        return None
    if component == "...":
        return Ellipsis
    if component in ("True", "False"):
        return component == "True"
    if component == "int array":
        return np.array([0, -1])
    size = shape[axis] if axis < len(shape) else 2  # past the last axis: NumPy raises
    return np.arange(size) % 2 == 0


def _keys(shape):
    """Every key of 0 to 4 components (one Ellipsis at most) for an array of ``shape``."""
    for n in range(5):
        for combo in itertools.product(COMPONENTS, repeat=n):
            if combo.count("...") > 1:
                continue
            axis, items = 0, []
            for c in combo:
                if c == "...":
                    axis = max(axis, len(shape) - sum(k in AXIS_CONSUMING for k in combo[combo.index(c) + 1:]))
                items.append(_item(c, shape, axis))
                axis += c in AXIS_CONSUMING
            yield combo, tuple(items)


def _numpy(arr, key):
    """NumPy's result of ``arr[key]``, or the type of the error it raises."""
    try:
        return arr[key]
    except (IndexError, ValueError, TypeError) as e:
        return type(e)


def _layout_of(view, base):
    """(shape, strides, offset) of a NumPy view of ``base``, in elements."""
    item = base.itemsize
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item
    return view.shape, tuple(s // item for s in view.strides), offset


def _host_write(arr, key, value):
    """NumPy's ``arr[key] = value`` on a copy."""
    out = arr.copy()
    out[key] = value
    return out


def _arraykit_on_host(arr, key):
    """arraykit's key handling with NumPy executing the kernels' index logic:
    ``("basic", layout)``, ``("advanced", result, write)`` or the error type."""
    try:
        if K.is_basic(key):
            layout = L.index(L.contiguous(arr.shape), K.basic_key(key))
            return ("basic", (layout.shape, layout.strides, layout.offset))
        plan = K.plan(arr.shape, key)
    except (IndexError, ValueError, TypeError) as e:
        return type(e)
    np_key = K.jax_key(plan.structure, plan.operands)
    result = K.with_bool_axes(np, arr, plan.structure)[np_key]

    def write(value):
        out = arr.copy()
        K.with_bool_axes(np, out, plan.structure)[np_key] = value  # expand_dims is a view
        return out

    return ("advanced", result, write, plan.result_shape)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_every_key_against_numpy(shape):
    arr = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    checked = 0
    for combo, key in _keys(shape):
        expected = _numpy(arr, key)
        got = _arraykit_on_host(arr, key)
        if isinstance(expected, type):
            assert got is expected or (isinstance(got, type) and issubclass(got, expected)), (combo, got, expected)
            continue
        assert not isinstance(got, type), (combo, got)
        if got[0] == "basic":
            shape_, strides, offset = got[1]
            values = np.lib.stride_tricks.as_strided(
                arr.reshape(-1)[offset:], shape_, [s * arr.itemsize for s in strides])
            np.testing.assert_array_equal(values, expected, err_msg=str(combo))
            assert shape_ == np.shape(expected), combo
            if isinstance(expected, np.ndarray) and expected.size > 1:
                assert got[1] == _layout_of(expected, arr), combo
        else:
            _, result, write, result_shape = got
            assert result.shape == expected.shape == result_shape, combo
            assert result.dtype == expected.dtype, combo
            np.testing.assert_array_equal(result, expected, err_msg=str(combo))
            value = 100 + np.arange(expected.size, dtype=np.int32).reshape(expected.shape)
            np.testing.assert_array_equal(write(value), _host_write(arr, key, value), err_msg=str(combo))
        checked += 1
    assert checked > 0


def _advanced_valid_keys():
    """Every NumPy-valid advanced key over every shape, in a fixed order."""
    out = []
    for shape in SHAPES:
        arr = np.zeros(shape)
        for combo, key in _keys(shape):
            if not K.is_basic(key) and not isinstance(_numpy(arr, key), type):
                out.append((shape, combo, key))
    return out


ADVANCED = _advanced_valid_keys()
SUBSET = ADVANCED[:: max(1, len(ADVANCED) // 150)]  # about 150 keys spread over all shapes


def _strided_pair(shape):
    """A NumPy array and the equal arraykit view with a negative last stride."""
    n = int(np.prod(shape))
    base = np.arange(n, dtype=np.int32).reshape(shape)
    if not shape:
        return base, ak.asarray(base)
    flipped = base[..., ::-1].copy()
    return base, ak.asarray(flipped)[..., ::-1]


@pytest.mark.parametrize("case", range(len(SUBSET)))
def test_tensor_keys_against_numpy(case):
    shape, combo, key = SUBSET[case]
    arr, x = _strided_pair(shape)
    expected = arr[key]
    got = x[key]
    assert got.shape == expected.shape, combo
    assert got.dtype == ak.int32
    np.testing.assert_array_equal(np.asarray(got), expected, err_msg=str(combo))

    value = 100 + np.arange(expected.size, dtype=np.int32).reshape(expected.shape)
    x[key] = ak.asarray(value)
    np.testing.assert_array_equal(np.asarray(x), _host_write(arr, key, value), err_msg=str(combo))

    arr2, x2 = _strided_pair(shape)
    x2[key] += 7
    expected2 = arr2.copy()
    expected2[key] += 7
    np.testing.assert_array_equal(np.asarray(x2), expected2, err_msg=str(combo))


@pytest.mark.parametrize("case", range(0, len(SUBSET), 10))
def test_tensor_keys_under_jit(case):
    shape, combo, key = SUBSET[case]
    arr, x = _strided_pair(shape)

    @ak.jit
    def step(t):
        out = t[key] * 2
        t[key] = out
        return out

    expected = arr[key] * 2
    got = step(x)
    np.testing.assert_array_equal(np.asarray(got), expected, err_msg=str(combo))
    np.testing.assert_array_equal(np.asarray(x), _host_write(arr, key, expected), err_msg=str(combo))


def test_issue_keys():
    """The keys that once gave wrong elements or lost an axis."""
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    x = ak.asarray(a)
    for key in [(True, ..., True, np.array([1])), (False, True, np.array([1])),
                (True, ..., np.array([1]), True)]:
        np.testing.assert_array_equal(np.asarray(x[key]), a[key])
        assert x[key].shape == a[key].shape
