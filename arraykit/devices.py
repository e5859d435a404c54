"""Devices are JAX devices; this module resolves user spellings of them."""

from __future__ import annotations

import functools

import jax


@functools.lru_cache(maxsize=None)
def default_device():
    """The device new tensors go to when none is given (JAX's default device)."""
    return jax.devices()[0]


@functools.lru_cache(maxsize=64)
def _from_string(spec):
    name, _, index = spec.partition(":")
    platform = {"cuda": "gpu", "gpu": "gpu", "cpu": "cpu", "tpu": "tpu", "rocm": "gpu"}.get(name)
    if platform is None:
        raise ValueError(f"unknown device {spec!r}; expected 'cpu', 'gpu', 'cuda:N' or a JAX device")
    try:
        devices = jax.devices(platform)
    except RuntimeError:
        raise ValueError(f"device {spec!r} is not available on this machine") from None
    i = int(index) if index else 0
    if not 0 <= i < len(devices):
        raise ValueError(
            f"device {spec!r} does not exist: {len(devices)} {platform} device(s) available"
        )
    return devices[i]


def as_device(spec):
    """Resolve None, a JAX device or a string ('cpu', 'cuda:1') to a JAX device."""
    if spec is None:
        return default_device()
    if isinstance(spec, jax.Device):
        return spec
    if isinstance(spec, str):
        return _from_string(spec)
    raise TypeError(f"expected a device, got {spec!r}")


def check_same_device(a, b, what="operation"):
    """Raise ValueError naming both devices when ``a`` and ``b`` differ."""
    if a is not b and a != b:
        raise ValueError(
            f"{what}: expected all tensors to be on the same device, but found {a} and {b}"
        )
