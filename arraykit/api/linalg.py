"""The array API ``linalg`` extension (``arraykit.linalg``).

Every function runs one compiled kernel built on ``jax.numpy.linalg``; inputs are
read straight through their layouts (strided and broadcast views need no copy).
Functions that the standard defines for floating-point inputs raise ``TypeError``
for bool and integer tensors. Like JAX (and unlike NumPy) nothing checks on the
host whether a matrix is singular or positive definite, so a kernel never waits
for its result: ``inv`` of a singular matrix and ``cholesky`` of a matrix that is
not positive definite give ``inf``/``nan`` values. ``solve`` is the exception,
as in PyTorch (and SciPy's code relies on it): an exactly singular matrix (a zero
pivot of its LU factorization) raises :class:`LinAlgError`, checked like an index
(at once on the CPU, at the next host read where a device defers its checks).
``diagonal`` and ``matrix_transpose`` are views.
"""

from __future__ import annotations

import math
import operator
from typing import NamedTuple

import jax.numpy as jnp
from jax import lax
import numpy as np

from ..core import deferred_checks
from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import check_same_device
from ..kernels import derivatives as DV
from ..kernels.launch import apply
from ..tensors.tensor_type import Tensor, require_tensor
from .autocasting import coerce
from .matrix_products import (
    HIGHEST, matmul, matrix_transpose, numeric_pair, tensordot, vecdot, vector_axis,
)
from .naming import named

__all__ = [
    "LinAlgError", "cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
    "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer",
    "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
    "vector_norm",
]


class EigResult(NamedTuple):
    """Result of :func:`eig`."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class EighResult(NamedTuple):
    """Result of :func:`eigh`."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    """Result of :func:`qr`."""

    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    """Result of :func:`slogdet`."""

    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    """Result of :func:`svd`."""

    U: Tensor
    S: Tensor
    Vh: Tensor


# ---------------------------------------------------------------------------- checks


def _floating(x, name):
    """Check ``x`` is a floating-point (real or complex) tensor."""
    require_tensor(x, name)
    if x._dtype.kind not in ("float", "complex"):
        raise TypeError(f"{name} expects a floating-point tensor, got dtype {x._dtype}")


def _matrix(x, name):
    if x.ndim < 2:
        raise ValueError(
            f"{name} expects a tensor of shape (..., M, N) with at least 2 dimensions, "
            f"got shape {x.shape}"
        )


def _square(x, name):
    _floating(x, name)
    _matrix(x, name)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(
            f"{name} expects square matrices in the last two dimensions, got shape {x.shape}"
        )


def _rtol(x, rtol, name):
    """``rtol`` as a kernel operand: a tensor broadcastable to ``x``'s batch shape or a 0-d value."""
    real = D.real_dtype(x._dtype)
    if rtol is None:
        return np.asarray(max(x.shape[-2:]) * np.finfo(real.np).eps, dtype=real.np)
    if isinstance(rtol, Tensor):
        if rtol._dtype.kind != "float":
            raise TypeError(f"{name}: rtol must have a real floating-point dtype, got {rtol._dtype}")
        check_same_device(rtol.device, x.device, name)
        L.broadcast_to(rtol._layout, x.shape[:-2])
        return rtol
    return np.asarray(float(rtol), dtype=real.np)


# ---------------------------------------------------------------------------- bodies


def _cholesky(x, upper):
    # The Hermitian matrix that x's lower triangle stands for: same factor, and the
    # gradient (JAX's rule assumes a Hermitian tangent) then only reaches what is read.
    strict = jnp.tril(x, -1)
    full = jnp.tril(x) + jnp.conj(jnp.swapaxes(strict, -1, -2))
    return jnp.linalg.cholesky(full, upper=upper, symmetrize_input=False)


def _cross(a, b, axis, dtype):
    return jnp.cross(a.astype(dtype), b.astype(dtype), axis=axis)


def _det(x):
    return jnp.linalg.det(x)


def _eig(x):
    return tuple(jnp.linalg.eig(x))


def _eigvals(x):
    return jnp.linalg.eigvals(x)


def _eigh(x):
    return tuple(jnp.linalg.eigh(x, UPLO="L", symmetrize_input=False))


def _eigvalsh(x):
    return jnp.linalg.eigvalsh(x, UPLO="L", symmetrize_input=False)


def _inv(x):
    return jnp.linalg.inv(x)


def _matrix_norm(x, keepdims, ord):
    if ord in (2, -2, "nuc"):
        return jnp.linalg.matrix_norm(x, keepdims=keepdims, ord=ord)
    rows, cols = x.ndim - 2, x.ndim - 1
    real = jnp.finfo(x.dtype).dtype
    if ord == "fro":
        return _vector_norm(x, (rows, cols), keepdims, 2, real)
    a = DV.abs(x) if jnp.isrealobj(x) else jnp.abs(x)
    sums = jnp.sum(a, axis=rows if ord in (1, -1) else cols)
    pick = jnp.max if ord > 0 else jnp.min
    out = pick(sums, axis=-1)
    return out[..., None, None] if keepdims else out


def _mm(a, b):
    return jnp.matmul(a, b, precision=HIGHEST)


def _matrix_power(x, n):
    if n < 0:
        x = jnp.linalg.inv(x)
        n = -n
    result = None
    while n:
        if n & 1:
            result = x if result is None else _mm(result, x)
        n >>= 1
        if n:
            x = _mm(x, x)
    if result is None:
        eye = jnp.eye(x.shape[-1], dtype=x.dtype)
        return jnp.broadcast_to(eye, x.shape)
    return result


def _matrix_rank(x, rtol):
    s = jnp.linalg.svdvals(x)
    largest = jnp.max(s, axis=-1, keepdims=True, initial=0)
    tol = largest * jnp.asarray(rtol, s.dtype)[..., None]
    return jnp.sum(s > tol, axis=-1, dtype=jnp.int64)


def _outer(a, b, dtype):
    return jnp.outer(a.astype(dtype), b.astype(dtype))


def _pinv(x, rtol, real):
    return jnp.linalg.pinv(x, rtol=jnp.asarray(rtol, real))


def _qr(x, mode):
    return tuple(jnp.linalg.qr(x, mode=mode))


def _slogdet(x):
    return tuple(jnp.linalg.slogdet(x))


def _solve(a, b, batch, vector, dtype):
    m = a.shape[-1]
    a = jnp.broadcast_to(a.astype(dtype), batch + (m, m))
    if vector:
        b = jnp.broadcast_to(b.astype(dtype)[:, None], batch + (m, 1))
        return jnp.linalg.solve(a, b)[..., 0]
    b = jnp.broadcast_to(b.astype(dtype), batch + b.shape[-2:])
    return jnp.linalg.solve(a, b)


def _singular(a, dtype):
    """Whether any of the square matrices ``a`` has a zero pivot in its LU factors."""
    lu = lax.linalg.lu(a.astype(dtype))[0]
    return jnp.any(jnp.diagonal(lu, axis1=-2, axis2=-1) == 0)


def _svd(x, full_matrices):
    return tuple(jnp.linalg.svd(x, full_matrices=full_matrices))


def _svdvals(x):
    return jnp.linalg.svdvals(x)


def _sum_last(x, dtype):
    return jnp.sum(x, axis=-1, dtype=dtype)


def _vector_norm_value(x, axis, keepdims, ord, real):
    if ord == 2:
        sq = x.real * x.real + x.imag * x.imag if jnp.iscomplexobj(x) else x * x
        return DV.sqrt_of_sum(jnp.sum(sq, axis=axis, keepdims=keepdims)).astype(real)
    a = jnp.abs(x).astype(real)
    if ord == math.inf:
        return jnp.max(a, axis=axis, keepdims=keepdims, initial=0)
    if ord == -math.inf:
        return jnp.min(a, axis=axis, keepdims=keepdims, initial=math.inf)
    if ord == 0:
        return jnp.sum(a != 0, axis=axis, keepdims=keepdims, dtype=real)
    if ord == 1:
        return jnp.sum(a, axis=axis, keepdims=keepdims)
    return jnp.sum(a**ord, axis=axis, keepdims=keepdims) ** (1 / ord)


_vector_norm = DV.vector_norm(_vector_norm_value)


# ---------------------------------------------------------------------------- functions


def _of_square_matrices(name, body, doc, *, result=None):
    """The function ``name`` of square matrices computed by the kernel ``body``, documented
    by ``doc``; ``result``, when given, is the named tuple of its several outputs."""

    def function(x, /):
        _square(x, name)
        if result is None:
            return apply(body, (x,))
        return result(*apply(body, (x,), multiple=True))

    return named(function, name, doc)


def cholesky(x, /, *, upper=False):
    """Cholesky factor of Hermitian positive-definite matrices (lower, or upper with ``upper=True``).

    Only the lower triangle of ``x`` is read (as NumPy).
    """
    _square(x, "cholesky")
    return apply(_cholesky, (x,), (bool(upper),))


def cross(x1, x2, /, *, axis=-1):
    """Cross products of 3-element vectors along ``axis`` (other dims broadcast)."""
    dtype = numeric_pair(x1, x2, "cross")
    axis = vector_axis(x1, x2, axis, "cross")
    if x1.shape[axis] != 3:
        raise ValueError(
            f"cross: axis {axis} must have size 3, got shapes {x1.shape} and {x2.shape}"
        )
    return apply(_cross, (x1, x2), (axis, dtype.np))


det = _of_square_matrices("det", _det, "Determinants of square matrices.")


def diagonal(x, /, *, offset=0):
    """Diagonals of the last two dimensions (a view sharing ``x``'s storage)."""
    require_tensor(x, "diagonal")
    _matrix(x, "diagonal")
    return x._view(L.diagonal(x._layout, operator.index(offset), -2, -1))


eig = _of_square_matrices(
    "eig",
    _eig,
    """Eigenvalues and unit-norm eigenvectors (columns) of general square matrices.

    Results are complex with the precision of ``x``; their order is unspecified.
    """,
    result=EigResult,
)
eigvals = _of_square_matrices(
    "eigvals",
    _eigvals,
    "Eigenvalues of general square matrices (complex, precision of ``x``).",
)
eigh = _of_square_matrices(
    "eigh",
    _eigh,
    """Ascending eigenvalues and orthonormal eigenvectors of Hermitian/symmetric matrices.

    Only the lower triangle of ``x`` is read (as NumPy).
    """,
    result=EighResult,
)
eigvalsh = _of_square_matrices(
    "eigvalsh",
    _eigvalsh,
    "Ascending eigenvalues of Hermitian/symmetric matrices (lower triangle read).",
)
inv = _of_square_matrices("inv", _inv, "Inverses of square matrices.")


_MATRIX_ORDS = {"fro": "fro", "nuc": "nuc", 1: 1, -1: -1, 2: 2, -2: -2, math.inf: math.inf, -math.inf: -math.inf}


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Matrix norms over the last two dimensions (``'fro'``, ``'nuc'``, ±1, ±2, ±inf)."""
    _floating(x, "matrix_norm")
    _matrix(x, "matrix_norm")
    (x,) = coerce("matrix_norm", x)
    try:
        key = _MATRIX_ORDS[ord]
    except (KeyError, TypeError):
        raise ValueError(
            f"matrix_norm: invalid ord {ord!r}; expected 'fro', 'nuc', 1, -1, 2, -2, inf or -inf"
        ) from None
    return apply(_matrix_norm, (x,), (bool(keepdims), key))


def matrix_power(x, n, /):
    """``x`` raised to the integer power ``n`` (the identity for 0, powers of the inverse for n < 0).

    Integer matrices are accepted for ``n >= 0``.
    """
    require_tensor(x, "matrix_power")
    n = operator.index(n)
    if x._dtype.kind == "bool" or (n < 0 and x._dtype.kind in ("int", "uint")):
        raise TypeError(
            f"matrix_power expects a floating-point tensor (or an integer one with n >= 0), "
            f"got dtype {x._dtype} and n={n}"
        )
    _matrix(x, "matrix_power")
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power expects square matrices, got shape {x.shape}")
    return apply(_matrix_power, (x,), (n,))


def matrix_rank(x, /, *, rtol=None):
    """Number of singular values above ``rtol * largest`` (default ``rtol = max(M, N) * eps``)."""
    _floating(x, "matrix_rank")
    _matrix(x, "matrix_rank")
    return apply(_matrix_rank, (x, _rtol(x, rtol, "matrix_rank")))


def outer(x1, x2, /):
    """Outer product of two 1-D tensors."""
    dtype = numeric_pair(x1, x2, "outer")
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer expects two 1-D tensors, got shapes {x1.shape} and {x2.shape}")
    return apply(_outer, (x1, x2), (dtype.np,))


def pinv(x, /, *, rtol=None):
    """Moore-Penrose pseudo-inverses; singular values <= ``rtol * largest`` count as zero."""
    _floating(x, "pinv")
    _matrix(x, "pinv")
    return apply(_pinv, (x, _rtol(x, rtol, "pinv")), (D.real_dtype(x._dtype).np,))


def qr(x, /, *, mode="reduced"):
    """QR decompositions (``mode`` ``'reduced'`` or ``'complete'``) as ``QRResult(Q, R)``."""
    _floating(x, "qr")
    _matrix(x, "qr")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return QRResult(*apply(_qr, (x,), (mode,), multiple=True))


slogdet = _of_square_matrices(
    "slogdet",
    _slogdet,
    "Sign and log-absolute-determinant of square matrices as ``SlogdetResult``.",
    result=SlogdetResult,
)


def solve(x1, x2, /):
    """Solve ``x1 @ X = x2``; a 1-D ``x2`` is one right-hand-side vector for every matrix."""
    _square(x1, "solve")
    _floating(x2, "solve")
    if x1._storage.device is not x2._storage.device:
        check_same_device(x1.device, x2.device, "solve")
    m = x1.shape[-1]
    vector = x2.ndim == 1
    if x2.ndim == 0 or (x2.shape[0] if vector else x2.shape[-2]) != m:
        raise ValueError(
            f"solve: shapes {x1.shape} and {x2.shape} are not compatible: x2 must have "
            f"shape ({m},) or (..., {m}, K)"
        )
    if vector:
        batch = x1.shape[:-2]
    else:
        try:
            batch = L.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
        except ValueError as err:
            raise ValueError(
                f"solve: batch dimensions of shapes {x1.shape} and {x2.shape} cannot be "
                f"broadcast ({err})"
            ) from None
    dtype = D.promote(x1._dtype, x2._dtype)
    result = apply(_solve, (x1, x2), (batch, vector, dtype.np))
    if x1.size:
        singular = apply(_singular, (x1,), (dtype.np,))
        deferred_checks.check(x1._storage.device, singular._storage.buffer, _singular_error)
    return result


def _singular_error(singular):
    if singular:
        return LinAlgError(
            "linalg.solve: The solver failed because the input matrix is singular."
        )
    return None


class LinAlgError(np.linalg.LinAlgError, RuntimeError):
    """A linear-algebra function met a matrix it cannot handle (a singular matrix in
    :func:`solve`). Both NumPy's ``numpy.linalg.LinAlgError`` and ``RuntimeError``
    (PyTorch's ``torch.linalg.LinAlgError`` is one) catch it."""


def svd(x, /, *, full_matrices=True):
    """Singular value decompositions as ``SVDResult(U, S, Vh)`` with ``S`` descending."""
    _floating(x, "svd")
    _matrix(x, "svd")
    return SVDResult(*apply(_svd, (x,), (bool(full_matrices),), multiple=True))


def svdvals(x, /):
    """Singular values in descending order (real dtype of ``x``'s precision)."""
    _floating(x, "svdvals")
    _matrix(x, "svdvals")
    return apply(_svdvals, (x,))


def _trace_dtype(dtype):
    if dtype.kind == "int":
        return D.int64
    if dtype.kind == "uint":
        return D.uint64
    return dtype


def trace(x, /, *, offset=0, dtype=None):
    """Sums of the ``offset`` diagonals of the last two dimensions.

    Small integer dtypes accumulate in the default integer size (int64/uint64).
    """
    require_tensor(x, "trace")
    if x._dtype.kind == "bool":
        raise TypeError(f"trace expects a numeric tensor, got dtype {x._dtype}")
    _matrix(x, "trace")
    dtype = _trace_dtype(x._dtype) if dtype is None else D.as_dtype(dtype)
    diag = x._view(L.diagonal(x._layout, operator.index(offset), -2, -1))
    return apply(_sum_last, (diag,), (dtype.np,))


def _norm_order(ord):
    if isinstance(ord, (bool, str)) or not isinstance(ord, (int, float, np.integer, np.floating)):
        raise ValueError(f"vector_norm: ord must be an int, a float, inf or -inf, got {ord!r}")
    ord = float(ord)
    if math.isnan(ord):
        raise ValueError("vector_norm: ord must not be nan")
    if math.isfinite(ord) and ord.is_integer():
        return int(ord)
    return ord


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """Vector p-norms over ``axis`` (all elements by default); ``ord`` may be any real, inf, -inf or 0."""
    _floating(x, "vector_norm")
    (x,) = coerce("vector_norm", x)
    axes = L.normalize_dims(axis, x.ndim, "axis")
    real = D.real_dtype(x._dtype)
    return apply(_vector_norm, (x,), (axes, bool(keepdims), _norm_order(ord), real.np))
