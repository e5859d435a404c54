"""``arraykit.nn.init``: PyTorch's parameter initialisations, in place, without gradient.

Every random draw goes through :func:`_uniform`, a draw of :mod:`arraykit.random`
(normal draws transform a uniform one by the inverse error function, as
``jax.random.normal`` does), so ``arraykit.manual_seed`` and ``generator=`` decide
the values, and under ``arraykit.jit`` draws advance the generator's state tensor.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import random
from ..autograd.mode import no_grad
from ..kernels.launch import apply
from ..tensors.tensor_type import require_tensor

__all__ = [
    "calculate_gain",
    "constant_",
    "dirac_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "sparse_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]

# ---------------------------------------------------------------------- random draws


def _uniform(shape, low, high, dtype, device, generator=None):
    """A new tensor of ``shape`` drawn uniformly from ``[low, high)`` by ``generator``
    (default: the device's default generator, see :mod:`arraykit.random`)."""
    return random.uniform(low, high, tuple(shape), generator=generator, dtype=dtype, device=device)


# ---------------------------------------------------------------------- initialisers


def _normal_body(u, mean, std):
    return (mean + std * np.sqrt(2.0) * jax.scipy.special.erfinv(u)).astype(u.dtype)


def _floating(tensor, name):
    require_tensor(tensor, name)
    if tensor.dtype.kind != "float":
        raise TypeError(f"{name}: expected a real floating-point tensor, got {tensor.dtype}")
    return tensor


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill ``tensor`` with values drawn uniformly from ``[a, b)``."""
    _floating(tensor, "uniform_")
    with no_grad():
        return tensor.copy_(_uniform(tensor.shape, a, b, tensor.dtype, tensor.device, generator))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill ``tensor`` with values drawn from the normal distribution N(mean, std²)."""
    _floating(tensor, "normal_")
    low = float(np.nextafter(np.array(-1.0, tensor.dtype.np), np.array(0.0, tensor.dtype.np)))
    u = _uniform(tensor.shape, low, 1.0, tensor.dtype, tensor.device, generator)
    with no_grad():
        return tensor.copy_(apply(_normal_body, (u,), (float(mean), float(std))))


def constant_(tensor, val):
    """Fill ``tensor`` with ``val``."""
    with no_grad():
        return require_tensor(tensor, "constant_").fill_(val)


def zeros_(tensor):
    """Fill ``tensor`` with zeros."""
    return constant_(tensor, 0)


def ones_(tensor):
    """Fill ``tensor`` with ones."""
    return constant_(tensor, 1)


def calculate_gain(nonlinearity, param=None):
    """PyTorch's recommended gain for ``nonlinearity`` (``param``: leaky_relu's slope)."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                        "conv_transpose2d", "conv_transpose3d", "sigmoid"):
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(tensor):
    if tensor.ndim < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
            f"(shape {tensor.shape})"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: ``U(-a, a)`` with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: ``N(0, std²)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He uniform: ``U(-b, b)`` with ``b = gain * sqrt(3 / fan)``."""
    if tensor.numel() == 0:
        return tensor  # PyTorch: initialising a zero-element tensor is a no-op
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He normal: ``N(0, std²)`` with ``std = gain / sqrt(fan)``."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def _truncated_body(u, mean, std, a, b):
    """Inverse-CDF draw of N(mean, std²) truncated to ``[a, b]`` from uniforms ``u`` in [0, 1)."""
    erf = jax.scipy.special.erf
    low = erf((a - mean) / (std * np.sqrt(2.0)))
    high = erf((b - mean) / (std * np.sqrt(2.0)))
    z = jax.scipy.special.erfinv(low + (high - low) * u)
    return jnp.clip(mean + std * np.sqrt(2.0) * z, a, b).astype(u.dtype)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill ``tensor`` with values from N(mean, std²) truncated to ``[a, b]`` (inverse CDF)."""
    _floating(tensor, "trunc_normal_")
    if not a < b:
        raise ValueError(f"trunc_normal_: the bounds must satisfy a < b, got a={a}, b={b}")
    u = _uniform(tensor.shape, 0.0, 1.0, tensor.dtype, tensor.device, generator)
    with no_grad():
        return tensor.copy_(apply(_truncated_body, (u,), (float(mean), float(std), float(a), float(b))))


def _eye_body(t):
    return jnp.eye(t.shape[0], t.shape[1], dtype=t.dtype)


def eye_(tensor):
    """Fill the 2-D ``tensor`` with the identity matrix."""
    require_tensor(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError(f"Only tensors with 2 dimensions are supported, got shape {tensor.shape}")
    with no_grad():
        return tensor.copy_(apply(_eye_body, (tensor,)))


def _dirac_body(t, groups):
    out_per_group = t.shape[0] // groups
    n = min(out_per_group, t.shape[1])
    centre = tuple(k // 2 for k in t.shape[2:])
    out = jnp.zeros(t.shape, t.dtype)
    for g in range(groups):
        d = jnp.arange(n)
        out = out.at[(g * out_per_group + d, d) + centre].set(1)
    return out


def dirac_(tensor, groups=1):
    """Fill the 3-, 4- or 5-D ``tensor`` with the Dirac delta: convolutions keep the
    identity of as many input channels as possible (per group of output channels)."""
    require_tensor(tensor, "dirac_")
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"Only tensors with 3, 4, or 5 dimensions are supported, got shape {tensor.shape}")
    if tensor.shape[0] % groups:
        raise ValueError(f"dim 0 ({tensor.shape[0]}) must be divisible by groups ({groups})")
    with no_grad():
        return tensor.copy_(apply(_dirac_body, (tensor,), (int(groups),)))


def _orthogonal_body(z, shape, gain):
    rows, cols = z.shape
    flat = z.T if rows < cols else z
    q, r = jnp.linalg.qr(flat)
    q = q * jnp.sign(jnp.diagonal(r))[None, :]
    q = q.T if rows < cols else q
    return (gain * q).reshape(shape).astype(z.dtype)


def orthogonal_(tensor, gain=1, generator=None):
    """Fill ``tensor`` (at least 2-D, flattened to (rows, rest)) with a (semi-)orthogonal
    matrix: the Q of the QR decomposition of a normal draw, made unique by the signs of
    R's diagonal, times ``gain``."""
    _floating(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError(f"Only tensors with 2 or more dimensions are supported, got shape {tensor.shape}")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    draw = normal_(tensor.new_empty((rows, tensor.numel() // rows)), generator=generator)
    with no_grad():
        return tensor.copy_(apply(_orthogonal_body, (draw,), (tuple(tensor.shape), float(gain))))


def _sparse_body(values, ranks, zeros_per_column):
    return jnp.where(ranks < zeros_per_column, jnp.zeros((), values.dtype), values)


def _ranks(u):
    return jnp.argsort(jnp.argsort(u, axis=0), axis=0)


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill the 2-D ``tensor`` from N(0, std²), then zero ``ceil(sparsity * rows)``
    randomly chosen elements of every column."""
    _floating(tensor, "sparse_")
    if tensor.ndim != 2:
        raise ValueError(f"Only tensors with 2 dimensions are supported, got shape {tensor.shape}")
    rows = tensor.shape[0]
    zeros = math.ceil(sparsity * rows)
    normal_(tensor, 0.0, std, generator)
    ranks = apply(_ranks, (_uniform(tensor.shape, 0.0, 1.0, tensor.dtype, tensor.device, generator),))
    with no_grad():
        return tensor.copy_(apply(_sparse_body, (tensor, ranks), (zeros,)))
