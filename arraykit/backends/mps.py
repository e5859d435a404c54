"""``arraykit.backends.mps``: whether Apple's Metal is there (a JAX ``METAL`` device)."""

from __future__ import annotations

from ..core.devices import all_devices

__all__ = ["is_available", "is_built"]


def is_available():
    """Whether JAX has a Metal device (jax-metal); False elsewhere."""
    return any(d.platform.lower() == "metal" for d in all_devices())


def is_built():
    """The same as :func:`is_available`: JAX's Metal plugin comes with its device."""
    return is_available()
