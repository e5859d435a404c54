"""PyTorch's products and norms in the namespace: ``einsum``, ``outer``, ``mm``,
``bmm``, ``addmm``, ``baddbmm``, ``cross``, ``kron``, ``cdist``, ``dist``, ``norm``,
``renorm``, ``trace``.

They check PyTorch's shapes and call :func:`arraykit.matmul` and the
:mod:`arraykit.linalg` functions (whose derivatives are PyTorch's at the kinks of
the norms); ``einsum`` and ``kron`` are their own kernels.
"""

from __future__ import annotations

import jax.numpy as jnp

from ..core import dtypes as D
from ..core import layout as L
from ..kernels.launch import apply
from ..tensors.tensor_type import require_tensor
from . import elementwise as E
from . import linalg as LG
from . import matrix_products as MP
from . import torch_keywords as T
from .autocasting import coerce

__all__ = [
    "addmm", "baddbmm", "bmm", "cdist", "cross", "dist", "einsum", "kron", "mm", "norm",
    "outer", "renorm", "trace",
]


_into = T.into_if_given


def _einsum(*args):
    *operands, equation, dtype, precision = args
    return jnp.einsum(equation, *(o.astype(dtype) for o in operands), precision=precision)


def einsum(equation, *operands):
    """Einstein summation over ``operands`` (also given as one list), as
    ``torch.einsum``/``numpy.einsum`` (``...`` broadcasts)."""
    if len(operands) == 1 and isinstance(operands[0], (tuple, list)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): equation must be a str, got {type(equation).__name__}")
    if not operands:
        raise ValueError("einsum(): must provide at least one operand")
    for o in operands:
        require_tensor(o, "einsum")
    operands = coerce("matmul", *operands)
    dtype = operands[0]._dtype
    for o in operands[1:]:
        dtype = D.promote(dtype, o._dtype)
    return apply(_einsum, tuple(operands),
                 (equation.replace(" ", ""), dtype.np, MP._precision(dtype, operands[0])))


def outer(input, vec2, *, out=None):  # noqa: A002 (PyTorch's names, here and below)
    """Outer product of two 1-D tensors (:func:`arraykit.linalg.outer`)."""
    return _into("outer", LG.outer(input, vec2), out)


def _check_matrices(name, ndim, *pairs):
    for what, x in pairs:
        require_tensor(x, name)
        if x.ndim != ndim:
            raise RuntimeError(f"{name}: {what} must be a {ndim}D tensor, got shape {x.shape}")


def _product(name, a, b, ndim):
    """``a @ b`` of two ``ndim``-D tensors with PyTorch's shape checks."""
    _check_matrices(name, ndim, ("the first operand", a), ("the second operand", b))
    if ndim == 3 and a.shape[0] != b.shape[0]:
        raise RuntimeError(f"{name}: batch sizes differ, got shapes {a.shape} and {b.shape}")
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(
            f"{name}: shapes {a.shape} and {b.shape} cannot be multiplied "
            f"({a.shape[-2]}x{a.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})"
        )
    return MP.matmul(a, b)


def mm(input, mat2, *, out=None):  # noqa: A002
    """Matrix product of two 2-D tensors."""
    return _into("mm", _product("mm", input, mat2, 2), out)


def bmm(input, mat2, *, out=None):  # noqa: A002
    """Batched matrix product of two 3-D tensors with the same batch size."""
    return _into("bmm", _product("bmm", input, mat2, 3), out)


def _added(name, input, product, beta, alpha):  # noqa: A002
    """``beta * input + alpha * product`` (``input`` ignored, NaNs too, when ``beta`` is 0)."""
    require_tensor(input, name)
    L.broadcast_to(L.contiguous(input.shape), product.shape)
    scaled = product if alpha == 1 else E.multiply(product, alpha)
    if beta == 0:
        return scaled
    return E.add(input if beta == 1 else E.multiply(input, beta), scaled)


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):  # noqa: A002
    """``beta * input + alpha * (mat1 @ mat2)`` (``input`` broadcast to the product)."""
    return _into("addmm", _added("addmm", input, _product("addmm", mat1, mat2, 2), beta, alpha), out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):  # noqa: A002
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    product = _product("baddbmm", batch1, batch2, 3)
    return _into("baddbmm", _added("baddbmm", input, product, beta, alpha), out)


def cross(input, other, dim=None, *, out=None):  # noqa: A002
    """Cross products of 3-element vectors along ``dim`` (the first dimension of size 3
    when None, as PyTorch); the other dimensions broadcast."""
    require_tensor(input, "cross")
    require_tensor(other, "cross")
    if dim is None:
        shape = L.broadcast_shapes(input.shape, other.shape)
        dim = next((d for d, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError(f"no dimension of size 3 in input of shape {input.shape}")
    elif input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions, got "
                           f"shapes {input.shape} and {other.shape}")
    d = L.normalize_dim(dim, max(input.ndim, other.ndim), "dim")
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    return _into("cross", LG.cross(input, other, axis=d - max(input.ndim, other.ndim)), out)


def _kron(a, b, dtype):
    return jnp.kron(a.astype(dtype), b.astype(dtype))


def kron(input, other, *, out=None):  # noqa: A002
    """Kronecker product: blocks ``input[i, j] * other`` (fewer dimensions padded with 1s)."""
    dtype = MP.numeric_pair(input, other, "kron")
    return _into("kron", apply(_kron, (input, other), (dtype.np,)), out)


def _norm_of_difference(x1, x2, p, axis, keepdims):
    """The ``p``-norm of ``x1 - x2`` over ``axis`` (:func:`arraykit.linalg.vector_norm`)."""
    return LG.vector_norm(E.subtract(x1, x2), axis=axis, keepdims=keepdims, ord=p)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Distances ``||x1[..., i, :] - x2[..., j, :]||_p`` of two batches of row vectors,
    shape ``(..., P, R)`` (batch dimensions broadcast)."""
    require_tensor(x1, "cdist")
    require_tensor(x2, "cdist")
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if x1._dtype.kind != "float" or x2._dtype.kind != "float":
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype}")
    return _norm_of_difference(x1.unsqueeze(-2), x2.unsqueeze(-3), p, -1, False)


def dist(input, other, p=2):  # noqa: A002
    """The ``p``-norm of ``input - other`` (broadcast), a 0-d tensor."""
    require_tensor(input, "dist")
    return _norm_of_difference(input, other, p, None, False)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):  # noqa: A002
    """``torch.norm``: the vector ``p``-norm over ``dim`` (all elements by default;
    ``"fro"`` is the 2-norm) or the nuclear norm (``p="nuc"``) of matrices over two
    dimensions."""
    x = require_tensor(input, "norm")
    if dtype is not None:
        x = x.to(dtype)
    if isinstance(dim, int):
        dim = (dim,)
    elif dim is not None:
        dim = tuple(dim)
    if p == "nuc":
        dims = tuple(range(x.ndim)) if dim is None else L.normalize_dims(dim, x.ndim)
        if len(dims) != 2:
            raise RuntimeError(f"norm: p='nuc' needs two dimensions, got dim={dim}")
        moved = x.permute(tuple(d for d in range(x.ndim) if d not in dims) + dims)
        result = LG.matrix_norm(moved, ord="nuc")
        if keepdim:
            for d in sorted(dims):
                result = result.unsqueeze(d)
    else:
        order = 2 if p == "fro" or p is None else p
        if isinstance(order, str):
            raise RuntimeError(f"norm: unknown p {p!r} (a number, 'fro' or 'nuc')")
        result = LG.vector_norm(x, axis=dim, keepdims=bool(keepdim), ord=order)
    return _into("norm", result, out)


def _renorm_factor(n, maxnorm):
    one = jnp.ones((), n.dtype)
    return jnp.where(n > maxnorm, maxnorm / (n + 1e-7), one).astype(n.dtype)


def renorm(input, p, dim, maxnorm, *, out=None):  # noqa: A002
    """``input`` with each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm``
    scaled to norm ``maxnorm`` (``maxnorm / (norm + 1e-7)``, as PyTorch)."""
    x = require_tensor(input, "renorm")
    if x._dtype.kind not in ("float", "complex"):
        raise RuntimeError(f"renorm: expected a floating-point tensor, got {x.dtype}")
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported, got p={p}")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = L.normalize_dim(dim, x.ndim, "dim")
    others = tuple(i for i in range(x.ndim) if i != d)
    norms = LG.vector_norm(x, axis=others, keepdims=True, ord=p)
    factor = apply(_renorm_factor, (norms,), (float(maxnorm),))
    return _into("renorm", E.multiply(x, factor), out)


def trace(input):  # noqa: A002
    """Sum of the main diagonal of a 2-D tensor (integers summed as int64)."""
    x = require_tensor(input, "trace")
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    if x._dtype.kind == "bool":
        x = x.to(D.int64)
    return LG.trace(x)

