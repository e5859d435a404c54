"""``pad``: constant, reflect, replicate and circular padding (negative amounts crop)."""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from ...kernels.launch import apply
from ...tensors.tensor_type import require_tensor

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


def _source(mode, n, lo, hi):
    """Indices into a dimension of length ``n`` that make its padded version."""
    t = np.arange(n + lo + hi) - lo
    if mode == "reflect":
        return np.where(t < 0, -t, np.where(t >= n, 2 * (n - 1) - t, t))
    if mode == "replicate":
        return np.clip(t, 0, n - 1)
    start, kept = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)  # circular: crop, then wrap
    return start + (np.arange(n + lo + hi) - max(lo, 0)) % kept


def _pad_body(x, *rest):
    *value, mode, pads = rest
    if mode == "constant":
        fill = value[0].astype(x.dtype)
        config = [(0, 0, 0)] * (x.ndim - len(pads)) + [(lo, hi, 0) for lo, hi in pads]
        return jax.lax.pad(x, fill, config)
    for axis, (lo, hi) in enumerate(pads, start=x.ndim - len(pads)):
        if lo or hi:
            x = jnp.take(x, _source(mode, x.shape[axis], lo, hi), axis=axis)
    return x


def _check_sizes(x, mode, pads):
    shape = list(x.shape)
    for dim, (lo, hi) in enumerate(pads, start=x.ndim - len(pads)):
        n = shape[dim]
        if n + lo + hi < 0 or (mode != "constant" and n + lo + hi < 1):
            raise RuntimeError(
                f"pad: input dimension {dim} of size {n} padded by ({lo}, {hi}) would have size "
                f"{n + lo + hi}"
            )
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(
                "Argument #4: Padding size should be less than the corresponding input dimension, "
                f"but got: padding ({lo}, {hi}) at dimension {dim} of input {shape}"
            )
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError(
                f"Padding value causes wrapping around more than once: padding ({lo}, {hi}) at "
                f"dimension {dim} of input {shape}"
            )
        if mode == "replicate" and n == 0:
            raise RuntimeError(f"pad: cannot replicate dimension {dim} of size 0 of input {shape}")


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dimensions of ``input``, as
    ``torch.nn.functional.pad``: ``pad = (left_last, right_last, left_second_last, ...)``.

    ``mode`` is ``'constant'`` (fill with ``value``, default 0; any number of dims),
    ``'reflect'`` (mirror without repeating the edge), ``'replicate'`` (repeat the edge)
    or ``'circular'`` (wrap around); the last three pad 1 to 3 trailing dimensions of a
    (batched) input as PyTorch. A negative amount removes elements from that side.
    """
    x = require_tensor(input, "pad")
    amounts = tuple(operator.index(p) for p in pad)
    if len(amounts) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(amounts) // 2 > x.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got "
            f"padding length {len(amounts)} and input of dimension {x.ndim}"
        )
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant":
        if value is not None:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        k = len(amounts) // 2
        if k not in (1, 2, 3) or x.ndim not in (k + 1, k + 2):
            raise NotImplementedError(
                f"Padding size {len(amounts)} is not supported for {x.ndim}D input tensor.\n"
                "Supported combinations for non-constant padding:\n"
                "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
            )
    pads = tuple((amounts[i], amounts[i + 1]) for i in range(len(amounts) - 2, -1, -2))
    _check_sizes(x, mode, pads)
    if mode != "constant":
        return apply(_pad_body, (x,), (mode, pads))
    return apply(_pad_body, (x, np.asarray(0 if value is None else value)), (mode, pads))
