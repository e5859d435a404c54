"""arraykit inside JAX: no global configuration change, 64-bit dtypes that hold
whatever JAX's global 64-bit mode is, pytree leaves that stay readable, JAX
transforms over tensors and views, and no tracer left in a storage after a trace.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arraykit as ak

SETTINGS = settings(max_examples=25, deadline=None)


def test_import_changes_no_jax_configuration():
    code = (
        "import jax, jax.numpy as jnp\n"
        "before = (jax.config.jax_enable_x64, jnp.zeros(2).dtype, jnp.arange(3).dtype)\n"
        "import arraykit as ak\n"
        "ak.asarray([2**40]) + 1; ak.ones((3, 3), dtype=ak.float64).sum()\n"
        "after = (jax.config.jax_enable_x64, jnp.zeros(2).dtype, jnp.arange(3).dtype)\n"
        "print(before, after)\n"
        "assert before == after == (False, jnp.float32, jnp.int32), (before, after)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_ops_leave_the_threads_64_bit_mode_alone():
    for mode in (False, True):
        with jax.enable_x64(mode):
            ak.asarray([1, 2]) * 3
            ak.zeros(3)[1:].add_(1.0)
            assert jax.config.jax_enable_x64 is mode
            assert jnp.zeros(1).dtype == (jnp.float64 if mode else jnp.float32)


MODES = pytest.mark.parametrize("mode", ["off", "on", "switched"])


@contextlib.contextmanager
def global_x64(mode):
    """JAX's global 64-bit mode off, on, or (with :func:`_maybe_switch`) flipped between ops."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", mode == "on")
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", previous)


def _maybe_switch(mode):
    if mode == "switched":
        jax.config.update("jax_enable_x64", not jax.config.jax_enable_x64)


@MODES
@SETTINGS
@given(
    ints=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=6),
    uints=st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=6),
    floats=st.lists(st.floats(allow_subnormal=False, width=64), min_size=1, max_size=6),
)
def test_64_bit_values_round_trip_exactly(mode, ints, uints, floats):
    with global_x64(mode):
        _round_trip(mode, ints, uints, floats)


def _round_trip(mode, ints, uints, floats):
    cases = [
        (ints, np.int64, ak.int64),
        (uints, np.uint64, ak.uint64),
        (floats, np.float64, ak.float64),
        ([complex(f, -f) for f in floats], np.complex128, ak.complex128),
    ]
    for values, np_dtype, dtype in cases:
        ref = np.array(values, dtype=np_dtype)
        from_list = ak.asarray(values, dtype=dtype)
        _maybe_switch(mode)
        from_numpy = ak.asarray(ref)
        copied = ak.zeros(len(values), dtype=dtype)
        copied[:] = from_numpy
        _maybe_switch(mode)
        plus_zero = copied + ak.zeros_like(copied)
        for t in (from_list, from_numpy, copied, plus_zero, from_numpy[::-1][::-1]):
            assert t.dtype is dtype and t.untyped_storage().buffer.dtype == np_dtype
            np.testing.assert_array_equal(t.numpy(), ref)


@MODES
def test_default_dtypes_hold_in_every_global_mode(mode):
    with global_x64(mode):
        _maybe_switch(mode)
        assert ak.asarray([2**40, 1]).tolist() == [2**40, 1]
        assert ak.arange(3).dtype is ak.int64 and ak.zeros(2).dtype is ak.float32
        assert ak.asarray(2.0**-1014, dtype=ak.float64).item() == 2.0**-1014
        assert (ak.arange(3) * 2**40).tolist() == [0, 2**40, 2**41]


# ---------------------------------------------------------------------- pytree leaves


def test_leaves_stay_readable_after_writes():
    x = ak.arange(6.0).reshape(2, 3)
    leaf = jax.tree_util.tree_leaves(x)[0]
    view_leaf = jax.tree_util.tree_leaves(x[:, 1])[0]
    mapped = jax.tree.map(lambda b: b, x)
    x[0] = 100.0
    x.mul_(2.0)
    mapped[1, 1] = -1.0
    np.testing.assert_array_equal(np.asarray(leaf), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(view_leaf), [1.0, 4.0])
    np.testing.assert_array_equal(mapped.numpy(), [[0, 1, 2], [3, -1, 5]])
    np.testing.assert_array_equal(x.numpy(), [[200] * 3, [6, 8, 10]])


@SETTINGS
@given(start=st.integers(0, 5), step=st.integers(1, 3), writes=st.integers(1, 4))
def test_every_leaf_obtained_survives_later_writes(start, step, writes):
    base = ak.arange(24.0)
    views = [base, base[start::step], base.reshape(4, 6).T, base[start:start + 4].reshape(2, 2)]
    leaves = [jax.tree_util.tree_leaves(v)[0] for v in views]
    snapshots = [np.array(v.numpy()) for v in views]
    for k in range(writes):
        views[k % len(views)].add_(1.0)
        base[k] = -k
    for leaf, snap in zip(leaves, snapshots):
        np.testing.assert_array_equal(np.asarray(leaf), snap)


def test_two_views_flatten_to_their_own_values():
    base = ak.arange(10.0)
    a, b = base[:4], base[4::2]
    leaves = jax.tree_util.tree_leaves({"a": a, "b": b})
    assert [leaf.shape for leaf in leaves] == [(4,), (3,)]
    np.testing.assert_array_equal(np.asarray(leaves[1]), [4.0, 6.0, 8.0])


def test_grad_with_respect_to_a_view_has_the_views_shape():
    base = ak.asarray(np.arange(12.0, dtype=np.float32))
    view = base[2:8].reshape(2, 3)

    def loss(t):
        return (t * t).sum()

    g = jax.grad(lambda t: loss(t).untyped_storage().buffer.reshape(()))(view)
    assert isinstance(g, ak.Tensor) and g.shape == (2, 3)
    np.testing.assert_allclose(g.numpy(), 2 * view.numpy())
    expected = jax.grad(lambda v: (v * v).sum())(jnp.arange(2.0, 8.0).reshape(2, 3))
    np.testing.assert_allclose(g.numpy(), np.asarray(expected))


def test_jit_compiles_once_per_shape_whatever_the_offset():
    traces = []

    @jax.jit
    def double(t):
        traces.append(t.shape)
        return t * 2

    base = ak.arange(20.0)
    for offset in range(6):
        out = double(base[offset:offset + 4])
        np.testing.assert_array_equal(out.numpy(), 2 * np.arange(offset, offset + 4.0))
    double(base.reshape(5, 4)[1])  # another layout, same shape
    assert traces == [(4,)]
    double(base[:5])
    assert traces == [(4,), (5,)]


def test_vmap_and_tree_map_give_tensors_of_the_right_shape():
    x = ak.arange(12.0).reshape(3, 4)[:, ::2]
    rows = jax.vmap(lambda t: t.sum())(x)
    assert isinstance(rows, ak.Tensor) and rows.shape == (3,)
    np.testing.assert_array_equal(rows.numpy(), x.numpy().sum(axis=1))
    tree = {"w": x, "b": ak.ones(2)}
    scaled = jax.tree.map(lambda leaf: leaf * 0.5, tree)
    assert scaled["w"].shape == (3, 2) and scaled["b"].shape == (2,)
    np.testing.assert_array_equal(scaled["w"].numpy(), x.numpy() * 0.5)


def test_jax_sees_64_bit_tensors_in_its_own_mode():
    x = ak.asarray([2**40, 3])
    with jax.enable_x64(True):
        out = jax.jit(lambda t: t + 1)(x)
    assert out.dtype is ak.int64 and out.tolist() == [2**40 + 1, 4]


# ---------------------------------------------------------------------- tracers


def test_write_to_closed_over_tensor_inside_jax_jit_raises():
    outside = ak.zeros(4)
    outside_view = outside[1:3]

    @jax.jit
    def leak(t):
        outside_view.copy_(t)
        return t

    with pytest.raises(RuntimeError, match="arraykit.jit"):
        leak(ak.ones(2))
    outside[0] = 5.0  # still a concrete, writable storage
    np.testing.assert_array_equal(outside.numpy(), [5.0, 0, 0, 0])

    @jax.jit
    def constant_write(t):
        outside.add_(1.0)
        return t

    with pytest.raises(RuntimeError, match="as an argument"):
        constant_write(ak.ones(2))
    np.testing.assert_array_equal(outside.numpy(), [5.0, 0, 0, 0])


def test_writes_to_arguments_inside_jax_jit_stay_inside():
    x = ak.arange(4.0)

    @jax.jit
    def step(t):
        t[1:3] = t[1:3] * 10
        return t

    out = step(x)
    np.testing.assert_array_equal(out.numpy(), [0, 10, 20, 3])
    np.testing.assert_array_equal(x.numpy(), [0, 1, 2, 3])
