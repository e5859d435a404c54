"""Random chains of views and in-place writes against NumPy, checking every alias.

A chain starts from a contiguous base. Each step either derives a new view from
one of the aliases made so far (slices with any step, permute/transpose,
select, narrow, flip, diagonal, unsqueeze/squeeze, view/reshape, expand,
unfold) or writes into a writable alias (setitem with basic keys, masks and
integer arrays; add_/sub_/mul_/fill_/zero_/copy_/clamp_/masked_fill_/index_fill_;
``+=``; the overlapping ``x[1:] += x[:-1]``). The same step is applied to a NumPy
array, and after every step every alias must hold its NumPy twin's values and
report NumPy's strides and storage offset. The chain is run eagerly and,
replayed, inside one outer ``jax.jit``.

NumPy twins of views are rebuilt writable with ``np.ndarray(buffer=base, ...)``
from NumPy's own strides and data pointer, so writes through views NumPy only
offers read-only (diagonal, broadcast) still happen on the NumPy side.
"""

from __future__ import annotations

import math
import os

import jax
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit as ak
from arraykit.core import layout as L
from arraykit.kernels.launch import apply, cache_info
from strategies import view_shapes

EXAMPLES = int(os.environ.get("ARRAYKIT_TEST_EXAMPLES", "40"))
DTYPES = ("int64", "float32", "float64", "int32")
MAX_ALIASES = 6
MAX_NUMEL = 240


def _ident(x):
    return x


# ----------------------------------------------------------------------------
# NumPy side
# ----------------------------------------------------------------------------


def np_offset(arr, base):
    return (arr.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // arr.itemsize


def np_strides(arr):
    return tuple(s // arr.itemsize for s in arr.strides)


def writable_twin(view, base):
    """``view`` as a writable array over ``base`` (same shape, strides, offset)."""
    if view.size == 0:
        return np.ndarray(view.shape, base.dtype, buffer=base, offset=0, strides=view.strides)
    return np.ndarray(view.shape, base.dtype, buffer=base, offset=np_offset(view, base) * base.itemsize,
                      strides=view.strides)


def self_overlapping(view, base):
    idx = np.ndarray(view.shape, np.int64, buffer=np.arange(base.size, dtype=np.int64),
                     offset=np_offset(view, base) * 8, strides=tuple(8 * s for s in np_strides(view)))
    return np.unique(idx).size != idx.size


def _as_view_key(key):
    """A basic key NumPy answers with a view (never a scalar)."""
    key = key if isinstance(key, tuple) else (key,)
    return key if any(k is Ellipsis for k in key) else key + (Ellipsis,)


def _pre(d, ndim):
    return (slice(None),) * (d % ndim)


def np_view(op, v):
    """The NumPy view an op descriptor derives from ``v``."""
    kind, args = op[0], op[2:]
    if kind == "index":
        return v[_as_view_key(args[0])]
    if kind == "permute":
        return np.transpose(v, args[0])
    if kind == "transpose":
        return np.swapaxes(v, *args)
    if kind == "mT":
        return np.swapaxes(v, -1, -2)
    if kind == "T":
        return v.T
    if kind == "select":
        d, i = args
        return v[_pre(d, v.ndim) + (i, Ellipsis)]
    if kind == "narrow":
        d, start, length = args
        return v[_pre(d, v.ndim) + (slice(start, start + length),)]
    if kind == "flip":
        return np.flip(v, axis=args[0]) if v.ndim else v[...]
    if kind == "diagonal":
        return np.diagonal(v, *args)
    if kind == "unsqueeze":
        return np.expand_dims(v, args[0])
    if kind == "squeeze":
        return np.squeeze(v) if args[0] is None else np.squeeze(v, args[0])
    if kind in ("view", "reshape"):
        return np.reshape(v, args[0], copy=False)
    if kind == "expand":
        return np.broadcast_to(v, args[1])
    if kind == "unfold":
        d, size, step = args
        w = np.lib.stride_tricks.sliding_window_view(v, size, axis=d)
        return w[_pre(d, v.ndim) + (slice(None, None, step),)]
    raise AssertionError(kind)


def ak_view(op, t):
    """The arraykit view an op descriptor derives from ``t``."""
    kind, args = op[0], op[2:]
    if kind == "index":
        return t[args[0]]
    if kind == "permute":
        return t.permute(*args[0]) if len(args[0]) % 2 else t.permute(args[0])
    if kind == "transpose":
        return t.transpose(*args)
    if kind == "mT":
        return t.mT
    if kind == "T":
        return t.T
    if kind == "select":
        return t.select(*args)
    if kind == "narrow":
        return t.narrow(*args)
    if kind == "flip":
        return t.flip(args[0])
    if kind == "diagonal":
        return t.diagonal(*args)
    if kind == "unsqueeze":
        return t.unsqueeze(args[0])
    if kind == "squeeze":
        return t.squeeze(args[0])
    if kind == "view":
        return t.view(args[0])
    if kind == "reshape":
        return t.reshape(*args[0])
    if kind == "expand":
        return t.expand(*args[0])
    if kind == "unfold":
        return t.unfold(*args)
    raise AssertionError(kind)


def np_write(op, aliases):
    """Apply a write descriptor to the NumPy twins."""
    kind, i, args = op[0], op[1], op[2:]
    v = aliases[i]
    if kind == "setitem":
        key, value = args[0], args[1]
        v[_np_key(key)] = _np_value(value, aliases)
    elif kind == "iop":
        name, operand = args
        operand = _np_value(operand, aliases)
        if name in ("add_", "iadd"):
            v += operand
        elif name in ("sub_", "isub"):
            v -= operand
        else:
            v *= operand
    elif kind == "fill":
        v[...] = args[0]
    elif kind == "zero":
        v[...] = 0
    elif kind == "copy":
        np.copyto(v, _np_value(args[0], aliases))
    elif kind == "clamp":
        lo, hi = args
        np.clip(v, lo, hi, out=v)
    elif kind == "masked_fill":
        mask, value = args
        np.copyto(v, np.asarray(value, v.dtype), where=mask[1])
    elif kind == "index_fill":
        d, index, value = args
        v[_pre(d, v.ndim) + (index[1],)] = value
    elif kind == "shift":
        d = args[0]
        pre = _pre(d, v.ndim)
        v[pre + (slice(1, None),)] += v[pre + (slice(None, -1),)]
    else:
        raise AssertionError(kind)


def _np_key(key):
    return tuple(k[1] if isinstance(k, tuple) and k and k[0] in ("arr", "list", "tensor") else k for k in key)


def _np_value(value, aliases):
    if isinstance(value, tuple) and value[0] == "alias":
        return aliases[value[1]]
    if isinstance(value, tuple):
        return value[1]
    return value


# ----------------------------------------------------------------------------
# arraykit side
# ----------------------------------------------------------------------------


def materialize(ops):
    """Build the arraykit tensors a chain needs (outside any trace)."""
    out = []
    for op in ops:
        out.append(tuple(_materialize(a) for a in op))
    return out


def _materialize(a):
    if isinstance(a, tuple) and a and a[0] == "tensor":
        return ("tensor", a[1], ak.asarray(a[1]))
    if isinstance(a, tuple) and a and isinstance(a[0], tuple | slice | int | type(None) | type(Ellipsis)):
        return tuple(_materialize(k) for k in a)
    return a


def _ak_part(k):
    if isinstance(k, tuple) and k and k[0] == "arr":
        return k[1]
    if isinstance(k, tuple) and k and k[0] == "list":
        return k[1].tolist()
    if isinstance(k, tuple) and k and k[0] == "tensor":
        return k[2]
    return k


def ak_write(op, aliases):
    kind, i, args = op[0], op[1], op[2:]
    t = aliases[i]
    if kind == "setitem":
        key, value = args
        t[tuple(_ak_part(k) for k in key)] = _ak_value(value, aliases)
    elif kind == "iop":
        name, operand = args
        operand = _ak_value(operand, aliases)
        if name == "iadd":
            t += operand
        elif name == "isub":
            t -= operand
        elif name == "imul":
            t *= operand
        else:
            assert getattr(t, name)(operand) is t
    elif kind == "fill":
        assert t.fill_(args[0]) is t
    elif kind == "zero":
        assert t.zero_() is t
    elif kind == "copy":
        assert t.copy_(_ak_value(args[0], aliases)) is t
    elif kind == "clamp":
        assert t.clamp_(*args) is t
    elif kind == "masked_fill":
        mask, value = args
        assert t.masked_fill_(_ak_part(mask) if mask[0] == "tensor" else ak.asarray(mask[1]), value) is t
    elif kind == "index_fill":
        d, index, value = args
        assert t.index_fill_(d, _ak_part(index), value) is t
    elif kind == "shift":
        d = args[0]
        pre = _pre(d, t.ndim)
        t[pre + (slice(1, None),)] += t[pre + (slice(None, -1),)]
    else:
        raise AssertionError(kind)


def _ak_value(value, aliases):
    if isinstance(value, tuple) and value[0] == "alias":
        return aliases[value[1]]
    if isinstance(value, tuple):
        return _ak_part(value)
    return value


def ak_run(base, ops):
    """Apply the ops to arraykit; yields the alias list after every step."""
    aliases = [base]
    yield aliases
    for op in ops:
        if op[0] in WRITES:
            ak_write(op, aliases)
        else:
            aliases.append(ak_view(op, aliases[op[1]]))
        yield aliases


WRITES = ("setitem", "iop", "fill", "zero", "copy", "clamp", "masked_fill", "index_fill", "shift")


# ----------------------------------------------------------------------------
# drawing a chain
# ----------------------------------------------------------------------------


def _small_ints(dtype, shape):
    return hnp.arrays(np.int64, shape, elements=st.integers(-9, 9)).map(lambda a: a.astype(dtype))


def _scalar(data, dtype):
    n = data.draw(st.integers(-9, 9))
    if np.dtype(dtype).kind == "f" and data.draw(st.booleans()):
        return float(n) + 0.5
    return n


def _array_form(data, arr):
    return (data.draw(st.sampled_from(["arr", "tensor"])), arr)


def _broadcastable_shape(data, shape):
    """A shape that broadcasts to ``shape`` (drop leading dims, set some to 1)."""
    drop = data.draw(st.integers(0, len(shape)))
    return tuple(1 if data.draw(st.integers(0, 3)) == 0 else n for n in shape[drop:])


def _broadcasts_to(shape, target):
    try:
        return len(shape) <= len(target) and np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def _value(data, dtype, shape, np_aliases, writes_to):
    """A write value: scalar, array (maybe broadcast) or another alias of fitting shape."""
    fitting = [j for j, a in enumerate(np_aliases) if _broadcasts_to(a.shape, shape)]
    choice = data.draw(st.sampled_from(["scalar", "array", "alias"] if fitting else ["scalar", "array"]))
    if choice == "scalar":
        return _scalar(data, dtype)
    if choice == "alias":
        return ("alias", data.draw(st.sampled_from(fitting)))
    return _array_form(data, data.draw(_small_ints(dtype, _broadcastable_shape(data, shape))))


def _view_op(data, i, v, t):
    """Draw a view op for alias ``i`` (NumPy view ``v``, arraykit view ``t``) or None."""
    nd = v.ndim
    kinds = ["index", "permute", "flip", "unsqueeze", "squeeze", "view", "expand"]
    if nd >= 1:
        kinds += ["transpose", "select", "narrow", "unfold"]
    if nd >= 2:
        kinds += ["diagonal", "mT"]
    if nd == 2:
        kinds += ["T"]
    kind = data.draw(st.sampled_from(kinds))
    dim = st.integers(-nd, nd - 1) if nd else st.nothing()
    if kind == "index":
        return (kind, i, data.draw(hnp.basic_indices(v.shape, allow_newaxis=nd < 5, allow_ellipsis=True)))
    if kind == "permute":
        return (kind, i, tuple(data.draw(st.permutations(range(nd)))))
    if kind == "transpose":
        return (kind, i, data.draw(dim), data.draw(dim))
    if kind in ("mT", "T"):
        return (kind, i)
    if kind == "select":
        d = data.draw(dim)
        n = v.shape[d]
        return (kind, i, d, data.draw(st.integers(-n, n - 1))) if n else None
    if kind == "narrow":
        d = data.draw(dim)
        start = data.draw(st.integers(0, v.shape[d]))
        return (kind, i, d, start, data.draw(st.integers(0, v.shape[d] - start)))
    if kind == "flip":
        return (kind, i, tuple(data.draw(st.lists(st.integers(0, nd - 1), unique=True))) if nd else ())
    if kind == "diagonal":
        d1 = data.draw(dim)
        d2 = data.draw(dim.filter(lambda d: d % nd != d1 % nd))
        return (kind, i, data.draw(st.integers(-3, 3)), d1, d2)
    if kind == "unsqueeze":
        return (kind, i, data.draw(st.integers(-nd - 1, nd))) if nd < 5 else None
    if kind == "squeeze":
        ones = [d for d, n in enumerate(v.shape) if n == 1]
        return (kind, i, data.draw(st.sampled_from(ones)) if ones and data.draw(st.booleans()) else None)
    if kind == "view":
        new = data.draw(view_shapes(v.shape, shuffle=False))
        if L.try_view(t._layout, new) is None:
            return None
        try:
            np.reshape(v, new, copy=False)
        except ValueError:
            return None
        return (data.draw(st.sampled_from(["view", "reshape"])), i, new)
    if kind == "expand":
        lead = tuple(data.draw(st.lists(st.integers(1, 3), max_size=max(0, 4 - nd))))
        sizes = lead + tuple(data.draw(st.sampled_from([-1, 3])) if n == 1 else data.draw(st.sampled_from([-1, n]))
                             for n in v.shape)
        target = lead + tuple(n if s == -1 else s for n, s in zip(v.shape, sizes[len(lead):]))
        if math.prod(target) > MAX_NUMEL:
            return None
        return (kind, i, sizes, target)
    if kind == "unfold":
        d = data.draw(dim)
        n = v.shape[d]
        return (kind, i, d, data.draw(st.integers(0, n)), data.draw(st.integers(1, 3)))
    raise AssertionError(kind)


def _write_op(data, i, v, dtype, np_aliases):
    nd = v.ndim
    kinds = ["setitem_basic", "iop", "fill", "zero", "copy", "clamp", "masked_fill"]
    if nd >= 1 and v.size:
        kinds += ["setitem_mask", "setitem_int", "index_fill"]
    if nd >= 1 and any(n > 1 for n in v.shape):
        kinds += ["shift"]
    kind = data.draw(st.sampled_from(kinds))
    if kind == "setitem_basic":
        key = data.draw(hnp.basic_indices(v.shape, allow_newaxis=True, allow_ellipsis=True))
        key = key if isinstance(key, tuple) else (key,)
        return ("setitem", i, key, _value(data, dtype, v[_as_view_key(key)].shape, np_aliases, i))
    if kind == "setitem_mask":
        k = data.draw(st.integers(1, nd))
        mask = data.draw(hnp.arrays(np.bool_, v.shape[:k]))
        key = (data.draw(st.sampled_from(["arr", "tensor"])), mask)
        shape = (int(mask.sum()),) + v.shape[k:]
        if data.draw(st.booleans()):
            value = _scalar(data, dtype)
        else:
            value = _array_form(data, data.draw(_small_ints(dtype, _broadcastable_shape(data, shape))))
        return ("setitem", i, (key,), value)
    if kind == "setitem_int":
        d = data.draw(st.integers(0, nd - 1))
        n = v.shape[d]
        if n == 0:
            return None
        idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), unique_by=lambda j: j % n, max_size=n)), dtype=np.int64)
        form = data.draw(st.sampled_from(["arr", "list", "tensor"])) if idx.size else "arr"
        key = (slice(None),) * d + ((form, idx),)
        if data.draw(st.booleans()):
            key = key + (Ellipsis,)
        shape = v[_np_key(key)].shape
        return ("setitem", i, key, _value(data, dtype, shape, [], i))
    if kind == "iop":
        name = data.draw(st.sampled_from(["add_", "sub_", "mul_", "iadd", "isub", "imul"]))
        return ("iop", i, name, _value(data, dtype, v.shape, np_aliases, i))
    if kind == "fill":
        return ("fill", i, _scalar(data, dtype))
    if kind == "zero":
        return ("zero", i)
    if kind == "copy":
        value = _value(data, dtype, v.shape, np_aliases, i)
        if not isinstance(value, tuple):
            value = _array_form(data, np.asarray(value, dtype=dtype))
        return ("copy", i, value)
    if kind == "clamp":
        lo = data.draw(st.one_of(st.none(), st.integers(-6, 3)))
        hi = data.draw(st.integers(lo if lo is not None else -6, 6))
        if lo is not None and data.draw(st.booleans()):
            hi = None
        return ("clamp", i, lo, hi)
    if kind == "masked_fill":
        mask = data.draw(hnp.arrays(np.bool_, _broadcastable_shape(data, v.shape)))
        return ("masked_fill", i, (data.draw(st.sampled_from(["arr", "tensor"])), mask), _scalar(data, dtype))
    if kind == "index_fill":
        d = data.draw(st.integers(0, nd - 1))
        n = v.shape[d]
        idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3)), dtype=np.int64)
        return ("index_fill", i, d - nd if data.draw(st.booleans()) else d, ("tensor", idx), _scalar(data, dtype))
    if kind == "shift":
        d = data.draw(st.sampled_from([d for d, n in enumerate(v.shape) if n > 1]))
        return ("shift", i, d)
    raise AssertionError(kind)


class Chain:
    """A drawn chain: initial values, ops, and the NumPy state after every step."""

    def __init__(self, init, ops, states):
        self.init = init
        self.ops = ops
        self.states = states  # per step: [(values, strides, offset, shape)] per alias


def snapshot(np_aliases, base):
    return [(np.array(a), np_strides(a), np_offset(a, base), a.shape) for a in np_aliases]


@st.composite
def chains(draw, steps=8):
    data = draw(st.data())
    dtype = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    init = data.draw(_small_ints(dtype, shape))
    base = init.copy()
    np_aliases = [base]
    shadow = [ak.asarray(init)]  # views only: gives arraykit layouts while drawing
    ops, states = [], [snapshot(np_aliases, base)]
    for _ in range(steps):
        writable = [j for j, a in enumerate(np_aliases) if not self_overlapping(a, base)]
        i = data.draw(st.integers(0, len(np_aliases) - 1))
        if len(np_aliases) < MAX_ALIASES and data.draw(st.booleans()):
            op = _view_op(data, i, np_aliases[i], shadow[i])
            if op is None:
                continue
            view = np_view(op, np_aliases[i])
            if view.size > MAX_NUMEL:
                continue
            np_aliases.append(writable_twin(view, base))
            shadow.append(ak_view(op, shadow[i]))
        else:
            i = data.draw(st.sampled_from(writable))
            op = _write_op(data, i, np_aliases[i], dtype, np_aliases)
            if op is None:
                continue
            np_write(op, np_aliases)
        ops.append(op)
        states.append(snapshot(np_aliases, base))
    return Chain(init, ops, states)


def check_layouts(aliases, state, where):
    for j, (t, (vals, strides, offset, shape)) in enumerate(zip(aliases, state)):
        assert t.shape == shape, (where, j)
        if math.prod(shape) == 0:  # strides and offset of empty arrays are arbitrary
            continue
        for d, n in enumerate(shape):
            if n > 1:
                assert t.stride()[d] == strides[d], (where, j, t.stride(), strides)
        assert t.storage_offset() == offset, (where, j, t.storage_offset(), offset)


def check_values(got, state, where):
    for j, (g, (vals, *_)) in enumerate(zip(got, state)):
        np.testing.assert_array_equal(np.asarray(g), vals, err_msg=f"{where}, alias {j}")
        assert np.asarray(g).dtype == vals.dtype


# ----------------------------------------------------------------------------
# the chain properties
# ----------------------------------------------------------------------------


def run_eager(chain):
    base = ak.asarray(chain.init)
    storage = base.untyped_storage()
    for step, aliases in enumerate(ak_run(base, materialize(chain.ops))):
        state = chain.states[step]
        where = f"after step {step}: {chain.ops[step - 1] if step else 'start'}"
        for t in aliases:
            assert t.untyped_storage() is storage
        check_layouts(aliases, state, where)
        check_values([t.numpy() for t in aliases], state, where)
        np.testing.assert_array_equal(np.array(storage.buffer).reshape(-1), chain.states[step][0][0].ravel())


@given(chains())
@settings(max_examples=EXAMPLES, deadline=None)
def test_chain_of_views_and_writes_eager(chain):
    run_eager(chain)


@pytest.mark.slow
@given(chains(steps=14))
@settings(max_examples=200, deadline=None)
def test_chain_of_views_and_writes_eager_long(chain):
    run_eager(chain)


def run_jitted(chain):
    base = ak.asarray(chain.init)
    leaves, treedef = jax.tree_util.tree_flatten(base)
    ops = materialize(chain.ops)
    layouts = []

    def program(buf):
        t = jax.tree_util.tree_unflatten(treedef, [buf])
        outs = []
        for aliases in ak_run(t, ops):
            layouts.append(list(aliases))
            outs.append([apply(_ident, (a,)) for a in aliases])
        return outs

    results = jax.jit(program)(leaves[0])
    assert len(results) == len(chain.states)
    for step, (got, aliases) in enumerate(zip(results, layouts)):
        where = f"jit, after step {step}: {chain.ops[step - 1] if step else 'start'}"
        check_layouts(aliases, chain.states[step], where)
        check_values([g.numpy() for g in got], chain.states[step], where)
    np.testing.assert_array_equal(base.numpy(), chain.init)  # the input was not mutated


@given(chains())
@settings(max_examples=max(EXAMPLES // 2, 4), deadline=None)
def test_chain_of_views_and_writes_in_jax_jit(chain):
    run_jitted(chain)


@pytest.mark.slow
@given(chains(steps=14))
@settings(max_examples=100, deadline=None)
def test_chain_of_views_and_writes_in_jax_jit_long(chain):
    run_jitted(chain)


# ----------------------------------------------------------------------------
# copies, exports and aliasing queries
# ----------------------------------------------------------------------------


def _torch_twin(t_base, ops):
    out = t_base
    for name, args in ops:
        out = getattr(out, name)(*args)
    return out


VIEW_RECIPES = [
    [],
    [("permute", (2, 0, 1))],
    [("transpose", (0, 1))],
    [("permute", (1, 2, 0)), ("__getitem__", ((slice(None, None, 2),),))],
    [("transpose", (0, 2)), ("__getitem__", ((slice(None), slice(None, None, 2)),))],
    [("__getitem__", ((Ellipsis, slice(None, None, 2)),))],
    [("__getitem__", ((slice(1, None),),))],
    [("__getitem__", ((slice(None), slice(None), slice(1, 3)),))],
    [("expand", ((2, 2, 3, 4),))],
    [("unsqueeze", (1,)), ("expand", ((2, 5, 3, 4),)), ("permute", (1, 0, 2, 3))],
    [("select", (2, 1))],
    [("diagonal", (0, 1, 2))],
    [("unfold", (2, 2, 1))],
    [("permute", (2, 1, 0)), ("__getitem__", ((slice(None, None, 3),),))],
]


@pytest.mark.parametrize("recipe", VIEW_RECIPES, ids=lambda r: "-".join(n for n, _ in r) or "base")
def test_clone_and_contiguous_match_torch(recipe):
    values = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = _torch_twin(torch.from_numpy(values.copy()), recipe)
    x = _torch_twin(ak.asarray(values), recipe)
    assert x.shape == tuple(t.shape) and x.stride() == t.stride()
    for fmt in (ak.preserve_format, ak.contiguous_format):
        c = x.clone(fmt) if fmt != ak.preserve_format else x.clone()
        tc = t.clone(memory_format=torch.preserve_format if fmt == ak.preserve_format else torch.contiguous_format)
        assert c.stride() == tc.stride(), (fmt, c.stride(), tc.stride())
        assert c.untyped_storage() is not x.untyped_storage()
        np.testing.assert_array_equal(c.numpy(), t.numpy())
    cont = x.contiguous()
    assert cont.is_contiguous() and cont.stride() == t.contiguous().stride()
    np.testing.assert_array_equal(cont.numpy(), t.numpy())
    if x.is_contiguous():
        assert cont is x
    else:
        assert cont.untyped_storage() is not x.untyped_storage()
    if x.ndim == 4:
        cl = x.contiguous(ak.channels_last)
        tcl = t.contiguous(memory_format=torch.channels_last)
        assert cl.stride() == tcl.stride() and cl.is_contiguous(ak.channels_last)
        np.testing.assert_array_equal(cl.numpy(), t.numpy())
        assert cl.contiguous(ak.channels_last) is cl
        assert x.clone(ak.channels_last).stride() == t.clone(memory_format=torch.channels_last).stride()


def test_flip_spellings():
    values = np.arange(24).reshape(2, 3, 4)
    x = ak.asarray(values)
    np.testing.assert_array_equal(x.flip().numpy(), np.flip(values))
    np.testing.assert_array_equal(x.flip(()).numpy(), values)
    np.testing.assert_array_equal(x.flip(0, -1).numpy(), values[::-1, :, ::-1])
    np.testing.assert_array_equal(x.flip([1]).numpy(), values[:, ::-1])
    with pytest.raises(ValueError, match="repeated"):
        x.flip(0, -3)


def test_memory_format_ranks_as_torch():
    x4, x5 = ak.zeros((2, 1, 4, 5)), ak.zeros((2, 3, 1, 4, 5))
    assert x4.is_contiguous(ak.channels_last) and not x4.is_contiguous(ak.channels_last_3d)
    assert not x5.is_contiguous(ak.channels_last)
    assert x5.contiguous(ak.channels_last_3d).stride() == torch.zeros(2, 3, 1, 4, 5).contiguous(
        memory_format=torch.channels_last_3d).stride()
    with pytest.raises(ValueError, match="rank 5"):
        x4.contiguous(ak.channels_last_3d)
    with pytest.raises(ValueError, match="rank 4"):
        ak.zeros((2, 3, 4)).clone(ak.channels_last)


def test_clone_of_flipped_dense_keeps_values():
    x = ak.asarray(np.arange(12.0).reshape(3, 4)).flip(0)
    c = x.clone()
    np.testing.assert_array_equal(c.numpy(), np.arange(12.0).reshape(3, 4)[::-1])
    c[0, 0] = -1.0
    assert x[0, 0].item() == 8.0


def test_clone_and_contiguous_write_independently():
    base = ak.asarray(np.arange(12.0).reshape(3, 4))
    for copy in (base.T.clone(), base.T.contiguous(), base[:, ::2].clone()):
        copy.fill_(7.0)
        np.testing.assert_array_equal(base.numpy(), np.arange(12.0).reshape(3, 4))


def test_numpy_tolist_item():
    values = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = ak.asarray(values, device="cpu")  # numpy() shares a tensor's memory on the CPU only
    for view, expected in [(x, values), (x.T, values.T), (x[1:, ::-2], values[1:, ::-2]), (x[2, 3], values[2, 3])]:
        out = view.numpy()
        assert isinstance(out, np.ndarray) and out.dtype == np.int32 and out.flags.writeable
        np.testing.assert_array_equal(out, expected)
        assert view.tolist() == expected.tolist()
        out[...] = 0  # shared memory, as in PyTorch: the tensor sees the write
        assert not view.numpy().any() and not ak.any(view).item()
        x.copy_(ak.asarray(values))
    np.testing.assert_array_equal(x.numpy(), values)
    assert x[1, 2].item() == 6 and type(x[1, 2].item()) is int
    assert type(ak.asarray(np.float32(2.5)).item()) is float
    assert x[1:2, 2:3].item() == 6
    with pytest.raises(ValueError, match="12 elements"):
        x.item()


def test_data_ptr_and_storage_relations():
    x = ak.asarray(np.arange(24, dtype=np.float64).reshape(4, 6))
    st = x.untyped_storage()
    views = [x[1:], x[:, 2:], x.T, x[::2, 1::3], x.flip(1), x.diagonal(), x.view(6, 4)[3], x[3, 5]]
    for v in views:
        assert v.untyped_storage() is st
        assert v.data_ptr() - x.data_ptr() == v.storage_offset() * 8
        assert v.element_size() == 8
    assert x.data_ptr() == st.data_ptr()
    y = x.clone()
    assert y.untyped_storage() is not st and y.data_ptr() != x.data_ptr()


def test_shares_memory_and_may_share_memory():
    x = ak.zeros((6, 6))
    even, odd = x[:, ::2], x[:, 1::2]
    assert not ak.shares_memory(even, odd)
    assert ak.may_share_memory(even, odd)
    assert ak.shares_memory(x, x[2:3, 4])
    assert not ak.shares_memory(x[:3], x[3:]) and not ak.may_share_memory(x[:3], x[3:])
    assert ak.shares_memory(x.T, x[0])
    assert not ak.shares_memory(x, ak.zeros((6, 6)))
    assert not ak.may_share_memory(x, x.clone())
    assert not ak.shares_memory(x[:0], x)
    big = ak.zeros((4096, 4096))  # exact answers without materializing 16M indices
    assert not ak.shares_memory(big[:, ::2], big[:, 1::2])
    assert ak.shares_memory(big[:, ::2], big[7])
    assert not ak.shares_memory(big[::2, ::3], big[1::2, ::5])


VIEW_OPS = [
    lambda x: x.permute(2, 0, 1),
    lambda x: x[1:, ::-1],
    lambda x: x[None, ..., None],
    lambda x: x[1, 2],
    lambda x: x[ak.asarray(1)],
    lambda x: x.unsqueeze(0).squeeze(0),
    lambda x: x.flip(0, 2),
    lambda x: x.reshape(6, 4),
    lambda x: x.view(-1),
    lambda x: x.flatten(),
    lambda x: x.mT.mT,
    lambda x: x.diagonal(0, 1, 2),
    lambda x: x.unfold(2, 2, 1),
    lambda x: x.expand(3, 2, 3, 4),
    lambda x: x.broadcast_to((2, 2, 3, 4)),
    lambda x: x.narrow(1, 1, 2),
    lambda x: x.select(0, -1),
    lambda x: x.transpose(0, 2),
    lambda x: x.as_strided((2, 2), (1, 1), 3),
    lambda x: x.contiguous(),
    lambda x: x.t() if x.ndim <= 2 else x[0].t(),
    lambda x: x.expand_as(ak.zeros((2, 2, 3, 4))),
]


@pytest.mark.parametrize("op", VIEW_OPS)
def test_view_ops_launch_no_kernel(op):
    x = ak.asarray(np.arange(24.0).reshape(2, 3, 4))
    idx = ak.asarray(1)
    idx.item()  # warm any host transfer of the index
    before = cache_info()
    v = op(x)
    after = cache_info()
    assert v.untyped_storage() is x.untyped_storage()
    assert (after["hits"], after["misses"]) == (before["hits"], before["misses"])


def test_numpy_values_are_read_at_write_time():
    """A NumPy value changed right after a write must not leak into the tensor."""
    n = 1 << 21
    for _ in range(6):
        x = ak.zeros(n)
        value = np.ones(n, np.float32)
        x[...] = value
        value[:] = 5
        x += value
        value[:] = 7
        x.add_(value)
        value[:] = 9
        assert x.numpy()[-1] == 13.0 and x.numpy()[0] == 13.0


def _np_set(target, value):
    target[...] = value


OVERLAPPING_WRITES = [
    ("x[:, ::2] = x[:, 1::2] * 2", lambda x: x.__setitem__((slice(None), slice(None, None, 2)), x[:, 1::2] * 2),
     lambda x: _np_set(x[:, ::2], x[:, 1::2] * 2)),
    ("x[::2] += x[1::2]", lambda x: x[::2].__iadd__(x[1::2]), lambda x: x[::2].__iadd__(x[1::2])),
    ("x[1:, 1:] += x[:-1, :-1]", lambda x: x[1:, 1:].__iadd__(x[:-1, :-1]),
     lambda x: x[1:, 1:].__iadd__(x[:-1, :-1])),
    ("x[:, 1::2] = x[:, ::2].flip(0)", lambda x: x[:, 1::2].copy_(x[:, ::2].flip(0)),
     lambda x: _np_set(x[:, 1::2], x[::-1, ::2])),
    ("x[1:] = x[:-1]", lambda x: x[1:].copy_(x[:-1]), lambda x: _np_set(x[1:], x[:-1])),
    ("x[:-1] = x[1:]", lambda x: x[:-1].copy_(x[1:]), lambda x: _np_set(x[:-1], x[1:])),
    ("x.T[1:] -= x.T[:-1]", lambda x: x.T[1:].sub_(x.T[:-1]), lambda x: x.T[1:].__isub__(x.T[:-1])),
    ("x[::-1, 2:] *= x[:, :-2]", lambda x: x[::-1, 2:].mul_(x[:, :-2]), lambda x: x[::-1, 2:].__imul__(x[:, :-2])),
    ("x[:, 1:7:3] = x[:, :2] + 0", lambda x: x[:, 1:7:3].copy_(x[:, :2] + 0), lambda x: _np_set(x[:, 1:7:3], x[:, :2])),
]


@pytest.mark.parametrize("name,op,np_op", OVERLAPPING_WRITES, ids=[w[0] for w in OVERLAPPING_WRITES])
@pytest.mark.parametrize("traced", [False, True], ids=["eager", "jit"])
def test_overlapping_source_and_target(name, op, np_op, traced):
    init = (np.arange(8 * 10, dtype=np.int64).reshape(8, 10) * 7) % 23
    expected = init.copy()
    np_op(expected)
    if traced:
        base = ak.asarray(init)
        leaves, treedef = jax.tree_util.tree_flatten(base)

        def program(buf):
            t = jax.tree_util.tree_unflatten(treedef, [buf])
            op(t)
            return apply(_ident, (t,))

        got = jax.jit(program)(leaves[0]).numpy()
    else:
        x = ak.asarray(init)
        op(x)
        got = x.numpy()
    np.testing.assert_array_equal(got, expected)



# writes through views with negative strides on several dimensions (every flipped
# dimension must be reversed, not only the first), eager and inside arraykit.jit:
# (name, the view in arraykit, the same view in NumPy, the write)
MULTI_FLIP_VIEWS = [
    ("x.flip((0, 1))", lambda x: x.flip((0, 1)), lambda a: a[::-1, ::-1]),
    ("x[::-1, ::-2]", lambda x: x[::-1, ::-2], lambda a: a[::-1, ::-2]),
    ("x[::-1, :, ::-1]", lambda x: x[::-1, :, ::-1], lambda a: a[::-1, :, ::-1]),
    ("x.flip((0, 1, 2))[1:]", lambda x: x.flip((0, 1, 2))[1:], lambda a: a[::-1, ::-1, ::-1][1:]),
    ("x[::-2, ::-1, 1]", lambda x: x[::-2, ::-1, 1], lambda a: a[::-2, ::-1, 1]),
    ("x.flip((1, 2)).permute(2, 0, 1)", lambda x: x.flip((1, 2)).permute(2, 0, 1),
     lambda a: a[:, ::-1, ::-1].transpose(2, 0, 1)),
    ("x[::-1, 1::2, ::-1]", lambda x: x[::-1, 1::2, ::-1], lambda a: a[::-1, 1::2, ::-1]),
]
MULTI_FLIP_WRITES = {
    "= v": (lambda view, v: view.__setitem__(Ellipsis, v), lambda view, v: view.__setitem__(Ellipsis, v)),
    "+= v": (lambda view, v: view.add_(v), lambda view, v: view.__iadd__(v)),
    "copy_(v)": (lambda view, v: view.copy_(v), lambda view, v: view.__setitem__(Ellipsis, v)),
}


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("op", list(MULTI_FLIP_WRITES))
@pytest.mark.parametrize("case", MULTI_FLIP_VIEWS, ids=[c[0] for c in MULTI_FLIP_VIEWS])
def test_writes_through_several_negative_strides_match_numpy(case, op, mode):
    _, view, np_view = case
    write, np_write = MULTI_FLIP_WRITES[op]
    init = np.arange(60.0, dtype=np.float32).reshape(4, 5, 3)
    a = init.copy()
    shape = np_view(a).shape
    values = (1000 + 7 * np.arange(math.prod(shape), dtype=np.float32)).reshape(shape)
    np_write(np_view(a), values)
    x = ak.asarray(init, device="cpu")
    aliases = [x.flip(0), x[:, ::-1], x.permute(2, 1, 0), x[1:, 2]]

    def program(t, v):
        write(view(t), v)

    (program if mode == "eager" else ak.jit(program))(x, ak.asarray(values, device="cpu"))
    np.testing.assert_array_equal(x.numpy(), a)
    for alias, want in zip(aliases, [a[::-1], a[:, ::-1], a.transpose(2, 1, 0), a[1:, 2]]):
        np.testing.assert_array_equal(alias.numpy(), want)
