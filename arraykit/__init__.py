"""arraykit: strided tensors with PyTorch's memory model on JAX kernels."""

import jax as _jax

_jax.config.update("jax_enable_x64", True)

from .dtypes import (  # noqa: E402
    DType, bool_ as bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float32, float64, complex64, complex128,
)
from .tensor import Tensor, channels_last, channels_last_3d, contiguous_format, preserve_format  # noqa: E402
from .creation import arange, asarray, empty, from_numpy, full, ones, zeros  # noqa: E402
from .elementwise import add, divide, maximum, minimum, multiply, subtract  # noqa: E402
from .statistical import sum  # noqa: E402
from .memory import may_share_memory, shares_memory  # noqa: E402
from .kernels.launch import cache_info, cache_clear  # noqa: E402

__all__ = [
    "DType", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float32", "float64", "complex64", "complex128",
    "Tensor", "channels_last", "channels_last_3d", "contiguous_format", "preserve_format",
    "arange", "asarray", "empty", "from_numpy", "full", "ones", "zeros",
    "add", "divide", "maximum", "minimum", "multiply", "subtract",
    "sum",
    "may_share_memory", "shares_memory",
    "cache_info", "cache_clear",
]
