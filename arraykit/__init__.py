"""arraykit: strided tensors with PyTorch's memory model on JAX kernels.

The package is the array API namespace. Each group of the standard lives in its
own module under :mod:`arraykit.api` (``creation``, ``elementwise``, ...) with its
own ``__all__``; this file assembles them. ``arraykit.linalg`` and ``arraykit.fft``
are the extensions. The layers, lowest first: :mod:`arraykit.core`,
:mod:`arraykit.kernels`, :mod:`arraykit.tensors`, :mod:`arraykit.autograd`,
:mod:`arraykit.api`, then the framework (``random``; ``nn``, ``optim``, ``jit``,
``serialization``); see docs/architecture.md.
"""

import importlib.util as _importlib_util
import sys as _sys

from . import autograd, nn, optim, random, serialization
from . import amp, backends, cuda  # torch.amp, torch.backends, torch.cuda
from . import distributed, utils  # torch.distributed, torch.utils.data
from .nn import parallel as _parallel  # noqa: F401 (arraykit.nn.parallel, as torch.nn.parallel)
from .api import (
    constants, creation, device_memory, dtype_functions, elementwise, fft, gather_scatter,
    indexing, info, linalg, manipulation, matrix_products, searching, set_functions, sorting,
    sparse_coo,
    statistical, tensor_methods, torch_creation, torch_indexing, torch_pointwise,
    torch_aliases, torch_inplace_functions, torch_method_functions, torch_more_creation,
    torch_more_methods, torch_more_pointwise, torch_more_products, torch_more_shapes,
    torch_products, torch_reductions, torch_shapes, utility, versions,
)
from .api.constants import *  # noqa: F401,F403
from .api.creation import *  # noqa: F401,F403
from .api.device_memory import *  # noqa: F401,F403
from .api.dtype_functions import *  # noqa: F401,F403
from .api.elementwise import *  # noqa: F401,F403
from .api.gather_scatter import *  # noqa: F401,F403
from .api.indexing import *  # noqa: F401,F403
from .api.info import *  # noqa: F401,F403
from .api.manipulation import *  # noqa: F401,F403
from .api.matrix_products import *  # noqa: F401,F403
from .api.memory_sharing import may_share_memory, shares_memory
from .api.searching import *  # noqa: F401,F403
from .api.set_functions import *  # noqa: F401,F403
from .api.sorting import *  # noqa: F401,F403
from .api.statistical import *  # noqa: F401,F403
from .api.utility import *  # noqa: F401,F403
from .api.torch_aliases import *  # noqa: F401,F403
from .api.torch_creation import *  # noqa: F401,F403
from .api.torch_indexing import *  # noqa: F401,F403
from .api.torch_inplace_functions import *  # noqa: F401,F403
from .api.torch_method_functions import *  # noqa: F401,F403
from .api.torch_more_creation import *  # noqa: F401,F403
from .api.torch_more_pointwise import *  # noqa: F401,F403
from .api.torch_more_products import *  # noqa: F401,F403
from .api.torch_more_shapes import *  # noqa: F401,F403
from .api.torch_pointwise import *  # noqa: F401,F403
from .api.torch_products import *  # noqa: F401,F403
from .api.torch_reductions import *  # noqa: F401,F403
from .api.torch_shapes import *  # noqa: F401,F403
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled, value_and_grad, vjp
from .autograd import functional_grad as grad
from .autograd import inference_mode, is_inference_mode_enabled
from .core import buffer_pool, layout  # documented: docs/memory_model.md, docs/pytorch.md
from .core.devices import device
from .core.dtypes import (
    DType, bool_ as bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float32, float64, complex64, complex128, float16, bfloat16,
)
from .core.dtypes import (  # PyTorch's names of the same dtypes
    complex64 as cfloat, complex128 as cdouble, float16 as half, float32 as float,
    float64 as double, int16 as short, int32 as int, int64 as long,
)
from .nn.functional import log_softmax, logsumexp, relu, sigmoid, softmax
from .nn import torch_functions
from .nn.torch_functions import *  # noqa: F401,F403
from .api.autocasting import autocast
from .core.precision import get_float32_matmul_precision, set_float32_matmul_precision
from .jit import jit
from .compiler import compile  # noqa: A004 (PyTorch's name)
from .kernels.compilation_cache import (
    compilation_cache_info, get_compilation_cache_dir, set_compilation_cache_dir,
)
from .kernels.launch import cache_clear, cache_info
from .random import *  # noqa: F401,F403
from .serialization import *  # noqa: F401,F403
from .tensors import namespace_registry
from .api.versions import get_array_api_version, set_array_api_version
from .tensors.size import Size
from .tensors.tensor_type import (
    Tensor, channels_last, channels_last_3d, contiguous_format, preserve_format,
)

__array_api_version__ = versions.LATEST

_CORE = [
    "DType", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float32", "float64", "complex64", "complex128", "float16", "bfloat16",
    "Tensor", "channels_last", "channels_last_3d", "contiguous_format", "preserve_format",
    "may_share_memory", "shares_memory", "cache_info", "cache_clear", "linalg", "fft", "device",
    "autograd", "nn", "optim", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "grad", "value_and_grad", "vjp", "jit", "autocast", "set_float32_matmul_precision",
    "get_float32_matmul_precision", "set_compilation_cache_dir", "get_compilation_cache_dir",
    "compilation_cache_info", "set_array_api_version", "get_array_api_version",
]
_FRAMEWORK = [  # PyTorch's framework names (docs/pytorch.md)
    "amp", "backends", "cuda", "compile", "inference_mode", "is_inference_mode_enabled",
]
_TORCH = [  # PyTorch's names beside the standard's (docs/pytorch.md)
    "long", "int", "float", "double", "half", "cfloat", "cdouble", "short", "Size",
    "softmax", "log_softmax", "logsumexp", "sigmoid", "relu",
]

__all__ = (
    _CORE
    + _FRAMEWORK
    + constants.__all__
    + creation.__all__
    + dtype_functions.__all__
    + device_memory.__all__
    + elementwise.__all__
    + gather_scatter.__all__
    + indexing.__all__
    + info.__all__
    + matrix_products.__all__
    + manipulation.__all__
    + random.__all__
    + serialization.__all__
    + searching.__all__
    + set_functions.__all__
    + sorting.__all__
    + statistical.__all__
    + utility.__all__
    + _TORCH
    + torch_aliases.__all__
    + torch_creation.__all__
    + torch_indexing.__all__
    + torch_inplace_functions.__all__
    + torch_method_functions.__all__
    + torch_more_creation.__all__
    + torch_more_pointwise.__all__
    + torch_more_products.__all__
    + torch_more_shapes.__all__
    + torch_functions.__all__
    + torch_pointwise.__all__
    + torch_products.__all__
    + torch_reductions.__all__
    + torch_shapes.__all__
)

api_2023_12 = versions.build(_sys.modules[__name__], "2023.12")
api_2024_12 = versions.build(_sys.modules[__name__], "2024.12")
NAMESPACES = {"2023.12": api_2023_12, "2024.12": api_2024_12}

# The extensions keep their import paths: ``import arraykit.linalg`` is this module.
_sys.modules[__name__ + ".linalg"] = linalg
_sys.modules[__name__ + ".fft"] = fft
namespace_registry.register(namespace=_sys.modules[__name__], versions=NAMESPACES)

# einops finds arraykit's backend by its class (arraykit/einops/backend.py); einops is
# imported only where it is installed.
if _importlib_util.find_spec("einops") is not None:
    from . import einops
