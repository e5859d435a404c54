"""Convolutions and transposed convolutions (1-D, 2-D, 3-D) on ``lax.conv_general_dilated``.

A transposed convolution is the convolution of the input dilated by the stride
(``lhs_dilation``) with the spatially flipped kernel whose in/out channels are
swapped per group: one kernel, whose JAX VJP gives the input, weight and bias
gradients.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ...api.autocasting import coerce
from ...core import dtypes as D
from ...core import precision as P
from ...kernels.launch import apply
from ...tensors.tensor_type import channels_last, channels_last_3d, require_tensor
from ._windows import _batched, _ntuple
from .arguments import _floating

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]

_SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
_CHANNELS_LAST = {2: channels_last, 3: channels_last_3d}


def _conv_body(x, w, *rest):
    *bias, (stride, padding, dilation, groups, last, transposed, precision) = rest
    nd = w.ndim - 2
    spatial = _SPATIAL[nd]
    lhs = f"N{spatial}C" if last else f"NC{spatial}"
    dtype = jnp.result_type(x, w)
    x, w = x.astype(dtype), w.astype(dtype)
    if transposed:  # (in, out / groups, k...) -> (out, in / groups, k...), flipped
        cin, cout_g, kernel = w.shape[0], w.shape[1], w.shape[2:]
        w = w.reshape(groups, cin // groups, cout_g, *kernel).swapaxes(1, 2)
        w = jnp.flip(w.reshape(groups * cout_g, cin // groups, *kernel), tuple(range(2, 2 + nd)))
    out = jax.lax.conv_general_dilated(
        x, w, (1,) * nd if transposed else stride, padding,
        lhs_dilation=stride if transposed else None, rhs_dilation=dilation,
        dimension_numbers=(lhs, "OI" + spatial, lhs), feature_group_count=groups,
        precision=precision,
    )
    if bias:
        b = bias[0].astype(dtype)
        out = out + (b if last else b.reshape((-1,) + (1,) * nd))
    return out


def _operands(op, nd, input, weight, bias, groups):
    """Checked, autocast operands with a batch dimension, and whether it was added."""
    x = _floating(input, op)
    require_tensor(weight, op)
    x, weight, bias = coerce("conv2d", x, weight, bias)  # the convolutions' autocast class
    if weight.ndim != nd + 2:
        raise RuntimeError(f"{op}: expected a {nd + 2}-D weight, got weight of size {list(weight.shape)}")
    x, unbatched = _batched(x, nd, op)
    if not isinstance(groups, int) or groups < 1:
        raise RuntimeError(f"{op}: non-positive groups is not supported, got groups={groups}")
    return x, weight, bias, unbatched


def _check_bias(op, bias, channels):
    if bias is not None and tuple(bias.shape) != (channels,):
        raise RuntimeError(
            f"{op}: Given weight of {channels} output channels, expected bias to be 1-dimensional "
            f"with {channels} elements, but got bias of size {list(bias.shape)} instead"
        )


def _launch(x, weight, bias, static, nd, unbatched):
    """Run the kernel, reading a channels-last input in place (no transposing copy)."""
    fmt = _CHANNELS_LAST.get(nd)
    last = (fmt is not None and x.shape[1] > 1 and x.is_contiguous(memory_format=fmt)
            and not x.is_contiguous())
    order = (0,) + tuple(range(2, nd + 2)) + (1,)
    operands = (x.permute(*order) if last else x, weight) + (() if bias is None else (bias,))
    precision = P.dot_precision(D.promote(x._dtype, weight._dtype).np, x._storage.device, "conv")
    out = apply(_conv_body, operands, (static[:4] + (last,) + static[4:] + (precision,),))
    if last:
        out = out.permute(0, nd + 1, *range(1, nd + 1))
    return out.squeeze(0) if unbatched else out


def _convolution(op, nd, input, weight, bias, stride, padding, dilation, groups):
    x, weight, bias, unbatched = _operands(op, nd, input, weight, bias, groups)
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"{op}: Given groups={groups}, expected weight to be divisible by {groups} at "
            f"dimension 0, but got weight of size {list(weight.shape)} instead"
        )
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {weight.shape[1] * groups} channels, but got "
            f"{x.shape[1]} channels instead"
        )
    _check_bias(op, bias, weight.shape[0])
    stride = _ntuple(stride, nd, "stride", op)
    dilation = _ntuple(dilation, nd, "dilation", op)
    kernel = tuple(weight.shape[2:])
    if padding == "valid":
        pads = ((0, 0),) * nd
    elif padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
        pads = tuple((t // 2, t - t // 2) for t in totals)
    elif isinstance(padding, str):
        raise ValueError(f"{op}: invalid padding string {padding!r}, should be one of 'valid', 'same'")
    else:
        pads = tuple((p, p) for p in _ntuple(padding, nd, "padding", op))
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation) or any(p < 0 for p, _ in pads):
        raise RuntimeError(
            f"{op}: stride and dilation must be positive and padding non-negative, got "
            f"stride={stride}, padding={padding}, dilation={dilation}"
        )
    padded = [n + lo + hi for n, (lo, hi) in zip(x.shape[2:], pads)]
    if any(p < d * (k - 1) + 1 for p, d, k in zip(padded, dilation, kernel)):
        raise RuntimeError(
            f"{op}: Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, kernel))}). Kernel size can't be greater than "
            "actual input size"
        )
    return _launch(x, weight, bias, (stride, pads, dilation, groups, False), nd, unbatched)


def _transposed(op, nd, input, weight, bias, stride, padding, output_padding, groups, dilation):
    x, weight, bias, unbatched = _operands(op, nd, input, weight, bias, groups)
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"{op}: Given groups={groups}, expected weight to be divisible by {groups} at "
            f"dimension 0, but got weight of size {list(weight.shape)} instead"
        )
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {weight.shape[0]} channels, but got {x.shape[1]} "
            "channels instead"
        )
    _check_bias(op, bias, weight.shape[1] * groups)
    stride = _ntuple(stride, nd, "stride", op)
    padding = _ntuple(padding, nd, "padding", op)
    output_padding = _ntuple(output_padding, nd, "output_padding", op)
    dilation = _ntuple(dilation, nd, "dilation", op)
    if any(s < 1 for s in stride) or any(d < 1 for d in dilation) or any(p < 0 for p in padding):
        raise RuntimeError(
            f"{op}: stride and dilation must be positive and padding non-negative, got "
            f"stride={stride}, padding={padding}, dilation={dilation}"
        )
    if any(o < 0 or (o >= s and o >= d) for o, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(
            f"{op}: output padding must be smaller than either stride or dilation, but got "
            f"output_padding={output_padding}, stride={stride}, dilation={dilation}"
        )
    kernel = tuple(weight.shape[2:])
    sizes = [(n - 1) * s - 2 * p + d * (k - 1) + o + 1
             for n, s, p, d, k, o in zip(x.shape[2:], stride, padding, dilation, kernel, output_padding)]
    if any(n < 1 for n in sizes):
        raise RuntimeError(f"{op}: the calculated output size {tuple(sizes)} is too small "
                           f"for input of size {list(x.shape)}")
    pads = tuple((d * (k - 1) - p, d * (k - 1) - p + o)
                 for d, k, p, o in zip(dilation, kernel, padding, output_padding))
    return _launch(x, weight, bias, (stride, pads, dilation, groups, True), nd, unbatched)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) of ``input`` (N, C, L) or (C, L) with
    ``weight`` (O, C / groups, k), as ``torch.nn.functional.conv1d``; ``padding`` is
    an int, a 1-tuple, ``'valid'`` or ``'same'`` (stride 1 only)."""
    return _convolution("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of ``input`` (N, C, H, W) or (C, H, W) with
    ``weight`` (O, C / groups, kH, kW), as ``torch.nn.functional.conv2d``.

    ``padding`` is an int, a pair, ``'valid'`` (none) or ``'same'`` (stride 1 only).
    A channels-last input (``x.is_contiguous(memory_format=arraykit.channels_last)``)
    is read as NHWC in place (no transposing copy) and gives a channels-last result.
    """
    return _convolution("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution (cross-correlation) of ``input`` (N, C, D, H, W) or (C, D, H, W)
    with ``weight`` (O, C / groups, kD, kH, kW), as ``torch.nn.functional.conv3d``; a
    ``channels_last_3d`` input is read in place and gives a ``channels_last_3d`` result."""
    return _convolution("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1-D transposed convolution ("deconvolution") of ``input`` (N, C, L) or (C, L) with
    ``weight`` (C, O / groups, k), as ``torch.nn.functional.conv_transpose1d``: output
    length ``(L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``."""
    return _transposed("conv_transpose1d", 1, input, weight, bias, stride, padding,
                       output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution of ``input`` (N, C, H, W) or (C, H, W) with ``weight``
    (C, O / groups, kH, kW), as ``torch.nn.functional.conv_transpose2d``."""
    return _transposed("conv_transpose2d", 2, input, weight, bias, stride, padding,
                       output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution of ``input`` (N, C, D, H, W) or (C, D, H, W) with
    ``weight`` (C, O / groups, kD, kH, kW), as ``torch.nn.functional.conv_transpose3d``."""
    return _transposed("conv_transpose3d", 3, input, weight, bias, stride, padding,
                       output_padding, groups, dilation)
