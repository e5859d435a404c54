"""The shared hypothesis strategies draw what they claim: strided_pairs gives every
layout kind a fair share, and each pair's tensor holds its NumPy twin's values."""

from __future__ import annotations

import collections

import numpy as np
from hypothesis import given, settings

from strategies import LAYOUTS, strided_pairs


def layout_kind(x):
    """The kind of ``x``'s layout, read from its shape and strides."""
    shape, strides = x.shape, x.stride()
    if x.size == 0:
        return "empty"
    big = [(n, s) for n, s in zip(shape, strides) if n >= 2]
    if any(s == 0 for _, s in big):
        return "broadcast"
    if any(s < 0 for _, s in big):
        return "flipped"
    if [s for _, s in big] != sorted((s for _, s in big), reverse=True):
        return "permuted"
    expected = 1
    for n, s in reversed(big):
        if s != expected:
            return "stepped"
        expected *= n
    return "contiguous"


def test_strided_pairs_draw_every_layout_in_fair_shares():
    kinds = collections.Counter()
    small = []

    @settings(max_examples=600, derandomize=True, database=None, deadline=None)
    @given(strided_pairs())
    def draw(pair):
        x, a = pair
        assert x.shape == a.shape and x.dtype.np == a.dtype
        np.testing.assert_array_equal(x.numpy(), a)
        kinds[layout_kind(x)] += 1
        small.append(a.size <= 1)

    draw()
    total = sum(kinds.values())
    shares = {k: kinds[k] / total for k in LAYOUTS}
    # measured (600 derandomized draws): contiguous 10-14%, permuted 19-22%, stepped 19-20%,
    # flipped 18-20%, broadcast 18-23%, empty 7-11%; at most one element 14%. Hypothesis
    # does not sample uniformly (it steers towards new structure, and what it has seen
    # earlier in the process changes the split), hence the wide band; the defect this
    # guards against drew 77% contiguous layouts and under 2% zero strides.
    assert all(0.05 <= share <= 0.3 for share in shares.values()), repr(shares)
    assert np.mean(small) <= 0.25, np.mean(small)
