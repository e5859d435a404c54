"""Linear algebra (main namespace and ``arraykit.linalg``) against NumPy, on strided inputs.

Matrices are drawn well conditioned (diagonally dominant, symmetric positive
definite, or of a chosen rank) and laid out as random views (transposed,
stepped, flipped). Decompositions are checked by reconstruction as well as
against ``numpy.linalg``.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit as ak
from strategies import make_view, strided_pairs

LA = ak.linalg
SETTINGS = settings(max_examples=12, deadline=None)
FEW = settings(max_examples=8, deadline=None)
REAL = ("float32", "float64")
FLOATING = REAL + ("complex64", "complex128")
VIEWS = st.sampled_from(["contiguous", "transposed", "stepped", "flipped"])
BATCH = st.sampled_from([(), (2,), (2, 1)])
SIDE = st.integers(1, 4)


def tol(dtype):
    """Relative/absolute tolerance for results of order one in ``dtype``."""
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-9


def close(got, want, dtype=None, scale=1.0):
    """``got`` (a tensor) has ``want``'s shape, the expected dtype and values within tolerance."""
    want = np.asarray(want)
    dtype = np.dtype(dtype if dtype is not None else want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype.np == dtype, (got.dtype, dtype)
    t = tol(dtype)
    np.testing.assert_allclose(got.numpy(), want, rtol=t, atol=t * scale)


def close_to_exact(got, exact, dtype, magnitude=None, terms=1):
    """``got`` (a tensor of ``dtype``) within rounding error of ``exact`` (computed by
    NumPy in float64/complex128).

    A sum of ``terms`` rounded products is off by at most about ``terms`` units of the
    dtype's resolution times the sum of the terms' absolute values, ``magnitude``
    (``|exact|`` by default, right for sums of non-negative terms); the bound allows
    ``2 * terms + 4`` such units, elementwise. Relative to the dtype, not absolute: a
    float32 result computed in bfloat16 (or TF32) is off by thousands of units and fails.
    Below the smallest normal number a term may also be lost whole: XLA's CPU kernels
    flush subnormal products to zero (``terms`` times ``finfo.tiny`` more).
    """
    exact = np.asarray(exact)
    dtype = np.dtype(dtype)
    assert got.shape == exact.shape, (got.shape, exact.shape)
    assert got.dtype.np == dtype, (got.dtype, dtype)
    if dtype.kind in "iu":
        np.testing.assert_array_equal(got.numpy(), exact)
        return
    magnitude = np.abs(exact) if magnitude is None else np.broadcast_to(magnitude, exact.shape)
    info = np.finfo(dtype)
    bound = (2 * terms + 4) * info.eps * magnitude + terms * info.tiny
    error = np.abs(wide(got.numpy()) - exact)
    assert (error <= bound).all(), f"error {error.max()} above the bound {bound[error > bound].min()}"


def hermitian(a):
    return np.swapaxes(a, -1, -2).conj()


@st.composite
def matrices(draw, dtypes=REAL, shape=None, kind="general"):
    """(tensor view, ndarray) of a matrix stack; ``kind``: general, wellcond, hermitian, spd."""
    dt = np.dtype(draw(st.sampled_from(dtypes)))
    if shape is None:
        m = draw(SIDE)
        shape = draw(BATCH) + (m, m)
    elif isinstance(shape, st.SearchStrategy):
        shape = draw(shape)
    part = hnp.arrays(np.float64, shape, elements=st.floats(-1, 1, width=32))
    a = draw(part)
    if dt.kind == "c":
        a = a + 1j * draw(part)
    m = shape[-1]
    eye = np.eye(m)
    if kind == "wellcond":
        a = a + (m + 1) * eye
    elif kind == "hermitian":
        a = (a + hermitian(a)) / 2
    elif kind == "spd":
        a = a @ hermitian(a) + m * eye
    a = a.astype(dt)
    return make_view(a, draw(VIEWS)), a


def wide(a):
    """``a`` in the widest dtype of its kind, so NumPy references are exact enough."""
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def real_of(dtype):
    return np.finfo(np.dtype(dtype)).dtype


# ---------------------------------------------------------------------------- main namespace

MM_SHAPES = st.sampled_from([
    ((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((2, 2, 3), (3, 1)),
    ((1, 2, 3), (4, 3, 2)), ((3,), (2, 3, 2)), ((2, 1, 2, 3), (3, 3, 2)), ((0, 3), (3, 2)),
    ((2, 0), (0, 3)),
])
MM_DTYPES = st.sampled_from(["int8", "int32", "uint8", "int64", "float32", "float64", "complex64", "complex128"])


@SETTINGS
@given(st.data(), MM_SHAPES, MM_DTYPES, MM_DTYPES)
def test_matmul(data, shapes, dt1, dt2):
    x1, a1 = data.draw(strided_pairs(dtype=dt1, shape=shapes[0], min_value=-8, max_value=8))
    x2, a2 = data.draw(strided_pairs(dtype=dt2, shape=shapes[1], min_value=-8, max_value=8))
    want = np.matmul(a1, a2)
    got = ak.matmul(x1, x2)
    if want.dtype.kind in "iu":
        assert got.dtype.np == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    else:
        magnitude = np.matmul(np.abs(wide(a1)), np.abs(wide(a2)))
        close_to_exact(got, wide(a1) @ wide(a2), want.dtype, magnitude, a1.shape[-1])
    assert ak.linalg.matmul is ak.matmul


def _single(dtype, shape, seed):
    """Seeded float32/complex64 values whose mantissas use every bit (not the small
    round numbers hypothesis favours, which lower precisions represent exactly)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


# (name, arraykit call, float64 oracle, magnitude of the summed terms, number of terms)
FULL_PRECISION_CASES = [
    ("matmul", ak.matmul, np.matmul, lambda a, b: np.abs(a) @ np.abs(b), 48),
    ("tensordot", lambda a, b: ak.tensordot(a, b, axes=1), lambda a, b: np.tensordot(a, b, axes=1),
     lambda a, b: np.tensordot(np.abs(a), np.abs(b), axes=1), 48),
    ("vecdot", ak.vecdot, np.vecdot, lambda a, b: np.vecdot(np.abs(a), np.abs(b)), 48),
    ("trace", lambda a, b: LA.trace(a), lambda a, b: np.trace(a, axis1=-2, axis2=-1),
     lambda a, b: np.trace(np.abs(a), axis1=-2, axis2=-1), 48),
    ("outer", lambda a, b: LA.outer(a[0], b[0]), lambda a, b: np.outer(a[0], b[0]),
     lambda a, b: np.abs(np.outer(a[0], b[0])), 1),
    ("vector_norm", lambda a, b: LA.vector_norm(a, axis=-1), lambda a, b: np.linalg.vector_norm(a, axis=-1),
     lambda a, b: np.linalg.vector_norm(a, axis=-1), 48),
    ("vector_norm_3", lambda a, b: LA.vector_norm(a, axis=-1, ord=3),
     lambda a, b: np.linalg.vector_norm(a, axis=-1, ord=3),
     lambda a, b: np.linalg.vector_norm(a, axis=-1, ord=3), 48),
]


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
@pytest.mark.parametrize("case", FULL_PRECISION_CASES, ids=[c[0] for c in FULL_PRECISION_CASES])
def test_single_precision_results_keep_full_resolution(case, dtype):
    """float32/complex64 results within a few units of float32's resolution of the
    float64 result: computing them in bfloat16 or TF32 fails."""
    _, call, oracle, magnitude, terms = case
    a, b = _single(dtype, (48, 48), 0), _single(dtype, (48, 48), 1)
    got = call(ak.asarray(a, device="cpu"), ak.asarray(b, device="cpu"))
    want_dtype = np.float32 if "norm" in case[0] else np.dtype(dtype)
    close_to_exact(got, oracle(wide(a), wide(b)), want_dtype, magnitude(wide(a), wide(b)), terms)


def test_matmul_errors():
    a = ak.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(2, 3\)"):
        ak.matmul(a, a)
    with pytest.raises(ValueError, match="dim -1"):
        ak.matmul(ak.asarray(np.ones(4)), a)
    with pytest.raises(ValueError, match="at least one dimension"):
        ak.matmul(ak.asarray(np.float64(1)), a)
    with pytest.raises(ValueError, match=r"\(2, 2, 3\).*\(3, 3, 1\)"):
        ak.matmul(ak.asarray(np.ones((2, 2, 3))), ak.asarray(np.ones((3, 3, 1))))
    with pytest.raises(TypeError):
        ak.matmul(ak.asarray(np.ones((2, 2), bool)), ak.asarray(np.ones((2, 2), bool)))
    with pytest.raises(TypeError):
        ak.matmul(a, np.ones((3, 2)))


TD_CASES = st.sampled_from([
    ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1), ((2, 3), (4,), 0), ((3, 4), (3, 4), 2),
    ((2, 3, 4), (4, 2, 3), ((0, 1), (1, 2))), ((2, 3, 4), (4, 3), ((-1, 1), (0, -1))),
    ((3,), (3,), ((0,), (0,))),
])


@SETTINGS
@given(st.data(), TD_CASES, st.sampled_from(["int16", "float32", "float64", "complex128"]))
def test_tensordot(data, case, dt):
    s1, s2, axes = case
    x1, a1 = data.draw(strided_pairs(dtype=dt, shape=s1, min_value=-4, max_value=4))
    x2, a2 = data.draw(strided_pairs(dtype="float64", shape=s2, min_value=-4, max_value=4))
    got = ak.tensordot(x1, x2, axes=axes)
    want = np.tensordot(a1, a2, axes=axes)
    magnitude = np.tensordot(np.abs(wide(a1)), np.abs(a2), axes=axes)
    terms = max(a1.size, 1) // max(math.prod(want.shape[: a1.ndim - _contracted(axes)]), 1)
    close_to_exact(got, np.tensordot(wide(a1), a2, axes=axes), want.dtype, magnitude, terms)
    assert ak.linalg.tensordot is ak.tensordot


def _contracted(axes):
    """How many dimensions a tensordot ``axes`` argument contracts."""
    return axes if isinstance(axes, int) else len(axes[0])


def test_tensordot_errors():
    a = ak.asarray(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(2, 3\)"):
        ak.tensordot(a, a, axes=1)
    with pytest.raises(ValueError):
        ak.tensordot(a, a, axes=3)
    with pytest.raises(ValueError):
        ak.tensordot(a, a, axes=-1)
    with pytest.raises(ValueError, match="lengths"):
        ak.tensordot(a, a, axes=((0, 1), (0,)))
    with pytest.raises(IndexError):
        ak.tensordot(a, a, axes=((2,), (0,)))


VD_CASES = st.sampled_from([
    ((3,), (3,), -1), ((2, 3), (3,), -1), ((4, 1, 3), (2, 3), -1), ((3, 2), (2, 3, 2), -2),
    ((2, 3), (2, 3), -2), ((2, 3), (2, 3), 1), ((0, 3), (1, 3), -1),
])


@SETTINGS
@given(st.data(), VD_CASES, st.sampled_from(["int32", "float32", "float64", "complex64", "complex128"]))
def test_vecdot(data, case, dt):
    s1, s2, axis = case
    x1, a1 = data.draw(strided_pairs(dtype=dt, shape=s1, min_value=-4, max_value=4))
    x2, a2 = data.draw(strided_pairs(dtype=dt, shape=s2, min_value=-4, max_value=4))
    got = ak.vecdot(x1, x2, axis=axis)
    want = np.vecdot(a1, a2, axis=axis)
    if want.dtype.kind in "iu":
        assert got.dtype.np == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    else:
        magnitude = np.vecdot(np.abs(wide(a1)), np.abs(wide(a2)), axis=axis)
        close_to_exact(got, np.vecdot(wide(a1), wide(a2), axis=axis), want.dtype, magnitude, a1.shape[axis])


def test_vecdot_conjugates_first_argument_and_checks_axis():
    x1 = ak.asarray([1j, 2j, 3j])
    x2 = ak.asarray([1, 2j, 3])
    assert complex(ak.vecdot(x1, x2)) == pytest.approx(4 - 10j)
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(2, 4\)"):
        ak.vecdot(ak.asarray(np.ones((2, 3))), ak.asarray(np.ones((2, 4))))
    with pytest.raises(IndexError):
        ak.vecdot(ak.asarray(np.ones((2, 3))), ak.asarray(np.ones(3)), axis=-2)


def test_matrix_transpose_is_a_view():
    base = ak.asarray(np.arange(24.0).reshape(2, 3, 4))
    t = ak.matrix_transpose(base)
    assert t.shape == (2, 4, 3)
    assert ak.shares_memory(t, base)
    np.testing.assert_array_equal(t.numpy(), np.swapaxes(np.arange(24.0).reshape(2, 3, 4), -1, -2))
    t[0, 1, 2] = -1.0
    assert base.numpy()[0, 2, 1] == -1.0
    assert ak.linalg.matrix_transpose is ak.matrix_transpose
    with pytest.raises(ValueError):
        ak.matrix_transpose(ak.asarray(np.ones(3)))


# ---------------------------------------------------------------------------- linalg: views, sums, products


@SETTINGS
@given(strided_pairs(shape=hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=4)), st.integers(-5, 5))
def test_diagonal_is_a_view(pair, offset):
    x, a = pair
    got = LA.diagonal(x, offset=offset)
    want = np.linalg.diagonal(a, offset=offset)
    assert got.shape == want.shape and got.dtype.np == a.dtype
    assert ak.shares_memory(got, x) or got.size == 0
    np.testing.assert_array_equal(got.numpy(), want)


@SETTINGS
@given(
    strided_pairs(
        dtype=st.sampled_from(["int8", "uint8", "int32", "uint64", "float32", "float64", "complex64"]),
        shape=hnp.array_shapes(min_dims=2, max_dims=3, min_side=0, max_side=4),
        min_value=-100, max_value=100,
    ),
    st.integers(-4, 4),
    st.booleans(),
)
def test_trace(pair, offset, wide_dtype):
    x, a = pair
    if wide_dtype:
        want_dtype = np.complex128 if a.dtype.kind == "c" else np.float64
        got = LA.trace(x, offset=offset, dtype=ak.asarray(np.zeros(0, want_dtype)).dtype)
    else:
        want_dtype = {"i": np.int64, "u": np.uint64}.get(a.dtype.kind, a.dtype)
        got = LA.trace(x, offset=offset)
    exact = np.trace(wide(a) if a.dtype.kind in "fc" else a.astype(want_dtype), offset=offset, axis1=-2, axis2=-1)
    magnitude = np.trace(np.abs(wide(a)), offset=offset, axis1=-2, axis2=-1)
    close_to_exact(got, exact, want_dtype, magnitude, min(a.shape[-2:]))


@SETTINGS
@given(st.data(), st.sampled_from(["int16", "float32", "complex128"]), st.sampled_from(["float64", "int8"]))
def test_outer(data, dt1, dt2):
    x1, a1 = data.draw(strided_pairs(dtype=dt1, shape=hnp.array_shapes(min_dims=1, max_dims=1, max_side=5), min_value=-9, max_value=9))
    x2, a2 = data.draw(strided_pairs(dtype=dt2, shape=hnp.array_shapes(min_dims=1, max_dims=1, max_side=5), min_value=-9, max_value=9))
    want = np.outer(a1, a2)
    exact = np.outer(wide(a1), wide(a2)) if want.dtype.kind in "fc" else want
    close_to_exact(LA.outer(x1, x2), exact, want.dtype)
    with pytest.raises(ValueError):
        LA.outer(x1, ak.asarray(np.ones((2, 2))))


CROSS_CASES = st.sampled_from([((3,), (3,), -1), ((2, 3), (3,), -1), ((3, 2), (4, 3, 1), -2), ((1, 3), (2, 3), -1)])


@SETTINGS
@given(st.data(), CROSS_CASES, st.sampled_from(["int64", "float32", "float64", "complex128"]))
def test_cross(data, case, dt):
    s1, s2, axis = case
    x1, a1 = data.draw(strided_pairs(dtype=dt, shape=s1, min_value=-9, max_value=9))
    x2, a2 = data.draw(strided_pairs(dtype="int32", shape=s2))
    want = np.linalg.cross(a1, a2, axis=axis)
    got = LA.cross(x1, x2, axis=axis)
    if want.dtype.kind in "iu":
        assert got.dtype.np == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    else:
        magnitude = _cross_magnitude(np.abs(wide(a1)), np.abs(wide(a2)), axis)
        close_to_exact(got, np.linalg.cross(wide(a1), a2, axis=axis), want.dtype, magnitude, 2)


def _cross_magnitude(a, b, axis):
    """Per component of ``cross(a, b)``, the sum of the absolute values of its two products."""
    a, b = np.broadcast_arrays(np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1))
    parts = [a[..., (k + 1) % 3] * b[..., (k + 2) % 3] + a[..., (k + 2) % 3] * b[..., (k + 1) % 3]
             for k in range(3)]
    return np.moveaxis(np.stack(parts, axis=-1), -1, axis)


def test_cross_needs_size_three():
    with pytest.raises(ValueError, match="size 3"):
        LA.cross(ak.asarray(np.ones((2, 2))), ak.asarray(np.ones((2, 2))))
    with pytest.raises(ValueError):
        LA.cross(ak.asarray(np.ones((2, 3))), ak.asarray(np.ones((2, 4))))


# ---------------------------------------------------------------------------- linalg: solvers


@FEW
@given(matrices(FLOATING, kind="wellcond"))
def test_inv_det_slogdet(pair):
    x, a = pair
    m = a.shape[-1]
    close(LA.inv(x), np.linalg.inv(wide(a)), a.dtype)
    det = np.linalg.det(wide(a))
    close(LA.det(x), det, a.dtype, float(np.abs(det).max()))
    sign, logabs = LA.slogdet(x)
    want_sign, want_log = np.linalg.slogdet(wide(a))
    close(sign, want_sign, a.dtype)
    close(logabs, want_log, real_of(a.dtype), m)
    assert LA.slogdet(x)._fields == ("sign", "logabsdet")


SOLVE_SHAPES = st.sampled_from([
    ((3, 3), (3,)), ((2, 3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3, 1)),
    ((2, 1, 3, 3), (4, 3, 2)), ((3, 3), (2, 3, 3)), ((1, 1), (1, 0)),
])


@FEW
@given(st.data(), SOLVE_SHAPES, st.sampled_from(FLOATING), st.sampled_from(REAL))
def test_solve(data, shapes, dt1, dt2):
    x1, a1 = data.draw(matrices((dt1,), shape=shapes[0], kind="wellcond"))
    x2, a2 = data.draw(strided_pairs(dtype=dt2, shape=shapes[1], min_value=-4, max_value=4))
    dtype = np.promote_types(a1.dtype, a2.dtype)
    got = LA.solve(x1, x2)
    if a2.ndim == 1:
        want = np.linalg.solve(wide(a1), wide(a2)[:, None])[..., 0]
    else:
        want = np.linalg.solve(wide(a1), wide(a2))
    close(got, want, dtype, 4)


def test_solve_errors():
    a = ak.asarray(np.eye(3))
    with pytest.raises(ValueError, match=r"\(3, 3\).*\(4,\)"):
        LA.solve(a, ak.asarray(np.ones(4)))
    with pytest.raises(ValueError, match=r"\(2, 3, 3\).*\(4, 3, 1\)"):
        LA.solve(ak.asarray(np.ones((2, 3, 3))), ak.asarray(np.ones((4, 3, 1))))
    with pytest.raises(ValueError, match="square"):
        LA.solve(ak.asarray(np.ones((3, 2))), ak.asarray(np.ones(3)))


@SETTINGS
@given(matrices(FLOATING, kind="spd"), st.booleans())
def test_cholesky(pair, upper):
    x, a = pair
    got = LA.cholesky(x, upper=upper)
    want = np.linalg.cholesky(wide(a), upper=upper)
    close(got, want, a.dtype, a.shape[-1])


@SETTINGS
@given(matrices(FLOATING, kind="wellcond"), st.integers(-3, 4))
def test_matrix_power(pair, n):
    x, a = pair
    want = np.linalg.matrix_power(wide(a), n)
    close(LA.matrix_power(x, n), want, a.dtype, float(np.abs(want).max(initial=1)))


def test_matrix_power_integers():
    a = np.array([[1, 1], [1, 0]], dtype=np.int32)
    got = LA.matrix_power(ak.asarray(a), 10)
    assert got.dtype is ak.int32
    np.testing.assert_array_equal(got.numpy(), np.linalg.matrix_power(a, 10))
    np.testing.assert_array_equal(LA.matrix_power(ak.asarray(a), 0).numpy(), np.eye(2))
    with pytest.raises(TypeError):
        LA.matrix_power(ak.asarray(a), -1)


# ---------------------------------------------------------------------------- linalg: decompositions


@FEW
@given(matrices(FLOATING, kind="hermitian"))
def test_eigh(pair):
    x, a = pair
    w, v = LA.eigh(x)
    real = real_of(a.dtype)
    close(w, np.linalg.eigvalsh(wide(a)), real, a.shape[-1])
    assert v.dtype.np == a.dtype
    vn, wn = v.numpy(), w.numpy()
    rebuilt = (vn * wn[..., None, :]) @ hermitian(vn)
    np.testing.assert_allclose(rebuilt, a, atol=tol(a.dtype) * a.shape[-1] * 4)
    close(LA.eigvalsh(x), np.linalg.eigvalsh(wide(a)), real, a.shape[-1])
    assert LA.eigh(x)._fields == ("eigenvalues", "eigenvectors")


def test_eigh_reads_lower_triangle_like_numpy():
    a = np.array([[2.0, 100.0], [1.0, 3.0]])
    np.testing.assert_allclose(LA.eigvalsh(ak.asarray(a)).numpy(), np.linalg.eigvalsh(a))


def _same_multiset(got, want, atol):
    """Every value of ``want`` matched by a distinct, close value of ``got``."""
    got = list(got)
    for value in want:
        k = int(np.argmin([abs(g - value) for g in got]))
        assert abs(got[k] - value) <= atol, (got, want)
        got.pop(k)


@FEW
@given(matrices(FLOATING, kind="wellcond"))
def test_eig(pair):
    x, a = pair
    w, v = LA.eig(x)
    cdt = np.result_type(a.dtype, np.complex64)
    assert w.dtype.np == cdt and v.dtype.np == cdt
    assert w.shape == a.shape[:-1] and v.shape == a.shape
    wn, vn = w.numpy(), v.numpy()
    np.testing.assert_allclose(a @ vn, vn * wn[..., None, :], atol=tol(a.dtype) * 20)
    np.testing.assert_allclose(np.linalg.norm(vn, axis=-2), 1, atol=tol(a.dtype) * 10)
    vals = LA.eigvals(x)
    assert vals.dtype.np == cdt
    want = np.linalg.eigvals(wide(a)).reshape(-1, a.shape[-1])
    for got_row, want_row in zip(vals.numpy().reshape(want.shape), want):
        _same_multiset(got_row, want_row, 1e-3 if cdt == np.complex64 else 1e-7)
    assert LA.eig(x)._fields == ("eigenvalues", "eigenvectors")


RECT = st.sampled_from([(2, 3), (3, 2), (4, 4), (2, 4, 1), (1, 3, 2), (0, 2), (2, 0)])


@FEW
@given(st.data(), RECT, st.sampled_from(["reduced", "complete"]))
def test_qr(data, shape, mode):
    x, a = data.draw(matrices(FLOATING, shape=shape))
    q, r = LA.qr(x, mode=mode)
    wq, wr = np.linalg.qr(wide(a), mode=mode)
    assert q.shape == wq.shape and r.shape == wr.shape
    assert q.dtype.np == a.dtype and r.dtype.np == a.dtype
    qn, rn = q.numpy(), r.numpy()
    t = tol(a.dtype) * 4
    np.testing.assert_allclose(qn @ rn, a, atol=t)
    np.testing.assert_allclose(np.triu(rn), rn, atol=0)
    k = qn.shape[-1]
    np.testing.assert_allclose(hermitian(qn) @ qn, np.broadcast_to(np.eye(k), qn.shape[:-2] + (k, k)), atol=t)
    assert LA.qr(x)._fields == ("Q", "R")


@FEW
@given(st.data(), RECT, st.booleans())
def test_svd(data, shape, full):
    x, a = data.draw(matrices(FLOATING, shape=shape))
    u, s, vh = LA.svd(x, full_matrices=full)
    wu, ws, wvh = np.linalg.svd(wide(a), full_matrices=full)
    assert (u.shape, s.shape, vh.shape) == (wu.shape, ws.shape, wvh.shape)
    assert u.dtype.np == a.dtype and vh.dtype.np == a.dtype
    close(s, ws, real_of(a.dtype), 4)
    k = s.shape[-1]
    un, sn, vhn = u.numpy(), s.numpy(), vh.numpy()
    rebuilt = (un[..., :, :k] * sn[..., None, :]) @ vhn[..., :k, :]
    np.testing.assert_allclose(rebuilt, a, atol=tol(a.dtype) * 8)
    close(LA.svdvals(x), ws, real_of(a.dtype), 4)
    assert LA.svd(x)._fields == ("U", "S", "Vh")


@FEW
@given(st.data(), st.sampled_from([(3, 3), (2, 4, 3), (3, 5), (0, 3)]), st.integers(0, 3))
def test_matrix_rank_and_pinv(data, shape, rank):
    m, n = shape[-2:]
    rank = min(rank, m, n)
    dt = np.dtype(data.draw(st.sampled_from(FLOATING)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    # orthonormal factors: the rank nonzero singular values are all 1, far from any cutoff
    left = np.linalg.qr(rng.standard_normal(shape[:-1] + (rank,)))[0]
    right = np.linalg.qr(rng.standard_normal(shape[:-2] + (n, rank)))[0].swapaxes(-1, -2)
    a = (left @ right).astype(dt) if rank else np.zeros(shape, dt)
    if dt.kind == "c":
        a = a * (1 + 1j)
    x = make_view(a, data.draw(VIEWS))
    got = LA.matrix_rank(x)
    assert got.dtype is ak.int64 and got.shape == shape[:-2]
    np.testing.assert_array_equal(got.numpy(), rank)
    rtol = data.draw(st.sampled_from([None, 1e-3, "tensor"]))
    if rtol == "tensor":
        r = np.full(shape[:-2], 1e-3, dtype=real_of(dt))
        kw, want_rtol = {"rtol": ak.asarray(r)}, r
    else:
        kw = {"rtol": rtol}
        want_rtol = max(m, n) * np.finfo(dt).eps if rtol is None else rtol
    np.testing.assert_array_equal(LA.matrix_rank(x, **kw).numpy(), rank)
    want = np.linalg.pinv(wide(a), rtol=want_rtol)
    close(LA.pinv(x, **kw), want, dt, float(np.abs(want).max(initial=1)) * 10)


def test_matrix_rank_rtol_cuts_singular_values():
    a = np.diag([1.0, 1e-2, 1e-5])
    assert int(LA.matrix_rank(ak.asarray(a))) == 3
    assert int(LA.matrix_rank(ak.asarray(a), rtol=1e-3)) == 2
    assert int(LA.matrix_rank(ak.asarray(a), rtol=0.5)) == 1
    np.testing.assert_allclose(LA.pinv(ak.asarray(a), rtol=1e-3).numpy(), np.diag([1.0, 100.0, 0.0]))
    stack = ak.asarray(np.stack([a, a]))
    per_matrix = LA.pinv(stack, rtol=ak.asarray(np.array([1e-3, 1e-6]))).numpy()
    np.testing.assert_allclose(per_matrix[1], np.diag([1.0, 100.0, 1e5]))
    np.testing.assert_allclose(per_matrix[0], np.diag([1.0, 100.0, 0.0]))
    b = np.diag([1.0, 1e-15])
    np.testing.assert_allclose(LA.pinv(ak.asarray(b)).numpy(), np.linalg.pinv(b, rtol=None))


# ---------------------------------------------------------------------------- linalg: norms


@SETTINGS
@given(
    matrices(FLOATING, shape=st.sampled_from([(2, 3), (3, 3), (2, 2, 4), (3, 1)])),
    st.sampled_from(["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]),
    st.booleans(),
)
def test_matrix_norm(pair, ord, keepdims):
    x, a = pair
    got = LA.matrix_norm(x, ord=ord, keepdims=keepdims)
    want = np.linalg.matrix_norm(wide(a), ord=ord, keepdims=keepdims)
    close(got, want, real_of(a.dtype), 10)


@SETTINGS
@given(
    strided_pairs(
        dtype=st.sampled_from(FLOATING),
        shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
        min_value=-10, max_value=10,
    ),
    st.sampled_from([2, 1, 0, -1, -2, math.inf, -math.inf, 3, 0.5, 2.5, -1.5]),
    st.booleans(),
    st.data(),
)
def test_vector_norm(pair, ord, keepdims, data):
    x, a = pair
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1) | st.lists(st.integers(0, a.ndim - 1), min_size=1, unique=True).map(tuple))
    got = LA.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
    with np.errstate(all="ignore"):
        want = np.linalg.vector_norm(wide(a), axis=axis, keepdims=keepdims, ord=ord)
    terms = a.size // max(math.prod(np.linalg.vector_norm(a, axis=axis).shape), 1)
    if ord not in (0, math.inf, -math.inf):
        # A sum of |x|**ord below the dtype's smallest normal number underflows, or for a
        # negative ord overflows (NumPy's and PyTorch's norms give 0 there too, a scaled
        # computation the exact norm): such norms may be anything in [0, exact], and the
        # exact norm is below the floor (each underflowed term lost less than ``tiny``,
        # so the exact sum is below twice the floor's).
        info = np.finfo(real_of(a.dtype))
        floor = (terms * info.tiny) ** (1 / ord) if ord > 0 else (info.max / terms) ** (1 / ord)
        tiny = np.asarray(want) < floor
        values = np.asarray(got.numpy(), np.float64)
        bound = np.maximum(np.asarray(want), floor) * 2 ** (1 / abs(ord)) * 1.001
        assert np.all((values[tiny] >= 0) & (values[tiny] <= bound[tiny]))
        want = np.where(tiny, values, want)
    magnitude = np.abs(want)
    if ord not in (0, 1, 2, -1, math.inf, -math.inf):
        # |x| ** ord and the root ** (1 / ord) are exp(p * log(.)) in the dtype: each is off
        # by about |p log(.)| units, which reaches dozens for |x| far from 1 (2.2e-16 ** -1.5)
        size = np.abs(wide(a))
        logs = np.abs(np.log(size[size > 0]))
        units = 2 * max(abs(ord), 1) * float(np.max(logs, initial=0.0))
        magnitude = magnitude * (1 + units / (2 * terms + 4))
    close_to_exact(got, want, real_of(a.dtype), magnitude=magnitude, terms=terms)


def test_norm_argument_errors():
    x = ak.asarray(np.ones((2, 2)))
    with pytest.raises(ValueError):
        LA.matrix_norm(x, ord=3)
    with pytest.raises(ValueError):
        LA.vector_norm(x, ord="fro")
    with pytest.raises(ValueError):
        LA.matrix_norm(ak.asarray(np.ones(3)))


# ---------------------------------------------------------------------------- dtypes, tracing


FLOAT_ONLY = [
    lambda x: LA.cholesky(x), lambda x: LA.det(x), lambda x: LA.eig(x), lambda x: LA.eigvals(x),
    lambda x: LA.eigh(x), lambda x: LA.eigvalsh(x), lambda x: LA.inv(x), lambda x: LA.matrix_norm(x),
    lambda x: LA.matrix_rank(x), lambda x: LA.pinv(x), lambda x: LA.qr(x), lambda x: LA.slogdet(x),
    lambda x: LA.solve(x, x), lambda x: LA.svd(x), lambda x: LA.svdvals(x), lambda x: LA.vector_norm(x),
]


@pytest.mark.parametrize("fn", FLOAT_ONLY)
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_floating_only_functions_reject_other_dtypes(fn, dtype):
    with pytest.raises(TypeError):
        fn(ak.asarray(np.eye(2, dtype=dtype)))


def test_bool_rejected_by_numeric_functions():
    b = ak.asarray(np.ones((3, 3), dtype=bool))
    for fn in (ak.tensordot, ak.vecdot, LA.cross, LA.trace):
        with pytest.raises(TypeError):
            fn(b, b) if fn is not LA.trace else fn(b)


def test_functions_trace_inside_jax_jit():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 3)) + 4 * np.eye(3)
    b = rng.standard_normal(3)

    @jax.jit
    def step(x, y):
        return LA.solve(x, y), LA.svd(x).S, LA.matrix_rank(x, rtol=ak.asarray(np.float64(1e-3))), ak.matmul(x, x)

    sol, s, rank, sq = step(ak.asarray(a), ak.asarray(b))
    np.testing.assert_allclose(sol.numpy(), np.linalg.solve(a, b))
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False))
    assert int(rank) == 3
    np.testing.assert_allclose(sq.numpy(), a @ a)
