"""More of PyTorch's products and matrix functions in the namespace: ``mv``, ``inner``,
``vdot``, ``addmv``, ``addr``, ``addbmm``, ``chain_matmul``, ``det``, ``logdet``,
``slogdet``, ``inverse``, ``pinverse``, ``matrix_power``, ``matrix_exp``, ``cholesky``,
``cholesky_inverse``, ``cholesky_solve``, ``triangular_solve``, ``qr``, ``svd`` and
``adjoint``, with PyTorch's arguments and return types.

They check PyTorch's shapes and call :func:`arraykit.matmul` and the
:mod:`arraykit.linalg` functions (so their gradients are those functions');
``matrix_exp`` and the triangular solves are kernels of their own, differentiated by
JAX. ``svd`` returns ``V``, not the standard's ``Vh``; ``qr(some=False)`` and
``svd(some=False)`` are the complete decompositions.
"""

from __future__ import annotations

import collections
import functools

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from ..kernels.launch import apply
from ..tensors.tensor_type import require_tensor
from ..core.layout import broadcast_shapes
from . import creation as C
from . import elementwise as E
from . import linalg as LG
from . import manipulation as M
from . import matrix_products as MP
from . import statistical as ST
from . import torch_keywords as T
from .torch_products import _added, _check_matrices, _product

__all__ = [
    "addbmm", "addmv", "addr", "adjoint", "chain_matmul", "cholesky", "cholesky_inverse",
    "cholesky_solve", "det", "inner", "inverse", "logdet", "matrix_exp", "matrix_power", "mv",
    "pinverse", "qr", "slogdet", "svd", "triangular_solve", "vdot",
]

SolutionCoefficient = collections.namedtuple("SolutionCoefficient",
                                             ["solution", "cloned_coefficient"])
SolutionCoefficient.__doc__ = "``(solution, cloned_coefficient)`` of :func:`triangular_solve`."
SingularTriple = collections.namedtuple("SingularTriple", ["U", "S", "V"])
SingularTriple.__doc__ = "``(U, S, V)`` of :func:`svd` (``input = U diag(S) V^H``)."


_into = T.into_if_given


def _vector(name, what, x):
    require_tensor(x, name)
    if x.ndim != 1:
        raise RuntimeError(f"{name}: {what} must be a 1D tensor, got shape {x.shape}")


def mv(input, vec, *, out=None):  # noqa: A002 (PyTorch's names, here and below)
    """The product of a 2-D matrix and a 1-D vector."""
    _check_matrices("mv", 2, ("the matrix", input))
    _vector("mv", "the vector", vec)
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"mv: size mismatch, got matrix {input.shape} and vector {vec.shape}")
    return _into("mv", MP.matmul(input, vec), out)


def inner(input, other, *, out=None):  # noqa: A002
    """The inner product over the last dimensions (``input @ other.mT`` for matrices; a
    product with a 0-d tensor is element-wise)."""
    require_tensor(input, "inner")
    require_tensor(other, "inner")
    if input.ndim == 0 or other.ndim == 0:
        return _into("inner", E.multiply(input, other), out)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {input.shape} and {other.shape}")
    flat = other.reshape((-1, other.shape[-1]))
    result = MP.matmul(input, flat.mT if flat.ndim == 2 else flat)
    return _into("inner", result.reshape(input.shape[:-1] + other.shape[:-1]), out)


def vdot(input, other, *, out=None):  # noqa: A002
    """``sum(conj(input) * other)`` of two 1-D tensors of one dtype."""
    _vector("vdot", "the first operand", input)
    _vector("vdot", "the second operand", other)
    if input._dtype is not other._dtype:
        raise RuntimeError(f"vdot: expected both vectors to have the same dtype, but found "
                           f"{input.dtype} and {other.dtype}")
    if input.shape != other.shape:
        raise RuntimeError(f"vdot: inconsistent tensor size, expected {input.shape} and "
                           f"{other.shape} to be equal")
    first = E.conj(input) if input._dtype.kind == "complex" else input
    return _into("vdot", MP.matmul(first, other), out)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):  # noqa: A002
    """``beta * input + alpha * (mat @ vec)`` (``input`` ignored, NaNs too, when
    ``beta`` is 0)."""
    return _into("addmv", _added("addmv", input, mv(mat, vec), beta, alpha), out)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):  # noqa: A002
    """``beta * input + alpha * outer(vec1, vec2)``."""
    _vector("addr", "vec1", vec1)
    _vector("addr", "vec2", vec2)
    return _into("addr", _added("addr", input, LG.outer(vec1, vec2), beta, alpha), out)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):  # noqa: A002
    """``beta * input + alpha * sum_i batch1[i] @ batch2[i]`` (the batch summed)."""
    product = ST.sum(_product("addbmm", batch1, batch2, 3), axis=0)
    return _into("addbmm", _added("addbmm", input, product, beta, alpha), out)


def chain_matmul(*matrices, out=None):
    """The product of 2-D matrices in order (PyTorch's deprecated spelling of
    ``torch.linalg.multi_dot``)."""
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    _check_matrices("chain_matmul", 2, *((f"matrix {i}", m) for i, m in enumerate(matrices)))
    if len(matrices) == 1:
        return _into("chain_matmul", matrices[0].clone(), out)
    return _into("chain_matmul", functools.reduce(
        lambda a, b: _product("chain_matmul", a, b, 2), matrices), out)


def det(input):  # noqa: A002
    """Determinants of square matrices (:func:`arraykit.linalg.det`)."""
    return LG.det(require_tensor(input, "det"))


def slogdet(input):  # noqa: A002
    """``(sign, logabsdet)`` of square matrices (:func:`arraykit.linalg.slogdet`)."""
    return LG.slogdet(require_tensor(input, "slogdet"))


def _logdet(sign, logabsdet):
    return jnp.where(sign.real < 0, jnp.nan, logabsdet).astype(logabsdet.dtype)


def logdet(input):  # noqa: A002
    """``log(det(input))`` of real square matrices: NaN for a negative determinant,
    ``-inf`` for a zero one."""
    x = require_tensor(input, "logdet")
    if x._dtype.kind == "complex":
        sign, logabsdet = LG.slogdet(x)
        return E.add(E.log(sign), logabsdet)
    sign, logabsdet = LG.slogdet(x)
    return apply(_logdet, (sign, logabsdet))


def inverse(input, *, out=None):  # noqa: A002
    """Inverses of square matrices (:func:`arraykit.linalg.inv`)."""
    return _into("inverse", LG.inv(require_tensor(input, "inverse")), out)


def pinverse(input, rcond=1e-15):  # noqa: A002
    """Moore-Penrose pseudo-inverses, singular values up to ``rcond`` times the largest
    counted as zero (:func:`arraykit.linalg.pinv`)."""
    return LG.pinv(require_tensor(input, "pinverse"), rtol=rcond)


def matrix_power(input, n, *, out=None):  # noqa: A002
    """``input`` to the integer power ``n`` (the inverse's for ``n < 0``)."""
    return _into("matrix_power", LG.matrix_power(require_tensor(input, "matrix_power"), n), out)


def _expm(x):
    return jsl.expm(x)


def matrix_exp(input):  # noqa: A002
    """The matrix exponential of square matrices (batched)."""
    x = require_tensor(input, "matrix_exp")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"matrix_exp: expected a square matrix or a batch of them, got "
                           f"shape {x.shape}")
    if x._dtype.kind not in ("float", "complex"):
        raise RuntimeError(f"matrix_exp: expected a floating-point tensor, got {x.dtype}")
    return apply(_expm, (x,))


def _cholesky(x, upper):
    # The value reads the lower triangle only; the gradient is symmetric, as PyTorch's
    # (it differentiates as if the input were the Hermitian matrix it stands for).
    hermitian = (x + jnp.conj(jnp.swapaxes(x, -1, -2))) / 2
    lower = jnp.tril(x) + jnp.conj(jnp.swapaxes(jnp.tril(x, -1), -1, -2))
    factor = jnp.linalg.cholesky(hermitian + jax.lax.stop_gradient(lower - hermitian))
    return jnp.conj(jnp.swapaxes(factor, -1, -2)) if upper else factor


def cholesky(input, upper=False, *, out=None):  # noqa: A002
    """The Cholesky factor (lower, or upper with ``upper=True``) of Hermitian
    positive-definite matrices, read from their lower triangle (the gradient is
    symmetric, as PyTorch's)."""
    x = require_tensor(input, "cholesky")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"cholesky: expected a square matrix or a batch of them, got "
                           f"shape {x.shape}")
    if x._dtype.kind not in ("float", "complex"):
        raise RuntimeError(f"cholesky: expected a floating-point tensor, got {x.dtype}")
    return _into("cholesky", apply(_cholesky, (x,), (bool(upper),)), out)


def _triangular(a, b, upper, transpose, unit):
    return jsl.solve_triangular(a, b, lower=not upper, trans=1 if transpose else 0,
                                unit_diagonal=unit)


def _solve_triangular(name, b, a, upper, transpose, unit):
    for what, x in (("the right-hand side", b), ("the coefficients", a)):
        require_tensor(x, name)
        if x.ndim < 2:
            raise RuntimeError(f"{name}: {what} must have at least 2 dimensions, got "
                               f"shape {x.shape}")
    if a.shape[-1] != a.shape[-2] or a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"{name}: incompatible shapes {a.shape} (coefficients, square) and "
                           f"{b.shape} (right-hand side)")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = M.broadcast_to(a, batch + a.shape[-2:]) if a.shape[:-2] != batch else a
    b = M.broadcast_to(b, batch + b.shape[-2:]) if b.shape[:-2] != batch else b
    return apply(_triangular, (a, b), (bool(upper), bool(transpose), bool(unit)))


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *,  # noqa: A002, N803
                     out=None):
    """``(solution, cloned_coefficient)``: ``X`` with ``A X = input`` (``A^T X = input``
    with ``transpose``) for triangular ``A`` (upper by default; ``unitriangular`` takes
    its diagonal as ones); batches broadcast."""
    solution = _solve_triangular("triangular_solve", input, A, upper, transpose, unitriangular)
    result = SolutionCoefficient(solution, A.clone())
    return result if out is None else SolutionCoefficient(*T.into_each("triangular_solve", result, out))


def cholesky_solve(B, L, upper=False, *, out=None):  # noqa: N803
    """``X`` with ``A X = B`` given the Cholesky factor ``L`` of ``A`` (lower, or upper
    with ``upper=True``)."""
    if upper:
        first = _solve_triangular("cholesky_solve", B, L, True, True, False)
        return _into("cholesky_solve", _solve_triangular("cholesky_solve", first, L, True,
                                                         False, False), out)
    first = _solve_triangular("cholesky_solve", B, L, False, False, False)
    return _into("cholesky_solve", _solve_triangular("cholesky_solve", first, L, False, True,
                                                     False), out)


def cholesky_inverse(input, upper=False, *, out=None):  # noqa: A002
    """The inverse of ``A`` given its Cholesky factor ``input`` (lower, or upper with
    ``upper=True``)."""
    factor = require_tensor(input, "cholesky_inverse")
    identity = C.eye(factor.shape[-1], dtype=factor.dtype, device=factor.device)
    return _into("cholesky_inverse", cholesky_solve(identity, factor, upper), out)


def qr(input, some=True, *, out=None):  # noqa: A002
    """``(Q, R)`` of matrices: reduced (``some=True``) or complete."""
    result = LG.qr(require_tensor(input, "qr"), mode="reduced" if some else "complete")
    return result if out is None else T.into_each("qr", result, out)


def svd(input, some=True, compute_uv=True, *, out=None):  # noqa: A002
    """``(U, S, V)`` with ``input = U diag(S) V^H`` (``V``, not ``Vh``): reduced
    (``some=True``) or complete; with ``compute_uv=False``, ``U`` and ``V`` are zeros of
    shapes ``(m, m)`` and ``(n, n)``."""
    x = require_tensor(input, "svd")
    if not compute_uv:  # PyTorch's zero-filled (m, m) and (n, n), whatever some says
        m, n = x.shape[-2:]
        result = SingularTriple(C.zeros(x.shape[:-2] + (m, m), dtype=x.dtype, device=x.device),
                                LG.svdvals(x),
                                C.zeros(x.shape[:-2] + (n, n), dtype=x.dtype, device=x.device))
    else:
        u, s, vh = LG.svd(x, full_matrices=not some)
        result = SingularTriple(u, s, adjoint(vh))
    return result if out is None else T.into_each("svd", result, out)


def adjoint(input):  # noqa: A002
    """The conjugate transpose of the last two dimensions: a view for real tensors."""
    x = require_tensor(input, "adjoint")
    if x.ndim < 2:
        raise RuntimeError(f"adjoint: tensor must have at least 2 dimensions, got shape {x.shape}")
    swapped = x.transpose(-2, -1)
    return E.conj(swapped) if x._dtype.kind == "complex" else swapped
