"""Utilities in PyTorch's places: :mod:`arraykit.utils.data` (datasets, samplers,
``DataLoader``); :mod:`arraykit.utils.host_syncs` counts the host's waits for the device."""

from . import data, host_syncs

__all__ = ["data", "host_syncs"]
