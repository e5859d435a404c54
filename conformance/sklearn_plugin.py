"""A pytest plugin that adds arraykit beside torch to scikit-learn's array-API test backends.

``conformance/sklearn_suite.py`` loads it with ``-p sklearn_plugin`` (this folder on
``PYTHONPATH``); nothing of scikit-learn is edited on disk. When pytest loads the
plugin, before any test module is collected, it rebinds, in every loaded
``sklearn`` module that imported them:

- ``yield_namespaces``: ``"arraykit"`` right after ``"torch"``;
- ``yield_namespace_device_dtype_combinations``: arraykit on ``"cpu"`` and
  ``"cuda"`` with ``"float64"`` and ``"float32"``, as scikit-learn lists torch;
- ``yield_mixed_namespace_input_permutations``: arraykit's twin of each torch pair
  ("array_api_strict to arraykit cpu", "numpy to arraykit cuda", ...);
- ``_array_api_for_tests``: skips arraykit on a device arraykit does not have, as
  scikit-learn skips torch on ``"cuda"`` without CUDA.

Tests that list their libraries themselves (``@pytest.mark.parametrize("library",
["numpy", "array_api_strict", "torch"])``, ``("array_namespace, converter",
[("torch", ...), ...])``) get an arraykit twin of each torch value through
:func:`pytest_generate_tests`; lists that pair torch with torch's own expected
results (``test_supported_float_types``) are left as they are.

Test ids then name arraykit (``test_x[arraykit-cpu-float64]``), so
``-k "array_api and arraykit"`` selects its parametrizations.
"""

from __future__ import annotations

import sys

import pytest
import sklearn.utils._array_api as _array_api
import sklearn.utils._testing as _testing
from sklearn.utils._array_api import NamespaceAndDevice
from sklearn.utils._testing import SkipTest

ARRAYKIT_DEVICES = ("cpu", "cuda")
ARRAYKIT_DTYPES = ("float64", "float32")

_original = {
    "yield_namespaces": _array_api.yield_namespaces,
    "yield_namespace_device_dtype_combinations":
        _array_api.yield_namespace_device_dtype_combinations,
    "yield_mixed_namespace_input_permutations":
        _array_api.yield_mixed_namespace_input_permutations,
    "_array_api_for_tests": _testing._array_api_for_tests,
}


def yield_namespaces(include_numpy_namespaces=True):
    """scikit-learn's test namespaces with ``"arraykit"`` after ``"torch"``."""
    for name in _original["yield_namespaces"](include_numpy_namespaces):
        yield name
        if name == "torch":
            yield "arraykit"


def yield_namespace_device_dtype_combinations(include_numpy_namespaces=True):
    """scikit-learn's (namespace, device, dtype) triples, arraykit's as torch's."""
    for namespace, device, dtype in _original["yield_namespace_device_dtype_combinations"](
            include_numpy_namespaces):
        if namespace != "arraykit":
            yield namespace, device, dtype
            continue
        for device in ARRAYKIT_DEVICES:
            for dtype in ARRAYKIT_DTYPES:
                yield "arraykit", device, dtype


def yield_mixed_namespace_input_permutations():
    """scikit-learn's mixed-input pairs, each torch pair on a device arraykit can
    have (cpu, cuda; not mps) followed by its arraykit twin."""
    for first, second, label in _original["yield_mixed_namespace_input_permutations"]():
        yield first, second, label
        devices = {p.device for p in (first, second) if p.xp == "torch"}
        if devices and devices <= set(ARRAYKIT_DEVICES):
            twin = tuple(NamespaceAndDevice("arraykit", p.device) if p.xp == "torch" else p
                         for p in (first, second))
            yield (*twin, label.replace("torch", "arraykit"))


def _arraykit_has(device_name):
    import arraykit

    platforms = {d.platform for d in arraykit.__array_namespace_info__().devices()}
    return device_name is None or device_name.split(":")[0] in (
        platforms | ({"cuda"} if "gpu" in platforms else set()))


def _array_api_for_tests(array_namespace, device_name=None, dtype_name=None):
    """scikit-learn's ``_array_api_for_tests``; skips arraykit on a device it lacks."""
    if array_namespace == "arraykit" and not _arraykit_has(device_name):
        raise SkipTest(f"arraykit has no {device_name} device here")
    return _original["_array_api_for_tests"](array_namespace, device_name, dtype_name)


_LIBRARY_ARGNAMES = ("library", "array_namespace")


def _twins(values):
    """arraykit's twin of each torch value: ``"torch"`` or a tuple starting with it."""
    for value in values:
        if isinstance(value, str) and value == "torch":
            yield "arraykit"
        elif isinstance(value, tuple) and value and value[0] == "torch":
            yield ("arraykit",) + value[1:]


def _is_arraykit(value):
    return value == "arraykit" or (isinstance(value, tuple) and value[:1] == ("arraykit",))


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc):
    """Add arraykit's twins to a test's own library list (its first argument named
    ``library`` or ``array_namespace``), before pytest parametrizes the test."""
    marks = metafunc.definition.own_markers
    for i, mark in enumerate(marks):
        if mark.name != "parametrize" or len(mark.args) < 2:
            continue
        argnames = mark.args[0]
        names = argnames.split(",") if isinstance(argnames, str) else list(argnames)
        if names[0].strip() not in _LIBRARY_ARGNAMES:
            continue
        if not isinstance(mark.args[1], (list, tuple)):
            continue  # a generator of scikit-learn's (patched) namespace functions
        values = list(mark.args[1])
        if any(_is_arraykit(value) for value in values):
            continue
        twins = list(_twins(values))
        if twins:
            marks[i] = pytest.mark.parametrize(argnames, values + twins, *mark.args[2:],
                                               **mark.kwargs).mark


def _rebind():
    replacements = {
        "yield_namespaces": yield_namespaces,
        "yield_namespace_device_dtype_combinations": yield_namespace_device_dtype_combinations,
        "yield_mixed_namespace_input_permutations": yield_mixed_namespace_input_permutations,
        "_array_api_for_tests": _array_api_for_tests,
    }
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("sklearn"):
            continue
        for name, replacement in replacements.items():
            if getattr(module, name, None) is _original[name]:
                setattr(module, name, replacement)


_rebind()
