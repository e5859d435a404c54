"""Pooling: max, average, adaptive, power-average and fractional max pooling over 1 to
3 spatial dimensions, and max unpooling (the inverse of max pooling with its indices).

Average pooling is a ``lax.reduce_window`` sum divided by PyTorch's window counts.
Max pooling picks, per window, the element PyTorch's scan picks (the first maximum
in row-major window order; a NaN wins, the last NaN if several), as a flat index into
the input plane; the result is the input gathered at those indices, so the gradient
goes to that one element (JAX's VJP of the gather), ties included, as in PyTorch.
"""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np

from ...kernels.launch import apply
from ...tensors.tensor_type import require_tensor
from ._windows import _batched, _ntuple, _pool_out
from .arguments import _check_indices

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices",
    "max_unpool1d", "max_unpool2d", "max_unpool3d", "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices", "fractional_max_pool3d", "fractional_max_pool3d_with_indices",
    "assert_int_or_pair",
]


def _lowest(dtype):
    return -jnp.inf if jnp.issubdtype(dtype, jnp.inexact) else jnp.iinfo(dtype).min


def _flat(positions, sizes):
    """Row-major flat index into a plane of ``sizes`` of per-axis ``positions`` arrays,
    each shaped to broadcast against the others (axis ``a`` along dimension ``a``)."""
    flat = np.zeros((), np.int64)
    for pos, n in zip(positions, sizes):
        flat = flat * n + pos
    return flat


def _pick(windows, flat, valid):
    """Flat input index that PyTorch's max scan picks in each window.

    ``windows`` (N, C, *out, K) are the candidates in scan order; ``flat`` and
    ``valid`` (static, (*out, K)) their flat indices and whether they are input
    elements (padding holds the lowest value: where it ties with the maximum, the
    first input element is picked, as PyTorch's scan starts from it)."""
    shape = windows.shape
    j = jnp.argmax(windows, axis=-1)
    first_valid = jnp.asarray(np.argmax(valid, axis=-1))
    is_valid = jnp.take_along_axis(jnp.broadcast_to(valid, shape), j[..., None], -1)[..., 0]
    j = jnp.where(is_valid, j, first_valid)
    if jnp.issubdtype(windows.dtype, jnp.inexact):
        nan = jnp.isnan(windows)
        last_nan = shape[-1] - 1 - jnp.argmax(nan[..., ::-1], axis=-1)
        j = jnp.where(nan.any(-1), last_nan, j)
    return jnp.take_along_axis(jnp.broadcast_to(flat, shape), j[..., None], -1)[..., 0]


def _gather_plane(x, index):
    """``x`` (N, C, *spatial) read at flat per-plane ``index`` (N, C, *out)."""
    n, c = x.shape[:2]
    values = jnp.take_along_axis(x.reshape(n, c, -1), index.reshape(n, c, -1), -1)
    return values.reshape(index.shape)


def _max_pool_body(x, kernel, stride, pad, dilation, out):
    sizes = x.shape[2:]
    nd = len(sizes)
    highs = [(o - 1) * s + d * (k - 1) + 1 - n - p
             for o, s, d, k, n, p in zip(out, stride, dilation, kernel, sizes, pad)]
    padded = jax.lax.pad(x, jnp.asarray(_lowest(x.dtype), x.dtype),
                         [(0, 0, 0)] * 2 + [(p, h, 0) for p, h in zip(pad, highs)])
    windows, flats, valids = [], [], []
    for offset in itertools.product(*(range(k) for k in kernel)):
        starts = [i * d for i, d in zip(offset, dilation)]
        limits = [b + (o - 1) * s + 1 for b, o, s in zip(starts, out, stride)]
        windows.append(jax.lax.slice(padded, (0, 0, *starts), (*x.shape[:2], *limits), (1, 1, *stride)))
        positions = [(np.arange(o) * s - p + b).reshape((-1,) + (1,) * (nd - 1 - a))
                     for a, (o, s, p, b) in enumerate(zip(out, stride, pad, starts))]
        inside = np.ones((), bool)
        for pos, n in zip(positions, sizes):
            inside = inside & (pos >= 0) & (pos < n)
        flats.append(np.broadcast_to(_flat(positions, sizes), out))
        valids.append(np.broadcast_to(inside, out))
    index = _pick(jnp.stack(windows, -1), np.stack(flats, -1), np.stack(valids, -1))
    return _gather_plane(x, index), index


def _adaptive_windows(n, o):
    """Per output position along one axis: the input positions of its window
    (``floor(i n / o)`` to ``ceil((i + 1) n / o)``), padded to one length by repeating
    the last, and which are real."""
    starts = (np.arange(o) * n) // o
    ends = -((-(np.arange(o) + 1) * n) // o)
    width = int((ends - starts).max())
    taken = np.arange(width)[None, :] < (ends - starts)[:, None]
    index = np.minimum(starts[:, None] + np.arange(width)[None, :], ends[:, None] - 1)
    return index, taken, ends - starts


def _adaptive_max_body(x, out):
    sizes = x.shape[2:]
    nd = len(sizes)
    lowest = jnp.asarray(_lowest(x.dtype), x.dtype)
    windows = x
    flat, valid = np.zeros((), np.int64), np.ones((), bool)
    for a, (n, o) in enumerate(zip(sizes, out)):
        index, taken, _ = _adaptive_windows(n, o)
        axis = 2 + 2 * a  # the windows so far are (N, C, o0, w0, ..., n_a, ...)
        windows = jnp.take(windows, index.reshape(-1), axis=axis)
        windows = windows.reshape(windows.shape[:axis] + index.shape + windows.shape[axis + 1:])
        flat = flat[..., None, None] * n + index
        valid = valid[..., None, None] & taken
    # (N, C, o0, w0, o1, w1, ...) -> (N, C, o0, o1, ..., w0 * w1 * ...)
    order = [2 + 2 * a for a in range(nd)] + [3 + 2 * a for a in range(nd)]
    windows = windows.transpose(0, 1, *order).reshape(x.shape[:2] + tuple(out) + (-1,))
    flat = flat.transpose([2 * a for a in range(nd)] + [1 + 2 * a for a in range(nd)]).reshape(tuple(out) + (-1,))
    valid = valid.transpose([2 * a for a in range(nd)] + [1 + 2 * a for a in range(nd)]).reshape(tuple(out) + (-1,))
    windows = jnp.where(valid, windows, lowest)
    index = _pick(windows, flat, valid)
    return _gather_plane(x, index), index


def _adaptive_avg_body(x, out):
    for a, (n, o) in enumerate(zip(x.shape[2:], out)):
        axis = 2 + a
        if n % o == 0:
            x = x.reshape(x.shape[:axis] + (o, n // o) + x.shape[axis + 1:]).mean(axis + 1)
            continue
        index, taken, counts = _adaptive_windows(n, o)
        w = jnp.take(x, index.reshape(-1), axis=axis)
        w = w.reshape(w.shape[:axis] + index.shape + w.shape[axis + 1:])
        shape = (o, index.shape[1]) + (1,) * (x.ndim - axis - 1)
        total = jnp.where(taken.reshape(shape), w, 0).sum(axis + 1)
        x = total / counts.reshape((o,) + (1,) * (x.ndim - axis - 1)).astype(x.dtype)
    return x


def _avg_pool_body(x, kernel, stride, pad, out, count_include_pad, divisor_override):
    sizes = x.shape[2:]
    nd = len(sizes)
    highs = [(o - 1) * s + k - n - p for o, s, k, n, p in zip(out, stride, kernel, sizes, pad)]
    zero = np.zeros((), x.dtype)  # concrete: reduce_window is then a differentiable sum
    padded = jax.lax.pad(x, zero, [(0, 0, 0)] * 2 + [(p, h, 0) for p, h in zip(pad, highs)])
    total = jax.lax.reduce_window(padded, zero, jax.lax.add, (1, 1, *kernel), (1, 1, *stride), "VALID")
    if divisor_override is not None:
        divisor = np.asarray(divisor_override)
    else:
        divisor = np.ones((), np.int64)
        for a, (o, s, k, n, p) in enumerate(zip(out, stride, kernel, sizes, pad)):
            start = np.arange(o) * s - p
            end = np.minimum(start + k, n + p)
            if not count_include_pad:
                start, end = np.maximum(start, 0), np.minimum(end, n)
            divisor = divisor * (end - start).reshape((-1,) + (1,) * (nd - 1 - a))
    if jnp.issubdtype(x.dtype, jnp.integer):
        return jax.lax.div(total, jnp.broadcast_to(jnp.asarray(divisor, x.dtype), total.shape))  # truncating, as PyTorch's
    return total / jnp.asarray(divisor, x.dtype)


def _window_args(op, nd, kernel_size, stride, padding, dilation):
    kernel = _ntuple(kernel_size, nd, "kernel_size", op)
    stride = kernel if stride is None or stride == [] or stride == () else _ntuple(stride, nd, "stride", op)
    pad = _ntuple(padding, nd, "padding", op)
    dilation = _ntuple(dilation, nd, "dilation", op)
    if any(k < 1 for k in kernel):
        raise RuntimeError(f"{op}: kernel_size must be greater than zero, but got {kernel}")
    if any(s < 1 for s in stride):
        raise RuntimeError(f"{op}: stride should not be zero, got {stride}")
    if any(d < 1 for d in dilation):
        raise RuntimeError(f"{op}: dilation must be greater than zero, but got {dilation}")
    for p, k, d in zip(pad, kernel, dilation):
        if p < 0 or p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )
    return kernel, stride, pad, dilation


def _out_sizes(x, kernel, stride, pad, dilation, ceil_mode):
    sizes = x.shape[2:]
    out = tuple(_pool_out(n, k, s, p, d, ceil_mode)
                for n, k, s, p, d in zip(sizes, kernel, stride, pad, dilation))
    if any(o < 1 for o in out):
        given = "x".join(map(str, (x.shape[1],) + tuple(sizes)))
        calc = "x".join(map(str, (x.shape[1],) + out))
        raise RuntimeError(
            f"Given input size: ({given}). Calculated output size: ({calc}). Output size is too small"
        )
    return out


def _max_pool(op, nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, unbatched = _batched(require_tensor(input, op), nd, op)
    if x.dtype.kind not in ("float", "int", "uint"):
        raise TypeError(f"{op}: expected a real floating-point or integer tensor, got {x.dtype}")
    kernel, stride, pad, dilation = _window_args(op, nd, kernel_size, stride, padding, dilation)
    out = _out_sizes(x, kernel, stride, pad, dilation, bool(ceil_mode))
    values, index = apply(_max_pool_body, (x,), (kernel, stride, pad, dilation, out), multiple=True)
    if unbatched:
        values, index = values.squeeze(0), index.squeeze(0)
    return (values, index) if return_indices else values


def _avg_pool(op, nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, unbatched = _batched(require_tensor(input, op), nd, op)
    if x.dtype.kind not in ("float", "int", "uint"):
        raise TypeError(f"{op}: expected a real floating-point or integer tensor, got {x.dtype}")
    kernel, stride, pad, _ = _window_args(op, nd, kernel_size, stride, padding, 1)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    out = _out_sizes(x, kernel, stride, pad, (1,) * nd, bool(ceil_mode))
    static = (kernel, stride, pad, out, bool(count_include_pad),
              None if divisor_override is None else int(divisor_override))
    result = apply(_avg_pool_body, (x,), static)
    return result.squeeze(0) if unbatched else result


def _adaptive_sizes(op, nd, x, output_size):
    if isinstance(output_size, (tuple, list)) and len(output_size) == nd:
        out = tuple(n if o is None else o for o, n in zip(output_size, x.shape[2:]))
    else:
        out = _ntuple(output_size, nd, "output_size", op)
    if any(o < 0 for o in out) or any(n == 0 for n in x.shape[2:]):
        raise RuntimeError(
            f"{op}: expected non-empty spatial dimensions and a non-negative output_size, got "
            f"input of size {list(x.shape)} and output_size={out}"
        )
    return tuple(out)


def _adaptive(op, nd, body, input, output_size, multiple):
    x, unbatched = _batched(require_tensor(input, op), nd, op)
    out = _adaptive_sizes(op, nd, x, output_size)
    result = apply(body, (x,), (out,), multiple=multiple)
    if not unbatched:
        return result
    return tuple(r.squeeze(0) for r in result) if multiple else result.squeeze(0)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-D max pooling over (N, C, L) or (C, L), as ``torch.nn.functional.max_pool1d``;
    with ``return_indices``, also the index of each maximum along L."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling over (N, C, H, W) or (C, H, W), as ``torch.nn.functional.max_pool2d``
    (``stride`` defaults to ``kernel_size``; ``padding`` is at most half the dilated
    kernel); with ``return_indices``, also each maximum's flat index ``h * W + w`` in
    its plane. The gradient goes to that one element, at ties too, as PyTorch's."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W), as
    ``torch.nn.functional.max_pool3d``; indices are flat per (D, H, W) volume."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling over (N, C, L) or (C, L), as ``torch.nn.functional.avg_pool1d``."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-D average pooling over (N, C, H, W) or (C, H, W), as
    ``torch.nn.functional.avg_pool2d``: the window sum divided by its size counting the
    zero padding (``count_include_pad``), or only the input elements, or by
    ``divisor_override``."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W), as
    ``torch.nn.functional.avg_pool3d``."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over the ``output_size`` windows ``[floor(i L / o), ceil((i + 1) L / o))`` of
    (N, C, L) or (C, L), as ``torch.nn.functional.adaptive_max_pool1d``."""
    values, index = _adaptive("adaptive_max_pool1d", 1, _adaptive_max_body, input, output_size, True)
    return (values, index) if return_indices else values


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Adaptive 2-D max pooling to ``output_size`` (an int, a pair; None keeps that
    size), as ``torch.nn.functional.adaptive_max_pool2d``; indices are flat per plane."""
    values, index = _adaptive("adaptive_max_pool2d", 2, _adaptive_max_body, input, output_size, True)
    return (values, index) if return_indices else values


def adaptive_avg_pool1d(input, output_size):
    """Mean over the adaptive windows of (N, C, L) or (C, L), as
    ``torch.nn.functional.adaptive_avg_pool1d``."""
    return _adaptive("adaptive_avg_pool1d", 1, _adaptive_avg_body, input, output_size, False)


def adaptive_avg_pool2d(input, output_size):
    """Adaptive 2-D average pooling to ``output_size`` (an int, a pair; None keeps
    that size), as ``torch.nn.functional.adaptive_avg_pool2d``."""
    return _adaptive("adaptive_avg_pool2d", 2, _adaptive_avg_body, input, output_size, False)


def adaptive_avg_pool3d(input, output_size):
    """Adaptive 3-D average pooling to ``output_size``, as
    ``torch.nn.functional.adaptive_avg_pool3d``."""
    return _adaptive("adaptive_avg_pool3d", 3, _adaptive_avg_body, input, output_size, False)


def _lp_pool(op, nd, input, norm_type, kernel_size, stride, ceil_mode):
    kernel = _ntuple(kernel_size, nd, "kernel_size", op)
    x = require_tensor(input, op)
    pooled = _avg_pool(op, nd, x ** norm_type, kernel, stride, 0, ceil_mode, True, None)
    return (pooled.sign() * pooled.abs()).mul(math.prod(kernel)) ** (1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling ``(sum x^p)^(1/p)`` over windows of (N, C, L), as
    ``torch.nn.functional.lp_pool1d``."""
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling ``(sum x^p)^(1/p)`` over windows of (N, C, H, W), as
    ``torch.nn.functional.lp_pool2d``."""
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling ``(sum x^p)^(1/p)`` over windows of (N, C, D, H, W), as
    ``torch.nn.functional.lp_pool3d``."""
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """:func:`max_pool1d` returning ``(values, indices)``, as
    ``torch.nn.functional.max_pool1d_with_indices``."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """:func:`max_pool2d` returning ``(values, indices)``, as
    ``torch.nn.functional.max_pool2d_with_indices``."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """:func:`max_pool3d` returning ``(values, indices)``, as
    ``torch.nn.functional.max_pool3d_with_indices``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool1d` returning ``(values, indices)``."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool2d` returning ``(values, indices)``."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Adaptive 3-D max pooling to ``output_size``, as
    ``torch.nn.functional.adaptive_max_pool3d``; indices are flat per (D, H, W) volume."""
    values, index = _adaptive("adaptive_max_pool3d", 3, _adaptive_max_body, input, output_size, True)
    return (values, index) if return_indices else values


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool3d` returning ``(values, indices)``."""
    return adaptive_max_pool3d(input, output_size, True)


def _unpool_body(x, index, out):
    n, c = x.shape[:2]
    plane = jnp.zeros((n, c, math.prod(out)), x.dtype)
    rows = jnp.arange(n)[:, None, None]
    channels = jnp.arange(c)[None, :, None]
    plane = plane.at[rows, channels, index.reshape(n, c, -1)].set(x.reshape(n, c, -1))
    return plane.reshape((n, c) + tuple(out))


def _max_unpool(op, nd, input, indices, kernel_size, stride, padding, output_size):
    x, unbatched = _batched(require_tensor(input, op), nd, op)
    index, _ = _batched(require_tensor(indices, op), nd, op, "indices")
    if index.dtype.kind not in ("int", "uint"):
        raise TypeError(f"{op}: indices must be an integer tensor, got {index.dtype}")
    if index.shape != x.shape:
        raise ValueError(f"{op}: expected indices of the input's shape {tuple(x.shape)}, got {tuple(index.shape)}")
    kernel = _ntuple(kernel_size, nd, "kernel_size", op)
    stride = kernel if stride is None or stride == [] else _ntuple(stride, nd, "stride", op)
    pad = _ntuple(padding, nd, "padding", op)
    default = tuple((n - 1) * s - 2 * p + k for n, s, p, k in zip(x.shape[2:], stride, pad, kernel))
    if output_size is None:
        out = default
    else:
        out = tuple(output_size)[-nd:]
        if len(tuple(output_size)) not in (nd, nd + 1, nd + 2):
            raise ValueError(f"{op}: output_size must have {nd} elements (or {nd + 2} with N and C), "
                             f"got {tuple(output_size)}")
        for o, d, s in zip(out, default, stride):
            if not d - s < o < d + s:
                raise ValueError(f"{op}: invalid output_size {out}: each size must lie strictly between "
                                 f"{tuple(a - b for a, b in zip(default, stride))} and "
                                 f"{tuple(a + b for a, b in zip(default, stride))}")
    size = math.prod(out)
    if index.size:
        _check_indices(index, size, None, lambda bad: RuntimeError(
            f"{op}: found an invalid max index {bad} (the output planes have {size} elements, "
            f"output size {tuple(out)})"))
    result = apply(_unpool_body, (x, index), (tuple(out),))
    return result.squeeze(0) if unbatched else result


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of :func:`max_pool1d`: each value written at its index of a zeroed
    output of length ``(L - 1) stride - 2 padding + kernel_size`` (or ``output_size``),
    as ``torch.nn.functional.max_unpool1d``."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of :func:`max_pool2d` (indices flat per plane), as
    ``torch.nn.functional.max_unpool2d``."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of :func:`max_pool3d` (indices flat per volume), as
    ``torch.nn.functional.max_unpool3d``."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


def _fractional_starts(sample, n, k, o):
    """PyTorch's pseudo-random window starts along one axis from ``sample`` in [0, 1)
    (any leading shape): ``floor((i + u) a) - floor(u a)`` with ``a = (n - k) / (o - 1)``,
    the last window ending at the input's end."""
    i = jnp.arange(o, dtype=sample.dtype)
    if o == 1:
        return jnp.full(sample.shape + (1,), n - k, jnp.int32)
    alpha = jnp.asarray((n - k) / (o - 1), sample.dtype)
    u = sample[..., None]
    starts = (jnp.floor((i + u) * alpha) - jnp.floor(u * alpha)).astype(jnp.int32)
    return jnp.where(jnp.arange(o) == o - 1, n - k, starts)


def _fractional_body(x, samples, kernel, out):
    n, c, *sizes = x.shape
    nd = len(sizes)
    # PyTorch's samples: (W, H) for 2-D planes, (T, H, W) for 3-D volumes
    order = (1, 0) if nd == 2 else tuple(range(nd))
    flat = jnp.zeros((n, c) + (1,) * (2 * nd), jnp.int32)
    for a, (size, k, o) in enumerate(zip(sizes, kernel, out)):
        starts = _fractional_starts(samples[:, :, order[a]].astype(x.dtype), size, k, o)
        positions = starts[..., None] + jnp.arange(k)  # (N, C, o, k)
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + a], shape[2 + nd + a] = o, k
        flat = flat * size + positions.reshape(shape)
    windows = jnp.take_along_axis(x.reshape(n, c, -1), flat.reshape(n, c, -1), -1)
    windows = windows.reshape(flat.shape[:2 + nd] + (-1,))
    index = _pick(windows, flat.reshape(windows.shape), np.ones((windows.shape[-1],), bool))
    return _gather_plane(x, index), index


def _fractional(op, nd, input, kernel_size, output_size, output_ratio, random_samples, generator=None):
    x, unbatched = _batched(require_tensor(input, op), nd, op)
    if x.dtype.kind != "float":
        raise TypeError(f"{op}: expected a real floating-point tensor, got {x.dtype}")
    kernel = _ntuple(kernel_size, nd, "kernel_size", op)
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * nd
        out = tuple(int(n * r) for n, r in zip(x.shape[2:], ratio))
    else:
        out = _ntuple(output_size, nd, "output_size", op)
    for n, k, o in zip(x.shape[2:], kernel, out):
        if o + k - 1 > n or o < 1:
            raise ValueError(f"{op}: output_size {out} plus kernel_size {kernel} minus 1 exceeds the input's "
                             f"spatial size {tuple(x.shape[2:])} (or an output size is below 1)")
    if random_samples is None:
        from ...random import rand

        random_samples = rand(x.shape[0], x.shape[1], nd, dtype=x.dtype, device=x.device, generator=generator)
    elif unbatched and random_samples.ndim == 2:
        random_samples = random_samples.unsqueeze(0)
    if tuple(random_samples.shape) != (x.shape[0], x.shape[1], nd):
        raise ValueError(f"{op}: _random_samples must have shape {(x.shape[0], x.shape[1], nd)}, "
                         f"got {tuple(random_samples.shape)}")
    values, index = apply(_fractional_body, (x, random_samples), (kernel, out), multiple=True)
    if unbatched:
        values, index = values.squeeze(0), index.squeeze(0)
    return values, index


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None, *, generator=None):
    """Fractional max pooling (Graham, 2014) of (N, C, H, W) or (C, H, W) to
    ``output_size`` (or ``output_ratio`` of the input's size), with windows of
    ``kernel_size`` at pseudo-random starts drawn from ``_random_samples`` (N, C, 2) in
    [0, 1) (drawn from ``generator`` when not given), as
    ``torch.nn.functional.fractional_max_pool2d``; indices flat per plane."""
    values, index = _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio,
                                _random_samples, generator)
    return (values, index) if return_indices else values


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=True, _random_samples=None, *, generator=None):
    """:func:`fractional_max_pool2d` returning ``(values, indices)``."""
    return _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio,
                       _random_samples, generator)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None, *, generator=None):
    """Fractional max pooling of (N, C, D, H, W) or (C, D, H, W), as
    ``torch.nn.functional.fractional_max_pool3d`` (``_random_samples`` (N, C, 3));
    indices flat per volume."""
    values, index = _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio,
                                _random_samples, generator)
    return (values, index) if return_indices else values


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=True, _random_samples=None, *, generator=None):
    """:func:`fractional_max_pool3d` returning ``(values, indices)``."""
    return _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio,
                       _random_samples, generator)


def assert_int_or_pair(arg, arg_name, message):
    """Raise ``AssertionError(message.format(arg_name))`` unless ``arg`` is an int or has
    two elements (PyTorch's check of pooling sizes)."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))
