"""Neural-network building blocks: :class:`Module`, :class:`Parameter`, PyTorch's
layers, containers and losses, :mod:`arraykit.nn.functional`, :mod:`arraykit.nn.init`
and :mod:`arraykit.nn.utils` (gradient clipping, parameter vectors, ``rnn.pad_sequence``)."""

from . import functional, init, tensor_methods, utils
from .module import Module
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _layers
from .parallel.data_parallel import DataParallel
from .parameter import Parameter

__all__ = ["functional", "init", "utils", "Module", "Parameter", "DataParallel"] + _layers
