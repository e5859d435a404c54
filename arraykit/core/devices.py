"""Devices are JAX devices; this module resolves user spellings of them and moves
data between the host, devices and other libraries (DLPack).

Exports (``__dlpack__``, ``np.asarray``: :mod:`arraykit.kernels.export`) are
**snapshots**: the consumer sees the values as of the export and keeps them however
the tensor is written afterwards (the exported buffer is marked exported: a write copies instead of donating it while
the export is alive, and donates again once it died; a DLPack export on a GPU,
whose consumer arraykit cannot follow, marks the buffer shared: never donated).
Writing into an exported buffer from the consumer's side is undefined, as for JAX
arrays. Host data brought in by :func:`host_to_device` is copied unless the caller
asks for an alias, which is then marked shared and never written.
"""

from __future__ import annotations

import functools
import operator

import jax
import numpy as np

from . import layout as L
from . import x64
from .jax_compat import put_on_device

put = x64.scoped(jax.device_put)
put.__doc__ = (
    "``jax.device_put`` with arraykit's 64-bit dtypes kept (see :mod:`arraykit.core.x64`)."
)


_JAX_DEFAULT = jax.default_device  # the config state; .value reads it ~2x faster than jax.config


def default_device():
    """The device new tensors go to when none is given: JAX's default device now.

    Follows ``jax.config.jax_default_device`` (also as set thread-locally by
    ``with jax.default_device(...)``): a device, a platform name, or None for the
    first local device of the default backend.
    """
    spec = _JAX_DEFAULT.value
    if spec is None or isinstance(spec, str):
        return _first_device(spec)
    return spec


@functools.lru_cache(maxsize=None)
def _first_device(platform):
    return jax.local_devices(backend=platform)[0]


def all_devices():
    """Every device arraykit can place tensors on: the default backend's, then the CPUs."""
    found = list(jax.devices())
    if found[0].platform != "cpu":
        found += jax.devices("cpu")
    return tuple(found)


def _available():
    return ", ".join(str(d) for d in all_devices())


@functools.lru_cache(maxsize=64)
def _from_string(spec):
    name, _, index = spec.partition(":")
    platform = {"cuda": "gpu", "gpu": "gpu", "cpu": "cpu", "tpu": "tpu", "rocm": "gpu"}.get(name)
    if platform is None:
        raise ValueError(f"unknown device {spec!r}; expected 'cpu', 'gpu', 'cuda:N' or a JAX device")
    try:  # this process's devices: "cuda:1" is the second GPU here, as in PyTorch
        devices = jax.local_devices(backend=platform)
    except RuntimeError:
        raise ValueError(
            f"device {spec!r} is not available on this machine (devices: {_available()})"
        ) from None
    try:
        i = int(index) if index else 0
    except ValueError:
        raise ValueError(f"unknown device {spec!r}; the index after ':' must be an integer") from None
    if not 0 <= i < len(devices):
        raise ValueError(
            f"device {spec!r} does not exist: {len(devices)} {platform} device(s) available"
        )
    return devices[i]


class Placement:
    """A tensor's place when it is spread over several devices: a JAX sharding
    (e.g. ``NamedSharding(mesh, P("data"))``) standing where a device stands.

    ``platform`` is its devices' platform; two placements (or a placement and a
    device) are compatible in one operation when they cover the same devices.
    ``addressable`` is False when the devices span several processes
    (``jax.distributed``): this process holds only some shards of such a tensor.
    """

    __slots__ = ("sharding", "platform", "device_set", "addressable")

    def __init__(self, sharding):
        self.sharding = sharding
        self.device_set = frozenset(sharding.device_set)
        self.platform = next(iter(self.device_set)).platform
        self.addressable = sharding.is_fully_addressable

    def __eq__(self, other):
        return isinstance(other, Placement) and self.sharding == other.sharding

    def __hash__(self):
        return hash(self.sharding)

    def __repr__(self):
        return f"Placement({self.sharding})"


def as_device(spec):
    """Resolve None, a JAX device, a string ('cpu', 'cuda:1') or a JAX sharding
    (a :class:`Placement` over several devices) to where a tensor lives."""
    if spec is None:
        return default_device()
    if isinstance(spec, (jax.Device, Placement)):
        return spec
    if isinstance(spec, str):
        return _from_string(spec)
    if isinstance(spec, jax.sharding.Sharding):
        return Placement(spec)
    raise TypeError(f"expected a device, got {spec!r}")


def jax_target(device):
    """What ``jax.device_put`` takes for ``device``: the device, or a placement's sharding."""
    return device.sharding if isinstance(device, Placement) else device


def sharding_of(device):
    """The JAX sharding that places a result on ``device`` (a device or a placement)."""
    if isinstance(device, Placement):
        return device.sharding
    return jax.sharding.SingleDeviceSharding(device)


def addressable(device):
    """Whether this process holds all of ``device``'s memory (False for a placement over
    the devices of several processes)."""
    return not isinstance(device, Placement) or device.addressable


def require_addressable(device, what, buffer=None):
    """Raise RuntimeError when ``what`` (an operation reading values on the host) meets
    a tensor on ``device`` whose shards live partly in other processes (a ``buffer``
    replicated on every device can be read: this process holds a whole copy)."""
    if not addressable(device) and not getattr(buffer, "is_fully_replicated", False):
        raise RuntimeError(
            f"{what}: the tensor is spread over the devices of several processes "
            f"({len(device.device_set)} devices, {device.sharding}); this process holds only "
            "some of its values. Every process can get all of them with "
            "arraykit.distributed.all_gather_global(x) (a collective: all processes call it), "
            "or its own rows with arraykit.distributed.to_process_local(x)"
        )


@x64.scoped
def put_global(local, sharding):
    """``local`` (this process's full copy of the values: a JAX array of one process or
    a NumPy array) placed by ``sharding``, whose devices span several processes, with
    no transfer between hosts: each of this process's devices gets its slice of
    ``local``. Every process must pass the same values (nothing checks it). Inside a
    trace it is ``jax.device_put``'s placement of the traced value."""
    shape = local.shape
    indices = sharding.addressable_devices_indices_map(shape)
    if isinstance(local, np.ndarray):
        pieces = [jax.device_put(np.array(local[i]), d) for d, i in indices.items()]
    else:
        pieces = [jax.device_put(local[i], d) for d, i in indices.items()]
    if pieces and isinstance(pieces[0], jax.core.Tracer):  # inside a trace: a placement of the value
        return jax.device_put(local, sharding)
    return jax.make_array_from_single_device_arrays(shape, sharding, pieces)


def fitted(device, shape):
    """Where a new array of ``shape`` made for a tensor on ``device`` goes (an
    optimizer's flat state, its hyperparameters): ``device`` itself, unless it is a
    placement whose split cannot lay out ``shape`` (a 0-d array, a rank it lacks, a
    length its devices do not divide); then a placement replicating over the same
    devices (mesh and memory kind kept)."""
    if not isinstance(device, Placement) or device.sharding.is_fully_replicated:
        return device
    sharding = device.sharding
    try:
        sharding.check_compatible_aval(tuple(shape))  # the rank
        sharding.shard_shape(tuple(shape))  # the divisibility
    except ValueError:
        if isinstance(sharding, jax.sharding.NamedSharding):
            return Placement(sharding.update(spec=jax.sharding.PartitionSpec()))
        mesh = jax.sharding.Mesh(np.array(sorted(device.device_set, key=lambda d: d.id)), ("all",))
        return Placement(jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(),
                                                    memory_kind=sharding.memory_kind))
    return device


def one_cpu(device):
    """Whether ``device`` is one CPU device: not a placement over several, whose buffer
    NumPy cannot view or own (JAX assembles a host copy of it instead)."""
    return not isinstance(device, Placement) and device.platform == "cpu"


def _device_set(device):
    return device.device_set if isinstance(device, Placement) else frozenset((device,))


def same_devices(a, b):
    """Whether tensors on ``a`` and ``b`` (devices or placements) can meet in one
    operation: the same device, or placements over the same devices."""
    return a is b or a == b or _device_set(a) == _device_set(b)


def device(type, index=None):  # noqa: A002 (PyTorch's name)
    """The JAX device a PyTorch-style spelling names (``torch.device``'s arraykit twin).

    ``device("cpu")``, ``device("cuda:0")``, ``device("cuda", 1)``, ``device("gpu")``;
    a JAX device is returned as is. arraykit's devices are JAX devices, so the result
    compares equal to ``x.device`` and works wherever a device is taken; unlike
    ``torch.device`` it must exist (ValueError naming the devices otherwise).
    """
    if index is not None:
        if not isinstance(type, str) or ":" in type:
            raise ValueError(f"device(): an index goes with a bare device type, got {type!r}, {index!r}")
        type = f"{type}:{operator.index(index)}"
    return as_device(type)


PINNED = "pinned_host"  # JAX's memory kind of page-locked host memory


def pinned(storage):
    """Whether ``storage``'s buffer lives in pinned host memory (``x.pin_memory()``)."""
    buf = storage._buffer
    return (
        isinstance(buf, jax.Array) and not isinstance(buf, jax.core.Tracer)
        and buf.sharding.memory_kind == PINNED
    )


def placement(target, storage):
    """What ``jax.device_put`` takes to move ``storage``'s buffer into ``target``'s own
    memory: ``target`` (a placement's sharding), or its ``device`` memory kind for a
    pinned buffer (JAX refuses to move a host-memory buffer to a bare device)."""
    if pinned(storage):
        return sharding_of(target).with_memory_kind("device")
    return jax_target(target)


def check_same_device(a, b, what="operation"):
    """Raise ValueError naming both devices when ``a`` and ``b`` differ (placements
    over the same devices are compatible: JAX's sharding rules combine them).

    A tensor on one device never meets one spread over several implicitly (JAX would
    replicate an uncommitted array; arraykit's tensors are all committed, as in
    PyTorch): the error says how to replicate it onto the mesh.
    """
    if not same_devices(a, b):
        raise ValueError(
            f"{what}: expected all tensors to be on the same device, but found {a} and {b}"
            + _replication_hint(a, b)
        )


def _replication_hint(a, b):
    spread = a if isinstance(a, Placement) else b
    if isinstance(a, Placement) == isinstance(b, Placement):
        return ""
    mesh = getattr(spread.sharding, "mesh", None)
    replicated = (
        "NamedSharding(mesh, PartitionSpec())" if mesh is not None
        else "a sharding over the same devices"
    )
    return (
        f". One is on a single device, the other spread over {len(spread.device_set)} "
        "devices; arraykit does not replicate implicitly. Place the single-device tensors "
        f"on the same devices first, replicated: model.to({replicated}) for a module's "
        f"parameters and buffers (before its optimizer's first step), t.to({replicated}) for "
        "a tensor"
    )


# ---------------------------------------------------------------------- host -> device


def _aliases(buf, arr):
    """Whether the CPU buffer ``buf`` is ``arr``'s memory (JAX aliases aligned arrays)."""
    return buf.unsafe_buffer_pointer() == arr.ctypes.data


_ALIGN = 64


@x64.scoped
def host_to_device(arr, device, copy=True):
    """A jax buffer (of ``arr``'s shape) holding the C-contiguous NumPy array ``arr`` on ``device``.

    ``copy=True`` guarantees a private buffer: ``jax.device_put`` aliases
    64-byte-aligned host memory on CPU (a later change of ``arr`` would show
    through) and may still be reading ``arr`` after it returns (jax 0.11 on a GPU,
    unaligned memory on the CPU), so JAX is handed a host copy, which nothing else
    changes: nothing waits for the transfer. ``copy=False``
    asks for an alias and returns ``(buffer, aliased)``.
    """
    if isinstance(device, Placement) and not device.addressable:
        return put_global(arr, device.sharding) if copy else (put_global(arr, device.sharding), False)
    if isinstance(device, Placement):  # shards may alias host memory: hand JAX a copy
        buf = jax.device_put(arr.copy() if copy else arr, device.sharding)
        return buf if copy else (buf, False)
    if copy and device.platform != "cpu":
        return put_on_device(arr.copy(), jax_target(device))
    cpu = device.platform == "cpu" and arr.size > 0
    if copy and cpu:
        # a host copy nothing else holds: JAX aliases it (64-byte aligned) or copies
        # from it in the background, and a change the caller makes to ``arr`` right
        # after cannot reach the tensor, without waiting for the transfer
        return put_on_device(arr.copy(), jax_target(device))
    buf = put_on_device(arr, jax_target(device))
    if not cpu or isinstance(buf, jax.core.Tracer):
        return buf if copy else (buf, False)
    return buf, _aliases(buf, arr)


# ---------------------------------------------------------------------- DLPack import


@x64.scoped
def import_dlpack(x, device=None, copy=None):
    """(flat jax buffer, layout, shared) for an object with ``__dlpack__`` (``device``:
    a resolved device, or None for the producer's device).

    CPU producers are read through NumPy's DLPack consumer; their memory is aliased
    when ``copy`` is not True and JAX can alias it (64-byte-aligned, non-negative
    strides), else copied. Other devices go through ``jax.dlpack``. Without a
    ``device`` the tensor stays on the producer's device (a CPU producer gives a CPU
    tensor whatever the default device is), as the array API asks.
    """
    kind, _ = x.__dlpack_device__()
    if int(kind) == 1:  # without a device, the producer's (the array API): the CPU
        return import_host(np.from_dlpack(x), device or _from_string("cpu"), copy)
    arr = jax.dlpack.from_dlpack(x, device=device, copy=copy)
    return arr, L.contiguous(arr.shape), not copy


def host_span(arr):
    """``arr``'s memory as ``(span, layout)``: a 1-D array over the elements its memory
    covers (lowest address first) and ``arr``'s layout over that span (negative
    strides kept). ValueError when a stride is not a multiple of the item size."""
    item = arr.itemsize
    if any(s % item for s in arr.strides):
        raise ValueError(
            f"a NumPy array with strides {arr.strides} (not multiples of its item size {item}) "
            "cannot be addressed element by element"
        )
    flipped = tuple(d for d, s in enumerate(arr.strides) if s < 0)
    base = np.flip(arr, flipped) if flipped else arr
    lay = L.Layout(base.shape, tuple(s // item for s in base.strides), 0)
    span = L.required_storage_size(lay)
    flat = np.lib.stride_tricks.as_strided(base, shape=(span,), strides=(item,))
    return flat, (L.flip(lay, flipped) if flipped else lay)


def import_host(arr, device, copy=None):
    """(flat jax buffer, layout, shared) holding the NumPy array ``arr`` on ``device``.

    ``copy=True``: a private dense copy. ``copy=False``: an alias of ``arr``'s memory
    (strides kept) or ValueError. ``copy=None``: an alias when possible, else a copy.
    """
    if copy or arr.size == 0:
        dense = np.ascontiguousarray(arr)
        return host_to_device(dense, device), L.contiguous(arr.shape), False
    if device.platform != "cpu":
        if copy is False:
            raise ValueError(
                f"copy=False: host memory cannot be aliased on device {device}; a copy is needed"
            )
        return import_host(arr, device, copy=True)
    try:
        flat, lay = host_span(arr)
    except ValueError:
        flat = None
    if flat is None or flat.ctypes.data % _ALIGN:
        if copy is False:
            raise ValueError(
                f"copy=False: JAX aliases host memory only when it is {_ALIGN}-byte aligned "
                f"with strides that are multiples of the item size (strides {arr.strides}"
                + ("" if flat is None else f", address offset {flat.ctypes.data % _ALIGN}")
                + "); a copy is needed"
            )
        return import_host(arr, device, copy=True)
    buf, aliased = host_to_device(flat, device, copy=False)
    if not aliased:
        if copy is False:
            raise ValueError("copy=False: JAX did not alias this host array; a copy is needed")
        return import_host(arr, device, copy=True)
    return buf, lay, True
