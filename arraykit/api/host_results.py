"""Data-dependent results of CPU tensors, computed by NumPy on the host.

``nonzero``, the ``unique_*`` family and ``repeat`` with an array of repeats have
output shapes that depend on values, so they must read those values on the host
(a device synchronization) before the output can be allocated. Their kernels
(a cumulative sum or a sort, then a gather into the output) also compile once per
input shape, 100 ms or more each on the CPU, which dominates every first call. For
a CPU tensor the values are already in host memory: copying them out and letting
NumPy compute costs no compilation and the same synchronization.

The host path is taken only where it gives exactly the kernel's result: concrete
CPU tensors of NumPy's own dtypes, no autograd history (``storage.node``), no
``arraykit.jit`` trace. Everything else (GPU tensors, tracked or traced tensors)
runs the kernels.
"""

from __future__ import annotations

import jax
import numpy as np

from ..core import storage as S
from ..kernels.launch import Locks
from ..tensors.operands import from_numpy


def host_values(*tensors):
    """Private NumPy copies of the values of ``tensors``, or None where the host path
    does not apply (see the module docstring)."""
    if S._trace is not None:
        return None
    for x in tensors:
        st = x._storage
        if (
            st.device.platform != "cpu"
            or st.node is not None
            or isinstance(st._buffer, jax.core.Tracer)
            or x._dtype.np.isbuiltin != 1
        ):
            return None
    with Locks([x._storage for x in tensors]):
        return [np.array(x._storage.host_array(x._layout)) for x in tensors]


def to_tensors(arrays, device):
    """New tensors on ``device`` holding the NumPy ``arrays``."""
    return [from_numpy(a, device) for a in arrays]


def unique(values, what):
    """NumPy twin of the unique kernels (:mod:`arraykit.set_functions`).

    A stable sort in NumPy's order (NaNs last, ``-0.0`` equal to ``0.0``, complex
    values as NumPy orders them), runs of equal values (every NaN starts its own run,
    since NaN != NaN), and per run: the value, the first index (the smallest, by
    stability), the count; the inverse maps each element to its run.
    """
    flat = values.reshape(-1)
    n = flat.shape[0]
    perm = np.argsort(flat, kind="stable")
    s = flat[perm]
    starts = np.ones(n, bool)
    starts[1:] = s[1:] != s[:-1]
    pos = np.flatnonzero(starts)
    if what == "values":
        return (s[pos],)
    counts = np.diff(np.append(pos, n)).astype(np.int64)
    if what == "counts":
        return s[pos], counts
    inverse = np.empty(n, np.int64)
    inverse[perm] = np.cumsum(starts) - 1
    inverse = inverse.reshape(values.shape)
    if what == "inverse":
        return s[pos], inverse
    return s[pos], perm[pos].astype(np.int64), inverse, counts
