"""Device memory as PyTorch's material describes it: allocator statistics and pinned
host memory.

Statistics (``torch.cuda.memory_allocated`` and friends, for every device):

* on a GPU they are JAX's statistics of the device's allocator
  (``jax.Device.memory_stats()``: every buffer JAX holds there, arraykit's or not);
* on the CPU, where JAX keeps none, they are arraykit's own accounting of its live
  storages (:mod:`arraykit.core.storage`): the bytes of the storages alive now, the most
  that were alive at once since the last :func:`reset_peak_memory_stats`, and how
  many storages there are. Views cost nothing (they share their storage); a
  storage's bytes are released when its last tensor goes away. Values held only
  outside arraykit (a NumPy array from an export, a JAX array) do not count.

Pinned memory (``x.pin_memory()``): a copy of a CPU tensor in page-locked host
memory of the first GPU (JAX's ``pinned_host`` memory kind), from which
``x.to("cuda", non_blocking=True)`` is a DMA transfer. JAX transfers are always
asynchronous, so ``non_blocking`` asks for nothing more. The pinned tensor's
``device`` is that GPU (JAX places host memory kinds under a device; PyTorch
reports ``cpu``). A machine without a GPU has no use for pinned memory, and
``pin_memory()`` raises there, as in PyTorch.
"""

from __future__ import annotations

import jax

from ..core import layout as L
from ..core.devices import PINNED, all_devices, as_device, pinned, put
from ..core.storage import live_storages, reset_peak
from ..kernels.launch import apply
from ..tensors.tensor_type import Tensor, _identity, require_tensor

__all__ = [
    "max_memory_allocated", "memory_allocated", "memory_stats", "reset_peak_memory_stats",
]

_RESETS = {}  # GPU device -> (JAX's peak, bytes in use) at the last reset


def _jax_stats(device):
    """JAX's allocator statistics of ``device`` (None on the CPU)."""
    return device.memory_stats()


def memory_stats(device=None):
    """Memory statistics of ``device`` (default: the default device) as a dict.

    ``bytes_in_use`` and ``peak_bytes_in_use`` (since :func:`reset_peak_memory_stats`)
    are JAX's allocator figures on a GPU and arraykit's live storages on the CPU (see
    the module docstring); ``num_storages`` and ``storage_bytes`` count arraykit's
    live storages on every device. On a GPU the rest of JAX's statistics
    (``bytes_limit``, ``num_allocs``, ...) come along.
    """
    device = as_device(device)
    storage_bytes, storages, peak = live_storages(device)
    stats = _jax_stats(device)
    if stats is None:
        return {
            "bytes_in_use": storage_bytes, "peak_bytes_in_use": peak,
            "num_storages": storages, "storage_bytes": storage_bytes,
        }
    stats = dict(stats)
    stats["peak_bytes_in_use"] = _peak_since_reset(device, stats)
    stats["num_storages"] = storages
    stats["storage_bytes"] = storage_bytes
    return stats


def _peak_since_reset(device, stats):
    """JAX's all-time peak, or after a reset the peak since then.

    XLA's allocator keeps one all-time peak. When it has grown since the reset it
    is the peak since the reset; otherwise the peak since the reset lies below the
    earlier one and is reported as the larger of the bytes in use at the reset and
    now (a lower bound).
    """
    reset = _RESETS.get(device)
    peak = stats.get("peak_bytes_in_use", stats.get("bytes_in_use", 0))
    if reset is None:
        return peak
    peak_then, in_use_then = reset
    return peak if peak > peak_then else max(in_use_then, stats.get("bytes_in_use", 0))


def memory_allocated(device=None):
    """Bytes in use on ``device`` now (``memory_stats(device)["bytes_in_use"]``)."""
    return memory_stats(device)["bytes_in_use"]


def max_memory_allocated(device=None):
    """The most bytes in use on ``device`` at once since :func:`reset_peak_memory_stats`."""
    return memory_stats(device)["peak_bytes_in_use"]


def reset_peak_memory_stats(device=None):
    """Start the peak of :func:`max_memory_allocated` over from what is in use now."""
    device = as_device(device)
    reset_peak(device)
    stats = _jax_stats(device)
    if stats is not None:
        _RESETS[device] = (
            stats.get("peak_bytes_in_use", stats.get("bytes_in_use", 0)),
            stats.get("bytes_in_use", 0),
        )


# ----------------------------------------------------------------------------- pinned memory


def is_pinned(tensor):
    """Whether ``tensor``'s storage lives in pinned (page-locked) host memory."""
    return pinned(tensor._storage)


def pin(tensor):
    """A copy of the CPU tensor ``tensor`` in the first GPU's pinned host memory."""
    require_tensor(tensor, "pin_memory")
    if is_pinned(tensor):
        return tensor
    gpus = [d for d in all_devices() if d.platform == "gpu"]
    if not gpus:
        names = ", ".join(str(d) for d in all_devices())
        raise RuntimeError(
            "pin_memory(): pinned (page-locked) host memory serves copies to a GPU, and "
            f"this machine has none (devices: {names})"
        )
    if tensor.device.platform != "cpu":
        raise RuntimeError(
            f"pin_memory(): only CPU tensors can be pinned, this one is on {tensor.device}"
        )
    dense = apply(_identity, (tensor,))  # a private C-order copy (NumPy memory included)
    pinned_memory = jax.sharding.SingleDeviceSharding(gpus[0], memory_kind=PINNED)
    buf = put(dense._storage._buffer, pinned_memory)
    return Tensor._from_buffer(buf, L.contiguous(tensor.shape), gpus[0])
