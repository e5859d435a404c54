"""``__array_namespace__(api_version=...)`` selects the standard's version."""

import importlib

import pytest

import arraykit as ak


def test_default_and_latest_are_the_package():
    x = ak.ones(3)
    assert x.__array_namespace__() is ak
    assert x.__array_namespace__(api_version="2025.12") is ak
    assert ak.__array_api_version__ == "2025.12"
    assert isinstance(ak.meshgrid(x, x), tuple)
    assert isinstance(ak.broadcast_arrays(x, x), tuple)
    assert isinstance(ak.__array_namespace_info__().devices(), tuple)


@pytest.mark.parametrize("version", ["2023.12", "2024.12"])
def test_earlier_versions_return_lists(version):
    x = ak.arange(3)
    ns = x.__array_namespace__(api_version=version)
    assert ns is importlib.import_module("arraykit.api_" + version.replace(".", "_"))
    assert ns.__array_api_version__ == version
    grids = ns.meshgrid(x, x, indexing="ij")
    assert isinstance(grids, list) and [g.shape for g in grids] == [(3, 3), (3, 3)]
    assert isinstance(ns.broadcast_arrays(x, ak.ones((2, 1))), list)
    assert isinstance(ns.__array_namespace_info__().devices(), list)
    assert ns.sum is ak.sum and ns.linalg is ak.linalg and ns.float32 is ak.float32


def test_unknown_version_is_rejected():
    with pytest.raises(ValueError, match="2021.12"):
        ak.ones(1).__array_namespace__(api_version="2021.12")
