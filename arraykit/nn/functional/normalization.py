"""Normalization layers' functions: batch, instance, group, layer, RMS and local
response normalization.

Each normalization is one kernel whose gradient is JAX's VJP of it. Running
statistics (``batch_norm``, ``instance_norm`` in training) are written into their
buffers in place, by one more kernel per buffer, so an ``arraykit.jit`` step
threads them as it threads any mutated storage. With a tensor ``count`` (a
module's ``num_batches_tracked``, already incremented) instead of a momentum, the
update is a cumulative average whose factor ``1 / count`` is computed inside the
kernel: no value is read on the host.
"""

from __future__ import annotations

import math
import operator

import jax
import jax.numpy as jnp
import numpy as np

from ...api.autocasting import coerce
from ...autograd.mode import no_grad
from ...kernels.bodies import at_least_float32
from ...kernels.launch import apply, apply_inplace
from ...tensors.tensor_type import require_tensor
from .arguments import _floating

__all__ = [
    "batch_norm", "instance_norm", "group_norm", "layer_norm", "rms_norm", "local_response_norm",
]


def _channel_shape(ndim, channels):
    """The shape broadcasting a per-channel vector against an (N, C, ...) array."""
    return (1, channels) + (1,) * (ndim - 2)


def _affine(y, affine, has_weight, shape):
    affine = iter(affine)
    if has_weight:
        y = y * next(affine).reshape(shape)
    for b in affine:
        y = y + b.reshape(shape)
    return y


def _moments(y, dims):
    mean = jnp.mean(y, axis=dims, keepdims=True)
    return mean, jnp.mean(jnp.square(y - mean), axis=dims, keepdims=True)


# ------------------------------------------------------------------ batch and instance norm


def _norm_body(x, *rest):
    """Batch norm (``instance`` false) or instance norm of ``x`` (N, C, ...): batch
    statistics, or the given running ones, then the affine transform."""
    *operands, (instance, batch_stats, eps, has_running, has_weight) = rest
    compute = at_least_float32(x.dtype)
    y = x.astype(compute)
    shape = _channel_shape(x.ndim, x.shape[1])
    if batch_stats:
        dims = tuple(range(2, x.ndim)) if instance else (0,) + tuple(range(2, x.ndim))
        mean, var = _moments(y, dims)
    else:
        mean, var = (t.astype(compute).reshape(shape) for t in operands[:2])
    y = (y - mean) * jax.lax.rsqrt(var + eps)
    affine = operands[2:] if has_running else operands
    return _affine(y, affine, has_weight, shape).astype(x.dtype)


def _running_body(run, x, *rest):
    """``(1 - f)·run + f·stat`` with ``stat`` the channels' batch mean or unbiased
    variance (per instance then averaged over the batch when ``instance``) and ``f``
    the momentum, or ``1 / count`` when a count is given."""
    *count, (instance, which, momentum) = rest
    compute = at_least_float32(x.dtype)
    y = x.astype(compute)
    dims = tuple(range(2, x.ndim)) if instance else (0,) + tuple(range(2, x.ndim))
    n = math.prod(x.shape[d] for d in dims)
    mean, var = _moments(y, dims)
    stat = mean if which == "mean" else var * (n / (n - 1) if n > 1 else jnp.nan)
    stat = jnp.mean(stat, axis=0) if instance else stat[0]
    stat = stat.reshape(run.shape)
    factor = 1.0 / count[0].astype(compute) if count else jnp.asarray(momentum, compute)
    new = run.astype(compute) * (1 - factor) + factor * stat
    return new.astype(run.dtype)


def _check_channel_vector(t, name, channels):
    if t is not None:
        require_tensor(t, name)
        if t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")


def _update_running(x, running_mean, running_var, instance, momentum, count):
    """Write the new running statistics into ``running_mean``/``running_var`` in place."""
    operands = (x.detach(),) + (() if count is None else (count,))
    with no_grad():
        for run, which in ((running_mean, "mean"), (running_var, "var")):
            if run is not None:
                apply_inplace(_running_body, run, operands, ((instance, which, float(momentum or 0.0)),))


def _normalize(x, running_mean, running_var, weight, bias, batch_stats, update, momentum, eps, instance, count):
    """Normalise with the batch's statistics (``batch_stats``) or the running ones, and
    update the running ones when ``update``."""
    channels = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_channel_vector(t, name, channels)
    has_running = running_mean is not None and running_var is not None
    if not batch_stats and not has_running:
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    operands = (x,)
    if not batch_stats:
        operands += (running_mean, running_var)
    operands += tuple(t for t in (weight, bias) if t is not None)
    static = (instance, bool(batch_stats), float(eps), not batch_stats, weight is not None)
    out = apply(_norm_body, operands, (static,))
    if update:
        _update_running(x, running_mean, running_var, instance, momentum, count)
    return out


def _batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                eps=1e-5, count=None):
    """:func:`batch_norm`, with the running statistics' factor ``1 / count`` (a tensor,
    the number of batches seen) instead of ``momentum`` when ``count`` is given."""
    x = _floating(input, "batch_norm")
    x, weight, bias = coerce("batch_norm", x, weight, bias)
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected an input with at least 2 dimensions (N, C, ...), got {x.shape}")
    if training:
        size = x.shape[0] * math.prod(x.shape[2:])
        if size == 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size {list(x.shape)}"
            )
    batch_stats = training or running_mean is None or running_var is None
    return _normalize(x, running_mean, running_var, weight, bias, batch_stats, training, momentum, eps,
                      False, count)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    """Normalise each channel (dimension 1) of ``input`` (N, C, ...): with the batch's
    statistics when ``training`` (then ``running_mean``/``running_var``, if given,
    move towards them in place by ``momentum``, the variance unbiased), else with the
    running statistics; then scale by ``weight`` and shift by ``bias``."""
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each channel of each sample of ``input`` (N, C, ...) over its spatial
    dimensions; with ``use_input_stats`` false, with the running statistics instead.
    Given running statistics move in place towards the batch average of the samples'
    statistics (variance unbiased) by ``momentum``."""
    x = _floating(input, "instance_norm")
    x, weight, bias = coerce("instance_norm", x, weight, bias)
    if x.ndim < 2:
        raise ValueError(f"instance_norm: expected an input with at least 2 dimensions (N, C, ...), got {x.shape}")
    if use_input_stats and math.prod(x.shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {list(x.shape)}")
    return _normalize(x, running_mean, running_var, weight, bias, use_input_stats, use_input_stats, momentum,
                      eps, True, None)


# ------------------------------------------------------------------ group norm


def _group_norm_body(x, *rest):
    *affine, (groups, eps, has_weight) = rest
    compute = at_least_float32(x.dtype)
    y = x.astype(compute).reshape(x.shape[0], groups, -1)
    mean, var = _moments(y, (2,))
    y = ((y - mean) * jax.lax.rsqrt(var + eps)).reshape(x.shape)
    return _affine(y, affine, has_weight, _channel_shape(x.ndim, x.shape[1])).astype(x.dtype)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise ``input`` (N, C, ...) over each of ``num_groups`` groups of
    consecutive channels (with the spatial dimensions), then apply the per-channel
    ``weight`` and ``bias``."""
    x = _floating(input, "group_norm")
    x, weight, bias = coerce("group_norm", x, weight, bias)
    num_groups = operator.index(num_groups)
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    channels = x.shape[1]
    if num_groups <= 0 or channels % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input of "
            f"shape {list(x.shape)} and num_groups={num_groups}"
        )
    if x.shape[0] * channels // num_groups * math.prod(x.shape[2:]) == 1:
        size = [x.shape[0] * channels // num_groups, num_groups] + list(x.shape[2:])
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None:
            require_tensor(t, name)
            if t.ndim != 1 or t.numel() != channels:
                raise RuntimeError(
                    f"Expected {name} to be a vector of size equal to the number of channels in input, "
                    f"but got {name} of shape {list(t.shape)} and input of shape {list(x.shape)}"
                )
    operands = (x,) + tuple(t for t in (weight, bias) if t is not None)
    return apply(_group_norm_body, operands, ((num_groups, float(eps), weight is not None),))


# ------------------------------------------------------------------ layer and RMS norm


def _normalized_shape(x, normalized_shape, weight, bias, name):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if len(shape) > x.ndim or x.shape[x.ndim - len(shape):] != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [*, "
            f"{', '.join(map(str, shape))}], but got input of size{list(x.shape)}"
        )
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.shape != shape:
            raise RuntimeError(
                f"{name}: expected {what} to be of same shape as normalized_shape, but got "
                f"{what} of shape {list(t.shape)} and normalized_shape = {list(shape)}"
            )
    return tuple(range(x.ndim - len(shape), x.ndim))


def _layer_norm_body(x, *rest):
    *affine, (dims, eps, has_weight) = rest
    compute = at_least_float32(x.dtype)
    y = x.astype(compute)
    mean, var = _moments(y, dims)
    y = (y - mean) * jax.lax.rsqrt(var + eps)
    affine = iter(affine)
    if has_weight:
        y = y * next(affine)
    for b in affine:
        y = y + b
    return y.astype(x.dtype)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dimensions (mean 0, biased
    variance 1), then scale by ``weight`` and shift by ``bias``."""
    x = _floating(input, "layer_norm")
    x, weight, bias = coerce("layer_norm", x, weight, bias)
    dims = _normalized_shape(x, normalized_shape, weight, bias, "layer_norm")  # PyTorch's errors
    operands = (x,) + tuple(t for t in (weight, bias) if t is not None)
    return apply(_layer_norm_body, operands, ((dims, float(eps), weight is not None),))


def _rms_norm_body(x, *rest):
    *weight, (dims, eps) = rest
    compute = at_least_float32(x.dtype)
    y = x.astype(compute)
    y = y * jax.lax.rsqrt(jnp.mean(jnp.square(y), axis=dims, keepdims=True) + eps)
    if weight:
        y = y * weight[0].astype(compute)
    return y.astype(x.dtype)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Divide by the root mean square over the trailing ``normalized_shape``
    dimensions (plus ``eps``, by default the input dtype's machine epsilon), then
    scale by ``weight``."""
    x = _floating(input, "rms_norm")
    x, weight = coerce("rms_norm", x, weight)
    dims = _normalized_shape(x, normalized_shape, weight, None, "rms_norm")
    if eps is None:
        eps = float(np.finfo(x.dtype.np).eps)
    operands = (x,) if weight is None else (x, weight)
    return apply(_rms_norm_body, operands, ((dims, float(eps)),))


# ------------------------------------------------------------------ local response norm


def _local_response_body(x, size, alpha, beta, k):
    compute = at_least_float32(x.dtype)
    y = x.astype(compute)
    window = (1, size) + (1,) * (x.ndim - 2)
    padding = ((0, 0), (size // 2, (size - 1) // 2)) + ((0, 0),) * (x.ndim - 2)
    total = jax.lax.reduce_window(jnp.square(y), np.array(0, compute), jax.lax.add, window,
                                  (1,) * x.ndim, padding)
    return (y / (total * (alpha / size) + k) ** beta).astype(x.dtype)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Divide each element of ``input`` (N, C, ...) by ``(k + alpha/size · Σ x²)^beta``,
    the sum over the ``size`` neighbouring channels (zero-padded at the ends)."""
    x = _floating(input, "local_response_norm")
    if x.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {x.ndim} dimensions)")
    size = operator.index(size)
    if size <= 0:
        raise ValueError(f"local_response_norm: size must be positive, got {size}")
    if x.numel() == 0:
        return x
    return apply(_local_response_body, (x,), (size, float(alpha), float(beta), float(k)))
