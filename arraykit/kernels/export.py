"""A tensor's values out of its storage: a dense jax array that no storage will
donate (:func:`dense_values`), a NumPy view of a CPU tensor (:func:`host_view`),
a DLPack capsule (:func:`export_dlpack`).

Exports are **snapshots**: the consumer sees the values as of the export and keeps
them however the tensor is written afterwards (the exported buffer is marked
exported: a write copies instead of donating it while the export is alive, and donates
again once it died). See :mod:`arraykit.core.devices`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core import layout as L
from ..core import x64
from ..core.devices import one_cpu, put
from . import strided

_read = jax.jit(strided.read, static_argnums=1)


def whole(tensor):
    """Whether the tensor is its storage buffer as is: same shape, C order, offset 0."""
    lay = tensor._layout
    return lay.shape == tensor._storage._buffer.shape and lay == L.contiguous(lay.shape)


class _Exported:
    """Keeps an exported jax buffer alive under a NumPy view of its memory."""

    __slots__ = ("__array_interface__", "buffer")

    def __init__(self, buffer, interface):
        self.buffer = buffer
        self.__array_interface__ = interface


def host_view(tensor, writeable=False):
    """A NumPy view of a CPU tensor's values over its storage (no copy), any layout.

    The storage buffer is exported (not donated while the view lives), so the view
    keeps the values as of this call. ``writeable=True`` is for legacy DLPack consumers,
    which cannot be told that memory is read-only; writing through it is undefined.
    A storage over NumPy memory (:mod:`arraykit.core.host_memory`) gives a view of that
    memory, shared with the tensor, not a snapshot.
    """
    lay = tensor._layout
    st = tensor._storage
    if type(st._buffer) is np.ndarray:
        return st.host_array(lay)
    buf = st.export()
    if lay.numel == 0:
        return np.empty(lay.shape, buf.dtype)
    buf.block_until_ready()
    item = buf.dtype.itemsize
    interface = {
        "version": 3,
        "shape": lay.shape,
        "typestr": buf.dtype.str,
        "data": (buf.unsafe_buffer_pointer() + lay.offset * item, not writeable),
        "strides": tuple(s * item for s in lay.strides),
    }
    return np.asarray(_Exported(buf, interface))


@x64.scoped
def dense_values(tensor):
    """The tensor's values as a jax array of its shape that no storage will donate.

    The storage's own buffer (marked exported: not donated while the result lives)
    when the tensor is all of it in C order; otherwise one read into a new buffer.
    """
    st = tensor._storage
    if type(st._buffer) is np.ndarray:  # NumPy memory (arraykit.core.host_memory): a private copy
        with st.lock:
            copy = np.array(st.host_array(tensor._layout))
        return put(copy, st.device)
    if whole(tensor):
        return st.export()
    with st.lock:
        return _read(st.buffer, tensor._layout)


def dlpack_device(tensor):
    """``(device type, device id)`` of the tensor's storage, in DLPack's enumeration."""
    buf = tensor._storage.buffer
    if isinstance(buf, jax.core.Tracer):
        raise BufferError("a tensor traced inside jax.jit cannot be exported through DLPack")
    return buf.__dlpack_device__()


@x64.scoped
def export_dlpack(tensor, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule holding a snapshot of the tensor's values (see module docstring).

    On CPU, DLPack 1.x consumers get every layout with non-negative strides without
    a copy (marked read-only); legacy consumers (``max_version`` None or 0.x, e.g.
    JAX) get dense layouts without a copy. Negative strides, which consumers such
    as PyTorch reject, and other layouts are copied. On other devices only a tensor
    that is exactly its storage is exported without a copy.
    """
    own = dlpack_device(tensor)
    if dl_device is not None and tuple(dl_device) != tuple(own):
        if copy is False:
            raise BufferError(
                f"exporting to DLPack device {tuple(dl_device)} from {tuple(own)} needs a "
                "copy, but copy=False"
            )
        return dense_values(tensor).__dlpack__(stream=stream, dl_device=dl_device)
    lay = tensor._layout
    versioned = max_version is not None and tuple(max_version) >= (1, 0)
    on_cpu = one_cpu(tensor.device)
    if not on_cpu:
        direct = whole(tensor)
    elif versioned:
        direct = all(s >= 0 for s in lay.strides)
    else:
        direct = all(s >= 0 for s in lay.strides) and L.is_dense(lay)
    if copy is False and not direct:
        raise BufferError(
            f"a tensor with layout {lay} on {tensor.device} cannot be exported through "
            "DLPack without a copy, but copy=False"
        )
    if on_cpu:
        view = host_view(tensor, writeable=not versioned)
        if copy or not direct:
            view = np.array(view, order="C")
        return view.__dlpack__(stream=stream, max_version=max_version)
    values = dense_values(tensor)
    if copy and whole(tensor):
        values = jnp.array(values, copy=True)
    elif whole(tensor):
        tensor._storage.share()  # the capsule's holders are not counted: never donate
    return values.__dlpack__(stream=stream)
