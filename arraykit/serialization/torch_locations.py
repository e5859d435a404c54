"""``map_location`` as ``torch.load`` spells it: where each storage of a PyTorch
checkpoint goes, from the location it was saved from (``'cpu'``, ``'cuda:0'``)."""

from __future__ import annotations

import jax

from ..core.devices import as_device


def saved_device(location):
    """This machine's device for a saved location: ``'cpu'`` is the CPU, ``'cuda:N'``
    the N-th GPU; ValueError naming it when there is none."""
    try:
        return as_device(location)
    except ValueError:
        raise ValueError(
            f"load(): the checkpoint was saved from device {location!r}, which this machine "
            "does not have; pass map_location (e.g. map_location='cpu')"
        ) from None


def _target(spec, what):
    if isinstance(spec, (str, jax.Device, jax.sharding.Sharding)):
        return as_device(spec)
    raise TypeError(f"load(): {what} must be a device or a device string, got {spec!r}")


class Placer:
    """The device of each storage of a checkpoint under ``map_location``: None (each
    back to its saved device), a device, a device string, a JAX sharding, a dict
    ``{saved location: device}`` (other locations stay) or a callable
    ``f(tensor, location)`` (each storage is read to the CPU, and the tensor over all of
    it that ``f`` returns is used: ``remap_with``)."""

    def __init__(self, map_location):
        self.spec = map_location
        self.remap_with = None
        self.every = None
        self.table = {}
        if callable(map_location) and not isinstance(map_location, jax.sharding.Sharding):
            self.remap_with = map_location
        elif isinstance(map_location, dict):
            for saved, target in map_location.items():
                if not isinstance(saved, str):
                    raise TypeError(f"load(): map_location's keys must be saved locations ('cuda:0'), got {saved!r}")
                self.table[saved] = _target(target, f"map_location[{saved!r}]")
        elif map_location is not None:
            self.every = _target(map_location, "map_location")

    def device(self, location):
        """Where a storage saved at ``location`` is read to (the CPU for a callable)."""
        if self.remap_with is not None:
            return jax.devices("cpu")[0]
        if self.every is not None:
            return self.every
        if location in self.table:
            return self.table[location]
        return saved_device(location)
