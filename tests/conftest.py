"""Test session setup.

SciPy reads SCIPY_ARRAY_API once, when first imported, and scikit-learn's
array API dispatch requires it: set it before anything imports SciPy.

Checks on device data (an index in range, a class target) are deferred off the CPU
(:mod:`arraykit.core.deferred_checks`): a GPU reports a failed one at the next read
of device data. Each test ends by reading its queued checks, so a failed check fails
the test that queued it rather than whichever test reads values next in the same
worker. ``ARRAYKIT_TEST_DEFER_CHECKS=1`` defers every device's checks, the CPU's
too, so the suite runs the GPU's checking path on the CPU.
"""

import os

import pytest

os.environ.setdefault("SCIPY_ARRAY_API", "1")

from arraykit.core import deferred_checks  # noqa: E402 (after the SciPy switch)


def pytest_configure(config):
    if os.environ.get("ARRAYKIT_TEST_DEFER_CHECKS") == "1":
        deferred_checks._force = True


@pytest.fixture(autouse=True)
def _deferred_checks_fail_the_test_that_queued_them():
    yield
    deferred_checks.report()
