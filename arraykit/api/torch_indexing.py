"""PyTorch's reducing scatters and masked writes: ``scatter_reduce``, ``index_reduce``,
``index_fill``, ``masked_scatter`` (their in-place twins are ``Tensor`` methods).

``scatter_reduce``/``index_reduce`` with ``"amax"``/``"amin"`` split the gradient
evenly among the values equal to the result (``self``'s included), as PyTorch;
``"prod"`` differentiates with zeros as PyTorch (the product of the other values).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ..core import dtypes as D
from ..kernels.launch import apply
from ..tensors.tensor_type import is_traced, require_tensor
from . import gather_scatter as G
from . import torch_keywords as T

__all__ = ["index_fill", "index_reduce", "masked_scatter", "scatter_reduce"]

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _identity(dtype, reduce):
    """The value a position starts from when ``self`` is not included."""
    if reduce in ("sum", "mean"):
        return jnp.zeros((), dtype)
    if reduce == "prod":
        return jnp.ones((), dtype)
    if jnp.issubdtype(dtype, jnp.floating):
        return jnp.array(-jnp.inf if reduce == "amax" else jnp.inf, dtype)
    info = jnp.iinfo(dtype)
    return jnp.array(info.min if reduce == "amax" else info.max, dtype)


def _others(total, zeros, value):
    """The product of a group's values other than ``value``: ``total`` is the product
    of its nonzero values, ``zeros`` how many are zero (PyTorch's zero-safe rule)."""
    one = jnp.ones((), value.dtype)
    lone_zero = (zeros == 1) & (value == 0)
    return jnp.where(zeros == 0, total / jnp.where(value == 0, one, value),
                     jnp.where(lone_zero, total, jnp.zeros((), value.dtype)))


@functools.partial(jax.custom_jvp, nondiff_argnums=(3,))
def _scatter_prod(base, idx, src, dim):
    """``base`` with the values ``src`` multiplied in at ``idx`` along ``dim``,
    differentiable with repeated indices (JAX's own rule needs unique ones)."""
    return base.at[G._positions(idx, dim)].multiply(src, mode="drop")


@_scatter_prod.defjvp
def _scatter_prod_jvp(dim, primals, tangents):
    base, idx, src = primals
    dbase, _, dsrc = tangents
    pos = G._positions(idx, dim)
    one = jnp.ones((), base.dtype)
    zeros = (base == 0).astype(jnp.int32).at[pos].add((src == 0).astype(jnp.int32), mode="drop")
    total = jnp.where(base == 0, one, base).at[pos].multiply(jnp.where(src == 0, one, src),
                                                             mode="drop")
    d_src = _others(total[pos], zeros[pos], src) * dsrc
    tangent = _others(total, zeros, base) * dbase + jnp.zeros_like(base).at[pos].add(
        d_src, mode="drop")
    return _scatter_prod(base, idx, src, dim), tangent


def _scatter_reduce(cur, idx, src, dim, reduce, include_self):
    src = src[tuple(slice(0, n) for n in idx.shape)].astype(cur.dtype)
    pos = G._positions(idx, dim)
    hit = jnp.zeros(cur.shape, bool).at[pos].set(True, mode="drop")
    base = cur if include_self else jnp.where(hit, _identity(cur.dtype, reduce), cur)
    at = base.at[pos]
    if reduce in ("sum", "mean"):
        out = at.add(src, mode="drop")
    elif reduce == "prod":
        out = _scatter_prod(base, idx, src, dim)
    elif reduce == "amax":
        out = at.max(src, mode="drop")
    else:
        out = at.min(src, mode="drop")
    if reduce != "mean":
        return out
    count = jnp.zeros(cur.shape, cur.dtype).at[pos].add(jnp.ones((), cur.dtype), mode="drop")
    count = jnp.maximum(count + (1 if include_self else 0), 1)
    if jnp.issubdtype(cur.dtype, jnp.floating) or jnp.issubdtype(cur.dtype, jnp.complexfloating):
        return jnp.where(hit, out / count, out)
    return jnp.where(hit, out // count, out)


def _check_reduce(reduce, allowed, name):
    if reduce not in allowed:
        raise RuntimeError(f"{name}(): reduce argument must be one of {allowed}, got "
                           f"'{reduce}'")


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """A copy of ``input`` with the values of ``src`` reduced (``"sum"``, ``"prod"``,
    ``"mean"``, ``"amax"``, ``"amin"``) into the positions ``index`` names along
    ``dim`` (as :func:`arraykit.scatter`); ``include_self=False`` leaves ``input``'s
    values at those positions out."""
    _check_reduce(reduce, _REDUCTIONS, "scatter_reduce")
    x = require_tensor(input, "scatter_reduce")
    require_tensor(src, "scatter_reduce")
    with G._held(index):
        target, d, idx, source = G._scatter_operands(x, dim, index, src, "scatter_reduce")
        result = apply(_scatter_reduce, (target, idx, source), (d, reduce, bool(include_self)))
    return result.reshape(x.shape)


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):  # noqa: A002
    """A copy of ``input`` with the slices of ``source`` reduced (``"prod"``, ``"mean"``,
    ``"amax"``, ``"amin"``) into the slices ``index`` (1-D) names along ``dim``."""
    _check_reduce(reduce, ("prod", "mean", "amax", "amin"), "index_reduce")
    x = require_tensor(input, "index_reduce")
    with G._held(index):
        target, d, flat, src = G._index_update_operands(x, dim, index, source, True,
                                                        "index_reduce")
        shape = [1] * src.ndim
        shape[d] = flat.shape[0]
        full = flat.reshape(tuple(shape)).broadcast_to(src.shape)
        result = apply(_scatter_reduce, (target, full, src), (d, reduce, bool(include_self)))
    result = result.reshape(x.shape)
    return result if out is None else T.into("index_reduce", result, out)


def index_fill(input, dim, index, value):  # noqa: A002
    """A copy of ``input`` with the positions ``index`` along ``dim`` set to ``value``."""
    return require_tensor(input, "index_fill").clone().index_fill_(dim, index, value)


def _masked_scatter(x, mask, src):
    flat_mask = jnp.broadcast_to(mask, x.shape).reshape(-1)
    position = jnp.cumsum(flat_mask) - 1
    values = src.reshape(-1)[jnp.clip(position, 0, max(src.size - 1, 0))]
    return jnp.where(flat_mask, values, x.reshape(-1)).reshape(x.shape)


def masked_scatter(input, mask, source):  # noqa: A002
    """A copy of ``input`` with the elements of ``source``, in order, written where the
    boolean ``mask`` (broadcast to ``input``) is true."""
    x = require_tensor(input, "masked_scatter")
    require_tensor(mask, "masked_scatter")
    require_tensor(source, "masked_scatter")
    if mask._dtype is not D.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {mask.dtype}")
    if source._dtype is not x._dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got {x.dtype} and {source.dtype}")
    mask.broadcast_to(x.shape)
    if not is_traced(mask):
        wanted = int(mask.broadcast_to(x.shape).sum().item())
        if wanted > source.numel():
            raise RuntimeError(f"masked_scatter: expected source to have at least {wanted} "
                               f"elements (the true elements of the mask), got "
                               f"{source.numel()}")
    return apply(_masked_scatter, (x, mask, source))


