"""The array API ``fft`` extension (``arraykit.fft``).

Transforms run as one compiled kernel each, built on ``jax.numpy.fft``; inputs are
read straight through their layouts. Dtypes follow the standard: complex
transforms (``fft``, ``ifft``, ``fftn``, ``ifftn``) and the complex-to-real ones
(``irfft``, ``irfftn``, ``hfft``) accept real floating inputs and treat them as
complex of the same precision; ``rfft``, ``rfftn`` and ``ihfft`` need real
floating inputs. Integer and bool inputs raise ``TypeError``. Results keep the
input's precision (float32 in, complex64 out).
"""

from __future__ import annotations

import operator

import jax.numpy as jnp
import numpy as np

from ..core import dtypes as D
from ..core import layout as L
from ..kernels.launch import apply
from ..tensors.tensor_type import Tensor
from .creation import arange
from .naming import named

__all__ = [
    "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_NORMS = ("backward", "ortho", "forward")


# ---------------------------------------------------------------------------- bodies


def _fft1(x, kind, n, axis, norm, dtype):
    return getattr(jnp.fft, kind)(x.astype(dtype), n=n, axis=axis, norm=norm)


def _fftn(x, kind, s, axes, norm, dtype):
    return getattr(jnp.fft, kind)(x.astype(dtype), s=s, axes=axes, norm=norm)


def _fftfreq(i, d, n, dtype):
    k = jnp.where(i < (n + 1) // 2, i, i - n)
    return (k * (1.0 / (n * d))).astype(dtype)


def _rfftfreq(i, d, n, dtype):
    return (i * (1.0 / (n * d))).astype(dtype)


def _roll(x, shifts, axes):
    return jnp.roll(x, shifts, axes)


# ---------------------------------------------------------------------------- checks


def _input_dtype(x, name, real_only):
    """The dtype the transform computes in (real input to a complex transform: complex)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} expects an arraykit tensor, got {type(x).__name__}")
    kind = x._dtype.kind
    if real_only:
        if kind != "float":
            raise TypeError(
                f"{name} expects a real floating-point tensor, got dtype {x._dtype}"
            )
        return x._dtype
    if kind == "float":
        return D.complex_dtype(x._dtype)
    if kind != "complex":
        raise TypeError(f"{name} expects a floating-point tensor, got dtype {x._dtype}")
    return x._dtype


def _check_norm(norm, name):
    if norm not in _NORMS:
        raise ValueError(f"{name}: norm must be 'backward', 'ortho' or 'forward', got {norm!r}")


def _points(n, name, what="n"):
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"{name}: invalid number of data points {what}={n}; must be >= 1")
    return n


def _one(x, name, n, axis, norm, real_only, half):
    """Shared driver of the 1-D transforms; ``half``: n counts output points of a c2r transform."""
    dtype = _input_dtype(x, name, real_only)
    _check_norm(norm, name)
    if x.ndim == 0:
        raise ValueError(f"{name} expects a tensor with at least 1 dimension, got a 0-d tensor")
    axis = L.normalize_dim(axis, x.ndim, "axis")
    if n is None:
        m = x.shape[axis]
        n = 2 * (m - 1) if half else m
    n = _points(n, name)
    return apply(_fft1, (x,), (name, n, axis, norm, dtype.np))


def _many(x, name, s, axes, norm, real_only, half):
    """Shared driver of the n-D transforms (``half`` as in :func:`_one`)."""
    dtype = _input_dtype(x, name, real_only)
    _check_norm(norm, name)
    if axes is None:
        if s is None:
            axes = tuple(range(x.ndim))
        else:
            if len(s) > x.ndim:
                raise ValueError(f"{name}: s={tuple(s)} has more entries than x has dimensions ({x.ndim})")
            axes = tuple(range(x.ndim - len(s), x.ndim))
    axes = L.normalize_dims(axes, x.ndim, "axis")
    if (real_only or half) and not axes:
        raise ValueError(f"{name} needs at least one axis to transform")
    default = [x.shape[a] for a in axes]
    if half:
        default[-1] = 2 * (default[-1] - 1)
    if s is None:
        s = default
    elif len(s) != len(axes):
        raise ValueError(
            f"{name}: s={tuple(s)} and axes={axes} must have the same length"
        )
    s = tuple(
        _points(dflt if operator.index(v) == -1 else v, name, "s") for v, dflt in zip(s, default)
    )
    return apply(_fftn, (x,), (name, s, axes, norm, dtype.np))


# ---------------------------------------------------------------------------- transforms


def _transform_1d(name, doc, *, real_only=False, half=False):
    """The 1-D transform ``jax.numpy.fft.<name>`` documented by ``doc`` (``real_only`` and
    ``half`` as in :func:`_one`)."""

    def transform(x, /, *, n=None, axis=-1, norm="backward"):
        return _one(x, name, n, axis, norm, real_only, half)

    return named(transform, name, doc)


def _transform_nd(name, doc, *, real_only=False, half=False):
    """The n-D transform ``jax.numpy.fft.<name>`` documented by ``doc`` (``real_only`` and
    ``half`` as in :func:`_one`)."""

    def transform(x, /, *, s=None, axes=None, norm="backward"):
        return _many(x, name, s, axes, norm, real_only, half)

    return named(transform, name, doc)


fft = _transform_1d(
    "fft",
    "1-D discrete Fourier transform along ``axis`` (zero-padded or trimmed to ``n``).",
)
ifft = _transform_1d(
    "ifft",
    "1-D inverse discrete Fourier transform along ``axis``.",
)
fftn = _transform_nd(
    "fftn",
    "N-D discrete Fourier transform over ``axes`` (all by default) with sizes ``s``.",
)
ifftn = _transform_nd(
    "ifftn",
    "N-D inverse discrete Fourier transform over ``axes``.",
)
rfft = _transform_1d(
    "rfft",
    "1-D transform of real input: the ``n // 2 + 1`` non-negative frequencies.",
    real_only=True,
)
irfft = _transform_1d(
    "irfft",
    "Inverse of :func:`rfft`: ``n`` real outputs (default ``2 * (M - 1)``).",
    half=True,
)
rfftn = _transform_nd(
    "rfftn",
    "N-D transform of real input; the last transformed axis keeps ``s[-1] // 2 + 1`` entries.",
    real_only=True,
)
irfftn = _transform_nd(
    "irfftn",
    "Inverse of :func:`rfftn`; the last output axis defaults to ``2 * (M - 1)`` points.",
    half=True,
)
hfft = _transform_1d(
    "hfft",
    "Transform of a Hermitian-symmetric signal given by its first half: ``n`` real outputs.",
    half=True,
)
ihfft = _transform_1d(
    "ihfft",
    "Inverse of :func:`hfft` for real input: ``n // 2 + 1`` complex outputs.",
    real_only=True,
)


# ---------------------------------------------------------------------------- helpers


def _window(n):
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"window length n must be positive, got {n}")
    return n


def _freq(body, n, count, d, dtype, device):
    dtype = D.DEFAULT_FLOAT if dtype is None else D.as_dtype(dtype)
    if dtype.kind != "float":
        raise TypeError(f"sample frequencies need a real floating-point dtype, got {dtype}")
    index = arange(count, dtype=D.int64, device=device)
    return apply(body, (index, np.asarray(d, dtype=np.float64)), (n, dtype.np))


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """Sample frequencies ``[0, 1, ..., -1] / (d * n)`` of an ``n``-point transform."""
    n = _window(n)
    return _freq(_fftfreq, n, n, d, dtype, device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """Non-negative sample frequencies ``[0, ..., n // 2] / (d * n)`` (for :func:`rfft`)."""
    n = _window(n)
    return _freq(_rfftfreq, n, n // 2 + 1, d, dtype, device)


def _shift(x, axes, name, sign):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} expects an arraykit tensor, got {type(x).__name__}")
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, (tuple, list)):
        axes = tuple(L.normalize_dim(a, x.ndim, "axis") for a in axes)
    else:
        axes = (L.normalize_dim(axes, x.ndim, "axis"),)
    shifts = tuple(sign * (x.shape[a] // 2) for a in axes)
    return apply(_roll, (x,), (shifts, axes))


def fftshift(x, /, *, axes=None):
    """Move the zero-frequency entry to the centre along ``axes`` (all by default)."""
    return _shift(x, axes, "fftshift", 1)


def ifftshift(x, /, *, axes=None):
    """Inverse of :func:`fftshift`."""
    return _shift(x, axes, "ifftshift", -1)
