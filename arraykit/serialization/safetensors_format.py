"""safetensors files (``.safetensors``), through the ``safetensors`` package.

A safetensors file is an 8-byte little-endian header length, a JSON header (each
tensor's dtype, shape and byte range; optional string metadata) and the tensors'
bytes. The package (the format's own library, the ``safetensors`` extra) checks
and parses files and writes them; the tensors loaded from a path are views of one
read of the file, or of its mapping with ``mmap=True`` (no copy on the CPU).
"""

from __future__ import annotations

import json
import os
import sys

import jax
import numpy as np

from ..core import dtypes as D
from ..core.devices import as_device
from ..tensors.tensor_type import Tensor
from .host_tensors import tensor_from_host

_HEADER_LIMIT = 100_000_000  # the package's own limit on a header's size
_CODES = {
    "BOOL": D.bool_, "U8": D.uint8, "I8": D.int8, "U16": D.uint16, "I16": D.int16,
    "U32": D.uint32, "I32": D.int32, "U64": D.uint64, "I64": D.int64, "F16": D.float16,
    "BF16": D.bfloat16, "F32": D.float32, "F64": D.float64, "C64": D.complex64,
}


def _package():
    try:
        import safetensors
    except ImportError:
        raise ModuleNotFoundError(
            "safetensors files are read and written by the safetensors package: "
            "pip install 'arraykit[safetensors]' (or pip install safetensors)"
        ) from None
    return safetensors


def looks_like(head):
    """Whether a file starting with the bytes ``head`` (16 or more) is a safetensors file."""
    size = int.from_bytes(head[:8], "little")
    return len(head) > 8 and head[8:9] == b"{" and 2 <= size <= _HEADER_LIMIT


def _dtype(code, name):
    dtype = _CODES.get(code)
    if dtype is None:
        raise ValueError(f"load(): tensor {name!r} of the safetensors file has dtype {code}, which arraykit does not have")
    return dtype


def _device(map_location):
    if map_location is None or isinstance(map_location, (str, jax.Device, jax.sharding.Sharding)):
        return as_device(map_location)
    raise TypeError(f"load(): map_location must be a device or a device string for a safetensors file, got {map_location!r}")


def load(file, origin, mmap, map_location):
    """The ``{name: tensor}`` dict of the safetensors file ``file`` (opened from the path
    ``origin``, or a file object when None), on ``map_location``'s device (default:
    the default device); checked by the package first, so a damaged file is refused
    (ValueError naming the package's reason) before any tensor is made."""
    safetensors = _package()
    device = _device(map_location)
    try:
        if origin is None:
            return {name: _tensor(np.frombuffer(view["data"], np.uint8), _dtype(view["dtype"], name),
                                  view["shape"], device)
                    for name, view in safetensors.deserialize(file.read())}
        with safetensors.safe_open(origin, framework="numpy") as checked:
            names = checked.keys()
            specs = {n: (checked.get_slice(n).get_dtype(), checked.get_slice(n).get_shape()) for n in names}
    except safetensors.SafetensorError as error:
        raise ValueError(f"load(): damaged safetensors file ({error})") from None
    dtypes = {name: _dtype(code, name) for name, (code, _) in specs.items()}
    with open(origin, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        ranges = json.loads(f.read(size))
    start = 8 + size
    if os.path.getsize(origin) == start:
        data = np.empty(0, np.uint8)
    elif mmap:
        data = np.memmap(origin, np.uint8, mode="r", offset=start)
    else:
        data = np.fromfile(origin, np.uint8, offset=start)
    out = {}
    for name in names:
        begin, end = ranges[name]["data_offsets"]
        out[name] = _tensor(data[begin:end], dtypes[name], specs[name][1], device)
    return out


def _tensor(data, dtype, shape, device):
    """A tensor of ``shape`` over the little-endian bytes ``data`` (aliased where JAX can)."""
    values = data.view(dtype.np).reshape(shape)
    if sys.byteorder != "little":
        values = values.byteswap()
    return tensor_from_host(values, device, may_alias=True)


def save(obj, f):
    """Write the ``{name: tensor}`` dict ``obj`` as a safetensors file to ``f`` (a path or
    a binary file object), each tensor as its values in row-major order."""
    safetensors = _package()
    if not isinstance(obj, dict):
        raise TypeError(f"save(format='safetensors') takes a dict of named tensors, got {type(obj).__qualname__}")
    arrays, specs = [], {}
    for name, t in obj.items():
        if not isinstance(name, str) or not isinstance(t, Tensor):
            raise TypeError(
                f"save(format='safetensors'): the format holds string names of tensors, got "
                f"{type(name).__qualname__} {name!r:.40} -> {type(t).__qualname__}"
            )
        if t.dtype.name not in _SUPPORTED:
            raise TypeError(f"save(format='safetensors'): tensor {name!r} is {t.dtype}, which safetensors lacks")
        values = np.ascontiguousarray(t.detach().numpy())
        if sys.byteorder != "little":
            values = values.byteswap()
        arrays.append(values)
        specs[name] = safetensors.TensorSpec(dtype=t.dtype.name, shape=list(values.shape),
                                             data_ptr=values.ctypes.data, data_len=values.nbytes)
    metadata = {"format": "pt"}  # the layout is PyTorch's (Hugging Face's loaders ask)
    if isinstance(f, (str, os.PathLike)):
        safetensors.serialize_file(specs, os.fspath(f), metadata=metadata)
    else:
        f.write(safetensors.serialize(specs, metadata=metadata))
    del arrays  # the specs point into these arrays: kept alive until written


_SUPPORTED = {dtype.name for dtype in _CODES.values()}
