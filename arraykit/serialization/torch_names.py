"""PyTorch's names for what a checkpoint holds: its storage classes and dtypes, and
the device locations it records, each against arraykit's dtype or device."""

from __future__ import annotations

import jax

from ..core import dtypes as D
from ..core.devices import Placement

# torch.<Name>Storage: the typed storages torch.save names (sizes in elements)
STORAGE_DTYPES = {
    "DoubleStorage": D.float64, "FloatStorage": D.float32, "HalfStorage": D.float16,
    "BFloat16Storage": D.bfloat16, "LongStorage": D.int64, "IntStorage": D.int32,
    "ShortStorage": D.int16, "CharStorage": D.int8, "ByteStorage": D.uint8,
    "BoolStorage": D.bool_, "ComplexDoubleStorage": D.complex128,
    "ComplexFloatStorage": D.complex64,
}
# storages of quantized tensors, which arraykit does not have
UNSUPPORTED_STORAGES = {
    "QUInt8Storage", "QInt8Storage", "QInt32Storage", "QUInt4x2Storage", "QUInt2x4Storage",
}
# the untyped storage (sizes in bytes) that tensors of the newer dtypes use
UNTYPED_STORAGES = {("torch", "UntypedStorage"), ("torch.storage", "UntypedStorage")}

# torch.<name>: PyTorch's dtype objects, by the name str(dtype) gives after "torch."
DTYPES = {
    "float64": D.float64, "float32": D.float32, "float16": D.float16, "bfloat16": D.bfloat16,
    "int64": D.int64, "int32": D.int32, "int16": D.int16, "int8": D.int8,
    "uint64": D.uint64, "uint32": D.uint32, "uint16": D.uint16, "uint8": D.uint8,
    "bool": D.bool_, "complex128": D.complex128, "complex64": D.complex64,
}
# PyTorch dtypes arraykit lacks: refused by name when a checkpoint uses one
UNSUPPORTED_DTYPES = {
    "complex32", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
    "float8_e8m0fnu", "float4_e2m1fn_x2", "quint8", "qint8", "qint32", "quint4x2", "quint2x4",
    "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16",
    *(f"int{n}" for n in range(1, 8)), *(f"uint{n}" for n in range(1, 8)),
}

_STORAGE_NAMES = {dtype: name for name, dtype in STORAGE_DTYPES.items()}
_DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}


def storage_name(dtype):
    """The ``torch.<Name>Storage`` class torch.save names for a storage of ``dtype``,
    or None for the dtypes it saves as an ``UntypedStorage`` (sized in bytes)."""
    return _STORAGE_NAMES.get(dtype)


def dtype_name(dtype):
    """PyTorch's name of the arraykit ``dtype`` (``torch.<name>``)."""
    return _DTYPE_NAMES[dtype]


def location(device):
    """The location string PyTorch records for a storage on ``device``: ``'cpu'`` or
    ``'cuda:<index>'`` (a placement over several devices: its platform's first)."""
    platform = device.platform
    if platform == "cpu":
        return "cpu"
    if isinstance(device, Placement):
        return "cuda:0" if platform == "gpu" else platform
    index = jax.local_devices(backend=platform).index(device)
    return f"cuda:{index}" if platform == "gpu" else f"{platform}:{index}"
