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
    # measured (600 derandomized draws): contiguous 10%, permuted 19%, stepped 19%,
    # flipped 18%, broadcast 23%, empty 11%; at most one element 14%. Hypothesis does not
    # sample uniformly (it steers towards new structure), hence the wide band.
    assert all(0.08 <= share <= 0.3 for share in shares.values()), shares
    assert np.mean(small) <= 0.25, np.mean(small)
