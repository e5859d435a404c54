"""Normalization layers: batch, synchronised batch, instance, group, layer, RMS and
local response normalization, with PyTorch's parameters, buffers and modes.

Running statistics are buffers (``running_mean``, ``running_var`` and the int64
``num_batches_tracked``) written in place during training, so an ``arraykit.jit``
training step carries their update like any other state (see
:mod:`arraykit.nn.functional.normalization`).
"""


from __future__ import annotations

import warnings

from ...api import creation as C
from ...api.statistical import cumulative_sum
from ...autograd.mode import no_grad
from ...core import dtypes as D
from .. import functional as F
from .. import init
from ..functional.normalization import _batch_norm
from ..module import Module
from ..parameter import Parameter
from .allocation import _empty
from .lazy import LazyModuleMixin

__all__ = [
    "CrossMapLRN2d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "GroupNorm", "InstanceNorm1d",
    "InstanceNorm2d", "InstanceNorm3d", "LayerNorm", "RMSNorm", "LocalResponseNorm",
]


class _NormBase(Module):
    """The parameters (``weight`` ones, ``bias`` zeros, when ``affine``) and running
    statistics (when ``track_running_stats``) shared by batch and instance norm."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(_empty((num_features,), device, dtype))
            if bias:
                self.bias = Parameter(_empty((num_features,), device, dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            floating = dtype if dtype is not None else D.float32
            self.register_buffer("running_mean", C.zeros((num_features,), device=device, dtype=floating))
            self.register_buffer("running_var", C.ones((num_features,), device=device, dtype=floating))
            self.register_buffer("num_batches_tracked", C.zeros((), device=device, dtype=D.int64))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        self.reset_parameters()

    def reset_running_stats(self):
        """Running mean 0, running variance 1, no batch tracked (in place)."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        """Reset the running statistics, the weight to ones and the bias to zeros."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        dims = self._input_dims
        if input.ndim not in dims:
            expected = " or ".join(f"{d}D" for d in dims)
            raise ValueError(f"expected {expected} input (got {input.ndim}D input)")

    def extra_repr(self):
        """``num_features, eps=..., momentum=..., affine=..., bias=..., track_running_stats=...``."""
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """Batch normalization over dimension 1: batch statistics in training (and when no
    running statistics are tracked), the running ones in evaluation."""

    def forward(self, input):
        """Normalise ``input``; in training, update the running statistics in place
        (by ``momentum``, or as a cumulative average when it is None)."""
        self._check_input_dim(input)
        count = None
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                count = self.num_batches_tracked
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        tracked = not self.training or self.track_running_stats
        return _batch_norm(input, self.running_mean if tracked else None, self.running_var if tracked else None,
                           self.weight, self.bias, use_batch, momentum, self.eps, count)


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L) inputs."""

    _input_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) inputs."""

    _input_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W) inputs."""

    _input_dims = (5,)


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose statistics cover the whole batch when the batch is
    split across devices. Under arraykit every kernel sees a sharded tensor as one
    global array (JAX's sharding inserts the cross-device reductions), so the
    statistics are the global batch's without a process group; ``process_group`` is
    kept for PyTorch's signature."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every batch-norm layer in it replaced by a SyncBatchNorm
        sharing its parameters and buffers (``module`` itself when it is one)."""
        converted = module
        if isinstance(module, _BatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                converted.weight = module.weight
                converted.bias = module.bias
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                setattr(converted, name, getattr(module, name))
            converted.training = module.training
        for name, child in list(module.named_children()):
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted


class _InstanceNorm(_NormBase):
    """Instance normalization: each sample's channels over their spatial dimensions;
    unbatched inputs (one dimension fewer) are accepted."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        """Normalise ``input`` with its own statistics (or, in evaluation with tracked
        statistics, the running ones), updating the running ones in training."""
        self._check_input_dim(input)
        unbatched = input.ndim == self._input_dims[0]
        feature_dim = 0 if unbatched else 1
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match num_features"
                    f" ({self.num_features}), but got: {input.shape[feature_dim]}."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                "warning by not passing in num_features, which is not used because affine=False",
                stacklevel=2,
            )
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              0.0 if self.momentum is None else self.momentum, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L) or (C, L) inputs."""

    _input_dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W) or (C, H, W) inputs."""

    _input_dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of (N, C, D, H, W) or (C, D, H, W) inputs."""

    _input_dims = (4, 5)


class GroupNorm(Module):
    """Normalise over ``num_groups`` groups of channels; per-channel affine weight
    (ones) and bias (zeros) when ``affine``."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        self.register_parameter("weight", Parameter(_empty((num_channels,), device, dtype)) if affine else None)
        self.register_parameter("bias", Parameter(_empty((num_channels,), device, dtype)) if affine and bias else None)
        self.reset_parameters()

    def reset_parameters(self):
        """Weight ones, bias zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        """``F.group_norm`` with this layer's groups, parameters and eps."""
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        """``num_groups, num_channels, eps=..., affine=..., bias=...``."""
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _TrailingNorm(Module):
    """A normalization over the trailing ``normalized_shape`` dimensions (LayerNorm,
    RMSNorm): keeps the shape (an int means one dimension), ``eps`` and
    ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps, elementwise_affine):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine


class LayerNorm(_TrailingNorm):
    """Normalise over the trailing ``normalized_shape`` dimensions; an elementwise
    affine weight (ones) and bias (zeros) when ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None,
                 dtype=None):
        super().__init__(normalized_shape, eps, elementwise_affine)
        if elementwise_affine:
            self.weight = Parameter(_empty(self.normalized_shape, device, dtype))
            self.bias = Parameter(_empty(self.normalized_shape, device, dtype)) if bias else None
        else:
            self.weight = None
            self.bias = None
        self._has_bias = bias
        self.reset_parameters()

    def reset_parameters(self):
        """Weight ones, bias zeros (PyTorch's hook, which the constructor calls)."""
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        """``F.layer_norm`` with this layer's shape, parameters and eps."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        """``normalized_shape, eps=..., elementwise_affine=..., bias=...``."""
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self._has_bias}")


class RMSNorm(_TrailingNorm):
    """Divide by the root mean square over the trailing ``normalized_shape``
    dimensions (``eps`` None: the input dtype's epsilon); an elementwise weight
    (ones) when ``elementwise_affine``."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__(normalized_shape, eps, elementwise_affine)
        if elementwise_affine:
            self.weight = Parameter(_empty(self.normalized_shape, device, dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Weight ones."""
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        """``F.rms_norm`` with this layer's shape, weight and eps."""
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        """``normalized_shape, eps=..., elementwise_affine=...``."""
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Normalise each element by the squares of ``size`` neighbouring channels:
    ``x / (k + alpha/size · Σ x²)^beta``."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        """``F.local_response_norm`` with this layer's options."""
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        """``size, alpha=..., beta=..., k=...``."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(LocalResponseNorm):
    """PyTorch's legacy cross-channel normalization of (N, C, H, W) inputs
    (``torch.nn.CrossMapLRN2d``): ``x / (k + alpha/size · s_c)^beta``, with PyTorch's
    running window sum ``s_c`` of squares: channels ``0`` to ``c + p - 1`` less channels
    ``1`` to ``c - p``, where ``p = (size - 1) // 2 + 1`` (channel 0 is never dropped, as in
    PyTorch's recurrence)."""

    def forward(self, input):
        """The normalised ``input``."""
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
        channels = input.shape[1]
        reach = (self.size - 1) // 2 + 1
        sums = cumulative_sum(input * input, axis=1)
        last = [min(c + reach - 1, channels - 1) for c in range(channels)]
        dropped = [max(c - reach, 0) for c in range(channels)]
        scale = sums[:, last] - (sums[:, dropped] - sums[:, [0] * channels])
        return input * (scale * (self.alpha / self.size) + self.k) ** (-self.beta)


class _LazyNorm(LazyModuleMixin):
    """A batch or instance norm whose ``num_features`` is read from its first input."""

    def _input_size(self, input):
        unbatched = issubclass(self.cls_to_become, _InstanceNorm) and input.ndim == self._input_dims[0]
        return input.shape[0 if unbatched else 1]


class LazyBatchNorm1d(_LazyNorm, BatchNorm1d):
    """:class:`BatchNorm1d` with ``num_features`` from the first input."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNorm, BatchNorm2d):
    """:class:`BatchNorm2d` with ``num_features`` from the first input."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNorm, BatchNorm3d):
    """:class:`BatchNorm3d` with ``num_features`` from the first input."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNorm, InstanceNorm1d):
    """:class:`InstanceNorm1d` with ``num_features`` from the first input."""

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNorm, InstanceNorm2d):
    """:class:`InstanceNorm2d` with ``num_features`` from the first input."""

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNorm, InstanceNorm3d):
    """:class:`InstanceNorm3d` with ``num_features`` from the first input."""

    cls_to_become = InstanceNorm3d
