"""Exact ordering keys for kernels that compare floating-point values.

XLA on CPU runs with denormals-are-zero: a comparison treats every subnormal as
``0.0`` (so ``sort``, ``unique`` or ``max`` would merge or misorder them). Kernels
that order values therefore compare integer keys built from the bits instead:
the key order is the numeric order, ``-0.0`` and ``0.0`` get the same key, and
all NaNs share the largest (or smallest) key. Results then match NumPy on every
platform. Pure JAX, used inside kernel bodies only.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

_INT_OF_WIDTH = {2: np.int16, 4: np.int32, 8: np.int64}


def float_key(x, nan_last=True):
    """Signed integer keys ordered like the real floats ``x``.

    Both zeros map to 0; NaNs map to the integer maximum (``nan_last``) or minimum.
    Only integer operations touch the bits (a float comparison would flush).
    """
    it = _INT_OF_WIDTH[x.dtype.itemsize]
    info = np.iinfo(it)
    inf_bits = np.array(np.inf, x.dtype).view(it)
    bits = lax.bitcast_convert_type(x, it)
    magnitude = bits & it(info.max)
    key = jnp.where(bits < 0, -magnitude, magnitude)
    return jnp.where(magnitude > inf_bits, it(info.max if nan_last else info.min), key)


def key_to_float(key, dtype):
    """The float whose key is ``key`` (zero decodes to ``+0.0``, the extremes to NaN)."""
    it = key.dtype.type
    info = np.iinfo(it)
    nan_bits = np.array(np.nan, dtype).view(it)
    bits = jnp.where(key < 0, (-key) | it(info.min), key)
    bits = jnp.where((key == info.max) | (key == info.min), nan_bits, bits)
    return lax.bitcast_convert_type(bits, dtype)


def has_nan(x):
    """Where ``x`` (real or complex) has a NaN component; all false for other dtypes."""
    if jnp.iscomplexobj(x):
        return jnp.isnan(jnp.real(x)) | jnp.isnan(jnp.imag(x))
    if jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.isnan(x)
    return jnp.zeros(x.shape, bool)


def sort_keys(x, descending=False):
    """Keys (most significant first) whose lexicographic order is NumPy's sort order.

    Complex values order as ``R + Rj, R + nanj, nan + Rj, nan + nanj``, each group
    lexicographically. ``descending`` inverts every key, so a stable sort keeps equal
    elements in their original order.
    """
    if jnp.iscomplexobj(x):
        re, im = jnp.real(x), jnp.imag(x)
        nan_class = jnp.isnan(im).astype(np.int8) + 2 * jnp.isnan(re).astype(np.int8)
        keys = (nan_class, float_key(re), float_key(im))
    elif jnp.issubdtype(x.dtype, jnp.floating):
        keys = (float_key(x),)
    elif x.dtype == np.bool_:
        keys = (x.astype(np.uint8),)
    else:
        keys = (x,)
    return tuple(~k for k in keys) if descending else keys


def sort_with(x, payload, axis, descending, stable):
    """``(sorted keys, sorted payloads)``: ``payload`` arrays reordered like ``x``."""
    keys = sort_keys(x, descending)
    out = lax.sort(keys + tuple(payload), dimension=axis, num_keys=len(keys), is_stable=stable)
    return out[: len(keys)], out[len(keys):]


def argsort(x, axis, descending=False, stable=True):
    """The sorting permutation of ``x`` along ``axis`` as int64."""
    iota = lax.broadcasted_iota(np.int64, x.shape, axis)
    return sort_with(x, (iota,), axis, descending, stable)[1][0]
