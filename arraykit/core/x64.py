"""arraykit's 64-bit scope: JAX's 64-bit semantics around arraykit's own work only.

arraykit has real int64, uint64, float64 and complex128 tensors, which JAX only
creates and traces while its ``jax_enable_x64`` option is on. arraykit never sets
that option globally (that would change every other JAX user's default dtypes and
speed). Each kernel call, trace, compile and host-to-device transfer of arraykit
runs inside :func:`scoped`, which switches the option on for the current thread
only (JAX's thread-local ``jax.enable_x64`` state) and restores the previous value,
whatever the global setting is and however it changes.
"""

from __future__ import annotations

import functools

import jax

_swap = jax.enable_x64.swap_local
_restore = jax.enable_x64.set_local


def on():
    """Switch 64-bit mode on for this thread; returns the token :func:`off` restores."""
    return _swap(True)


def off(token):
    """Restore this thread's 64-bit mode to what it was before the matching :func:`on`."""
    _restore(token)


def scoped(fn):
    """Decorate ``fn`` to run with JAX's 64-bit mode on for the calling thread."""

    @functools.wraps(fn)
    def in_x64(*args, **kwargs):
        token = _swap(True)
        try:
            return fn(*args, **kwargs)
        finally:
            _restore(token)

    return in_x64
