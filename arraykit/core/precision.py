"""arraykit's compute modes: float32 matmul precision and the autocast state.

Both are arraykit state, never JAX's global configuration (``jax.config`` is not
touched). Kernels read them when they are traced, and they are part of every cache
key that could otherwise reuse a program compiled under another mode:

* the precision of a contraction is a static argument of its kernel
  (:func:`dot_precision` gives the value for ``precision=``), so the eager kernel
  cache keeps one program per precision;
* :func:`mode` (precision and this thread's autocast state) is part of every
  ``arraykit.jit`` signature, so a change retraces instead of reusing a program.

Precision settings, as ``torch.set_float32_matmul_precision``: ``"highest"``
(default; full float32 products), ``"high"`` (TensorFloat-32 where the device has
it) and ``"medium"`` (bfloat16 products, float32 accumulation). Only float32
contractions are affected; other dtypes always contract at ``Precision.HIGHEST``.
The JAX spelling of each setting per platform is an algorithm preset
(``jax.lax.DotAlgorithmPreset``) where the device compiles it, else the
precision enum: the CPU rejects TF32, so ``"high"`` is ``Precision.HIGH`` there
(the CPU computes full float32 products at ``HIGH``). Convolutions take enums only
(JAX drops an algorithm preset on a convolution): ``HIGHEST``, ``HIGH``, ``DEFAULT``.

Kernels that contract (matmul, tensordot, vecdot, conv2d, and attention or fused
losses written elsewhere) get their ``precision=`` from :func:`dot_precision`
called *outside* the kernel body and passed as a static argument, so that it is
part of the kernel's cache key.

The autocast state (:class:`arraykit.autocast` sets it) is per thread, as in
PyTorch: the device types with autocast on and their lower-precision dtype.
"""

from __future__ import annotations

import threading

import jax
import jax.numpy as jnp
import numpy as np

from . import dtypes

SETTINGS = ("highest", "high", "medium")
_DOT = {
    "highest": (jax.lax.Precision.HIGHEST,),
    "high": (jax.lax.DotAlgorithmPreset.TF32_TF32_F32, jax.lax.Precision.HIGH),
    "medium": (jax.lax.DotAlgorithmPreset.BF16_BF16_F32, jax.lax.Precision.DEFAULT),
}
_CONV = {
    "highest": jax.lax.Precision.HIGHEST,
    "high": jax.lax.Precision.HIGH,
    "medium": jax.lax.Precision.DEFAULT,
}
_FLOAT32 = np.dtype(np.float32)

_setting = "highest"
_resolved = {}  # (setting, kind, dtype, device) -> JAX precision value
_supported = {}  # (preset, platform) -> whether the platform compiles it
_LOCK = threading.Lock()


def set_float32_matmul_precision(precision):
    """Set the precision of float32 matrix products: ``"highest"``, ``"high"`` or
    ``"medium"`` (as ``torch.set_float32_matmul_precision``). Process-wide; compiled
    kernels and ``arraykit.jit`` programs of another precision are not reused."""
    global _setting
    if precision not in SETTINGS:
        raise ValueError(
            f"set_float32_matmul_precision: invalid precision {precision!r}; expected one "
            f"of {', '.join(repr(s) for s in SETTINGS)}"
        )
    _setting = precision


def get_float32_matmul_precision():
    """The current float32 matmul precision (``"highest"`` unless set)."""
    return _setting


def dot_precision(dtype, device, kind="dot"):
    """The ``precision=`` argument for a contraction over ``dtype`` operands on
    ``device`` under the current setting (``kind``: ``"dot"`` for
    ``dot_general``-based ops, ``"conv"`` for convolutions). Pass it to the kernel
    as a static argument (it is hashable), never read it inside a kernel body."""
    key = (_setting, kind, dtype, device)
    value = _resolved.get(key)
    if value is None:
        value = _resolved[key] = _resolve(_setting, kind, np.dtype(dtype), device)
    return value


def _resolve(setting, kind, dtype, device):
    if dtype != _FLOAT32:
        return jax.lax.Precision.HIGHEST
    if kind == "conv":
        return _CONV[setting]
    *presets, fallback = _DOT[setting]
    for preset in presets:
        if _compiles(preset, device):
            return preset
    return fallback


def _compiles(preset, device):
    """Whether ``device``'s platform compiles a float32 dot with algorithm ``preset``
    (checked once per platform on a 2x2 product)."""
    platform = getattr(device, "platform", device)
    key = (preset, platform)
    known = _supported.get(key)
    if known is None:
        with _LOCK:
            known = _supported[key] = _try_compile(preset, device)
    return known


def _try_compile(preset, device):
    operand = jax.ShapeDtypeStruct((2, 2), jnp.float32,
                                   sharding=jax.sharding.SingleDeviceSharding(device))
    try:
        jax.jit(lambda a, b: jnp.matmul(a, b, precision=preset)).lower(operand, operand).compile()
    except Exception:  # noqa: BLE001 (lowering raises ValueError, XLA's compiler others)
        return False
    return True


# ----------------------------------------------------------------------------- autocast state


class _AutocastState(threading.local):
    def __init__(self):
        self.enabled = ()  # ((platform, dtype), ...): device types with autocast on


_autocast = _AutocastState()
_threads_casting = 0  # how many threads have autocast on: ops skip the state when 0
_COUNT_LOCK = threading.Lock()


def autocast_state():
    """This thread's autocast state: ``((platform, dtype), ...)``, empty when off."""
    return _autocast.enabled


def set_autocast_state(enabled):
    """Install ``enabled`` (as :func:`autocast_state` returns it) for this thread and
    return the previous state (for :class:`arraykit.autocast` to restore)."""
    global _threads_casting
    previous = _autocast.enabled
    if bool(previous) != bool(enabled):
        with _COUNT_LOCK:
            _threads_casting += 1 if enabled else -1
    _autocast.enabled = enabled
    return previous


def autocast_dtype(platform):
    """The lower-precision dtype autocast uses on ``platform`` in this thread, or None."""
    if not _threads_casting:
        return None
    for enabled_platform, dtype in _autocast.enabled:
        if enabled_platform == platform:
            return dtype
    return None


def any_autocast():
    """Whether some thread has autocast on (a cheap test before reading the state)."""
    return _threads_casting != 0


def mode():
    """The compute modes a traced program depends on (precision, this thread's autocast
    state, the default float dtype a trace may have baked in); part of every
    ``arraykit.jit`` signature."""
    return (_setting, _autocast.enabled if _threads_casting else (), dtypes.DEFAULT_FLOAT)
