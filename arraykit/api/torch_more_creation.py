"""More of PyTorch's creation functions: the signal windows (``hann_window``,
``hamming_window``, ``bartlett_window``, ``blackman_window``, ``kaiser_window``),
``scalar_tensor``, ``empty_strided``, the deprecated inclusive ``range``, ``complex``,
``polar`` and ``promote_types``.

The windows are computed on the host in float64 (NumPy's formulas) and created in
the requested dtype (the default float dtype otherwise); ``periodic=True`` (PyTorch's
default) gives the first ``window_length`` points of the symmetric window one longer.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import dtypes as D
from ..tensors.tensor_type import require_tensor
from . import creation as C
from . import elementwise as E
from .dtype_functions import astype
from .naming import named

__all__ = [
    "bartlett_window", "blackman_window", "complex", "empty_strided", "hamming_window",
    "hann_window",
    "kaiser_window", "polar", "promote_types", "range", "scalar_tensor",
]


def _created(values, dtype, device, requires_grad):
    out = C.asarray(np.asarray(values), dtype=D.DEFAULT_FLOAT if dtype is None else dtype,
                    device=device)
    return out.requires_grad_() if requires_grad else out


def _window(name, symmetric, doc):
    """A window function ``name(window_length, periodic=True, ...)`` whose symmetric
    form of ``n`` points is ``symmetric(n, *args)``."""
    def function(window_length, periodic=True, *args, dtype=None, layout=None, device=None,
                 requires_grad=False):
        n = int(window_length)
        if n < 0:
            raise RuntimeError(f"{name} requires non-negative window length, got "
                               f"window_length={window_length}")
        if dtype is not None and D.as_dtype(dtype).kind != "float":
            raise RuntimeError(f"{name} expects floating point dtypes, got {dtype}")
        if n <= 1:
            values = np.ones(n)
        else:
            values = symmetric(n + 1, *args)[:-1] if periodic else symmetric(n, *args)
        return _created(values, dtype, device, requires_grad)
    return named(function, name, doc)


def _cosine_sum(n, *coefficients):
    k = np.arange(n) * (2 * math.pi / (n - 1))
    return sum(c * (-1) ** i * np.cos(i * k) for i, c in enumerate(coefficients))


def _hann(n):
    return _cosine_sum(n, 0.5, 0.5)


def _hamming(n, alpha=0.54, beta=0.46):
    return _cosine_sum(n, alpha, beta)


def _blackman(n):
    return _cosine_sum(n, 0.42, 0.5, 0.08)


def _bartlett(n):
    return 1 - np.abs(np.arange(n) * (2 / (n - 1)) - 1)


def _kaiser(n, beta=12.0):
    return np.kaiser(n, beta)


hann_window = _window("hann_window", _hann, "The Hann window ``0.5 - 0.5 cos(2 pi k / "
                      "(N - 1))`` of ``window_length`` points.")
hamming_window = _window("hamming_window", _hamming, "The Hamming window ``alpha - beta cos(2 "
                         "pi k / (N - 1))`` (``hamming_window(length, periodic, alpha=0.54, "
                         "beta=0.46)``).")
blackman_window = _window("blackman_window", _blackman, "The Blackman window ``0.42 - 0.5 "
                          "cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))``.")
bartlett_window = _window("bartlett_window", _bartlett, "The Bartlett (triangular) window "
                          "``1 - |2 k / (N - 1) - 1|``.")
kaiser_window = _window("kaiser_window", _kaiser, "The Kaiser window with shape parameter "
                        "``beta`` (``kaiser_window(length, periodic, beta=12.0)``).")


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """A 0-d tensor holding the number ``s`` (of the default float dtype unless given)."""
    return _created(s, dtype, device, requires_grad)


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,  # noqa: A001
          requires_grad=False):
    """``start, start + step, ...`` up to and including ``end`` (PyTorch's deprecated
    ``torch.range``; :func:`arraykit.arange` excludes ``end``), of the default float
    dtype unless given."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("range(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"upper bound and larger bound inconsistent with step sign: "
                           f"start={start}, end={end}, step={step}")
    count = int(math.floor((end - start) / step)) + 1
    result = _created(start + np.arange(count) * step, dtype, device, requires_grad)
    return result if out is None else out.copy_(result)


def complex(real, imag, *, out=None):  # noqa: A001 (PyTorch's name)
    """The complex tensor ``real + 1j * imag`` from two float tensors of one dtype
    (float32 gives complex64, float64 complex128)."""
    require_tensor(real, "complex")
    require_tensor(imag, "complex")
    if real._dtype is not imag._dtype or real._dtype not in (D.float32, D.float64, D.float16):
        raise RuntimeError(f"complex(): expected both inputs to be float or double tensors of "
                           f"one dtype, got {real.dtype} and {imag.dtype}")
    dtype = D.complex128 if real._dtype is D.float64 else D.complex64
    result = E.add(astype(real, dtype), E.multiply(astype(imag, dtype), 1j))
    return result if out is None else out.copy_(result)


def polar(abs, angle, *, out=None):  # noqa: A002
    """The complex tensor ``abs * (cos(angle) + 1j * sin(angle))``."""
    return complex(E.multiply(abs, E.cos(angle)), E.multiply(abs, E.sin(angle)), out=out)


def promote_types(type1, type2):
    """The dtype two dtypes promote to (arraykit's promotion: the standard's table,
    NumPy's for mixed kinds; see :mod:`arraykit.core.dtypes`)."""
    return D.promote(D.as_dtype(type1), D.as_dtype(type2))


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """An uninitialised tensor of ``size`` with the given ``stride`` (in elements) over a
    new storage just large enough for it."""
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"empty_strided: mismatch in length of strides and shape: size "
                           f"{size}, stride {stride}")
    if any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"empty_strided: negative sizes or strides are not allowed: size "
                           f"{size}, stride {stride}")
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    storage = C.empty((extent,), dtype=D.DEFAULT_FLOAT if dtype is None else dtype,
                      device=device)
    out = storage.as_strided(size, stride)
    return out.requires_grad_() if requires_grad else out
