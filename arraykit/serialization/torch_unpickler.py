"""The restricted unpickler of PyTorch checkpoints' ``data.pkl``.

It builds what ``torch.load(weights_only=True)`` builds and nothing else: dicts,
lists, tuples, sets, ``OrderedDict``/``Counter``, ints, floats, complex numbers,
strings, bytes, None, PyTorch dtypes, devices and sizes, and tensors. Every global
a pickle names is looked up in an allow-list (:data:`ALLOWED`), never imported; a
name outside it (``os.system``, ``builtins.eval``, a model class) is refused with an
error naming it, before anything it would build exists. torch itself is never
imported: the allowed names map to inert stand-ins, and tensors come out as
:class:`TensorRecord` (a storage key plus a layout), turned into arraykit tensors
only after the whole pickle was read and checked (:mod:`.torch_reader`).
"""

from __future__ import annotations

import collections
import io
import pickle

from ..core import dtypes as D
from ..tensors.size import Size
from . import torch_names as N


class RefusedCheckpoint(ValueError):
    """A PyTorch checkpoint holds something the restricted loader does not build."""


class StorageRecord:
    """A storage a checkpoint names: its ``key`` (the member ``data/<key>``), ``dtype``
    (None for an ``UntypedStorage``, typed by the tensors over it), saved ``location``
    and size in bytes."""

    __slots__ = ("key", "dtype", "location", "nbytes")

    def __init__(self, key, dtype, location, nbytes):
        self.key, self.dtype, self.location, self.nbytes = key, dtype, location, nbytes

    def __reduce__(self):
        raise RefusedCheckpoint("a storage record cannot be pickled")

    def __setstate__(self, state):
        raise RefusedCheckpoint("the pickle sets attributes of a storage")


class TensorRecord:
    """A tensor a checkpoint describes: a view (``shape``, ``strides``, ``offset`` in
    elements) of ``dtype`` over the storage ``storage``."""

    __slots__ = ("storage", "dtype", "offset", "shape", "strides", "requires_grad", "parameter")

    def __init__(self, storage, dtype, offset, shape, strides, requires_grad):
        self.storage, self.dtype, self.offset = storage, dtype, offset
        self.shape, self.strides, self.requires_grad = shape, strides, requires_grad
        self.parameter = False

    def __reduce__(self):
        raise RefusedCheckpoint("a tensor record cannot be pickled")

    def __setstate__(self, state):
        raise RefusedCheckpoint("the pickle sets attributes of a tensor")


class _StorageType:
    """What ``torch.FloatStorage`` (and the other storage classes) stand for: a dtype."""

    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


class _TensorType:
    """What ``torch.Tensor`` and ``torch.nn.Parameter`` stand for in ``_rebuild_from_type_v2``."""

    __slots__ = ("name", "parameter")

    def __init__(self, name, parameter):
        self.name, self.parameter = name, parameter


def _integer(value, what, low=0):
    if type(value) is not int or value < low:
        raise RefusedCheckpoint(f"{what} must be an integer >= {low}, got {value!r}")
    return value


def _sizes(value, what):
    if not isinstance(value, tuple):
        raise RefusedCheckpoint(f"{what} must be a tuple, got {type(value).__name__}")
    return tuple(_integer(v, f"each of {what}") for v in value)


def _empty(value, what):
    if value is not None and (not isinstance(value, dict) or value):
        raise RefusedCheckpoint(f"{what} {value!r} are not supported (only empty ones)")


def _tensor(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
            dtype=None, metadata=None):
    if not isinstance(storage, StorageRecord):
        raise RefusedCheckpoint(f"a tensor's storage must be a persistent storage record, got {storage!r}")
    if dtype is None:
        dtype = storage.dtype
        if dtype is None:
            raise RefusedCheckpoint(f"storage {storage.key!r} is untyped and the tensor names no dtype")
    elif not isinstance(dtype, D.DType):
        raise RefusedCheckpoint(f"a tensor's dtype must be a torch dtype, got {dtype!r}")
    elif storage.dtype is not None and storage.dtype is not dtype:
        raise RefusedCheckpoint(f"storage {storage.key!r} of {storage.dtype} read as {dtype}")
    shape, strides = _sizes(size, "a tensor's size"), _sizes(stride, "a tensor's stride")
    if len(shape) != len(strides):
        raise RefusedCheckpoint(f"a tensor's size {shape} and stride {strides} differ in length")
    if type(requires_grad) is not bool:
        raise RefusedCheckpoint(f"requires_grad must be a bool, got {requires_grad!r}")
    _empty(backward_hooks, "backward hooks")
    _empty(metadata, "tensor metadata")
    return TensorRecord(storage, dtype, _integer(storage_offset, "a storage offset"), shape, strides,
                        requires_grad)


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _tensor(storage, storage_offset, size, stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       metadata=None):
    return _tensor(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                   metadata=metadata)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    return _tensor(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                   metadata)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    if not isinstance(data, TensorRecord) or type(requires_grad) is not bool:
        raise RefusedCheckpoint("a parameter must be rebuilt from a tensor and a bool")
    _empty(backward_hooks, "backward hooks")
    data.requires_grad, data.parameter = requires_grad, True
    return data


def _no_state(state, what):
    """Refuse Python attributes (``state``: a dict, or a (dict, slots) pair) on a tensor."""
    if any(state if isinstance(state, tuple) else (state,)):
        raise RefusedCheckpoint(f"{what} with Python attributes {state!r:.80} is not supported")


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    _no_state(state, "a parameter")
    return _rebuild_parameter(data, requires_grad, backward_hooks)


_REBUILDERS = (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3)


def _rebuild_from_type_v2(func, new_type, args, state):
    if func not in _REBUILDERS + (_rebuild_parameter,) or not isinstance(new_type, _TensorType):
        raise RefusedCheckpoint(f"_rebuild_from_type_v2 of {func!r} as {new_type!r} is not supported")
    if not isinstance(args, tuple):
        raise RefusedCheckpoint("_rebuild_from_type_v2's arguments must be a tuple")
    _no_state(state, "a tensor")
    record = func(*args)
    record.parameter = record.parameter or new_type.parameter
    return record


def _device(kind, index=None):
    """``torch.device``'s stand-in: the device's name, ``'cpu'`` or ``'cuda:0'``."""
    if not isinstance(kind, str) or (index is not None and type(index) is not int):
        raise RefusedCheckpoint(f"torch.device({kind!r}, {index!r}) is not a device")
    return kind if index is None else f"{kind}:{index}"


def _size(values=()):
    return Size(_sizes(tuple(values), "torch.Size"))


def _encode(text, encoding="latin1"):
    """``_codecs.encode``, as protocol 2 pickles spell bytes: only ``latin1`` text."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1", "latin_1"):
        raise RefusedCheckpoint(f"_codecs.encode({text!r:.40}, {encoding!r}) is not bytes in latin1")
    return text.encode("latin1")


def _bytearray(data=b"", encoding=None):
    """``bytearray`` of bytes, or of text with its encoding (protocol 2's spelling);
    never of a size (a pickle could ask for any amount of memory)."""
    if isinstance(data, str) and encoding is not None:
        return bytearray(_encode(data, encoding))
    if isinstance(data, (bytes, bytearray)) and encoding is None:
        return bytearray(data)
    raise RefusedCheckpoint(f"bytearray({data!r:.40}, {encoding!r}) is not made from bytes")


def _complex(real=0.0, imag=0.0):
    if not all(isinstance(v, (int, float)) for v in (real, imag)):
        raise RefusedCheckpoint(f"complex({real!r:.40}, {imag!r:.40}) is not a number")
    return complex(real, imag)


def _allowed():
    allowed = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("collections", "Counter"): collections.Counter,
        ("builtins", "set"): set,
        ("builtins", "frozenset"): frozenset,
        ("builtins", "bytearray"): _bytearray,
        ("builtins", "complex"): _complex,
        ("_codecs", "encode"): _encode,
        ("torch", "device"): _device,
        ("torch", "Size"): _size,
        ("torch", "Tensor"): _TensorType("torch.Tensor", False),
        ("torch.nn.parameter", "Parameter"): _TensorType("torch.nn.Parameter", True),
        ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    }
    for f in _REBUILDERS + (_rebuild_parameter, _rebuild_parameter_with_state):
        allowed["torch._utils", f.__name__] = f
    for name, dtype in N.STORAGE_DTYPES.items():
        allowed["torch", name] = _StorageType(name, dtype)
    for module, name in N.UNTYPED_STORAGES:
        allowed[module, name] = _StorageType(name, None)
    for name, dtype in N.DTYPES.items():
        allowed["torch", name] = dtype
    return allowed


ALLOWED = _allowed()
# what protocol 2 pickles name Python 3's modules by
_PYTHON2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}


class _Unpickler(pickle.Unpickler):
    """``pickle.Unpickler`` with :data:`ALLOWED` as its only globals and PyTorch's
    storage records as its persistent ids."""

    def __init__(self, data):
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self.storages = {}

    def find_class(self, module, name):
        """The stand-in of an allowed global; RefusedCheckpoint for any other."""
        module = _PYTHON2_MODULES.get(module, module)
        found = ALLOWED.get((module, name))
        if found is not None:
            return found
        if module == "torch" and (name in N.UNSUPPORTED_DTYPES or name in N.UNSUPPORTED_STORAGES):
            raise RefusedCheckpoint(f"the checkpoint holds torch.{name} data, a dtype arraykit does not have")
        raise RefusedCheckpoint(
            f"the checkpoint's pickle names the global {module}.{name}, which the restricted "
            "loader does not build (the globals of torch.load(weights_only=True) only: "
            "tensors, containers, numbers, strings, dtypes)"
        )

    def persistent_load(self, pid):
        """A :class:`StorageRecord` for ``('storage', type, key, location, size)``; one per key."""
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise RefusedCheckpoint(f"unknown persistent id {pid!r:.80}")
        _, kind, key, location, numel = pid
        if not isinstance(kind, _StorageType) or not isinstance(key, str) or not isinstance(location, str):
            raise RefusedCheckpoint(f"bad storage record {pid!r:.80}")
        numel = _integer(numel, f"the size of storage {key!r}")
        nbytes = numel * (kind.dtype.itemsize if kind.dtype is not None else 1)
        record = self.storages.get(key)
        if record is None:
            record = self.storages[key] = StorageRecord(key, kind.dtype, location, nbytes)
        elif (record.dtype, record.location, record.nbytes) != (kind.dtype, location, nbytes):
            raise RefusedCheckpoint(f"storage {key!r} is described twice, differently")
        return record


def unpickle(data):
    """``(object, {key: StorageRecord})`` of the pickle ``data``: containers and scalars
    as Python builds them, tensors as :class:`TensorRecord`. Raises RefusedCheckpoint
    naming what is not allowed, ValueError for a damaged pickle."""
    unpickler = _Unpickler(data)
    try:
        obj = unpickler.load()
    except RefusedCheckpoint:
        raise
    except (pickle.UnpicklingError, EOFError, TypeError, ValueError, IndexError, KeyError,
            AttributeError, RecursionError, MemoryError, OverflowError) as error:
        raise ValueError(f"the checkpoint's pickle is damaged ({type(error).__name__}: {error})") from None
    return obj, unpickler.storages

