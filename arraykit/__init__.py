"""arraykit: strided tensors with PyTorch's memory model on JAX kernels.

The package is the array API namespace. Each group of the standard lives in its
own module (``creation``, ``elementwise``, ...) with its own ``__all__``; this file
assembles them. ``arraykit.linalg`` and ``arraykit.fft`` are the extensions.
"""

import sys as _sys

from . import (
    api_versions, autograd, constants, creation, data_types, device_memory, elementwise, fft,
    gather_scatter, indexing, info, linalg, linear_algebra, manipulation, nn, optim, random,
    searching, serialization, set_functions, sorting, statistical, tensor_methods, utility,
)
from .constants import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .data_types import *  # noqa: F401,F403
from .dtypes import (
    DType, bool_ as bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float32, float64, complex64, complex128, float16, bfloat16,
)
from .device_memory import *  # noqa: F401,F403
from .devices import device
from .elementwise import *  # noqa: F401,F403
from .gather_scatter import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .info import *  # noqa: F401,F403
from .kernels.launch import cache_clear, cache_info
from .linear_algebra import *  # noqa: F401,F403
from .manipulation import *  # noqa: F401,F403
from .memory import may_share_memory, shares_memory
from .random import *  # noqa: F401,F403
from .serialization import *  # noqa: F401,F403
from .searching import *  # noqa: F401,F403
from .set_functions import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .statistical import *  # noqa: F401,F403
from .tensor_type import (
    Tensor, channels_last, channels_last_3d, contiguous_format, preserve_format,
)
from .utility import *  # noqa: F401,F403
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled, value_and_grad, vjp
from .autograd import functional_grad as grad
from .autocasting import autocast
from .compilation_cache import (
    compilation_cache_info, get_compilation_cache_dir, set_compilation_cache_dir,
)
from .jit import jit
from .precision import get_float32_matmul_precision, set_float32_matmul_precision

__array_api_version__ = api_versions.LATEST

_CORE = [
    "DType", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float32", "float64", "complex64", "complex128", "float16", "bfloat16",
    "Tensor", "channels_last", "channels_last_3d", "contiguous_format", "preserve_format",
    "may_share_memory", "shares_memory", "cache_info", "cache_clear", "linalg", "fft", "device",
    "autograd", "nn", "optim", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "grad", "value_and_grad", "vjp", "jit", "autocast", "set_float32_matmul_precision",
    "get_float32_matmul_precision", "set_compilation_cache_dir", "get_compilation_cache_dir",
    "compilation_cache_info",
]

__all__ = (
    _CORE
    + constants.__all__
    + creation.__all__
    + data_types.__all__
    + device_memory.__all__
    + elementwise.__all__
    + gather_scatter.__all__
    + indexing.__all__
    + info.__all__
    + linear_algebra.__all__
    + manipulation.__all__
    + random.__all__
    + serialization.__all__
    + searching.__all__
    + set_functions.__all__
    + sorting.__all__
    + statistical.__all__
    + utility.__all__
)

api_2023_12 = api_versions.build(_sys.modules[__name__], "2023.12")
api_2024_12 = api_versions.build(_sys.modules[__name__], "2024.12")
NAMESPACES = {"2023.12": api_2023_12, "2024.12": api_2024_12}
