"""Gradient mode: whether operations on tensors that require grad are recorded.

Thread-local, on by default, as in PyTorch. ``no_grad``, ``enable_grad`` and
``set_grad_enabled`` work as context managers and as decorators.
"""

from __future__ import annotations

import functools
import threading

_STATE = threading.local()


def is_grad_enabled():
    """Whether operations are recorded for autograd on this thread."""
    return getattr(_STATE, "enabled", True)


def _set(enabled):
    _STATE.enabled = enabled


def _in_mode(fn, mode):
    """``fn`` wrapped to run with gradient recording set to ``mode``."""

    @functools.wraps(fn)
    def in_mode(*args, **kwargs):
        previous = is_grad_enabled()
        _set(mode)
        try:
            return fn(*args, **kwargs)
        finally:
            _set(previous)

    return in_mode


class set_grad_enabled:
    """Switch gradient recording on or off: a call, a context manager or a decorator.

    ``set_grad_enabled(False)`` takes effect at once (as in PyTorch); used with
    ``with``, the previous mode comes back at the end of the block.
    """

    def __init__(self, mode):
        self.previous = is_grad_enabled()
        self.mode = bool(mode)
        _set(self.mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(self.previous)

    def __call__(self, fn):
        _set(self.previous)
        return _in_mode(fn, self.mode)


class _Mode:
    """A context manager and decorator that sets the gradient mode to ``MODE``."""

    MODE = True

    def __enter__(self):
        self.previous = is_grad_enabled()
        _set(self.MODE)
        return self

    def __exit__(self, *exc):
        _set(self.previous)

    def __call__(self, fn):
        return _in_mode(fn, self.MODE)


class no_grad(_Mode):
    """Disable gradient recording inside the block or decorated function."""

    MODE = False


class enable_grad(_Mode):
    """Enable gradient recording inside the block or decorated function (e.g. within no_grad)."""

    MODE = True
