"""PyTorch's layers, containers and losses over :mod:`arraykit.nn.functional`, one module
per family as in ``torch.nn.modules``, with PyTorch's default initialisations
(:mod:`arraykit.nn.init`)."""

from . import (
    activation,
    container,
    conv,
    dropout,
    flatten,
    linear,
    loss,
    normalization,
    sparse,
)
from .activation import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403

_FAMILIES = (linear, conv, activation, dropout, flatten, sparse, normalization, container, loss)
__all__ = [name for family in _FAMILIES for name in family.__all__]
