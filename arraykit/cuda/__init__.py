"""``arraykit.cuda``: PyTorch's ``torch.cuda`` queries over JAX's GPU devices.

The GPUs are JAX's devices of platform ``"gpu"`` (CUDA or ROCm); their index is
their position among them (``"cuda:1"`` is the second). On a machine without a
GPU the answers say so: :func:`is_available` is False, :func:`device_count` 0,
the memory queries report 0 bytes, seeding has nothing to seed (as in PyTorch),
and the calls that need a device (:func:`current_device`, :func:`get_device_name`,
:func:`synchronize`) raise RuntimeError. ``arraykit.cuda.amp`` holds PyTorch's
older spellings ``GradScaler`` and ``autocast``.
"""

from __future__ import annotations

import operator

import jax

from ..api import device_memory
from ..core import buffer_pool
from ..core.devices import all_devices, as_device, default_device
from ..random import default_generator
from . import amp

__all__ = [
    "is_available", "device_count", "current_device", "get_device_name", "is_bf16_supported",
    "manual_seed", "manual_seed_all", "synchronize", "memory_allocated", "max_memory_allocated",
    "reset_peak_memory_stats", "memory_stats", "empty_cache", "amp",
]


def _gpus():
    return [d for d in all_devices() if d.platform == "gpu"]


def is_available():
    """Whether JAX has a GPU on this machine."""
    return bool(_gpus())


def device_count():
    """How many GPUs JAX sees (0 without one)."""
    return len(_gpus())


def _require_gpus(name):
    gpus = _gpus()
    if not gpus:
        names = ", ".join(str(d) for d in all_devices())
        raise RuntimeError(f"arraykit.cuda.{name}(): this machine has no GPU (devices: {names})")
    return gpus


def _current(gpus):
    """The default device when it is a GPU, else the first GPU."""
    device = default_device()
    return device if device in gpus else gpus[0]


def current_device():
    """The index of the current GPU: the default device's when it is one, else 0."""
    gpus = _require_gpus("current_device")
    return gpus.index(_current(gpus))


def _gpu(device, name):
    """The GPU meant by ``device``: None (current), an index, a string or a device."""
    gpus = _require_gpus(name)
    if device is None:
        return _current(gpus)
    if isinstance(device, int):
        if not 0 <= device < len(gpus):
            raise ValueError(
                f"arraykit.cuda.{name}(): GPU index {device} out of range; "
                f"{len(gpus)} GPU(s) available"
            )
        return gpus[device]
    device = as_device(device)
    if device not in gpus:
        raise ValueError(f"arraykit.cuda.{name}(): {device} is not a GPU")
    return device


def get_device_name(device=None):
    """The GPU's model name (JAX's ``device_kind``, e.g. ``'NVIDIA H100 80GB HBM3'``)."""
    return _gpu(device, "get_device_name").device_kind


def is_bf16_supported(including_emulation=True):
    """Whether bfloat16 computes on the GPU: XLA compiles it for every GPU it runs on."""
    return is_available()


def manual_seed(seed):
    """Seed the current GPU's default generator (nothing to seed without a GPU)."""
    seed = operator.index(seed)
    gpus = _gpus()
    if gpus:
        default_generator(_current(gpus)).manual_seed(seed)


def manual_seed_all(seed):
    """Seed the default generator of every GPU (nothing to seed without a GPU)."""
    seed = operator.index(seed)
    for device in _gpus():
        default_generator(device).manual_seed(seed)


def synchronize(device=None):
    """Wait until every computation queued on the GPU has finished (JAX runs work
    asynchronously: this blocks on every live array of that device)."""
    gpu = _gpu(device, "synchronize")
    live = [a for a in jax.live_arrays() if gpu in a.devices()]
    jax.block_until_ready(live)


def _gpu_or_none(device, name):
    """The GPU meant, or None when the machine has none and none was named."""
    if device is None and not _gpus():
        return None
    return _gpu(device, name)


def memory_stats(device=None):
    """The GPU's memory statistics (see :func:`arraykit.memory_stats`); empty without a GPU."""
    gpu = _gpu_or_none(device, "memory_stats")
    return {} if gpu is None else device_memory.memory_stats(gpu)


def memory_allocated(device=None):
    """Bytes in use on the GPU now (0 without a GPU)."""
    gpu = _gpu_or_none(device, "memory_allocated")
    return 0 if gpu is None else device_memory.memory_allocated(gpu)


def max_memory_allocated(device=None):
    """The most bytes in use on the GPU at once since :func:`reset_peak_memory_stats`
    (0 without a GPU)."""
    gpu = _gpu_or_none(device, "max_memory_allocated")
    return 0 if gpu is None else device_memory.max_memory_allocated(gpu)


def reset_peak_memory_stats(device=None):
    """Start the GPU's peak of :func:`max_memory_allocated` over (nothing to reset without a GPU)."""
    gpu = _gpu_or_none(device, "reset_peak_memory_stats")
    if gpu is not None:
        device_memory.reset_peak_memory_stats(gpu)


def empty_cache():
    """Release the memory arraykit keeps for reuse (its pool of recycled buffers, see
    :mod:`arraykit.core.buffer_pool`). XLA's own GPU allocator keeps what it holds:
    JAX has no call that returns it."""
    buffer_pool.empty()
