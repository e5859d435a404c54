"""Gradient mode: whether operations on tensors that require grad are recorded.

Thread-local, on by default, as in PyTorch. ``no_grad``, ``enable_grad`` and
``set_grad_enabled`` work as context managers and as decorators; ``inference_mode`` is
``no_grad`` under PyTorch's other name.
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


class inference_mode:  # noqa: N801 (PyTorch's spelling)
    """Inference mode (``torch.inference_mode``): no gradient recording inside the
    block or decorated function, as :class:`no_grad`; as in PyTorch, ``mode=False``
    turns inference mode off and gradient recording on for the block. Also usable
    as a bare decorator (``@inference_mode``).

    arraykit has no separate kind of inference tensor: what is computed here is an
    ordinary tensor without history, usable with autograd afterwards.
    """

    def __new__(cls, mode=True):
        if callable(mode):  # @inference_mode without parentheses
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        self.mode = bool(mode)
        self._previous = []

    def __enter__(self):
        self._previous.append((is_grad_enabled(), is_inference_mode_enabled()))
        _set(not self.mode)
        _STATE.inference = self.mode
        return self

    def __exit__(self, *exc):
        grad, inference = self._previous.pop()
        _set(grad)
        _STATE.inference = inference

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def in_inference_mode(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return in_inference_mode


def is_inference_mode_enabled():
    """Whether this thread is inside an :class:`inference_mode` block."""
    return getattr(_STATE, "inference", False)
