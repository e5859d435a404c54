"""The strided :class:`Tensor`: a storage, a layout and a dtype.

View methods build a new layout over the same storage (no kernel, no copy).
Compute methods and in-place writes call compiled kernels
(:mod:`arraykit.kernels.launch`). ``Tensor`` is a JAX pytree with one leaf, its
own values (shape = the tensor's shape), and (shape, dtype, device) as static data:
JAX's transforms see a view as the values it shows, never as its storage.
PyTorch's method spellings (``x.exp()``, ``x.max(dim)``, ``x.float()``...) are
attached by :mod:`arraykit.api.tensor_methods`; its operators reach the
namespace through :mod:`arraykit.tensors.namespace_registry`.
"""

from __future__ import annotations

import math
import operator
import threading
import weakref

import jax
import numpy as np

from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import (
    addressable, as_device, check_same_device, one_cpu, pinned, placement, put, put_global,
    require_addressable, same_devices,
)
from ..core.host_memory import adopt, is_host
from ..core.host_memory import share as share_host
from ..core.storage import Storage
from ..kernels import bodies as _ops
from ..kernels.export import dense_values, dlpack_device, export_dlpack
from ..kernels.launch import apply, apply_inplace, register_tensor_type
from ..core import deferred_checks
from . import host_paths
from . import indexing_keys as K
from . import namespace_registry as _namespace
from . import operands
from .size import ElementCount
from .operands import OperandTypeError, check_writable_dtype, from_numpy, promote, writable_value

_Tracer = jax.core.Tracer

contiguous_format = "contiguous_format"
channels_last = "channels_last"
channels_last_3d = "channels_last_3d"
preserve_format = "preserve_format"


@_ops.elementwise
def _identity(x):
    return x


def _assign(cur, value):
    return jax.numpy.broadcast_to(value, cur.shape).astype(cur.dtype)


def _dims(args):
    """Accept both ``f(1, 2)`` and ``f((1, 2))`` spellings of a dimension list."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _dims_or_keyword(method, args, name, value):
    """The sizes or dimensions of a PyTorch varargs method, given by position
    (``x.permute(1, 0)``) or as PyTorch's keyword (``x.permute(dims=(1, 0))``), not both."""
    if value is None:
        return _dims(args)
    if args:
        raise TypeError(f"{method}() got both positional {name} and {name}=; pass one of them")
    return _dims((value,))


def _covers_its_storage(tensor):
    """Whether ``tensor`` reads all of its storage in C order from offset 0: the
    storage's buffer holds its values as they are, up to a reshape."""
    lay = tensor._layout
    return lay.offset == 0 and lay.numel == tensor._storage.size() and L.is_contiguous(lay)


_wrap_refusal = threading.local()  # (weakref to NumPy's result, error type, message)


def _numpy_refusal(tensor, context):
    """(error type, message) where NumPy's result of a ufunc over ``tensor`` (and the
    tensors in NumPy's ``context``) must not become a tensor, else None: an operand
    off the host (TypeError, as PyTorch's CUDA tensors) or one that requires grad
    (RuntimeError: NumPy records no gradient)."""
    operands_ = [tensor]
    if context is not None:
        operands_ += [x for x in context[1] if isinstance(x, Tensor)]
    name = getattr(context[0], "__name__", "ufunc") if context is not None else "NumPy"
    for x in operands_:
        if x._storage.device.platform != "cpu":
            return TypeError, (f"{name}: NumPy cannot compute on a tensor on {x._storage.device}; "
                               "copy it to the host first with t.cpu()")
        if x.requires_grad:
            return RuntimeError, (f"{name}: NumPy cannot record the gradient of a tensor that "
                                  "requires grad; use t.detach() first")
    return None


class Tensor:
    """A strided view of a :class:`~arraykit.core.storage.Storage` (PyTorch memory model)."""

    __slots__ = ("_storage", "_layout", "_dtype", "_grad", "_retains_grad", "_detached", "__weakref__")
    __array_priority__ = 100

    def __init__(self, *args, **kwargs):
        raise TypeError(
            "Tensor is not built directly; use arraykit.asarray, arraykit.zeros, ..."
        )

    @classmethod
    def _make(cls, storage, layout, dtype):
        t = object.__new__(cls)
        t._storage = storage
        t._layout = layout
        t._dtype = dtype
        return t

    @classmethod
    def _from_buffer(cls, buf, layout, device, shared=False):
        dtype = D.from_numpy(buf.dtype)
        return cls._make(Storage(buf, dtype, device, shared), layout, dtype)

    def _view(self, layout):
        view = Tensor._make(self._storage, layout, self._dtype)
        if getattr(self, "_detached", False):
            view._detached = True  # views of a detached tensor carry no gradient either
        return view

    # ------------------------------------------------------------------ metadata

    @property
    def shape(self):
        """Tuple of dimension sizes."""
        return self._layout.shape

    @property
    def ndim(self):
        """Number of dimensions."""
        return len(self._layout.shape)

    @property
    def size(self):
        """Number of elements (array API, an ``int``), callable as PyTorch's ``x.size()``
        (an :class:`arraykit.Size`) and ``x.size(dim)``; see ``arraykit.tensors.size.ElementCount``."""
        return ElementCount(self._layout.shape)

    def numel(self):
        """Number of elements."""
        return math.prod(self._layout.shape)

    def dim(self):
        """Number of dimensions (PyTorch spelling)."""
        return len(self._layout.shape)

    @property
    def dtype(self):
        """The element dtype."""
        return self._dtype

    @property
    def device(self):
        """The JAX device holding the storage."""
        return self._storage.device

    @property
    def layout(self):
        """The (shape, strides, offset) layout over the storage."""
        return self._layout

    def stride(self, dim=None):
        """Strides in elements (all, or of one dimension)."""
        if dim is None:
            return self._layout.strides
        return self._layout.strides[L.normalize_dim(dim, self.ndim)]

    def storage_offset(self):
        """Offset of the first element into the storage, in elements."""
        return self._layout.offset

    def untyped_storage(self):
        """The ``Storage`` shared by every alias of this tensor."""
        return self._storage

    storage = untyped_storage

    def element_size(self):
        """Bytes per element."""
        return self._dtype.itemsize

    def data_ptr(self):
        """Address of the first element: storage address plus offset times itemsize."""
        return self._storage.data_ptr() + self._layout.offset * self._dtype.itemsize

    def is_contiguous(self, memory_format=contiguous_format):
        """Whether the layout is dense in C order (or channels-last order)."""
        if memory_format == channels_last or memory_format == channels_last_3d:
            rank = 4 if memory_format == channels_last else 5
            return self.ndim == rank and L.is_channels_last_contiguous(self._layout)
        return L.is_contiguous(self._layout)

    # ------------------------------------------------------------------ copies

    def _dense_copy(self, strides):
        """A new tensor with the given dense ``strides`` holding this tensor's values."""
        order = sorted(range(self.ndim), key=lambda d: -strides[d])
        flat = apply(_permuted_flat, (self,), (tuple(order),))
        return Tensor._make(flat._storage, L.Layout(self.shape, strides, 0), self._dtype)

    def contiguous(self, memory_format=contiguous_format):
        """Self when already contiguous in ``memory_format``, else a dense copy."""
        if self.is_contiguous(memory_format):
            return self
        return self.clone(memory_format)

    def clone(self, memory_format=preserve_format):
        """A copy in a new storage; dense layouts keep their strides (PyTorch)."""
        lay = self._layout
        if memory_format in (channels_last, channels_last_3d):
            rank = 4 if memory_format == channels_last else 5
            if self.ndim != rank:
                raise ValueError(
                    f"required rank {rank} tensor to use {memory_format} format, got shape {self.shape}"
                )
            return self._dense_copy(L.channels_last_strides(self.shape))
        if memory_format == preserve_format and not L.is_contiguous(lay):
            if L.is_dense(lay):
                lo, hi = L.extent(lay)
                span = self._view(L.Layout((hi - lo + 1,), (1,), lo))
                flat = apply(_identity, (span,))
                return Tensor._make(
                    flat._storage, L.Layout(lay.shape, lay.strides, lay.offset - lo), self._dtype
                )
            strides = L.infer_dense_strides(lay.shape, lay.strides)
            if not L.is_contiguous(L.Layout(lay.shape, strides)):
                return self._dense_copy(strides)
        if host_paths.applies(self):  # no copy kernel compiled per shape
            return host_paths.computed(_same_values, self)
        return apply(_identity, (self,))

    def numpy(self, *, force=False):
        """The values as a NumPy array sharing the tensor's memory (PyTorch's ``numpy()``;
        ``force=True``, PyTorch's, detaches it and moves it to the CPU first).

        On the CPU the first call moves the storage's values into NumPy memory (one
        copy; every tensor over the storage follows) and each call returns a view with
        the tensor's shape and strides: writes through the array or through any
        tensor over the storage are seen by both, as after :func:`arraykit.from_numpy`
        (see :mod:`arraykit.core.host_memory`). Kernels then read private copies of what
        they read. On other devices, and for a tensor spread over several devices
        (a sharding), the result is a copy. For a snapshot that never changes, copy it
        (``x.numpy().copy()``, ``np.array(x)``, ``x.tolist()``).
        """
        if force:
            return self.detach().cpu().numpy()
        st = self._storage
        if one_cpu(st.device) and not isinstance(st._buffer, jax.core.Tracer):
            deferred_checks.report()
            adopt(st)
            return st.host_array(self._layout)
        return self._values()

    def _values(self):
        """A new, writable NumPy array holding the values (a snapshot, not an alias).

        On the CPU the values are copied straight out of the storage's host view
        (no kernel); elsewhere the storage's buffer is copied as it is where the tensor
        covers it whole in order, and a kernel gathers the values first otherwise.
        """
        lay = self._layout
        st = self._storage
        if isinstance(st._buffer, jax.core.Tracer):
            raise _concrete_value_error("numpy()", self)
        require_addressable(st.device, "reading values (item, tolist, numpy, print)", st._buffer)
        deferred_checks.report()
        if st.device.platform == "cpu":
            with st.lock:
                return np.array(st.host_array(lay))
        with st.lock:
            if _covers_its_storage(self):
                return np.array(st._buffer).reshape(lay.shape)
        return np.array(apply(_identity, (self,))._storage._buffer)

    def __array__(self, dtype=None, copy=None):
        """NumPy export (``np.asarray(t)``), as PyTorch's: on the CPU a writable NumPy
        view sharing the tensor's memory, exactly :meth:`numpy` (the storage moves into
        NumPy memory once; writes on either side are seen by the other, views such as
        ``np.asarray(t[0])`` included). ``copy=True`` or another ``dtype``: a private
        copy. On other devices a private copy; ``copy=False`` raises there."""
        st = self._storage
        if one_cpu(st.device) and not isinstance(st._buffer, jax.core.Tracer):
            values = self.numpy()
            if copy:
                values = values.copy()
        elif copy is False:
            raise ValueError(
                f"a tensor on {st.device} cannot be exported to NumPy without a copy"
            )
        else:
            values = self._values()
        if dtype is not None:
            values = values.astype(dtype, copy=False)
        return values

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """NumPy's hook for the result of a ufunc over tensors, as PyTorch's: NumPy's
        ufuncs and SciPy's compiled ones (``np.exp(t)``, ``np.add(t, 1)``,
        ``scipy.special.erf(t)``, ``np.add.reduce(t)``) return a CPU tensor sharing the
        result's memory (``from_numpy``), 0-d results included; a boolean result stays
        bool (PyTorch gives uint8). NumPy computes on the host: an operand on another
        device raises ``TypeError`` (PyTorch's CUDA tensors do), and one that requires
        grad raises ``RuntimeError`` (NumPy records no gradient; PyTorch raises too)."""
        refused = getattr(_wrap_refusal, "value", None)
        if refused is not None and refused[0]() is array:
            # NumPy retries a wrap that raised TypeError with fewer arguments (for old
            # signatures): each retry of this result raises the first refusal again
            if context is None:  # the last retry
                _wrap_refusal.value = None
            raise refused[1](refused[2])
        refusal = _numpy_refusal(self, context)
        if refusal is not None:
            _wrap_refusal.value = (weakref.ref(array), *refusal)
            raise refusal[0](refusal[1])
        array = np.asarray(array)
        dtype = D.from_numpy(array.dtype)
        buf, layout = share_host(array)
        return Tensor._make(Storage(buf, dtype, as_device("cpu")), layout, dtype)

    def __format__(self, spec):
        """``format(x, spec)``, f-strings: a 0-d tensor formats its value (as NumPy and
        PyTorch); other tensors take only the empty spec (``str(x)``), else TypeError."""
        if self.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return str(self)

    def tolist(self):
        """Nested Python lists of the values."""
        if is_traced(self):
            raise _concrete_value_error("tolist()", self)
        return self._values().tolist()

    def item(self):
        """The single value of a one-element tensor as a Python scalar."""
        if is_traced(self):
            raise _concrete_value_error("item()", self)
        if self.size != 1:
            raise ValueError(
                f"a Tensor with {self.size} elements cannot be converted to a scalar"
            )
        return self._values().reshape(()).item()

    def __repr__(self):
        if isinstance(self._storage._buffer, jax.core.Tracer):
            return f"tensor(<traced>, shape={self.shape}, dtype={self._dtype})"
        values = self._values()
        if self._dtype is D.bfloat16:  # NumPy prints ml_dtypes' bfloat16 without a decimal point
            values = values.astype(np.float32)
        body = np.array2string(values, separator=", ", prefix="tensor(")
        return f"tensor({body}, dtype={self._dtype})"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        """Pickle and ``copy.deepcopy``, as PyTorch's: the storage's values (tensors
        pickled or copied together that shared a storage share the new one), the
        layout, the dtype, ``requires_grad`` and the marks layers above keep (an
        ``nn.Parameter`` stays one). A tensor with autograd history raises, as in
        PyTorch (only leaves can be copied)."""
        if not self.is_leaf:
            raise RuntimeError(
                "only tensors created explicitly by the user (graph leaves) can be pickled "
                "or deep-copied; use t.detach()"
            )
        marks = tuple(name for name, (test, _) in _MARKS.items() if test(self))
        return _rebuild, (self._storage, self._layout, self._dtype, self.requires_grad, marks)

    # ------------------------------------------------------------------ interop

    def __array_namespace__(self, /, *, api_version=None):
        """The array API namespace: ``arraykit`` (2025.12, the default) or the
        2023.12 / 2024.12 namespace (see :mod:`arraykit.api.versions`); without
        ``api_version``, the one :func:`arraykit.set_array_api_version` selected."""
        namespace = _namespace.namespace
        if api_version is None:
            return _namespace.selected or namespace
        if api_version == namespace.__array_api_version__:
            return namespace
        try:
            return _namespace.versions[api_version]
        except KeyError:
            raise ValueError(
                f"unsupported array API version {api_version!r}; arraykit implements "
                "'2023.12', '2024.12' and '2025.12'"
            ) from None

    def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of a snapshot of the values (see :mod:`arraykit.kernels.export`)."""
        return export_dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        """``(DLPack device type, device id)`` of the storage."""
        return dlpack_device(self)

    def to_device(self, device, /, *, stream=None):
        """A copy on ``device``; ``self`` when it is already there (a pinned tensor,
        ``x.pin_memory()``, moves into the device's own memory even then).

        JAX orders the transfer after every pending computation on the source, so
        ``stream`` (accepted for the standard's signature) needs no handling.
        """
        target = as_device(device)
        st = self._storage
        if target == st.device and not pinned(st):
            return self
        src = self
        if is_host(st) or not _covers_its_storage(self):
            src = apply(_identity, (self,))  # NumPy memory is read into a private copy too
        with src._storage.lock:
            buf = src._storage.buffer
            if addressable(target):
                buf = put(buf, placement(target, src._storage))
            else:  # a mesh over several processes: each places its own copy, no cross-host transfer
                buf = put_global(buf.reshape(self.shape), target.sharding)
        return Tensor._make(Storage(buf, self._dtype, target), L.contiguous(self.shape), self._dtype)

    # ------------------------------------------------------------------ views

    def view(self, *shape, size=None, dtype=None):
        """Same storage, new shape (PyTorch's rule; raises when only reshape works); the
        shape also as PyTorch's keyword ``size=``.

        ``view(dtype)`` or ``view(dtype=)`` (PyTorch's, NumPy's ``a.view(float)``): the
        same memory read as another dtype, see ``_view_dtype``."""
        if dtype is not None:
            if shape or size is not None:
                raise TypeError("view() takes a shape or dtype=, not both")
            return self._view_dtype(dtype)
        if size is None and len(shape) == 1 and _is_dtype_like(shape[0]):
            return self._view_dtype(shape[0])
        return self._view(L.view(self._layout, _dims_or_keyword("view", shape, "size", size)))

    def _view_dtype(self, dtype):
        """The tensor's bits reinterpreted as ``dtype`` (an arraykit or NumPy dtype, or a
        Python type: ``float`` is float64, ``int`` int64, ``complex`` complex128), sharing
        memory as PyTorch's ``view(dtype)``. With another item size the last dimension
        must have stride 1 and scales by the size ratio (its size, the other strides and
        the offset must divide by it when the new dtype is larger). A view with another
        dtype shares memory through NumPy memory (:mod:`arraykit.core.host_memory`), so
        it needs a CPU tensor outside a trace; on other devices it raises."""
        new = _VIEW_TYPES.get(dtype) or D.as_dtype(dtype)
        old = self._dtype
        if new is old:
            return self._view(self._layout)
        lay = self._layout
        if old.itemsize != new.itemsize:
            what = f"to view {old} as {new} (different element sizes)"
            if not lay.shape:
                raise RuntimeError(f"self.dim() cannot be 0 {what}")
            if lay.strides[-1] != 1 and lay.shape[-1] != 1:
                raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {lay.strides[-1]}")
            ratio = new.itemsize // old.itemsize
            if ratio > 1:
                if lay.shape[-1] % ratio:
                    raise RuntimeError(
                        f"self.size(-1) must be divisible by {ratio} {what}, but got {lay.shape[-1]}"
                    )
                if lay.offset % ratio:
                    raise RuntimeError(
                        f"self.storage_offset() must be divisible by {ratio} {what}, but got "
                        f"{lay.offset}"
                    )
                for d, stride in enumerate(lay.strides[:-1]):
                    if stride % ratio:
                        raise RuntimeError(
                            f"self.stride({d}) must be divisible by {ratio} {what}, but got {stride}"
                        )
        st = self._storage
        if not one_cpu(st.device) or isinstance(st._buffer, jax.core.Tracer):
            raise RuntimeError(
                f"view({new}) of a {old} tensor on {st.device}: a view with another dtype "
                "shares memory only for CPU tensors outside a trace; use x.to('cpu') first"
            )
        values = self.numpy()
        if old.itemsize != new.itemsize and lay.shape[-1] == 1:
            values = values.reshape(lay.shape)  # a size-1 last dimension of any stride
        values = values.view(new.np)
        buf, layout = share_host(values)
        return Tensor._make(Storage(buf, new, st.device), layout, new)

    def reshape(self, *sizes, shape=None):
        """A view when the layout allows one, otherwise a contiguous copy (the shape by
        position or as ``shape=``, PyTorch's keyword)."""
        shape = _dims_or_keyword("reshape", sizes, "shape", shape)
        lay = L.try_view(self._layout, shape)
        if lay is not None:
            return self._view(lay)
        return self.contiguous()._view(L.view(L.contiguous(self.shape), shape))

    def permute(self, *order, dims=None):
        """Reorder dimensions (view): by position or as ``dims=``, PyTorch's keyword."""
        return self._view(L.permute(self._layout, _dims_or_keyword("permute", order, "dims", dims)))

    def transpose(self, dim0, dim1):
        """Swap two dimensions (view)."""
        return self._view(L.transpose(self._layout, dim0, dim1))

    def t(self):
        """Transpose a tensor of at most 2 dimensions (view)."""
        if self.ndim > 2:
            raise ValueError(f"t() expects a tensor with <= 2 dimensions, got {self.ndim}")
        return self._view(L.reverse_dims(self._layout))

    @property
    def T(self):
        """Transpose of a 2-D tensor (view)."""
        if self.ndim != 2:
            raise ValueError(f".T requires a 2-D tensor, got {self.ndim}-D; use .mT or permute")
        return self._view(L.reverse_dims(self._layout))

    @property
    def mT(self):
        """Transpose of the last two dimensions (view)."""
        return self._view(L.matrix_transpose(self._layout))

    def select(self, dim, index):
        """Drop ``dim`` at position ``index`` (view)."""
        return self._view(L.select(self._layout, dim, index))

    def narrow(self, dim, start, length):
        """``length`` elements along ``dim`` from ``start`` (view)."""
        return self._view(L.narrow(self._layout, dim, start, length))

    def expand(self, *sizes, size=None, implicit=False):
        """Broadcast size-1 dims to ``sizes`` (or PyTorch's keyword ``size=``) with
        stride 0 (view; -1 keeps a size). PyTorch's ``implicit`` (a tracing hint) is
        accepted and changes nothing."""
        return self._view(L.expand(self._layout, _dims_or_keyword("expand", sizes, "size", size)))

    def expand_as(self, other):
        """Expand to ``other``'s shape (view)."""
        return self.expand(other.shape)

    def broadcast_to(self, shape=None, *, size=None):
        """NumPy broadcast to ``shape`` (or PyTorch's keyword ``size=``) (view)."""
        if (shape is None) == (size is None):
            raise TypeError("broadcast_to() takes one shape (shape, or PyTorch's size=)")
        return self._view(L.broadcast_to(self._layout, tuple(shape if size is None else size)))

    def squeeze(self, dim=None):
        """Remove size-1 dims (all, or the named ones that have size 1) (view)."""
        return self._view(L.squeeze(self._layout, dim, strict=False))

    def unsqueeze(self, dim):
        """Insert a size-1 dim at ``dim`` (view)."""
        return self._view(L.unsqueeze(self._layout, dim))

    def flatten(self, start_dim=0, end_dim=-1):
        """Merge dims ``start_dim..end_dim`` (view when possible, else copy)."""
        return self.reshape(L.flatten(self._layout, start_dim, end_dim))

    def diagonal(self, offset=0, dim1=0, dim2=1):
        """The diagonal of ``dim1``/``dim2``, appended as the last dim (view)."""
        return self._view(L.diagonal(self._layout, offset, dim1, dim2))

    def flip(self, *axes, dims=None):
        """Reverse the order along the given dimensions (by position or as ``dims=``,
        PyTorch's keyword), all dims when none are given (a view)."""
        if not axes and dims is None:  # x.flip(): every dimension
            return self._view(L.flip(self._layout, None))
        return self._view(L.flip(self._layout, _dims_or_keyword("flip", axes, "dims", dims)))

    def unfold(self, dimension, size, step):
        """Sliding windows along ``dimension`` (view; windows may overlap)."""
        return self._view(L.unfold(self._layout, dimension, size, step))

    def as_strided(self, size, stride, storage_offset=None):
        """Arbitrary view of the storage, checked to stay within it."""
        offset = self._layout.offset if storage_offset is None else storage_offset
        return self._view(L.as_strided(size, stride, offset, self._storage.size()))

    # ------------------------------------------------------------------ indexing

    def __getitem__(self, key):
        if K.is_basic(key):
            return self._view(L.index(self._layout, K.basic_key(key)))
        if host_paths.applies(self) and not _has_traced(key):
            return host_paths.getitem(self, K.plan(self.shape, key))
        p = self._plan(key)
        return apply(K.gather, (self,) + p.operands, (p.structure, p.result_shape is not None))

    def _plan(self, key):
        if _has_traced(key):  # a concrete key is checked on the host even when self is traced
            return K.traced_plan(key)
        p = K.plan(self.shape, key)
        p.operands = tuple(_index_tensor(a, self.device) for a in p.operands)
        return p

    def __setitem__(self, key, value):
        if K.is_basic(key):
            target = self._view(L.index(self._layout, K.basic_key(key)))
            target._write(value)
            return
        value = writable_value(value, self)
        mask = _single_mask(key)
        if mask is not None and mask.ndim <= self.ndim and mask.shape != self.shape[: mask.ndim]:
            raise IndexError(
                f"boolean index of shape {mask.shape} does not match the indexed "
                f"tensor of shape {self.shape}"
            )
        if host_paths.stores(self, value) and not _has_traced(key):  # no kernel per layout
            p = K.plan(self.shape, key)
            L.broadcast_to(L.contiguous(value.shape), p.result_shape)
            host_paths.store(self, host_paths.selection(p), value)
            return
        if mask is not None and value.size == 1 and mask.ndim <= self.ndim:
            value = value.reshape(())
            apply_inplace(K.mask_where, self, (mask, value))
            return
        p = self._plan(key)
        if p.result_shape is not None:
            L.broadcast_to(L.contiguous(value.shape), p.result_shape)
        apply_inplace(K.scatter, self, p.operands + (value,), (p.structure, p.result_shape is not None))

    def _write(self, value):
        """Store ``value`` (tensor, array-like or scalar) broadcast into this view."""
        if (
            type(value) is Tensor and value._storage is self._storage
            and value._layout == self._layout and value._dtype is self._dtype
        ):
            return self  # x[k] = x[k] (the tail of x[k] += v): nothing to write, as in PyTorch
        value = writable_value(value, self)
        if value.shape:
            L.broadcast_to(L.contiguous(value.shape), self.shape)
        apply_inplace(_assign, self, (value,))
        return self

    # ------------------------------------------------------------------ in-place

    def copy_(self, src=None, non_blocking=False, *, other=None):
        """Copy ``src`` (broadcast) into this tensor in place; a tensor ``src`` on another
        device is moved here first, as in PyTorch (``non_blocking`` is accepted: copies
        are asynchronous already). ``other=`` is the keyword PyTorch's binding takes."""
        if (src is None) == (other is None):
            raise TypeError("copy_() takes one source (src, or PyTorch's other=)")
        if src is None:
            src = other
        if isinstance(src, Tensor) and not same_devices(src.device, self.device):
            src = src.to(self.device)
        return self._write(src)

    def fill_(self, value):
        """Fill with a scalar in place."""
        return self._write(value)

    def zero_(self):
        """Fill with zeros in place."""
        return self._write(0)

    def _inplace(self, fn, other, true_division=False):
        _, other, result = promote(self, other, broadcast=False)
        return self._inplace_promoted(fn, other, result, true_division)

    def _inplace_promoted(self, fn, other, result, true_division=False):
        """``self = fn(self, other)`` for an operand already resolved by :func:`promote`."""
        if true_division and result.kind in ("bool", "int", "uint"):
            result = D.DEFAULT_FLOAT
        check_writable_dtype(result, self._dtype)
        L.broadcast_to(L.contiguous(np.shape(other)), self.shape)  # names both shapes
        return apply_inplace(fn, self, (other,), (result.np,))

    def add_(self, other, alpha=1):
        """``self += alpha * other`` in place."""
        if alpha != 1:
            other = other * alpha
        return self._inplace(_ops.add, other)

    def sub_(self, other, alpha=1):
        """``self -= alpha * other`` in place."""
        if alpha != 1:
            other = other * alpha
        return self._inplace(_ops.subtract, other)

    def mul_(self, other):
        """``self *= other`` in place."""
        return self._inplace(_ops.multiply, other)

    def div_(self, other):
        """``self /= other`` in place (true division)."""
        return self._inplace(_ops.divide, other, true_division=True)

    def clamp_(self, min=None, max=None):
        """Clamp values into ``[min, max]`` in place (one kernel: all or nothing written)."""
        if min is None and max is None:
            raise ValueError("clamp_: at least one of min and max must be given")
        bounds = []
        result = self._dtype
        for bound in (min, max):
            if bound is not None:
                _, bound, dtype = promote(self, bound, broadcast=False)
                check_writable_dtype(dtype, self._dtype)
                L.broadcast_to(L.contiguous(np.shape(bound)), self.shape)
                bounds.append(bound)
                result = D.promote(result, dtype)
        return apply_inplace(_clamp, self, tuple(bounds), (min is not None, max is not None, result.np))

    def masked_fill_(self, mask, value):
        """Write ``value`` where the (broadcast) boolean ``mask`` is true, in place."""
        mask = operands.as_operand(mask, self)
        if not isinstance(mask, Tensor):
            raise TypeError(f"masked_fill_ expects a bool tensor mask, got {type(mask).__name__}")
        check_same_device(mask.device, self.device, "masked_fill_")
        if mask._dtype is not D.bool_:
            raise TypeError(f"masked_fill_ expects a bool mask, got {mask._dtype}")
        L.broadcast_to(mask._layout, self.shape)
        value = writable_value(value, self)
        if value.ndim != 0:
            raise ValueError(
                f"masked_fill_ only supports a 0-dimensional value, got shape {value.shape}"
            )
        apply_inplace(_ops.where_fill, self, (mask, value))
        return self

    def index_fill_(self, dim, index, value):
        """Fill the positions ``index`` along ``dim`` with ``value``, in place."""
        dim = L.normalize_dim(dim, self.ndim)
        key = (slice(None),) * dim + (index,)
        self[key] = value
        return self

    # ------------------------------------------------------------------ operators
    # Each operator calls the namespace function (arraykit.api.elementwise); an operand
    # that is neither a tensor, a NumPy array nor a Python scalar gives
    # NotImplemented, so Python can try the other operand.

    def _operator(dunder, name, reflected=False):
        """Build a binary operator method calling ``arraykit.<name>``."""
        if reflected:
            def method(self, other):
                try:
                    return getattr(_namespace.elementwise, name)(other, self)
                except OperandTypeError:
                    return NotImplemented
        else:
            def method(self, other):
                try:
                    return getattr(_namespace.elementwise, name)(self, other)
                except OperandTypeError:
                    return NotImplemented
        method.__name__ = method.__qualname__ = dunder
        return method

    def _inplace_operator(dunder, name):
        """Build an in-place operator method (``self <op>= other``) for ``arraykit.<name>``."""
        def method(self, other):
            try:
                return _namespace.elementwise.inplace(self, name, other)
            except OperandTypeError:
                return NotImplemented
        method.__name__ = method.__qualname__ = dunder
        return method

    def _unary_operator(dunder, name):
        """Build a unary operator method calling ``arraykit.<name>``."""
        def method(self):
            return getattr(_namespace.elementwise, name)(self)
        method.__name__ = method.__qualname__ = dunder
        return method

    __add__ = _operator("__add__", "add")
    __radd__ = _operator("__radd__", "add", reflected=True)
    __sub__ = _operator("__sub__", "subtract")
    __rsub__ = _operator("__rsub__", "subtract", reflected=True)
    __mul__ = _operator("__mul__", "multiply")
    __rmul__ = _operator("__rmul__", "multiply", reflected=True)
    __truediv__ = _operator("__truediv__", "divide")
    __rtruediv__ = _operator("__rtruediv__", "divide", reflected=True)
    __floordiv__ = _operator("__floordiv__", "floor_divide")
    __rfloordiv__ = _operator("__rfloordiv__", "floor_divide", reflected=True)
    __mod__ = _operator("__mod__", "remainder")
    __rmod__ = _operator("__rmod__", "remainder", reflected=True)
    __pow__ = _operator("__pow__", "pow")
    __rpow__ = _operator("__rpow__", "pow", reflected=True)
    __and__ = _operator("__and__", "bitwise_and")
    __rand__ = _operator("__rand__", "bitwise_and", reflected=True)
    __or__ = _operator("__or__", "bitwise_or")
    __ror__ = _operator("__ror__", "bitwise_or", reflected=True)
    __xor__ = _operator("__xor__", "bitwise_xor")
    __rxor__ = _operator("__rxor__", "bitwise_xor", reflected=True)
    __lshift__ = _operator("__lshift__", "bitwise_left_shift")
    __rlshift__ = _operator("__rlshift__", "bitwise_left_shift", reflected=True)
    __rshift__ = _operator("__rshift__", "bitwise_right_shift")
    __rrshift__ = _operator("__rrshift__", "bitwise_right_shift", reflected=True)
    __eq__ = _operator("__eq__", "equal")
    __ne__ = _operator("__ne__", "not_equal")
    __lt__ = _operator("__lt__", "less")
    __le__ = _operator("__le__", "less_equal")
    __gt__ = _operator("__gt__", "greater")
    __ge__ = _operator("__ge__", "greater_equal")

    __iadd__ = _inplace_operator("__iadd__", "add")
    __isub__ = _inplace_operator("__isub__", "subtract")
    __imul__ = _inplace_operator("__imul__", "multiply")
    __itruediv__ = _inplace_operator("__itruediv__", "divide")
    __ifloordiv__ = _inplace_operator("__ifloordiv__", "floor_divide")
    __imod__ = _inplace_operator("__imod__", "remainder")
    __ipow__ = _inplace_operator("__ipow__", "pow")
    __iand__ = _inplace_operator("__iand__", "bitwise_and")
    __ior__ = _inplace_operator("__ior__", "bitwise_or")
    __ixor__ = _inplace_operator("__ixor__", "bitwise_xor")
    __ilshift__ = _inplace_operator("__ilshift__", "bitwise_left_shift")
    __irshift__ = _inplace_operator("__irshift__", "bitwise_right_shift")

    __neg__ = _unary_operator("__neg__", "negative")
    __pos__ = _unary_operator("__pos__", "positive")
    __abs__ = _unary_operator("__abs__", "abs")
    __invert__ = _unary_operator("__invert__", "bitwise_invert")

    del _operator, _inplace_operator, _unary_operator

    def _matmul_operand(self, other):
        """``other`` as a tensor on this tensor's device, or None if it is not an array."""
        if isinstance(other, Tensor):
            return other
        if isinstance(other, np.ndarray):
            return from_numpy(other, self.device)
        return None

    def __matmul__(self, other):
        other = self._matmul_operand(other)
        if other is None:
            return NotImplemented
        return _namespace.matmul(self, other)

    def __rmatmul__(self, other):
        other = self._matmul_operand(other)
        if other is None:
            return NotImplemented
        return _namespace.matmul(other, self)

    def __imatmul__(self, other):
        other = self._matmul_operand(other)
        if other is None:
            return NotImplemented
        result = _namespace.matmul(self, other)
        if result.shape != self.shape:
            raise ValueError(
                f"in-place matmul of shapes {self.shape} and {other.shape} gives shape "
                f"{result.shape}, which differs from the left operand's shape"
            )
        return self._write(result)

    # ------------------------------------------------------------------ misc

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def _python_scalar(convert, what):
        """Build ``__bool__``/``__int__``/...: ``convert(self.item())``, refused under a trace."""
        def method(self):
            if is_traced(self):
                raise _concrete_value_error(what, self)
            return convert(self.item())
        method.__name__ = method.__qualname__ = f"__{convert.__name__}__"
        return method

    __bool__ = _python_scalar(bool, "bool() (an `if` or `while` on a tensor)")
    __int__ = _python_scalar(int, "int()")
    __float__ = _python_scalar(float, "float()")
    __complex__ = _python_scalar(complex, "complex()")
    del _python_scalar

    def __index__(self):
        if self._dtype.kind not in ("int", "uint"):
            raise TypeError(f"only integer tensors can be used as an index, not {self._dtype}")
        return operator.index(self.item())

    def __hash__(self):
        return id(self)


_MARKS = {}  # name -> (test, restore): marks that layers above keep on tensors


def register_mark(name, test, restore):
    """Keep a mark of a layer above (``nn.Parameter``) through pickling and deepcopy:
    ``test(t)`` says whether ``t`` carries it, ``restore(t)`` puts it back on a copy."""
    _MARKS[name] = (test, restore)


def _rebuild(storage, layout, dtype, requires_grad, marks):
    """The tensor :meth:`Tensor.__reduce_ex__` describes."""
    t = Tensor._make(storage, layout, dtype)
    if requires_grad:
        t.requires_grad_(True)
    for name in marks:
        t = _MARKS[name][1](t)
    return t


_VIEW_TYPES = {bool: D.bool_, int: D.int64, float: D.float64, complex: D.complex128}


def _is_dtype_like(x):
    """Whether ``view``'s argument names a dtype rather than a size."""
    return isinstance(x, (D.DType, np.dtype, str)) or (
        isinstance(x, type) and (x in _VIEW_TYPES or issubclass(x, np.generic))
    )


def _clamp(cur, *rest):
    """``clamp_``'s kernel: the out-of-place ``clip`` bodies, so a value exactly on a
    bound gets PyTorch's full gradient (not ``jnp.maximum``'s half at a tie)."""
    *bounds, has_min, has_max, dtype = rest
    x = cur.astype(dtype)
    if has_min and has_max:
        return _ops.clip_both(x, *bounds)
    if has_min:
        return _ops.clip_min(x, bounds[0])
    return _ops.clip_max(x, bounds[0])


def _permuted_flat(x, order):
    return jax.numpy.transpose(x, order)


def require_tensor(x, name):
    """``x`` itself; TypeError naming the function ``name`` when it is not a Tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}() expects an arraykit Tensor, got {type(x).__name__}")
    return x


def is_traced(*tensors):
    """Whether any of ``tensors`` holds a JAX tracer (it is inside a jax trace)."""
    for t in tensors:
        if isinstance(t._storage._buffer, _Tracer):
            return True
    return False


def _concrete_value_error(what, tensor):
    return TypeError(
        f"{what} needs the concrete value of a tensor (shape {tensor.shape}, {tensor.dtype}) "
        "that is being traced (inside arraykit.jit or a JAX transform), where values are not "
        "known yet. Use arraykit.where for data-dependent choices, pass the value as a static "
        "argument (static_argnums), or keep this part outside the jitted function"
    )


def _has_traced(key):
    items = key if isinstance(key, tuple) else (key,)
    return is_traced(*(k for k in items if isinstance(k, Tensor)))


def _index_tensor(arr, device):
    return Tensor._from_buffer(put(arr, device), L.contiguous(arr.shape), device)


def _same_values(values):
    return values


def _single_mask(key):
    if isinstance(key, Tensor) and key._dtype is D.bool_:
        return key
    return None


def _flatten(t):
    """One leaf: the tensor's own values (see :func:`arraykit.kernels.export.dense_values`)."""
    st = t._storage
    if not isinstance(st._buffer, (jax.Array, np.ndarray)):
        return (st._buffer,), (t._layout.shape, t._dtype, st.device)  # a JAX placeholder leaf
    return (dense_values(t),), (t._layout.shape, t._dtype, st.device)


def _unflatten(aux, children):
    """A tensor over the leaf. Shape and dtype come from the leaf when it has them
    (``jax.vmap`` unbatches leaves; a 32-bit JAX trace narrows 64-bit ones); other
    leaves (JAX's placeholder objects) are kept as they are."""
    shape, dtype, device = aux
    leaf = children[0]
    if isinstance(leaf, jax.Array):
        shape = leaf.shape
        dtype = D.from_numpy(leaf.dtype)
        # A concrete leaf may be held elsewhere too (the user, the tensor it came
        # from): not donated while it is.
        exported = not isinstance(leaf, jax.core.Tracer)
        if exported and len(leaf.devices()) == 1:
            device = next(iter(leaf.devices()))
        storage = Storage(leaf, dtype, device, exported=exported)
        return Tensor._make(storage, L.contiguous(shape), dtype)
    # a placeholder holds no memory: nothing for the memory statistics to count
    return Tensor._make(Storage(leaf, dtype, device, nbytes=0), L.contiguous(shape), dtype)


jax.tree_util.register_pytree_node(Tensor, _flatten, _unflatten)
register_tensor_type(Tensor)
operands.register_tensor_type(Tensor)

