"""``unfold`` (im2col) and ``fold`` (col2im): sliding blocks of a batched image as
columns, and columns summed back into an image. Named ``folding`` so that the
function ``fold`` does not shadow the module."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp

from ...kernels.launch import apply
from ...tensors.tensor_type import require_tensor
from ._windows import _ntuple

__all__ = ["unfold", "fold"]


def _unfold_body(x, kernel, dilation, padding, stride, blocks):
    n, c = x.shape[:2]
    padded = jnp.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    columns = []
    for offset in itertools.product(*(range(k) for k in kernel)):
        starts = [i * d for i, d in zip(offset, dilation)]
        limits = [b + (o - 1) * s + 1 for b, o, s in zip(starts, blocks, stride)]
        columns.append(jax.lax.slice(padded, (0, 0, *starts), (n, c, *limits), (1, 1, *stride)))
    return jnp.stack(columns, 2).reshape(n, -1, blocks[0] * blocks[1])


def _fold_body(cols, size, kernel, dilation, padding, stride, blocks):
    n = cols.shape[0]
    blocks_of = cols.reshape(n, -1, kernel[0] * kernel[1], *blocks)
    padded_size = [o + 2 * p for o, p in zip(size, padding)]
    total = None
    for j, offset in enumerate(itertools.product(*(range(k) for k in kernel))):
        starts = [i * d for i, d in zip(offset, dilation)]
        config = [(0, 0, 0), (0, 0, 0)] + [
            (b, m - b - (o - 1) * s - 1, s - 1) for b, m, o, s in zip(starts, padded_size, blocks, stride)
        ]
        placed = jax.lax.pad(blocks_of[:, :, j], jnp.zeros((), cols.dtype), config)
        total = placed if total is None else total + placed
    return total[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]]


def _options(op, kernel_size, dilation, padding, stride):
    options = tuple(_ntuple(v, 2, name, op) for v, name in (
        (kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    kernel, dilation, padding, stride = options
    if min(kernel) < 1 or min(dilation) < 1 or min(stride) < 1 or min(padding) < 0:
        raise RuntimeError(
            f"{op}: kernel_size, dilation and stride must be positive and padding non-negative, got "
            f"kernel_size={kernel}, dilation={dilation}, padding={padding}, stride={stride}"
        )
    return options


def _batched(x, unbatched_ndim, expected):
    """``x`` with a leading batch dimension (added when it has ``unbatched_ndim``
    dimensions) and whether it was added; ``RuntimeError("<expected>, but got: <shape>")``
    unless ``x`` has that many dimensions or one more, none but the first of them empty."""
    if x.ndim not in (unbatched_ndim, unbatched_ndim + 1) or 0 in x.shape[1:]:
        raise RuntimeError(f"{expected}, but got: {list(x.shape)}")
    unbatched = x.ndim == unbatched_ndim
    return (x.unsqueeze(0) if unbatched else x), unbatched


def _blocks(size, kernel, dilation, padding, stride):
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                 for n, k, d, p, s in zip(size, kernel, dilation, padding, stride))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding ``kernel_size`` blocks of (N, C, H, W) or (C, H, W) ``input`` as columns,
    as ``torch.nn.functional.unfold``: (N, C * kH * kW, L), one column per block (row-major
    over the block positions), each column's rows ordered (channel, kernel row, kernel
    column)."""
    x, unbatched = _batched(
        require_tensor(input, "unfold"), 3,
        "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
        "dimensions for input",
    )
    kernel, dilation, padding, stride = _options("unfold", kernel_size, dilation, padding, stride)
    blocks = _blocks(x.shape[2:], kernel, dilation, padding, stride)
    if min(blocks) < 1:
        raise RuntimeError(
            f"Given input with spatial size {tuple(x.shape[2:])}, kernel_size={kernel}, "
            f"dilation={dilation}, padding={padding}, calculated shape of the array of sliding "
            f"blocks as {blocks}, but its components must be at least one."
        )
    out = apply(_unfold_body, (x,), (kernel, dilation, padding, stride, blocks))
    return out.squeeze(0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum columns (N, C * kH * kW, L) or (C * kH * kW, L) back into an image of
    ``output_size``, as ``torch.nn.functional.fold`` (the adjoint of :func:`unfold`:
    overlapping blocks add up)."""
    x, unbatched = _batched(
        require_tensor(input, "fold"), 2,
        "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
        "non-zero dimensions for input",
    )
    size = _ntuple(output_size, 2, "output_size", "fold")
    kernel, dilation, padding, stride = _options("fold", kernel_size, dilation, padding, stride)
    if x.shape[1] % (kernel[0] * kernel[1]):
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
            f"but got input.size(1)={x.shape[1]} and kernel_size={kernel}."
        )
    blocks = _blocks(size, kernel, dilation, padding, stride)
    if min(blocks) < 1 or x.shape[2] != blocks[0] * blocks[1]:
        raise RuntimeError(
            f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match "
            f"the calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
            f"{blocks[0] * blocks[1]}, but got input.size(2)={x.shape[2]}."
        )
    out = apply(_fold_body, (x,), (size, kernel, dilation, padding, stride, blocks))
    return out.squeeze(0) if unbatched else out
