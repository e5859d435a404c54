"""``arraykit.cuda.amp``: PyTorch's older spellings ``torch.cuda.amp.autocast`` and
``torch.cuda.amp.GradScaler``, the :mod:`arraykit.amp` ones bound to ``"cuda"``."""

from __future__ import annotations

from .. import amp
from ..core import dtypes as D

__all__ = ["autocast", "GradScaler"]


class autocast(amp.autocast):
    """``autocast(enabled=True, dtype=float16, cache_enabled=True)``: :class:`arraykit.autocast`
    on ``"cuda"`` (float16 by default, as ``torch.cuda.amp.autocast``)."""

    def __init__(self, enabled=True, dtype=D.float16, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(amp.GradScaler):
    """``GradScaler(init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True)``: :class:`arraykit.amp.GradScaler` for ``"cuda"``."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)
