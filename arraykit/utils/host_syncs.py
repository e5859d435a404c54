"""Counting the host's waits for the device and its reads of device data.

JAX, and arraykit on it, dispatch asynchronously: a call returns once its work is
queued. A hidden wait (a value read on the host for a check, a buffer waited for)
makes the host wait for the device on every call and serializes the two, which on a
GPU costs the whole step's overlap. :func:`counting_host_syncs` counts, within a
block, every wait and device-to-host read of JAX arrays, whoever makes it:

* waits: ``block_until_ready`` (the method, which ``jax.block_until_ready`` calls);
* reads: ``jax.device_get``, ``np.asarray``/``np.array``/``np.ascontiguousarray``
  of a JAX array, and a JAX array's ``item``, ``tolist``, ``bool``, ``int``,
  ``float`` and ``__index__``.

It replaces those functions while the block runs (process-wide, so it is a
debugging tool: other threads' reads are counted too) and puts them back after.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import threading

import jax
import numpy as np

__all__ = ["HostSyncs", "counting_host_syncs"]

_LOCK = threading.Lock()
_METHODS = ("item", "tolist", "__bool__", "__int__", "__float__", "__index__")
_NUMPY = ("asarray", "array", "ascontiguousarray")


class HostSyncs:
    """What :func:`counting_host_syncs` saw: ``waits`` and ``reads`` (totals) and
    ``by_kind`` (a ``collections.Counter`` of the functions called)."""

    def __init__(self):
        self.by_kind = collections.Counter()

    @property
    def waits(self):
        """The number of ``block_until_ready`` calls."""
        return self.by_kind["block_until_ready"]

    @property
    def reads(self):
        """The number of device-to-host reads."""
        return sum(n for kind, n in self.by_kind.items() if kind != "block_until_ready")

    def __repr__(self):
        return f"HostSyncs(waits={self.waits}, reads={self.reads}, by_kind={dict(self.by_kind)})"


def _array_type():
    return type(jax.numpy.zeros(()))


@contextlib.contextmanager
def counting_host_syncs():
    """Count the host's waits and reads of JAX arrays within the block; yields a
    :class:`HostSyncs` filled in as the block runs."""
    seen = HostSyncs()
    array_type = _array_type()
    with _LOCK:
        saved_methods = {name: array_type.__dict__.get(name) for name in _METHODS + ("block_until_ready",)}
        saved_numpy = {name: getattr(np, name) for name in _NUMPY}
        saved_get = jax.device_get
        try:
            _install(array_type, seen, saved_methods, saved_numpy, saved_get)
            yield seen
        finally:
            for name, method in saved_methods.items():
                if method is None:
                    delattr(array_type, name)
                else:
                    setattr(array_type, name, method)
            for name, function in saved_numpy.items():
                setattr(np, name, function)
            jax.device_get = saved_get


def _install(array_type, seen, saved_methods, saved_numpy, device_get):
    for name, method in saved_methods.items():
        original = getattr(array_type, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            seen.by_kind[_name] += 1
            return _original(self, *args, **kwargs)

        setattr(array_type, name, counted)
    for name, function in saved_numpy.items():

        def counted_numpy(obj, *args, _original=function, _name=name, **kwargs):
            if isinstance(obj, jax.Array):
                seen.by_kind[f"np.{_name}"] += 1
            return _original(obj, *args, **kwargs)

        setattr(np, name, functools.wraps(function)(counted_numpy))

    def counted_device_get(x):
        seen.by_kind["device_get"] += 1
        return device_get(x)

    jax.device_get = functools.wraps(device_get)(counted_device_get)
