"""Gradients an ``arraykit.jit`` program makes, packed into one storage per dtype.

A training step's program outputs each parameter's new ``.grad`` (``zero_grad()``
set it to None, ``backward()`` made it again). Every output costs the host on every
call: JAX makes an array for it, and the storage's previous buffer is released.
For a step of many small parameters that is the difference between a cached
``arraykit.jit`` call and a ``jax.jit`` + optax step that returns no gradients
(``benchmarks/bench_step_cost.py --only percall``).

So the small gradients a trace makes are packed: the program concatenates them, flat,
into one buffer per dtype and device, and each ``.grad`` becomes a view of that one
storage at its own offset, as PyTorch's ``DistributedDataParallel(gradient_as_bucket_view=True)``
makes its gradients views of its buckets. Every tensor API behaves as before (values,
in-place writes, ``data_ptr`` apart per nonempty gradient), except what describes the
storage itself: ``storage_offset()`` is the gradient's place in the bucket and
``untyped_storage()`` is the bucket. The program stays valid while every packed
gradient's tensor lives, as it stayed valid while each gradient's storage lived; any
other assignment of a ``.grad`` it wrote drops it (:mod:`arraykit.core.gradient_writers`).

Only gradients up to :func:`arraykit.core.packing.max_bytes` are packed: concatenating
copies them once more inside the program, which for a large gradient costs more than an
output does. A
gradient is packed only when nothing but tensors views it (a reference count shows
any other holder), so no holder is left with a storage the program no longer fills.
"""

from __future__ import annotations

import gc
import operator
import sys
import weakref

import jax
from jax import lax

from .core import layout as L
from .core.packing import max_bytes
from .core.storage import Storage
from .tensors.tensor_type import Tensor


def pack(kept, gradients, returned):
    """``(kept, views)``: ``kept`` (storages the trace made and something holds) with
    the packable gradients among them (``gradients``: ``{id(storage): leaf}`` of the
    storages made for a leaf's ``.grad``; ``returned``: ids of storages the function returns, left alone)
    replaced by one new storage per dtype and device whose buffer concatenates theirs,
    and the tensors over the packed storages, which now view the new one. The program
    stays valid while they live, as it did while the storages they replace lived."""
    candidates = [st for st in kept
                  if id(st) in gradients and id(st) not in returned and _small(st)]
    if len(candidates) < 2:
        return kept, []
    views = _sole_views(candidates, kept)
    groups = {}
    for st in candidates:
        if id(st) in views:
            groups.setdefault((st.dtype, st.device), []).append(st)
    packed, moved = {}, []
    for (dtype, device), group in groups.items():
        if len(group) < 2:
            continue
        bucket = Storage(lax.concatenate([lax.reshape(st._buffer, (st._buffer.size,))
                                          for st in group], 0), dtype, device)
        base = 0
        tensors = []
        for st in group:
            for t in views[id(st)]:
                lay = t._layout
                t._layout = L._layout(lay.shape, lay.strides, lay.offset + base)
                t._storage = bucket
                tensors.append(t)
            base += st._buffer.size
            packed[id(st)] = bucket
        _BUCKETS[bucket] = ([weakref.ref(gradients[id(st)]) for st in group],
                            [weakref.ref(t) for t in tensors])
        moved += tensors
    out, added = [], set()
    for st in kept:
        bucket = packed.get(id(st))
        if bucket is None:
            out.append(st)
        elif id(bucket) not in added:
            added.add(id(bucket))
            out.append(bucket)
    return out, moved


def written_buckets(written):
    """``(leaves, tensors)`` of the buckets among the storages ``written`` (a later
    trace that writes gradients in place, ``zero_grad(set_to_none=False)``): the leaves
    whose ``.grad`` they hold and those tensors still alive. A program that writes a
    bucket stays valid as long as the one that made it."""
    leaves, tensors = [], []
    for st in written:
        found = _BUCKETS.get(st)
        if found is not None:
            leaves += [leaf for leaf in map(operator.call, found[0]) if leaf is not None]
            tensors += [t for t in map(operator.call, found[1]) if t is not None]
    return leaves, tensors


def _small(st):
    device = st.device
    if not isinstance(device, jax.Device) or st.node is not None or st.shared or st.exported:
        return False
    buf = st._buffer
    if not isinstance(buf, jax.core.Tracer):
        return False
    return buf.size * st.dtype.itemsize <= max_bytes(device.platform)


# bucket storage -> weak references to the leaves whose .grad it holds and to those
# tensors (a strong one would keep the bucket alive through leaf.grad)
_BUCKETS = weakref.WeakKeyDictionary()


class _Probe:
    """An object held as the candidates are, to read what holding costs in references."""


def _sole_views(candidates, kept):
    """``{id(storage): [tensors over it]}`` for the candidates that nothing but those
    tensors (and the two lists given) holds: a reference count beyond that means
    another holder (one the garbage collector cannot see, or an object older than the
    trace, which ``gc.freeze`` hides from it)."""
    ids = {id(st) for st in candidates}
    views = {key: [] for key in ids}
    others = set()
    for holder in gc.get_referrers(*candidates):
        if holder is candidates or holder is kept:
            continue
        if isinstance(holder, Tensor) and id(holder._storage) in ids:
            views[id(holder._storage)].append(holder)
        else:
            others.update(id(x) for x in gc.get_referents(holder) if id(x) in ids)
    probe = _Probe()
    counts = {}
    for st in [*candidates, probe]:
        counts[id(st)] = sys.getrefcount(st)
    # a candidate is held by candidates, kept and the loop's list and name; the probe
    # by its own name and the loop's list and name
    base = counts.pop(id(probe)) + 1
    sole = {}
    for st in candidates:
        tensors = views[id(st)]
        if id(st) not in others and tensors and counts[id(st)] == base + len(tensors):
            sole[id(st)] = tensors
    return sole
