"""``arraykit.nn.functional``: PyTorch's ``torch.nn.functional``, one module per family.

Most functions are one kernel each (a pure JAX function launched on the operands), so
their gradients are JAX's VJP of that kernel. ``softmax``, ``log_softmax``,
``logsumexp`` and ``cross_entropy`` have hand-written gradients through
:class:`arraykit.autograd.Function`; cross-entropy is one fused forward kernel and
one fused backward kernel (see :mod:`arraykit.nn.loss_kernels`), and
``linear_cross_entropy`` fuses the output projection into it without the logits
(see :mod:`arraykit.nn.linear_ce_kernels`). ``scaled_dot_product_attention`` is
one kernel (see :mod:`arraykit.nn.attention_kernels`). A family module is named so
that no function of the namespace shadows it (``dropouts``, ``dense``).
"""

from . import activation, attention, conv, ctc, dense, distance, dropouts, folding, grid_sampling, loss, normalization, padding, pixelshuffle, pooling, sparse, upsampling
from .activation import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .ctc import *  # noqa: F401,F403
from .dense import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropouts import *  # noqa: F401,F403
from .folding import *  # noqa: F401,F403
from .grid_sampling import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403

_FAMILIES = (activation, attention, conv, ctc, dense, distance, dropouts, loss, normalization, sparse, padding, pooling, upsampling, folding, pixelshuffle, grid_sampling)
__all__ = [name for family in _FAMILIES for name in family.__all__]
