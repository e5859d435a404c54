"""Tensors under JAX tracing, and the storage's donation / export rules.

``Tensor`` is a pytree whose only leaf is its own values (the storage buffer
itself when the tensor is all of it in C order), so tensors cross ``jax.jit``
boundaries and views and in-place writes work on traced buffers. A
write donates the old buffer (O(write), same address) unless the buffer was
exported; an export is a snapshot that later writes never change.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arraykit as ak
from arraykit.core import layout as L
from arraykit.kernels.launch import apply


def _ident(x):
    return x


def _values(t):
    """A tensor's values as a jax array (works inside a trace)."""
    return apply(_ident, (t,))._storage.buffer.reshape(t.shape)


def test_pytree_round_trip_keeps_values_dtype_device():
    x = ak.asarray(np.arange(24, dtype=np.int16).reshape(4, 6))[1:, ::-2].T
    leaves, treedef = jax.tree_util.tree_flatten(x)
    assert len(leaves) == 1 and leaves[0].shape == x.shape
    np.testing.assert_array_equal(np.asarray(leaves[0]), x.numpy())
    y = jax.tree_util.tree_unflatten(treedef, leaves)
    assert (y.shape, y.stride(), y.storage_offset(), y.dtype, y.device) == (
        x.shape, (3, 1), 0, x.dtype, x.device)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    z = jax.tree_util.tree_map(lambda b: b * 2, x)
    np.testing.assert_array_equal(z.numpy(), 2 * x.numpy())
    whole = ak.asarray(np.arange(6.0).reshape(2, 3))
    assert jax.tree_util.tree_leaves(whole)[0] is whole.untyped_storage().buffer  # no copy


def test_pytree_leaf_shared_by_two_tensors_is_not_donated():
    x = ak.asarray(np.arange(5.0))
    y = jax.tree_util.tree_map(lambda b: b, x)  # a second storage over the same buffer
    assert y.untyped_storage().buffer is x.untyped_storage().buffer
    y[0] = 10.0
    x[1] = 20.0
    np.testing.assert_array_equal(x.numpy(), [0, 20, 2, 3, 4])
    np.testing.assert_array_equal(y.numpy(), [10, 1, 2, 3, 4])


def test_tensor_through_jax_jit():
    x = ak.asarray(np.arange(12.0).reshape(3, 4)).T[::2]
    y = jax.jit(lambda t: t)(x)
    assert isinstance(y, ak.Tensor) and y.shape == x.shape and y.is_contiguous()
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    out = jax.jit(lambda t: {"double": t * 2, "sum": t.sum()})(x)
    np.testing.assert_array_equal(out["double"].numpy(), 2 * x.numpy())
    assert out["sum"].item() == x.numpy().sum()


def _program(t):
    """Views and in-place writes; returns the base and some views' values."""
    rows, cols = t[1:], t.T
    diag = t[:, :3].diagonal()
    rows[:, ::2] += 1.0
    cols[1] = cols[0] * 2
    diag.mul_(-1.0)
    t[1:] += t[:-1]  # overlapping source and target
    t[t > 100] = 0.0
    t.clamp_(-50.0, 60.0)
    return t, rows, diag


def _np_program(a):
    """:func:`_program` in NumPy."""
    rows, cols = a[1:], a.T
    diag = a[:, :3].diagonal()  # read-only in NumPy: written through ``a`` below
    rows[:, ::2] += 1.0
    cols[1] = cols[0] * 2
    a[np.arange(3), np.arange(3)] *= -1.0
    a[1:] += a[:-1].copy()
    a[a > 100] = 0.0
    np.clip(a, -50.0, 60.0, out=a)
    return a, rows, diag


def test_views_and_writes_inside_jit_match_eager():
    # values the masked write (> 100) and both bounds of the clamp change
    init = (np.arange(16.0, dtype=np.float32) * 9 - 40).reshape(4, 4)
    want = _np_program(init.copy())
    assert (want[0] == 0).any() and (want[0] == 60).any() and (want[0] == -50).any()
    eager = _program(ak.asarray(init))
    base = ak.asarray(init)
    leaves, treedef = jax.tree_util.tree_flatten(base)

    def traced(buf):
        return [_values(v) for v in _program(jax.tree_util.tree_unflatten(treedef, [buf]))]

    got = jax.jit(traced)(leaves[0])
    for g, e, w in zip(got, eager, want):
        np.testing.assert_array_equal(e.numpy(), w)
        np.testing.assert_array_equal(np.asarray(g), w)
    np.testing.assert_array_equal(base.numpy(), init)  # the traced program did not touch the input


def test_derived_value_written_back_inside_jit():
    """XLA:CPU openxla/xla#49176: x[1:] = f(x[:-1]) traced whole must not read overwritten data."""
    init = np.arange(36, dtype=np.float32).reshape(3, 4, 3)
    factor = np.arange(12, dtype=np.float32).reshape(1, 4, 3)

    def program(t):
        t *= factor
        t[1:] = t[:-1] * 2
        t[:, 1:] += t[:, :-1]
        return t

    base = ak.asarray(init)
    leaves, treedef = jax.tree_util.tree_flatten(base)
    got = jax.jit(lambda b: _values(program(jax.tree_util.tree_unflatten(treedef, [b]))))(leaves[0])
    expected = program(ak.asarray(init)).numpy()
    e = init * factor
    e[1:] = e[:-1] * 2
    e[:, 1:] = e[:, 1:] + e[:, :-1].copy()
    np.testing.assert_array_equal(expected, e)
    np.testing.assert_array_equal(np.asarray(got), e)


def test_indexing_inside_jit():
    init = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    base = ak.asarray(init)
    leaves, treedef = jax.tree_util.tree_flatten(base)
    mask = init % 3 == 0

    def program(buf, idx):
        t = jax.tree_util.tree_unflatten(treedef, [buf])
        t[mask] = -1.0  # a concrete mask works under the trace
        t[:, np.array([0, 3])] += 10.0
        picked = t[ak.asarray(idx)]  # a traced index tensor
        return _values(t), _values(picked)

    out, picked = jax.jit(program)(leaves[0], jnp.array([2, 0]))
    e = init.copy()
    e[mask] = -1
    e[:, [0, 3]] += 10
    np.testing.assert_array_equal(np.asarray(out), e)
    np.testing.assert_array_equal(np.asarray(picked), e[[2, 0]])

    def bad(buf):
        t = jax.tree_util.tree_unflatten(treedef, [buf])
        return _values(t[:, np.array([4])])

    with pytest.raises(IndexError):
        jax.jit(bad)(leaves[0])


def test_traced_tensor_repr_and_data_ptr():
    x = ak.zeros((2, 3))

    def f(t):
        assert "traced" in repr(t)
        with pytest.raises(RuntimeError, match="trace"):
            t.data_ptr()
        return t

    jax.jit(f)(x)


# ----------------------------------------------------------------------------
# donation and exports
# ----------------------------------------------------------------------------


def test_small_write_into_big_storage_donates_in_place():
    x = ak.zeros(1 << 22)
    storage = x.untyped_storage()
    x[3] = 1.0  # warm the kernels
    x[5:9] = 2.0
    ptr = x.data_ptr()
    version = storage.version
    for i in range(10):
        x[7] = float(i)
        x[5:9] += 1.0
        x[1:, None][::4096] = 3.0
    assert storage.version == version + 30  # x[k] += v writes once (no self-copy)
    assert not storage.shared
    assert x.data_ptr() == ptr  # the buffer was updated in place: O(write), not O(storage)
    values = x.numpy()
    assert values[3] == 1.0 and values[7] == 10.0 and values[8] == 12.0 and values[4097] == 3.0


def test_export_keeps_its_snapshot_after_writes():
    x = ak.asarray(np.arange(8.0, dtype=np.float32), device="cpu")
    storage = x.untyped_storage()
    exported = np.from_dlpack(x)  # zero-copy export of the live buffer
    snapshot = x.tolist()  # (np.asarray(x) and x.numpy() share memory: see below)
    assert storage.exported
    x[2] = -1.0  # must not donate (or overwrite) the exported buffer
    x.add_(1.0)
    np.testing.assert_array_equal(exported, np.arange(8.0))
    np.testing.assert_array_equal(snapshot, np.arange(8.0))
    expected = np.arange(8.0) + 1
    expected[2] = 0.0
    np.testing.assert_array_equal(x.tolist(), expected)
    # the first write after an export copied; the buffer is private again
    assert not storage.exported
    ptr = x.data_ptr()
    x[3] = 5.0
    assert x.data_ptr() == ptr


def _write_in_place(x, index):
    """Whether ``x[index] = 1.0`` updated the buffer in place (donated: same address)."""
    ptr = x.data_ptr()
    x[index] = 1.0
    return x.data_ptr() == ptr


def _np_export(x):
    return np.asarray(x)


def _dlpack_export(x):
    return np.from_dlpack(x)


def _jax_call(x):
    return jax.jit(lambda t: t)(x)


_EXPORTS = {
    "tree_leaves": jax.tree_util.tree_leaves,
    "block_until_ready": jax.block_until_ready,
    "jax_jit_argument": _jax_call,
    "np_asarray": _np_export,
    "dlpack": _dlpack_export,
}


@pytest.mark.parametrize("export", list(_EXPORTS.values()), ids=list(_EXPORTS))
def test_write_after_a_dead_export_donates(export):
    """Issue 17.4: once an export is gone, the next write is O(write) again."""
    x = ak.zeros(1 << 20, device="cpu")
    x[3] = 2.0  # warm the kernels
    export(x)  # the result dies at once
    storage = x.untyped_storage()
    assert _write_in_place(x, 5)
    assert not storage.exported
    assert x[5].item() == 1.0 and x[3].item() == 2.0


# (block_until_ready returns x itself; np.asarray of a CPU tensor is a live view, below)
_LIVE_EXPORTS = ("tree_leaves", "dlpack")


@pytest.mark.parametrize("export", [_EXPORTS[k] for k in _LIVE_EXPORTS], ids=_LIVE_EXPORTS)
def test_write_during_a_live_export_copies_and_keeps_its_snapshot(export):
    x = ak.zeros(1 << 20, device="cpu")
    x[3] = 2.0
    held = export(x)
    assert not _write_in_place(x, 5)  # donating would change what ``held`` reads
    np.testing.assert_array_equal(np.asarray(jax.tree_util.tree_leaves(held)[0])[3:6], [2, 0, 0])
    assert x[5].item() == 1.0
    del held
    assert _write_in_place(x, 6)


def test_jax_array_wrapped_by_asarray_is_donated_once_the_caller_drops_it():
    cpu = jax.devices("cpu")[0]  # on the tensor's device: wrapped, not copied
    x = ak.asarray(jnp.zeros(1 << 20, device=cpu), device="cpu")
    assert _write_in_place(x, 0)
    buf = jnp.zeros(1 << 20, device=cpu)
    y = ak.asarray(buf, device="cpu")
    assert not _write_in_place(y, 0)
    np.testing.assert_array_equal(np.asarray(buf[:2]), [0, 0])


def test_arraykit_jit_write_after_a_dead_export_donates():
    """arraykit.jit's write-back follows the same rule as eager writes."""
    @ak.jit
    def bump(t):
        t[5] += 1.0

    x = ak.zeros(1 << 20, device="cpu")
    bump(x)
    jax.tree_util.tree_leaves(x)
    ptr = x.data_ptr()
    bump(x)
    assert x.data_ptr() == ptr
    held = jax.tree_util.tree_leaves(x)[0]
    bump(x)
    assert x.data_ptr() != ptr and float(held[5]) == 2.0 and x[5].item() == 3.0


def test_numpy_view_of_a_cpu_tensor_is_live_both_ways():
    """``np.asarray`` of a CPU tensor (and of its strided views) shares the tensor's
    memory, as PyTorch's ``numpy()`` does: writes on either side are seen by the other."""
    x = ak.zeros((64, 64), device="cpu")
    view_values = np.asarray(x[::2, 1])
    x[::2, 1] = 7.0
    np.testing.assert_array_equal(view_values, 7.0)
    view_values[:] = 3.0
    assert x[2, 1].item() == 3.0 and x[1, 1].item() == 0.0
    whole = np.asarray(x)
    whole[0, 0] = -1.0
    assert x[0, 0].item() == -1.0


def test_jax_array_wrapped_by_asarray_is_never_donated():
    buf = jnp.arange(6.0)
    x = ak.asarray(buf)
    x[0] = 100.0
    np.testing.assert_array_equal(np.asarray(buf), np.arange(6.0))  # the user's array is intact
    assert x[0].item() == 100.0


def test_writes_bump_version_views_do_not():
    x = ak.zeros((4, 4))
    storage = x.untyped_storage()
    v0 = storage.version
    x.T[1:, ::2].flip(0).diagonal()
    assert storage.version == v0
    x[0] = 1.0
    x.T.add_(1.0)
    assert storage.version == v0 + 2


def test_layout_helpers_for_views_are_exact():
    x = ak.asarray(np.arange(30.0).reshape(5, 6))
    for v in (x.T, x[1:, ::2], x.flip(1), x.unfold(1, 2, 2)):
        assert v.layout == L.Layout(v.shape, v.stride(), v.storage_offset())


def test_numpy_copy_does_not_mark_the_storage_shared():
    x = ak.zeros(1 << 20)
    x[0] = 1.0
    x.numpy()
    x[1:].numpy()
    x[:3].tolist()
    assert not x.untyped_storage().exported
    ptr = x.data_ptr()
    x[5] = 2.0
    assert x.data_ptr() == ptr
