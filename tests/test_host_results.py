"""Data-dependent results of CPU tensors come from NumPy on the host, without compiling,
and the kernels the other devices run (and tracked tensors) give the same results.

The NumPy-oracle tests of nonzero, unique_* and repeat run on CPU tensors, so they
test the host path; here they run again with the host path switched off, which is
the path of a GPU tensor.
"""

from __future__ import annotations

import numpy as np
import pytest

import arraykit as ak
import test_manipulation
import test_searching
import test_set_functions
from arraykit.api import host_results
from arraykit.kernels import launch

ORACLE_TESTS = [
    test_set_functions.test_unique_all_matches_numpy,
    test_set_functions.test_unique_values_counts_inverse,
    test_set_functions.test_unique_nan_distinct_and_signed_zero_merged,
    test_searching.test_nonzero_matches_numpy,
    test_searching.test_nonzero_special_values_and_errors,
    test_manipulation.test_repeat,
    test_manipulation.test_repeat_errors,
]


@pytest.mark.parametrize("oracle_test", ORACLE_TESTS, ids=lambda t: t.__name__)
def test_kernel_path_matches_numpy(oracle_test, monkeypatch):
    monkeypatch.setattr(host_results, "host_values", lambda *tensors: None)
    oracle_test()


@pytest.mark.parametrize(
    "call",
    [
        lambda x: ak.nonzero(x),
        lambda x: ak.nonzero(x, as_tuple=False),
        lambda x: ak.unique_all(x),
        lambda x: ak.unique_values(x),
        lambda x: ak.repeat(x, ak.asarray(np.arange(x.shape[0]), device="cpu"), axis=0),
    ],
    ids=["nonzero", "argwhere", "unique_all", "unique_values", "repeat"],
)
def test_cpu_tensor_compiles_nothing(call):
    x = ak.asarray(np.array([[3.0, 0.0, 3.0], [np.nan, -0.0, 1.0], [0.0, 2.0, 2.0],
                             [5.0, 5.0, 0.0], [1.0, 1.0, 1.0], [7.0, 0.0, 0.0],
                             [0.0, 0.0, 9.0]], np.float32), device="cpu")[::-2, ::-1]
    before = launch.cache_info()["traces"]
    call(x)
    assert launch.cache_info()["traces"] == before


def test_tensor_autograd_tracks_takes_the_kernel():
    x = ak.asarray(np.array([1.0, 2.0, 3.0], np.float32), device="cpu", requires_grad=True)
    assert host_results.host_values(x) is None
    y = ak.repeat(x, ak.asarray(np.array([2, 0, 1]), device="cpu"))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, 1.0])
