"""arraykit's own checkpoint format (the default of :func:`arraykit.save`), and the
``.npy``/``.npz`` files :func:`arraykit.load` reads.

The file is an uncompressed zip archive (``ZIP_STORED``) holding

* ``arraykit.json``: the object tree, in JSON. Dicts (str, int, bool, None or
  float keys; ``OrderedDict`` kept), lists, tuples, None, bool, int, float,
  complex, str and arraykit dtypes are written as tagged JSON nodes; a tensor is a
  reference to a storage plus its shape, strides, offset, dtype and
  ``requires_grad``;
* ``storages/<i>``: each distinct storage's whole buffer once, raw little-endian
  bytes, aligned to 64 bytes in the file.

Tensors spread over the devices of several processes (``jax.distributed``) are
saved by every process's call together. A replicated one is written once, by
process 0, from its own copy. One split over the processes is written as pieces:
each distinct block of its global array once, by the lowest process holding it
(``storages/<i>/<k>``, in the file for process 0 and in ``<file>.process<p>`` for
process p), and the manifest lists every block's place. Only process 0 writes the
file itself. Loading reads every piece and assembles the whole tensor, so a
checkpoint loads on any number of processes, placed by ``map_location``.

Tensors that shared a storage when saved share one storage after loading, with
the same layouts, so a write through one is seen through the other, as in PyTorch.
Loading reads only JSON and raw bytes: nothing in the file is executed (``.npy``
object arrays, which are pickles, are refused).
"""

from __future__ import annotations

import collections
import json
import os
import struct
import sys
import zipfile

import jax
import numpy as np

from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import Placement, addressable, as_device, one_cpu, require_addressable
from ..tensors.tensor_type import Tensor
from .host_tensors import storage_from_host, tensor_from_host
from .zip_members import CorruptMember, data_offset, write_aligned_member

FORMAT = "arraykit"
VERSION = 1
MANIFEST = "arraykit.json"
ALIGN = 64
_PAD_ID = 0x4B41  # the extra-field record that pads a member's data to ALIGN bytes
_SCALARS = (type(None), bool, int, float, str)


class _Writer:
    """Walks the object to save: JSON nodes plus the distinct storages met."""

    def __init__(self):
        self.storages = {}

    def node(self, obj, path):
        kind = type(obj)
        if kind in _SCALARS:
            return obj
        if isinstance(obj, Tensor):
            return self.tensor(obj, path)
        if kind is complex:
            return {"t": "complex", "v": [obj.real, obj.imag]}
        if kind in (list, tuple):
            items = [self.node(v, f"{path}[{i}]") for i, v in enumerate(obj)]
            return {"t": kind.__name__, "v": items}
        if kind in (dict, collections.OrderedDict):
            items = []
            for k, v in obj.items():
                if type(k) not in _SCALARS:
                    raise TypeError(
                        f"save(): dict keys must be str, int, float, bool or None; got a "
                        f"{type(k).__name__} key at {path}"
                    )
                items.append([k, self.node(v, f"{path}[{k!r}]")])
            return {"t": "dict" if kind is dict else "odict", "v": items}
        if isinstance(obj, D.DType):
            return {"t": "dtype", "v": obj.name}
        if isinstance(obj, (np.bool_, np.integer, np.floating)):
            return obj.item()
        raise TypeError(f"save(): cannot save an object of type {kind.__qualname__} at {path}")

    def tensor(self, t, path):
        st = t._storage
        if isinstance(st._buffer, jax.core.Tracer):
            raise TypeError(f"save(): the tensor at {path} is traced (inside a JAX transform)")
        if t.dtype is not st.dtype:
            raise TypeError(f"save(): the tensor at {path} reinterprets its {st.dtype} storage")
        index = self.storages.setdefault(id(st), (len(self.storages), st))[0]
        lay = t._layout
        return {
            "t": "tensor", "storage": index, "shape": list(lay.shape),
            "strides": list(lay.strides), "offset": lay.offset, "dtype": t.dtype.name,
            "requires_grad": bool(getattr(t, "requires_grad", False)),
        }


def _device_name(device):
    """The device's name in a checkpoint; a placement over several devices (a mesh)
    is saved as its platform: it loads onto that platform's first device, or onto a
    sharding given as ``map_location``."""
    if isinstance(device, Placement):
        return device.platform
    return f"{device.platform}:{jax.local_devices(backend=device.platform).index(device)}"


def _little(values):
    return values.byteswap() if sys.byteorder != "little" else values


def _host_values(st):
    """The storage's whole buffer as a flat little-endian NumPy array (a snapshot).
    A tensor replicated over several processes is read from this process's copy."""
    require_addressable(st.device, "save()", st._buffer)
    with st.lock:
        if one_cpu(st.device):
            values = np.array(st.host_view())
        else:
            values = np.asarray(jax.device_get(st.buffer)).reshape(-1)
    return _little(values)


def _split(st):
    """Whether the storage is split over the devices of several processes (this
    process does not hold a whole copy)."""
    return not addressable(st.device) and not st.buffer.is_fully_replicated


def _block(index, shape):
    """A shard's index (slices) as ``((start, stop), ...)`` per dimension."""
    return tuple(tuple(s.indices(n)[:2]) for s, n in zip(index, shape))


def _pieces(buf):
    """The distinct blocks of the global array ``buf`` as ``[(block, process)]``: each
    held by several devices (replicas) is written once, by the lowest process holding it."""
    owners = {}
    for device, index in buf.sharding.devices_indices_map(buf.shape).items():
        block = _block(index, buf.shape)
        owners[block] = min(owners.get(block, device.process_index), device.process_index)
    return sorted(owners.items())


def _piece_values(st, block):
    """This process's values of ``block`` of the split storage ``st``, flat, little-endian."""
    with st.lock:
        buf = st.buffer
        shard = next(s for s in buf.addressable_shards if _block(s.index, buf.shape) == block)
        return _little(np.asarray(shard.data).reshape(-1))


def _storage_spec(st):
    spec = {"dtype": st.dtype.name, "size": st.size(), "device": _device_name(st.device)}
    if _split(st):
        spec["shape"] = list(st.buffer.shape)
        spec["pieces"] = [{"index": [list(b) for b in block], "process": p}
                          for block, p in _pieces(st.buffer)]
    return spec


def _members(storages, specs, process):
    """``(member name, function giving its values)`` that ``process`` writes."""
    for (i, st), spec in zip(storages, specs):
        if "pieces" not in spec:
            if process == 0:
                yield f"storages/{i}", lambda st=st: _host_values(st)
            continue
        for k, piece in enumerate(spec["pieces"]):
            if piece["process"] == process:
                block = tuple(tuple(b) for b in piece["index"])
                yield f"storages/{i}/{k}", lambda st=st, block=block: _piece_values(st, block)


def _side_file(path, process):
    """Where process ``process`` (> 0) writes its pieces of the checkpoint at ``path``."""
    return f"{os.fspath(path)}.process{process}"


def save(obj, f):
    """Save tensors in nested dicts/lists/tuples with Python scalars to ``f``.

    ``f`` is a path (written exactly as given, no suffix added) or a binary file
    object (written from its current position). Each storage is written once;
    views keep their layouts. Raises TypeError naming the type and where it sits
    in ``obj`` for anything else.

    With tensors spread over several processes and a path, only process 0 writes
    ``f``: every process may call it, and must when a tensor is split over the
    processes (each then writes its own blocks to ``f.process<rank>``, see the
    module docstring; no process waits for another). A file object cannot hold
    split tensors (ValueError).
    """
    writer = _Writer()
    root = writer.node(obj, "obj")
    storages = sorted(writer.storages.values(), key=lambda e: e[0])
    specs = [_storage_spec(st) for _, st in storages]
    manifest = {"format": FORMAT, "version": VERSION, "root": root, "storages": specs}
    text = json.dumps(manifest, allow_nan=True).encode()
    if not isinstance(f, (str, os.PathLike)):
        if any("pieces" in spec for spec in specs):
            raise ValueError(
                "save(): tensors split over several processes are written by each process "
                "to files next to the checkpoint: pass a path, not a file object"
            )
        _save_zip(f, text, _members(storages, specs, 0))
        return
    process = jax.process_index() if any(not addressable(st.device) for _, st in storages) else 0
    if process == 0:
        with open(f, "wb") as file:
            _save_zip(file, text, _members(storages, specs, 0))
        return
    members = list(_members(storages, specs, process))
    if members:
        with open(_side_file(f, process), "wb") as file:
            _save_zip(file, None, members)


def _save_zip(file, text, members):
    with zipfile.ZipFile(file, "w", zipfile.ZIP_STORED) as zf:
        if text is not None:
            write_aligned_member(zf, MANIFEST, text, ALIGN, _PAD_ID)
        for name, values in members:
            write_aligned_member(zf, name, values().view(np.uint8), ALIGN, _PAD_ID)


# ---------------------------------------------------------------------- load


class _Corrupt(ValueError):
    pass


def _check(cond, what):
    if not cond:
        raise _Corrupt(what)


def location(spec):
    """The device or placement ``map_location`` names (None: each tensor's saved device)."""
    if spec is None:
        return None
    if isinstance(spec, (str, jax.Device, jax.sharding.Sharding)):
        return as_device(spec)
    raise TypeError(
        "load(): map_location must be a device, a device string or a JAX sharding for an "
        f"arraykit checkpoint, got {spec!r}"
    )


def is_readable_zip(zf):
    """Whether the zip file ``zf`` is an arraykit checkpoint or a ``.npz`` file."""
    names = zf.namelist()
    return MANIFEST in names or (bool(names) and all(n.endswith(".npy") for n in names))


def from_zip(zf, file, path, device, origin):
    """The object of the arraykit checkpoint or ``.npz`` file open as ``zf`` (see
    :func:`is_readable_zip`). ``path`` is given to map storages (``mmap=True``),
    ``origin`` (the file's path) to find the other processes' files."""
    names = zf.namelist()
    try:
        if MANIFEST in names:
            with _SideFiles(origin) as sides:
                return _from_checkpoint(zf, file, path, device, sides)
        return from_npz(file, device)
    except (_Corrupt, CorruptMember, zipfile.BadZipFile, KeyError, RecursionError, struct.error) as error:
        raise ValueError(f"load(): corrupted arraykit checkpoint ({error})") from None


def from_npy(file, path, device):
    """The tensor of a ``.npy`` file (mapped when ``path`` is given); pickles are refused."""
    device = device or as_device(None)
    try:
        arr = np.load(path if path else file, mmap_mode="r" if path else None, allow_pickle=False)
    except ValueError as error:
        raise ValueError(f"load(): cannot load this .npy file without unpickling ({error})") from None
    return tensor_from_host(arr, device, may_alias=path is not None)


def from_npz(file, device):
    """The dict of tensors of a ``.npz`` file; pickles are refused."""
    device = device or as_device(None)
    file.seek(0)
    out = {}
    try:
        with np.load(file, allow_pickle=False) as npz:
            for name in npz.files:
                out[name] = tensor_from_host(npz[name], device, may_alias=True)
    except ValueError as error:
        raise ValueError(f"load(): cannot load this .npz file without unpickling ({error})") from None
    return out


class _SideFiles:
    """The other processes' files of a checkpoint at ``origin``, opened when first read."""

    def __init__(self, origin):
        self.origin = origin
        self.open = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for zf in self.open.values():
            zf.close()

    def __call__(self, process):
        if process not in self.open:
            if self.origin is None:
                raise ValueError(
                    "load(): this checkpoint holds tensors split over several processes, whose "
                    "blocks are in files next to it: pass its path, not a file object"
                )
            name = _side_file(self.origin, process)
            if not os.path.exists(name):
                raise ValueError(
                    f"load(): {name} is missing: it holds process {process}'s blocks of the "
                    f"tensors split over processes in {self.origin} (every process must call "
                    "save() for such a checkpoint)"
                )
            self.open[process] = zipfile.ZipFile(name)
        return self.open[process]


def _from_checkpoint(zf, file, path, device, sides):
    try:
        manifest = json.loads(zf.read(MANIFEST))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _Corrupt(f"unreadable {MANIFEST}: {error}") from None
    _check(isinstance(manifest, dict) and manifest.get("format") == FORMAT, "not an arraykit manifest")
    _check(manifest.get("version") == VERSION, f"unsupported version {manifest.get('version')!r}")
    specs = manifest.get("storages")
    _check(isinstance(specs, list), "no storage list")
    storages = [_read_storage(zf, file, path, i, spec, device, sides) for i, spec in enumerate(specs)]
    return _build(manifest.get("root"), storages)


def _saved_device(name):
    """The device a checkpoint names (``'cpu:1'``): this process's device of that
    platform and index among the process's own devices (as it was saved)."""
    platform, _, index = name.partition(":")
    try:
        return jax.local_devices(backend=as_device(platform).platform)[int(index) if index else 0]
    except (ValueError, IndexError, RuntimeError):
        raise ValueError(
            f"load(): the checkpoint was saved from device {name!r}, which this machine "
            "does not have; pass map_location (e.g. map_location='cpu')"
        ) from None


def _assembled(zf, sides, i, spec, dtype):
    """The whole array of split storage ``i`` from its pieces (in this file and the side files)."""
    shape, pieces = spec.get("shape"), spec.get("pieces")
    _check(isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape)
           and isinstance(pieces, list), f"storage {i} has bad pieces")
    whole = np.empty(shape, dtype.np)
    covered = 0
    for k, piece in enumerate(pieces):
        index, process = piece.get("index"), piece.get("process")
        _check(isinstance(index, list) and len(index) == len(shape) and type(process) is int
               and process >= 0 and all(isinstance(b, list) and len(b) == 2 and
                                         all(type(v) is int for v in b) for b in index),
               f"storage {i} piece {k} is badly described")
        target = whole[tuple(slice(a, b) for a, b in index)]
        data = np.frombuffer((zf if process == 0 else sides(process)).read(f"storages/{i}/{k}"), dtype.np)
        _check(data.size == target.size, f"storage {i} piece {k} holds {data.size} values, expected {target.size}")
        target[...] = (data.byteswap() if sys.byteorder != "little" else data).reshape(target.shape)
        covered += target.size
    _check(covered == whole.size, f"the pieces of storage {i} cover {covered} of {whole.size} values")
    return whole


def _read_storage(zf, file, path, i, spec, device, sides):
    _check(isinstance(spec, dict), f"storage {i} is not described")
    try:
        dtype = D.from_name(spec["dtype"])
    except (KeyError, TypeError):
        raise _Corrupt(f"storage {i} has an unknown dtype") from None
    size = spec.get("size")
    _check(type(size) is int and size >= 0, f"storage {i} has a bad size")
    device = device or _saved_device(str(spec.get("device")))
    if "pieces" in spec:
        whole = _assembled(zf, sides, i, spec, dtype)
        _check(whole.size == size, f"storage {i} has {whole.size} values, expected {size}")
        if not isinstance(device, Placement):  # one device: a flat buffer, as written
            whole = whole.reshape(-1)
        return storage_from_host(whole, device, may_alias=True)
    info = zf.getinfo(f"storages/{i}")
    nbytes = size * dtype.itemsize
    _check(info.file_size == nbytes, f"storage {i} holds {info.file_size} bytes, expected {nbytes}")
    _check(info.compress_type == zipfile.ZIP_STORED, f"storage {i} is compressed")
    if path is not None and size:
        offset = data_offset(file, info)
        arr = np.memmap(path, dtype=dtype.np, mode="r", offset=offset, shape=(size,))
    else:
        arr = np.frombuffer(zf.read(info), dtype=dtype.np, count=size)
    if sys.byteorder != "little":
        arr = arr.byteswap()
    if size == 0:
        arr = np.empty(0, dtype.np)
    return storage_from_host(arr, device, may_alias=True)


def _build(node, storages, depth=0):
    _check(depth < 1000, "nesting too deep")
    if node is None or type(node) in (bool, int, float, str):
        return node
    _check(isinstance(node, dict) and "t" in node, f"unknown node {str(node)[:80]!r}")
    tag, value = node["t"], node.get("v")
    if tag in ("list", "tuple"):
        _check(isinstance(value, list), f"bad {tag}")
        items = [_build(v, storages, depth + 1) for v in value]
        return items if tag == "list" else tuple(items)
    if tag in ("dict", "odict"):
        _check(isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value),
               "bad dict")
        pairs = []
        for k, v in value:
            _check(k is None or type(k) in (bool, int, float, str), "bad dict key")
            pairs.append((k, _build(v, storages, depth + 1)))
        return dict(pairs) if tag == "dict" else collections.OrderedDict(pairs)
    if tag == "complex":
        _check(isinstance(value, list) and len(value) == 2, "bad complex")
        return complex(*value)
    if tag == "dtype":
        try:
            return D.from_name(value)
        except (KeyError, TypeError):
            raise _Corrupt(f"unknown dtype {value!r}") from None
    if tag == "tensor":
        return _build_tensor(node, storages)
    raise _Corrupt(f"unknown node type {tag!r}")


def _build_tensor(node, storages):
    index = node.get("storage")
    _check(type(index) is int and 0 <= index < len(storages), "tensor names a missing storage")
    st = storages[index]
    shape, strides, offset = node.get("shape"), node.get("strides"), node.get("offset")
    _check(isinstance(shape, list) and isinstance(strides, list) and len(shape) == len(strides)
           and all(type(n) is int and n >= 0 for n in shape)
           and all(type(s) is int for s in strides) and type(offset) is int, "bad tensor layout")
    _check(node.get("dtype") == st.dtype.name, "tensor and storage dtypes differ")
    lay = L.Layout(shape, strides, offset)
    bounds = L.extent(lay)
    _check(bounds is None or (bounds[0] >= 0 and bounds[1] < st.size()),
           f"tensor layout {lay} is outside its storage of {st.size()} elements")
    t = Tensor._make(st, lay, st.dtype)
    if node.get("requires_grad") and st.node is None:
        t.requires_grad_()
    return t
