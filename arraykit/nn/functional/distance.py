"""Distances and similarities: ``normalize``, ``cosine_similarity``, ``pairwise_distance``,
``pdist``; vector norms differentiated as PyTorch's (0 at a zero norm, see
:func:`arraykit.kernels.derivatives.vector_norm`)."""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from ...api.autocasting import coerce
from ...core import layout as L
from ...kernels import derivatives as DV
from ...kernels.launch import apply
from .arguments import _floating

__all__ = ["cosine_similarity", "normalize", "pairwise_distance", "pdist"]


def _norm_value(x, axis, keepdims, ord, real):
    return jnp.linalg.vector_norm(x, ord=ord, axis=axis, keepdims=keepdims)


vector_norm = DV.vector_norm(_norm_value)
"""``vector_norm(x, axis, keepdims, ord, real)``: the ``ord``-norm over ``axis`` (a tuple),
with PyTorch's derivative."""


def _normalize_body(x, p, dim, eps):
    n = vector_norm(x, (dim,), True, p, True)
    return x / DV.clip_min(n, jnp.asarray(eps, n.dtype))


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``."""
    x = _floating(input, "normalize")
    (x,) = coerce("normalize", x)
    d = L.normalize_dim(operator.index(dim), max(x.ndim, 1))
    result = apply(_normalize_body, (x,), (float(p), d, float(eps)))
    return result if out is None else out.copy_(result)


def _clamped_norm(x, dim, eps):
    """``max(||x||, eps)`` along ``dim`` (kept), differentiated as the norm itself (PyTorch
    clamps the norm in place without recording)."""
    n = vector_norm(x, (dim,), True, 2.0, True)
    return n + jax.lax.stop_gradient(jnp.maximum(n, jnp.asarray(eps, n.dtype)) - n)


def _cosine_body(x1, x2, dim, eps):
    return jnp.sum((x1 / _clamped_norm(x1, dim, eps)) * (x2 / _clamped_norm(x2, dim, eps)), axis=dim)


def _broadcast(name, x1, x2):
    x1, x2 = coerce(name, _floating(x1, name), _floating(x2, name))
    shape = L.broadcast_shapes(x1.shape, x2.shape)
    return x1.broadcast_to(shape), x2.broadcast_to(shape)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (inputs broadcast):
    ``sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))``, each norm clamped as
    PyTorch clamps it."""
    x1, x2 = _broadcast("cosine_similarity", x1, x2)
    d = L.normalize_dim(operator.index(dim), max(x1.ndim, 1))
    return apply(_cosine_body, (x1, x2), (d, float(eps)))


def _pairwise_body(x1, x2, p, eps, keepdim):
    return vector_norm(x1 - x2 + jnp.asarray(eps, x1.dtype), (x1.ndim - 1,), keepdim, p, True)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dimension (inputs broadcast)."""
    x1, x2 = _broadcast("pairwise_distance", x1, x2)
    if x1.ndim == 0:
        x1, x2 = x1.reshape(1), x2.reshape(1)
    return apply(_pairwise_body, (x1, x2), (float(p), float(eps), bool(keepdim)))


def _pdist_body(x, p):
    i, j = np.triu_indices(x.shape[0], 1)
    return vector_norm(x[i] - x[j], (1,), False, p, True)


def pdist(input, p=2):
    """The ``p``-norm distances between the rows of ``input`` (N, M), pairs ``i < j`` in
    row-major order (N (N - 1) / 2 values)."""
    x = _floating(input, "pdist")
    if x.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values, got {p}")
    return apply(_pdist_body, (x,), (float(p),))

