"""The array API namespace, one module per group of functions: ``creation``,
``elementwise``, ``dtype_functions`` (astype, can_cast, finfo, result_type...),
``manipulation``, ``indexing`` (take, take_along_axis), ``gather_scatter``
(PyTorch's scatter/gather/index_* family), ``matrix_products`` (matmul,
tensordot, vecdot, matrix_transpose), ``searching``, ``set_functions``,
``sorting``, ``statistical``, ``utility``, ``constants``, ``memory_sharing``
(shares_memory), ``device_memory`` (allocator statistics, pinned memory), ``info``
(``__array_namespace_info__``); the extensions ``linalg`` and ``fft``; the older
versions' namespaces (``versions``); and PyTorch's method spellings on ``Tensor``
(``tensor_methods``). ``arraykit/__init__.py`` assembles them into the package
namespace.

May import: :mod:`arraykit.core`, :mod:`arraykit.kernels`,
:mod:`arraykit.tensors`, :mod:`arraykit.autograd` (gradient mode only).
"""
