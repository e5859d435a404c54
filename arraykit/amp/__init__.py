"""``arraykit.amp``: automatic mixed precision under PyTorch's ``torch.amp`` names.

``autocast`` is :class:`arraykit.autocast` itself (``autocast(device_type, dtype=...,
enabled=...)``); :class:`GradScaler` scales the loss for float16 training. The
older spellings ``arraykit.cuda.amp.autocast`` and ``arraykit.cuda.amp.GradScaler``
are in :mod:`arraykit.cuda.amp`.
"""

from ..api.autocasting import autocast
from .grad_scaler import GradScaler, OptState

__all__ = ["autocast", "GradScaler", "OptState"]
