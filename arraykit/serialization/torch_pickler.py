"""The ``data.pkl`` of a PyTorch checkpoint, written opcode by opcode (protocol 2).

Python's pickler would import the modules of the globals it names (torch); this
writer emits the few opcodes a checkpoint needs and names only globals that
``torch.load(weights_only=True)`` allows: ``torch._utils._rebuild_tensor_v2`` (and
``_v3`` for the dtypes PyTorch keeps in untyped storages), ``_rebuild_parameter``,
the storage classes, dtypes, ``collections.OrderedDict``, ``builtins.set``,
``builtins.complex``, ``_codecs.encode`` (bytes) and ``torch.Size``. Each tensor
names its storage by key as a persistent id; a storage met again is named by the
same key, so PyTorch loads views of one storage as views of one storage.
"""

from __future__ import annotations

import collections
import struct

import jax
import numpy as np

from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import addressable
from ..tensors.size import Size
from ..tensors.tensor_type import _MARKS, Tensor
from . import torch_names as N

_BATCH = 1000  # items per APPENDS / SETITEMS, as Python's pickler batches them


class Storages:
    """The storages a pickle names, by key: ``(key, storage or values, dtype, location)``."""

    def __init__(self):
        self.entries = []
        self._keys = {}

    def key_of(self, storage, location):
        """The key of ``storage`` (an arraykit storage), new when first met."""
        key = self._keys.get(id(storage))
        if key is None:
            key = self._keys[id(storage)] = str(len(self.entries))
            self.entries.append((key, storage, storage.dtype, location))
        return key

    def add_values(self, values, dtype, location):
        """A new key for a storage holding the host array ``values`` (a tensor's copy)."""
        key = str(len(self.entries))
        self.entries.append((key, values, dtype, location))
        return key


class _Pickle:
    def __init__(self):
        self.out = bytearray(b"\x80\x02")  # PROTO 2
        self.storages = Storages()
        self.active = set()

    def op(self, code, data=b""):
        self.out += code + data

    def glob(self, module, name):
        self.op(b"c", f"{module}\n{name}\n".encode())

    def call(self, module, name, args, path):
        """``module.name(*args)``: the global, the arguments as a tuple, REDUCE."""
        self.glob(module, name)
        self.tuple(args, path)
        self.op(b"R")

    def tuple(self, items, path):
        if not items:
            return self.op(b")")
        if len(items) > 3:
            self.op(b"(")
        for i, v in enumerate(items):
            self.value(v, f"{path}[{i}]")
        self.op(b"t" if len(items) > 3 else bytes([0x84 + len(items)]))

    def int(self, v):
        if 0 <= v < 256:
            self.op(b"K", bytes([v]))
        elif 0 <= v < 65536:
            self.op(b"M", struct.pack("<H", v))
        elif -2**31 <= v < 2**31:
            self.op(b"J", struct.pack("<i", v))
        else:
            data = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
            if len(data) > 255:
                raise TypeError(f"save(format='torch'): the integer {v} is too large")
            self.op(b"\x8a", bytes([len(data)]) + data)

    def str(self, v):
        data = v.encode("utf-8", "surrogatepass")
        self.op(b"X", struct.pack("<I", len(data)) + data)

    def items(self, pairs, path, setitems):
        """MARK ... APPENDS/SETITEMS in batches onto the list or dict on the stack."""
        for start in range(0, len(pairs), _BATCH):
            self.op(b"(")
            for k, v in pairs[start:start + _BATCH]:
                if setitems:
                    self.value(k, f"{path} key {k!r:.40}")
                self.value(v, f"{path}[{k!r:.40}]")
            self.op(b"u" if setitems else b"e")

    def value(self, obj, path):
        kind = type(obj)
        if obj is None:
            return self.op(b"N")
        if kind is bool:
            return self.op(b"\x88" if obj else b"\x89")
        if kind is int:
            return self.int(obj)
        if kind is float:
            return self.op(b"G", struct.pack(">d", obj))
        if kind is str:
            return self.str(obj)
        if isinstance(obj, (np.bool_, np.integer, np.floating)):
            return self.value(obj.item(), path)
        if isinstance(obj, Tensor):
            return self.tensor(obj, path)
        if isinstance(obj, D.DType):
            return self.glob("torch", N.dtype_name(obj))
        if kind is complex:
            return self.call("__builtin__", "complex", (obj.real, obj.imag), path)
        if kind is bytes:
            return self.call("_codecs", "encode", (obj.decode("latin1"), "latin1"), path)
        if kind is Size:
            return self.call("torch", "Size", (tuple(obj),), path)
        if kind not in (list, tuple, dict, collections.OrderedDict, set):
            raise TypeError(f"save(format='torch'): cannot save an object of type {kind.__qualname__} at {path}")
        if id(obj) in self.active:
            raise TypeError(f"save(format='torch'): the {kind.__name__} at {path} contains itself")
        self.active.add(id(obj))
        if kind is tuple:
            self.tuple(obj, path)
        elif kind is list:
            self.op(b"]")
            self.items(list(enumerate(obj)), path, setitems=False)
        elif kind is set:
            self.glob("__builtin__", "set")
            self.op(b"]")
            self.items(list(enumerate(obj)), path, setitems=False)
            self.op(b"\x85R")  # TUPLE1, REDUCE
        else:
            if kind is dict:
                self.op(b"}")
            else:
                self.call("collections", "OrderedDict", (), path)
            self.items(list(obj.items()), path, setitems=True)
        self.active.discard(id(obj))
        return None

    def tensor(self, t, path):
        parameter = "parameter" in _MARKS and _MARKS["parameter"][0](t)
        if parameter:
            self.glob("torch._utils", "_rebuild_parameter")
            self.op(b"(")
        st, lay, dtype = t._storage, t._layout, t.dtype
        if isinstance(st._buffer, jax.core.Tracer):
            raise TypeError(f"save(format='torch'): the tensor at {path} is traced (inside a JAX transform)")
        location = N.location(st.device)
        if dtype is st.dtype and all(s >= 0 for s in lay.strides) and not _split(st):
            key, size, offset, strides = self.storages.key_of(st, location), st.size(), lay.offset, lay.strides
        else:  # negative strides (PyTorch has none) or a reinterpreted storage: the values alone
            values = np.ascontiguousarray(t.detach().numpy())
            key, size, offset = self.storages.add_values(values, dtype, location), values.size, 0
            strides = L.contiguous_strides(lay.shape)
        self.storage_tensor(key, dtype, location, size, offset, lay.shape, strides,
                            bool(t.requires_grad) and not parameter, path)
        if parameter:
            self.value(bool(t.requires_grad), path)
            self.call("collections", "OrderedDict", (), path)
            self.op(b"tR")  # TUPLE, REDUCE

    def storage_tensor(self, key, dtype, location, size, offset, shape, strides, requires_grad, path):
        """``_rebuild_tensor_v2`` (``_v3`` for an untyped storage) of a view of storage ``key``."""
        typed = N.storage_name(dtype)
        self.glob("torch._utils", "_rebuild_tensor_v2" if typed else "_rebuild_tensor_v3")
        self.op(b"((")  # the arguments' MARK, the persistent id's MARK
        self.str("storage")
        if typed:
            self.glob("torch", typed)
        else:
            self.glob("torch.storage", "UntypedStorage")
        self.str(key)
        self.str(location)
        self.int(size if typed else size * dtype.itemsize)
        self.op(b"tQ")  # TUPLE, BINPERSID
        self.int(offset)
        self.tuple(tuple(shape), path)
        self.tuple(tuple(strides), path)
        self.value(requires_grad, path)
        self.call("collections", "OrderedDict", (), path)
        if not typed:
            self.glob("torch", N.dtype_name(dtype))
        self.op(b"tR")  # TUPLE, REDUCE


def _split(st):
    """Whether ``st`` is spread over several processes (this one lacks some values)."""
    return not addressable(st.device) and not st.buffer.is_fully_replicated


def dumps(obj):
    """``(pickle bytes, Storages)`` of ``obj`` for a PyTorch checkpoint's ``data.pkl``."""
    pickle = _Pickle()
    pickle.value(obj, "obj")
    pickle.op(b".")  # STOP
    return bytes(pickle.out), pickle.storages
