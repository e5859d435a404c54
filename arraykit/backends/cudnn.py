"""``arraykit.backends.cudnn``: ``allow_tf32`` maps onto the float32 matmul precision;
``benchmark``, ``deterministic`` and ``enabled`` are kept as set (see :mod:`arraykit.backends`)."""

from __future__ import annotations

import sys
import types

from ..core.devices import all_devices
from . import tf32

__all__ = ["is_available", "benchmark", "deterministic", "enabled"]  # and allow_tf32

benchmark = False
deterministic = False
enabled = True


def is_available():
    """Whether a GPU is there for cuDNN (JAX's CUDA backend ships it)."""
    return any(d.platform == "gpu" for d in all_devices())


class _CudnnModule(types.ModuleType):
    """This module, with ``allow_tf32`` a property over the shared TF32 switch."""

    allow_tf32 = tf32.switch("Whether float32 convolutions and products may use TensorFloat-32.")


sys.modules[__name__].__class__ = _CudnnModule
