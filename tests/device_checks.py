"""Expecting the errors of checks on device data, whichever device runs the test.

A check that needs a tensor's values (an index in range, a class target) raises at
once on the CPU, while a GPU queues it and raises at the next host read of device
data (:mod:`arraykit.core.deferred_checks`). :func:`raises_checked` expects the
error either way. Errors decided by shapes, dtypes or arguments are raised at once
on every device: expect those with plain ``pytest.raises``.
"""

from __future__ import annotations

import contextlib

import pytest

from arraykit.core import deferred_checks


@contextlib.contextmanager
def raises_checked(exception, match=None):
    """``pytest.raises(exception, match=match)`` around the block, whose end reports
    the queued checks: the error is raised in the block on the CPU, or at that report
    where the device defers its checks."""
    with pytest.raises(exception, match=match) as info:
        yield info
        deferred_checks.report()
