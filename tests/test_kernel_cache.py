"""The kernel cache: compilations are cached, observable, and offsets go dynamic."""

import numpy as np

import arraykit as ak
from arraykit.kernels import launch


def _traces():
    return ak.cache_info()["traces"]


def test_repeated_op_hits_the_cache():
    x = ak.asarray(np.arange(7.0))
    y = x * 3.0 + 1.0
    before = ak.cache_info()
    for _ in range(5):
        y = x * 3.0 + 1.0
    after = ak.cache_info()
    assert after["traces"] == before["traces"]
    assert after["hits"] >= before["hits"] + 10
    np.testing.assert_array_equal(y.numpy(), np.arange(7.0) * 3 + 1)


def test_element_loop_compiles_a_bounded_number_of_kernels():
    values = np.arange(53.0) * 1.5
    x = ak.asarray(values)
    x[2:11].numpy()  # unrelated warm-up shape
    start = _traces()
    got = [x[i].item() for i in range(40)]
    assert got == list(values[:40])
    assert _traces() - start <= launch.DYNAMIC_AFTER + 1


def test_element_write_loop_compiles_a_bounded_number_of_kernels():
    x = ak.zeros((37, 5))
    start = _traces()
    for i in range(37):
        x[i] = float(i)
    assert _traces() - start <= launch.DYNAMIC_AFTER + 1
    np.testing.assert_array_equal(x.numpy(), np.repeat(np.arange(37.0)[:, None], 5, axis=1))


def test_dynamic_offsets_read_the_right_elements_of_strided_views():
    base = np.arange(200.0).reshape(20, 10)
    x = ak.asarray(base)
    for i in range(12):
        np.testing.assert_array_equal(x[i, ::-3].numpy(), base[i, ::-3])
        np.testing.assert_array_equal(x[i:i + 5, 1::2].mT.numpy(), base[i:i + 5, 1::2].T)


def test_a_wrapped_jax_array_deleted_by_its_owner_raises_instead_of_retrying_forever():
    import jax.numpy as jnp
    import pytest

    owner = jnp.ones(4)
    t = ak.asarray(owner)  # wrapped without a copy, marked shared
    owner.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        t + 1.0
