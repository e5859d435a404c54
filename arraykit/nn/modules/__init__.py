"""PyTorch's layers, containers and losses over :mod:`arraykit.nn.functional`, one module
per family as in ``torch.nn.modules``, with PyTorch's default initialisations
(:mod:`arraykit.nn.init`)."""

from . import (
    activation,
    adaptive,
    attention,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    lazy,
    linear,
    loss,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)
from .activation import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403

_FAMILIES = (linear, conv, distance, activation, dropout, flatten, sparse, normalization, container, loss, rnn, attention,
             transformer, pooling, padding, upsampling, pixelshuffle, fold, adaptive)
__all__ = [name for family in _FAMILIES for name in family.__all__]
