"""Convolutions on ``lax.conv_general_dilated``."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ...api.autocasting import coerce
from ...core import dtypes as D
from ...core import precision as P
from ...kernels.launch import apply
from ...tensors.tensor_type import channels_last, require_tensor
from .arguments import _floating, _pair

__all__ = ["conv2d"]


def _conv2d_body(x, w, *rest):
    *bias, (stride, padding, dilation, groups, channels_last, precision) = rest
    spec = ("NHWC", "OIHW", "NHWC") if channels_last else ("NCHW", "OIHW", "NCHW")
    dtype = jnp.result_type(x, w)
    out = jax.lax.conv_general_dilated(
        x.astype(dtype), w.astype(dtype), stride, padding, rhs_dilation=dilation,
        dimension_numbers=spec, feature_group_count=groups, precision=precision,
    )
    if bias:
        out = out + (bias[0] if channels_last else bias[0][:, None, None]).astype(dtype)
    return out


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of ``input`` (N, C, H, W) or (C, H, W) with
    ``weight`` (O, C / groups, kH, kW), as ``torch.nn.functional.conv2d``.

    ``padding`` is an int, a pair, ``'valid'`` (none) or ``'same'`` (stride 1 only).
    A channels-last input (``x.is_contiguous(memory_format=arraykit.channels_last)``)
    is read as NHWC in place (no transposing copy) and gives a channels-last result.
    """
    x = _floating(input, "conv2d")
    require_tensor(weight, "conv2d")
    x, weight, bias = coerce("conv2d", x, weight, bias)
    unbatched = x.ndim == 3
    if unbatched:
        x = x.unsqueeze(0)
    if x.ndim != 4 or weight.ndim != 4:
        raise ValueError(
            f"conv2d: expected a 3-D or 4-D input and a 4-D weight, got input shape "
            f"{input.shape} and weight shape {weight.shape}"
        )
    if groups < 1 or weight.shape[0] % groups:
        raise ValueError(
            f"conv2d: groups={groups} must be positive and divide the {weight.shape[0]} output channels"
        )
    if x.shape[1] != weight.shape[1] * groups:
        raise ValueError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {weight.shape[1] * groups} channels, but got "
            f"{x.shape[1]} channels instead"
        )
    if bias is not None and bias.shape != (weight.shape[0],):
        raise ValueError(f"conv2d: bias must have shape ({weight.shape[0]},), got {bias.shape}")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    if padding == "valid":
        pads = ((0, 0), (0, 0))
    elif padding == "same":
        if stride != (1, 1):
            raise ValueError("padding='same' is not supported for strided convolutions")
        totals = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
        pads = tuple((t // 2, t - t // 2) for t in totals)
    elif isinstance(padding, str):
        raise ValueError(f"conv2d: invalid padding string {padding!r}, should be one of 'valid', 'same'")
    else:
        pads = tuple((p, p) for p in _pair(padding, "padding"))
    nhwc = x.shape[1] > 1 and x.is_contiguous(memory_format=channels_last) and not x.is_contiguous()
    operands = (x.permute(0, 2, 3, 1) if nhwc else x, weight)
    if bias is not None:
        operands += (bias,)
    precision = P.dot_precision(D.promote(x._dtype, weight._dtype).np, x._storage.device, "conv")
    out = apply(_conv2d_body, operands, ((stride, pads, dilation, groups, nhwc, precision),))
    if nhwc:
        out = out.permute(0, 3, 1, 2)
    return out.squeeze(0) if unbatched else out
