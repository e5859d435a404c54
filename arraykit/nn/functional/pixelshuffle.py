"""``pixel_shuffle`` and ``pixel_unshuffle``: channels to space and back; ``channel_shuffle``
(channels regrouped) (a reshape,
a permutation and a reshape, so autograd follows the views)."""

from __future__ import annotations

import operator

from ...tensors.tensor_type import require_tensor

__all__ = ["channel_shuffle", "pixel_shuffle", "pixel_unshuffle"]


def _factor(x, factor, op, name):
    require_tensor(x, op)
    factor = operator.index(factor)
    if x.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input with "
                           f"{x.ndim} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {factor}")
    return factor


def pixel_shuffle(input, upscale_factor):
    """``(*, C * r², H, W)`` to ``(*, C, H * r, W * r)``, as ``torch.nn.functional.pixel_shuffle``."""
    r = _factor(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
            f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    k = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """``(*, C, H * r, W * r)`` to ``(*, C * r², H, W)``, as
    ``torch.nn.functional.pixel_unshuffle`` (the inverse of :func:`pixel_shuffle`)."""
    r = _factor(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    *lead, c, h, w = input.shape
    for name, size, dim in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                f"input.size({dim})={size} is not divisible by {r}"
            )
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    """The channels (dimension 1) of ``(N, C, *)`` split into ``groups`` and interleaved:
    ``(N, g, C/g, *) -> (N, C/g, g, *)``, as ``torch.nn.functional.channel_shuffle``."""
    x = require_tensor(input, "channel_shuffle")
    groups = operator.index(groups)
    if x.ndim < 3:
        raise ValueError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                         f"{x.ndim} dimension(s)")
    if groups <= 0 or x.shape[1] % groups:
        raise ValueError(f"channel_shuffle: the number of channels {x.shape[1]} must be divisible by "
                         f"groups, a positive int (got {groups})")
    n, c, *rest = x.shape
    return x.reshape((n, groups, c // groups, *rest)).swapaxes(1, 2).reshape(x.shape)
