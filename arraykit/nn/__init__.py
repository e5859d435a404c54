"""Neural-network building blocks: :mod:`arraykit.nn.functional`."""

from . import functional

__all__ = ["functional"]
