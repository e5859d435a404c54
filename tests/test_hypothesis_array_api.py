"""Properties drawn with hypothesis's own array API strategies built on arraykit.

``hypothesis.extra.array_api.make_strategies_namespace(arraykit)`` only works when
the namespace is complete enough for hypothesis to build arrays (``asarray``,
``full``, ``finfo``/``iinfo``, ``isnan``, indexing writes...). Each property is
checked against NumPy on the same values.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.array_api import make_strategies_namespace

import arraykit as ak

xps = make_strategies_namespace(ak)
SETTINGS = settings(max_examples=25, deadline=None)


def test_strategies_namespace_reports_the_standard_version():
    assert xps.api_version == ak.__array_api_version__ == "2025.12"


@SETTINGS
@given(xps.arrays(xps.scalar_dtypes(), xps.array_shapes(max_dims=3, max_side=4)))
def test_drawn_arrays_round_trip_through_numpy(x):
    values = np.asarray(x)
    assert values.shape == x.shape
    assert values.dtype == x.dtype.np
    np.testing.assert_array_equal(ak.asarray(values).numpy(), values)


@SETTINGS
@given(
    st.data(),
    xps.floating_dtypes(),
    xps.array_shapes(min_dims=1, max_dims=3, max_side=4),
)
def test_elementwise_and_reductions_match_numpy(data, dtype, shape):
    elements = {"allow_nan": False, "allow_infinity": False, "allow_subnormal": False,
                "min_value": -100, "max_value": 100}  # XLA:CPU flushes subnormals
    a = data.draw(xps.arrays(dtype, shape, elements=elements), label="a")
    b = data.draw(xps.arrays(dtype, shape, elements=elements), label="b")
    na, nb = np.asarray(a), np.asarray(b)
    rtol = 1e-5 if dtype == ak.float32 else 1e-12
    tiny = np.finfo(na.dtype).tiny  # a subnormal sum or product may be flushed to zero
    np.testing.assert_allclose(np.asarray(ak.add(a, b)), na + nb, rtol=rtol, atol=tiny)
    np.testing.assert_allclose(np.asarray(ak.multiply(a, b)), na * nb, rtol=rtol, atol=tiny)
    np.testing.assert_array_equal(np.asarray(ak.less(a, b)), na < nb)
    np.testing.assert_allclose(np.asarray(ak.sum(a, axis=-1)), na.sum(axis=-1), rtol=rtol, atol=1e-3)
    np.testing.assert_array_equal(np.asarray(ak.max(a, axis=0)), na.max(axis=0))


@SETTINGS
@given(st.data(), xps.array_shapes(min_dims=1, max_dims=3, max_side=5))
def test_indexing_writes_match_numpy(data, shape):
    x = data.draw(xps.arrays(ak.int64, shape, elements={"min_value": -50, "max_value": 50}))
    mask = data.draw(xps.arrays(ak.bool, shape))
    expected = np.asarray(x).copy()
    expected[np.asarray(mask)] = 7
    x[mask] = 7
    np.testing.assert_array_equal(np.asarray(x), expected)


@SETTINGS
@given(xps.arrays(xps.numeric_dtypes(), xps.array_shapes(min_dims=2, max_dims=2, max_side=4)))
def test_matrix_transpose_is_a_view(x):
    t = ak.matrix_transpose(x)
    assert t.untyped_storage() is x.untyped_storage()
    np.testing.assert_array_equal(np.asarray(t), np.asarray(x).T)


@pytest.mark.parametrize("kind", ["integral", "real floating", "complex floating", "bool"])
def test_dtype_strategies_cover_the_namespace(kind):
    dtypes = ak.__array_namespace_info__().dtypes(kind=kind)
    assert dtypes
    assert all(ak.isdtype(d, kind) for d in dtypes.values())
