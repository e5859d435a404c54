"""``arraykit.backends.cuda``: ``matmul.allow_tf32`` (see :mod:`arraykit.backends`)."""

from __future__ import annotations

from ..core.devices import all_devices
from . import tf32

__all__ = ["matmul", "is_built"]


class _Matmul:
    """``backends.cuda.matmul``: ``allow_tf32`` maps onto the float32 matmul precision;
    the reduced-precision reduction flags are kept as set (XLA chooses its accumulation)."""

    def __init__(self):
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    allow_tf32 = tf32.switch(
        'Whether float32 products may use TensorFloat-32 (precision below ``"highest"``).'
    )


matmul = _Matmul()


def is_built():
    """Whether JAX can run on GPUs here (a GPU backend is installed and has a device)."""
    return any(d.platform == "gpu" for d in all_devices())
