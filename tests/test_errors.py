"""Error messages users get from the strided core, and that failed writes write nothing.

Each case runs an operation that must fail on a tensor ``x`` (a view of a
storage holding known values); the exception type and message are checked, and
afterwards the storage must hold the same values with the same version counter:
nothing half-written.
"""

from __future__ import annotations

import numpy as np
import pytest

import arraykit as ak

VALUES = np.arange(24, dtype=np.float32).reshape(4, 6)


def _f32():
    return ak.asarray(VALUES)


def _i64():
    return ak.asarray(VALUES.astype(np.int64))


CASES = [
    # broadcast mismatches name both shapes and the dimension
    ("add_ shapes", _f32, lambda x: x.add_(ak.zeros((4, 5))), ValueError,
     r"\(4, 6\).*\(4, 5\).*dimension -1|\(4, 5\).*\(4, 6\).*dimension -1"),
    ("+= shapes", _f32, lambda x: x.__iadd__(ak.zeros((3, 1, 6))), ValueError, r"\(3, 1, 6\)"),
    ("setitem value shape", _f32, lambda x: x.__setitem__(slice(None), np.zeros((4, 5), np.float32)),
     ValueError, r"\(4, 5\).*\(4, 6\)|\(4, 6\).*\(4, 5\)"),
    ("copy_ shape", _f32, lambda x: x[:, :3].copy_(ak.zeros((4, 2))), ValueError, r"\(4, 2\).*\(4, 3\)"),
    ("binary op shapes", _f32, lambda x: x + ak.zeros((5, 6)), ValueError,
     r"\(4, 6\).*\(5, 6\).*dimension -2|\(5, 6\).*\(4, 6\).*dimension -2"),
    ("mask setitem value", _f32, lambda x: x.__setitem__(x.numpy() > 3, np.zeros(3, np.float32)), ValueError,
     r"\(3,\).*\(20,\)|\(20,\).*\(3,\)"),
    # out-of-range indices
    ("index read", _f32, lambda x: x[4], IndexError, r"index 4 is out of bounds for dimension 0 with size 4"),
    ("index write", _f32, lambda x: x.__setitem__((0, -7), 1.0), IndexError, r"index -7 is out of bounds for dimension 1"),
    ("array index write", _f32, lambda x: x.__setitem__((slice(None), np.array([0, 6])), 1.0), IndexError, r"6"),
    ("select", _f32, lambda x: x.select(1, 6), IndexError, r"out of bounds"),
    ("narrow", _f32, lambda x: x.narrow(0, 2, 3), IndexError, r"exceeds dimension"),
    ("bad dim", _f32, lambda x: x.transpose(0, 2), IndexError, r"out of range"),
    # view needs reshape
    ("view", _f32, lambda x: x.T.view(24), RuntimeError, r"view size .*not compatible.*reshape"),
    ("view shape", _f32, lambda x: x.view(5, 5), ValueError, r"invalid for input of size 24"),
    # as_strided outside the storage, negative strides
    ("as_strided bounds", _f32, lambda x: x.as_strided((4, 6), (6, 1), 1), ValueError,
     r"sizes \[4, 6\], strides \[6, 1\] and storage offset 1 .*size 24"),
    ("as_strided big", _f32, lambda x: x.as_strided((3,), (10,), 5), ValueError, r"storage of size 24"),
    ("as_strided negative", _f32, lambda x: x.as_strided((3,), (-1,), 5), ValueError, r"negative strides"),
    # writes into self-overlapping views
    ("expand fill_", _f32, lambda x: x[:1].expand(3, 6).fill_(1.0), RuntimeError, r"single memory location"),
    ("expand setitem", _f32, lambda x: x[0].expand(2, 6).__setitem__((slice(None), 0), 1.0), RuntimeError, r"single memory location"),
    ("expand add_", _f32, lambda x: x[:, :1].expand(4, 4).add_(1.0), RuntimeError, r"single memory location"),
    ("unfold copy_", _f32, lambda x: x[0].unfold(0, 3, 1).copy_(ak.zeros((4, 3))), RuntimeError, r"single memory location"),
    ("as_strided overlap", _f32, lambda x: x.as_strided((3, 3), (1, 1)).zero_(), RuntimeError, r"single memory location"),
    ("broadcast_to masked_fill_", _f32, lambda x: x[:1].broadcast_to((2, 6)).masked_fill_(ak.ones((2, 6), dtype=ak.bool), 0.0),
     RuntimeError, r"single memory location"),
    # dtypes a write cannot hold: writes (x[k] = v, copy_, fill_) cast any real value as
    # PyTorch does (tests/test_scipy_backend_fixes.py); in-place results cast only within
    # their kind or to a higher one (PyTorch's canCast); a Python complex into a real tensor
    ("float += into int", _i64, lambda x: x.__iadd__(ak.ones((4, 6), dtype=ak.float32)), TypeError, r"float64.*int64"),
    ("complex += into f32", _f32, lambda x: x.__iadd__(ak.ones((4, 6), dtype=ak.complex64)), TypeError, r"complex64.*float32"),
    ("int += into bool", lambda: ak.zeros((4, 6), dtype=ak.bool), lambda x: x.__iadd__(ak.ones((4, 6), dtype=ak.int32)), TypeError, r"int32.*bool"),
    ("complex into f32", _f32, lambda x: x.fill_(1j), TypeError, r"complex"),
    ("complex setitem into f32", _f32, lambda x: x.__setitem__((0, 0), 2j), TypeError, r"complex"),
    ("python float += into int", _i64, lambda x: x.__iadd__(0.5), TypeError, r"int64"),
    ("int true division in place", _i64, lambda x: x.__itruediv__(2), TypeError, r"int64"),
    ("uint8 overflow", lambda: ak.asarray(np.zeros(3, np.uint8)), lambda x: x.fill_(300), OverflowError, r"300"),
    ("clamp_ second bound", _i64, lambda x: x.clamp_(0, 2.5), TypeError, r"int64"),
    ("clamp_ first bound", _i64, lambda x: x.clamp_(0.5, 2), TypeError, r"int64"),
    ("mask dtype", _f32, lambda x: x.masked_fill_(ak.ones((4, 6)), 0.0), TypeError, r"bool"),
]


@pytest.mark.parametrize("name,make,action,exc,match", CASES, ids=[c[0] for c in CASES])
def test_error_leaves_storage_unchanged(name, make, action, exc, match):
    x = make()
    before = x.numpy().copy()
    storage = x.untyped_storage()
    version = storage.version
    with pytest.raises(exc, match=match):
        action(x)
    assert storage.version == version, name
    np.testing.assert_array_equal(x.numpy(), before)


def test_writes_that_can_hold_the_values_work():
    x = _f32()
    x[0] = ak.arange(6, dtype=ak.int32)  # integers into floats: allowed
    x[1] = True
    x.add_(ak.ones((4, 6), dtype=ak.float32))
    x += 2
    y = _i64()
    y[0] = np.arange(6, dtype=np.int8)
    y += ak.ones(6, dtype=ak.int32)
    y.fill_(True)
    assert (y.numpy() == 1).all()


def test_error_messages_name_the_values():
    x = ak.zeros((2, 3))
    with pytest.raises(ValueError) as info:
        x.add_(ak.zeros((2, 4)))
    assert "(2, 3)" in str(info.value) and "(2, 4)" in str(info.value)
    with pytest.raises(RuntimeError) as info:
        x.T.view(6)
    assert "(3, 2)" in str(info.value) and "(1, 3)" in str(info.value) and "reshape" in str(info.value)
    with pytest.raises(RuntimeError) as info:
        x[:1].expand(4, 3).zero_()
    assert "(4, 3)" in str(info.value) and "(0, 1)" in str(info.value)
