"""Utilities in PyTorch's places: :mod:`arraykit.utils.data` (datasets, samplers, ``DataLoader``)."""

from . import data

__all__ = ["data"]
