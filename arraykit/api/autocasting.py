"""``arraykit.autocast``: mixed precision as ``torch.autocast``.

Inside ``with arraykit.autocast("cpu", dtype=arraykit.bfloat16):`` (or decorating a
function), operations on tensors of that device type compute by PyTorch's op
classes, kept in one table, ``POLICY`` (per device type, as PyTorch's lists
differ between its CPU and CUDA autocast):

* ``LOWER`` (matmul, linear, conv2d, vecdot, attention, the fused linear cross-entropy,
  whose log-sum-exp is accumulated in float32 anyway): floating operands other than
  float64 are cast to the autocast dtype;
* ``FLOAT32`` (losses everywhere; on a GPU also softmax, log_softmax, norms,
  ``sum``/``prod``, exp/log and the other ops PyTorch's CUDA autocast runs in
  float32): float16 and bfloat16 operands are cast to float32;
* every other op follows its inputs (type promotion).

The casts are ordinary recorded ops (``astype``), so gradients flow back through
them and parameter gradients arrive in the parameters' dtype. Under
``arraykit.jit`` they are traced into the program, and the autocast state is part of
the signature (see :mod:`arraykit.core.precision`). Ops apply the policy where they check
their operands, through :func:`coerce` with their name; the table is the only place
that says which op does what.

``device_type`` is ``"cpu"``, ``"cuda"`` or ``"gpu"`` (the last two are the same
device type); ``enabled=False`` switches autocast off inside an enclosing region;
regions nest and restore the outer state on exit, per thread.
"""

from __future__ import annotations

import functools

from ..core import dtypes as D
from ..core import precision as P
from .dtype_functions import astype

__all__ = ["autocast", "coerce", "POLICY", "LOWER", "FLOAT32"]

LOWER = "lower"
FLOAT32 = "float32"

_BOTH_LOWER = (
    "matmul", "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "vecdot", "attention", "linear_cross_entropy", "prelu",
)
_BOTH_FLOAT32 = (
    "cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy_with_logits", "prod",
    "binary_cross_entropy", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
    "poisson_nll_loss", "gaussian_nll_loss", "cosine_embedding_loss", "margin_ranking_loss",
    "triplet_margin_loss", "hinge_embedding_loss", "soft_margin_loss", "multi_margin_loss",
    "multilabel_soft_margin_loss", "cdist",
)
_GPU_FLOAT32 = (
    "softmax", "log_softmax", "logsumexp", "layer_norm", "group_norm", "rms_norm", "normalize",
    "cosine_similarity", "pairwise_distance", "pdist", "softmin", "softplus", "sum",
    "cumulative_sum", "cumulative_prod", "vector_norm", "matrix_norm", "exp", "expm1", "log",
    "log1p", "log2", "log10", "acos", "asin", "cosh", "sinh", "tan", "reciprocal", "pow",
)

#: device type -> {op name: LOWER | FLOAT32}; ops not listed follow their inputs.
POLICY = {
    "cpu": {**dict.fromkeys(_BOTH_LOWER, LOWER), **dict.fromkeys(_BOTH_FLOAT32, FLOAT32)},
    "gpu": {
        **dict.fromkeys(_BOTH_LOWER, LOWER),
        **dict.fromkeys(_BOTH_FLOAT32 + _GPU_FLOAT32, FLOAT32),
    },
}
_PLATFORMS = {"cpu": "cpu", "cuda": "gpu", "gpu": "gpu"}
_LOWER_DTYPES = ("bfloat16", "float16")
_CASTABLE = ("float16", "bfloat16", "float32")  # float64 and complex are never cast


def _platform(device_type):
    platform = _PLATFORMS.get(device_type)
    if platform is None:
        raise ValueError(
            f"autocast: device_type must be 'cpu', 'cuda' or 'gpu', got {device_type!r}"
        )
    return platform


class autocast:  # noqa: N801 (PyTorch's spelling)
    """Context manager and decorator: compute the ops of ``POLICY`` in ``dtype``
    (bfloat16 or float16; by default bfloat16 on ``"cpu"``, float16 on ``"cuda"``/``"gpu"``)
    or float32 on ``device_type``, as ``torch.autocast``."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self.platform = _platform(device_type)
        self.device_type = device_type
        if dtype is None:  # PyTorch's defaults: bfloat16 on the CPU, float16 on a GPU
            dtype = D.bfloat16 if self.platform == "cpu" else D.float16
        dtype = D.as_dtype(dtype)
        if dtype.name not in _LOWER_DTYPES:
            raise ValueError(
                f"autocast: dtype must be arraykit.bfloat16 or arraykit.float16, got {dtype}"
            )
        self.dtype = dtype
        self.enabled = bool(enabled)
        self._previous = []

    def __enter__(self):
        state = tuple(item for item in P.autocast_state() if item[0] != self.platform)
        if self.enabled:
            state += ((self.platform, self.dtype),)
        self._previous.append(P.set_autocast_state(state))
        return self

    def __exit__(self, *exc):
        P.set_autocast_state(self._previous.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def in_autocast(*args, **kwargs):
            with autocast(self.device_type, self.dtype, self.enabled):
                return fn(*args, **kwargs)

        return in_autocast


def coerce(op, *operands):
    """``operands`` as op ``op`` computes them under this thread's autocast state
    (``POLICY``); unchanged when autocast is off. Entries that are not tensors
    (None, Python scalars) pass through; at least one must be a tensor."""
    if not P.any_autocast():
        return operands
    device = next(x for x in operands if hasattr(x, "_storage"))._storage.device
    lower = P.autocast_dtype(device.platform)
    if lower is None:
        return operands
    policy = POLICY.get(device.platform, POLICY["gpu"]).get(op)
    if policy is None:
        return operands
    target = lower if policy == LOWER else D.float32
    return tuple(
        astype(x, target)
        if hasattr(x, "_storage") and x._dtype.name in _CASTABLE and x._dtype is not target
        else x
        for x in operands
    )
