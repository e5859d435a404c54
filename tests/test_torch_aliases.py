"""PyTorch's other names of namespace functions: each is the same object as the
function it names, and gives torch's values on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arraykit as ak
from arraykit.api import torch_aliases

SAME = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh",
    "arctan": "atan", "arctan2": "atan2", "arctanh": "atanh", "bitwise_not": "bitwise_invert", "eq": "equal",
    "ge": "greater_equal", "gt": "greater", "le": "less_equal", "lt": "less", "mul": "multiply",
    "ne": "not_equal", "neg": "negative", "swapdims": "swapaxes", "fix": "trunc", "ger": "outer",
}


def test_every_alias_is_the_function_it_names():
    assert set(SAME) == set(torch_aliases.__all__)
    for alias, name in SAME.items():
        assert getattr(ak, alias) is getattr(ak, name), alias
        assert alias in ak.__all__


@pytest.mark.parametrize("alias", sorted(set(SAME) - {"bitwise_not", "swapdims", "ger"}))
def test_values_match_torch(alias):
    rng = np.random.default_rng(0)
    x = rng.uniform(1.1, 3.0, (3, 4)) if alias == "arccosh" else rng.uniform(-0.9, 0.9, (3, 4))
    y = rng.uniform(-0.9, 0.9, (3, 4))
    binary = alias in ("arctan2", "eq", "ge", "gt", "le", "lt", "mul", "ne")
    if binary:
        y[0] = x[0]  # ties for the comparisons
        ours = getattr(ak, alias)(ak.asarray(x), ak.asarray(y))
        theirs = getattr(torch, alias)(torch.tensor(x), torch.tensor(y))
    else:
        ours, theirs = getattr(ak, alias)(ak.asarray(x)), getattr(torch, alias)(torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)
    assert ours.numpy().dtype == theirs.numpy().dtype


def test_ger_matches_torch():
    v, w = np.array([1.0, -2.0, 0.5]), np.array([3.0, 0.25])
    np.testing.assert_array_equal(ak.ger(ak.asarray(v), ak.asarray(w)).numpy(),
                                  torch.ger(torch.tensor(v), torch.tensor(w)).numpy())


def test_bitwise_not_and_swapdims_match_torch():
    x = np.arange(-4, 8, dtype=np.int32).reshape(2, 3, 2)
    np.testing.assert_array_equal(ak.bitwise_not(ak.asarray(x)).numpy(), torch.bitwise_not(torch.tensor(x)).numpy())
    np.testing.assert_array_equal(ak.swapdims(ak.asarray(x), 0, 2).numpy(), torch.swapdims(torch.tensor(x), 0, 2).numpy())
