"""Reading PyTorch's zip checkpoints (what ``torch.save`` writes) without torch.

The archive holds ``<name>/data.pkl``, a pickle whose tensors name their storages
by key, and each storage's raw bytes as ``<name>/data/<key>`` (stored, aligned).
Loading happens in three steps, so a refused file leaves nothing half-built:

1. the pickle is read by the restricted unpickler (:mod:`.torch_unpickler`), which
   builds only containers, scalars and tensor descriptions;
2. every storage is checked against its data record (present, of the size the
   pickle states) and every tensor's view against its storage (sizes, strides and
   offset inside it), and the object tree is checked to hold only allowed types;
3. the storages are read (or mapped, ``mmap=True``) once each and the tensors made
   as views of them, so tensors that shared a storage when saved share one again.
"""

from __future__ import annotations

import collections
import sys
import zipfile

import numpy as np

from ..core import dtypes as D
from ..core import layout as L
from ..tensors.size import Size
from ..tensors.tensor_type import _MARKS, Tensor
from .host_tensors import storage_from_host
from .torch_locations import Placer
from .torch_unpickler import RefusedCheckpoint, StorageRecord, TensorRecord, unpickle
from .zip_members import CorruptMember, data_offset

_LEAVES = (type(None), bool, int, float, complex, str, bytes, bytearray, D.DType, Size)
_MAX_DEPTH = 100  # checkpoints nest a few levels; Python's own recursion stays far away


def checkpoint_prefix(zf):
    """The folder of the archive's ``data.pkl`` (``'archive/'``), or None when the zip
    file is not a PyTorch checkpoint."""
    found = [n[:-len("data.pkl")] for n in zf.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    return found[0] if len(found) == 1 else None


def is_torch_checkpoint(zf):
    """Whether the zip file ``zf`` is laid out as PyTorch's checkpoints are."""
    return checkpoint_prefix(zf) is not None


def load(zf, file, path, map_location):
    """The object of the PyTorch checkpoint open as ``zf`` (``file`` its file object;
    ``path`` given to map the storages)."""
    try:
        return _load(zf, file, path, Placer(map_location))
    except RefusedCheckpoint as error:
        raise RefusedCheckpoint(f"load(): PyTorch checkpoint refused: {error}") from None
    except (zipfile.BadZipFile, CorruptMember, EOFError, OSError) as error:
        raise ValueError(f"load(): damaged PyTorch checkpoint ({error})") from None


def _load(zf, file, path, placer):
    prefix = checkpoint_prefix(zf)
    swap = _byte_order(zf, prefix) != sys.byteorder
    try:
        pickled = zf.read(prefix + "data.pkl")
    except zipfile.BadZipFile as error:
        raise ValueError(f"load(): damaged PyTorch checkpoint ({error})") from None
    try:
        obj, _ = unpickle(pickled)
    except RefusedCheckpoint:
        raise
    except ValueError as error:
        raise ValueError(f"load(): damaged PyTorch checkpoint: {error}") from None
    tensors = []
    _collect(obj, tensors, set(), 0)
    views = {}
    for record in tensors:
        views.setdefault((record.storage.key, record.dtype), []).append(record)
    infos = {(key, dtype): _record_info(zf, prefix, records[0].storage, dtype)
             for (key, dtype), records in views.items()}
    for (key, dtype), records in views.items():
        size = records[0].storage.nbytes // dtype.itemsize
        for record in records:
            _check_view(record, size)
    storages = {}
    for (key, dtype), records in views.items():
        storages[key, dtype] = _read_storage(zf, file, path, infos[key, dtype], records[0].storage,
                                             dtype, swap, placer)
    return _build(obj, storages, {})


def _byte_order(zf, prefix):
    try:
        order = zf.read(prefix + "byteorder").decode("ascii", "replace").strip()
    except KeyError:
        return "little"  # older files have no record: PyTorch reads them as little-endian
    if order not in ("little", "big"):
        raise RefusedCheckpoint(f"unknown byte order {order[:20]!r} in {prefix}byteorder")
    return order


def _collect(obj, tensors, active, depth):
    """Check that ``obj`` holds only allowed types, collecting its tensor records."""
    if depth > _MAX_DEPTH:
        raise RefusedCheckpoint(f"objects nested more than {_MAX_DEPTH} deep")
    kind = type(obj)
    if isinstance(obj, TensorRecord):
        tensors.append(obj)
        return
    if isinstance(obj, StorageRecord):
        raise RefusedCheckpoint(f"a bare storage ({obj.key!r}) outside a tensor is not supported")
    if kind in _LEAVES:
        return
    if kind not in (dict, collections.OrderedDict, collections.Counter, list, tuple, set, frozenset):
        raise RefusedCheckpoint(f"an object of type {kind.__qualname__}")
    if id(obj) in active:
        raise RefusedCheckpoint(f"a {kind.__name__} that contains itself")
    active.add(id(obj))
    items = obj.items() if isinstance(obj, dict) else ((v, None) for v in obj)
    for key, value in items:
        _collect(key, tensors, active, depth + 1)
        _collect(value, tensors, active, depth + 1)
    active.discard(id(obj))


def _record_info(zf, prefix, storage, dtype):
    """The zip member holding ``storage``'s bytes, checked against its stated size."""
    name = f"{prefix}data/{storage.key}"
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise RefusedCheckpoint(f"storage {storage.key!r} has no data record ({name} is missing)") from None
    if storage.nbytes % dtype.itemsize:
        raise RefusedCheckpoint(
            f"storage {storage.key!r} of {storage.nbytes} bytes does not hold whole {dtype} elements")
    if info.file_size != storage.nbytes:
        raise RefusedCheckpoint(
            f"storage {storage.key!r} is stated as {storage.nbytes} bytes, its record {name} holds "
            f"{info.file_size} bytes")
    return info


def _check_view(record, size):
    """Refuse a tensor whose view reaches outside its storage of ``size`` elements."""
    layout = L.Layout(record.shape, record.strides, record.offset)
    bounds = L.extent(layout)
    if record.offset > size or (bounds is not None and bounds[1] >= size):
        raise RefusedCheckpoint(
            f"a tensor of size {list(record.shape)}, stride {list(record.strides)} and storage "
            f"offset {record.offset} reaches outside its storage {record.storage.key!r} of {size} "
            f"{record.dtype} elements")
    if record.requires_grad and record.dtype.kind not in ("float", "complex"):
        raise RefusedCheckpoint(f"a {record.dtype} tensor that requires grad (only floating-point ones can)")


def _read_storage(zf, file, path, info, storage, dtype, swap, placer):
    size = storage.nbytes // dtype.itemsize
    if path is not None and size and info.compress_type == zipfile.ZIP_STORED:
        values = np.memmap(path, dtype=dtype.np, mode="r", offset=data_offset(file, info), shape=(size,))
    else:
        values = np.frombuffer(zf.read(info), dtype=dtype.np, count=size) if size else np.empty(0, dtype.np)
    if swap:
        values = values.byteswap()
    device = placer.device(storage.location)
    st = storage_from_host(values, device, may_alias=True)
    if placer.remap_with is None:
        return st
    whole = Tensor._make(st, L.contiguous((size,)), dtype)
    moved = placer.remap_with(whole, storage.location)
    if moved is None:
        return st
    if not isinstance(moved, Tensor) or moved.dtype is not dtype or moved.shape != (size,) \
            or moved._layout != L.contiguous((size,)) or moved._storage.size() != size:
        raise TypeError(
            f"load(): map_location({storage.location!r}) must return the tensor it was given, "
            f"moved (a 1-D {dtype} tensor of {size} elements over all of its storage), got {moved!r:.80}")
    return moved._storage


def _build(obj, storages, built):
    """``obj`` with its tensor records made tensors over ``storages``; an object met
    twice (shared in the pickle) is built once."""
    done = built.get(id(obj))
    if done is not None:
        return done
    kind = type(obj)
    if kind is TensorRecord:
        out = _tensor(obj, storages[obj.storage.key, obj.dtype])
    elif kind in (list, tuple, set, frozenset):
        out = kind(_build(v, storages, built) for v in obj)
    elif kind in (dict, collections.OrderedDict, collections.Counter):
        out = kind()
        for k, v in obj.items():
            out[_build(k, storages, built)] = _build(v, storages, built)
    else:
        return obj
    built[id(obj)] = out
    return out


def _tensor(record, storage):
    t = Tensor._make(storage, L.Layout(record.shape, record.strides, record.offset), record.dtype)
    if record.parameter and "parameter" in _MARKS:
        t = _MARKS["parameter"][1](t)
    if record.requires_grad != t.requires_grad:
        t.requires_grad_(record.requires_grad)
    return t
