"""Neural-network building blocks: :class:`Module`, :class:`Parameter`, PyTorch's
layers, containers and losses, :mod:`arraykit.nn.functional` and :mod:`arraykit.nn.init`."""

from . import functional, init
from .layers import *  # noqa: F401,F403
from .layers import __all__ as _layers
from .module import Module
from .parameter import Parameter

__all__ = ["functional", "init", "Module", "Parameter"] + _layers
