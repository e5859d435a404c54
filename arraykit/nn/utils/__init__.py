"""``arraykit.nn.utils``, as ``torch.nn.utils``: gradient clipping (``clip_grad``),
flattening parameters (``convert_parameters``) and ``rnn.pad_sequence``."""

from . import clip_grad, convert_parameters, rnn
from .clip_grad import *  # noqa: F401,F403
from .convert_parameters import *  # noqa: F401,F403

__all__ = ["rnn"] + clip_grad.__all__ + convert_parameters.__all__
