"""``arraykit.backends``: the switches PyTorch scripts set through ``torch.backends``.

``backends.cuda.matmul.allow_tf32`` and ``backends.cudnn.allow_tf32`` are arraykit's
float32 matmul precision (:func:`arraykit.set_float32_matmul_precision`, which covers
matrix products and convolutions alike): setting either to True selects ``"high"``
(TensorFloat-32 where the device has it), to False ``"highest"``; reading either says
whether the precision is below ``"highest"``. ``backends.cudnn.benchmark`` and
``backends.cudnn.deterministic`` are kept as set and change nothing (XLA picks its
own algorithms); ``backends.mps.is_available()`` says whether JAX has a Metal device.
"""

from . import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]
