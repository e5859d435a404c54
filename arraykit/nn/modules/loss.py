"""Losses as modules over :mod:`arraykit.nn.functional.loss` (PyTorch's constructor
options; ``weight`` and ``pos_weight`` are buffers, so they are in the ``state_dict``
when given)."""


from __future__ import annotations

from .. import functional as F
from ..functional.loss import _legacy_reduction
from ..module import Module
from .linear import Linear

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CTCLoss",
    "CosineEmbeddingLoss",
    "CrossEntropyLoss",
    "GaussianNLLLoss",
    "HingeEmbeddingLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "LinearCrossEntropyLoss",
    "MSELoss",
    "MarginRankingLoss",
    "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "NLLLoss",
    "NLLLoss2d",
    "PoissonNLLLoss",
    "SmoothL1Loss",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "TripletMarginWithDistanceLoss",
]


class _Loss(Module):
    """A loss module: ``reduction`` (or the deprecated ``size_average``/``reduce``)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if reduction == "batchmean" and size_average is None and reduce is None:
            self.reduction = reduction
        else:
            self.reduction = _legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    """A loss with an optional per-class ``weight`` buffer."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class CrossEntropyLoss(_WeightedLoss):
    """``F.cross_entropy`` with fixed options."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        """The loss of logits ``input`` against ``target``."""
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """``F.nll_loss`` with fixed options."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        """The negative log-likelihood of ``target`` under log-probabilities ``input``."""
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """``F.binary_cross_entropy`` with fixed options."""

    def forward(self, input, target):
        """The binary cross-entropy of probabilities ``input`` against ``target``."""
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """``F.binary_cross_entropy_with_logits`` with fixed options (``weight`` and
    ``pos_weight`` buffers)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        """The binary cross-entropy of ``sigmoid(input)`` against ``target``."""
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """``F.multilabel_soft_margin_loss`` with fixed options."""

    def forward(self, input, target):
        """The one-versus-all logistic loss."""
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """``F.multi_margin_loss`` with fixed options."""

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 supported, got {p}")
        super().__init__(weight, size_average, reduce, reduction)
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        """The multi-class hinge loss."""
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class _Pairwise(_Loss):
    """A loss ``FUNCTION(input, target, reduction=...)`` without further options."""

    FUNCTION = None

    def forward(self, input, target):
        """The loss of ``input`` against ``target``."""
        return type(self).FUNCTION(input, target, reduction=self.reduction)


class MSELoss(_Pairwise):
    """``F.mse_loss`` with a fixed ``reduction``."""

    FUNCTION = staticmethod(F.mse_loss)


class L1Loss(_Pairwise):
    """``F.l1_loss`` with a fixed ``reduction``."""

    FUNCTION = staticmethod(F.l1_loss)


class SoftMarginLoss(_Pairwise):
    """``F.soft_margin_loss`` with a fixed ``reduction``."""

    FUNCTION = staticmethod(F.soft_margin_loss)


class SmoothL1Loss(_Loss):
    """``F.smooth_l1_loss`` with fixed ``reduction`` and ``beta``."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        """The smooth L1 loss."""
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """``F.huber_loss`` with fixed ``reduction`` and ``delta``."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        """The Huber loss."""
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """``F.kl_div`` with fixed ``reduction`` (``batchmean`` too) and ``log_target``."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        """The KL divergence of log-probabilities ``input`` from ``target``."""
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class _Margin(_Loss):
    """A loss with a ``margin``."""

    FUNCTION = None
    MARGIN = 0.0

    def __init__(self, margin=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = type(self).MARGIN if margin is None else margin

    def forward(self, *inputs):
        """The loss of the inputs (and target)."""
        return type(self).FUNCTION(*inputs, margin=self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_Margin):
    """``F.cosine_embedding_loss(input1, input2, target)`` with fixed options."""

    FUNCTION = staticmethod(F.cosine_embedding_loss)

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(margin, size_average, reduce, reduction)


class MarginRankingLoss(_Margin):
    """``F.margin_ranking_loss(input1, input2, target)`` with fixed options."""

    FUNCTION = staticmethod(F.margin_ranking_loss)

    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(margin, size_average, reduce, reduction)


class HingeEmbeddingLoss(_Margin):
    """``F.hinge_embedding_loss(input, target)`` with fixed options."""

    FUNCTION = staticmethod(F.hinge_embedding_loss)

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(margin, size_average, reduce, reduction)


class TripletMarginLoss(_Loss):
    """``F.triplet_margin_loss(anchor, positive, negative)`` with fixed options."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor, positive, negative):
        """The triplet loss."""
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """``F.poisson_nll_loss`` with fixed options."""

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                 reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input, target):
        """The Poisson negative log-likelihood."""
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """``F.gaussian_nll_loss(input, target, var)`` with fixed options."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction=reduction)
        self.full = full
        self.eps = eps

    def forward(self, input, target, var):
        """The Gaussian negative log-likelihood."""
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """:class:`NLLLoss` under its old name (PyTorch keeps it as a deprecated subclass)."""


class MultiLabelMarginLoss(_Loss):
    """``F.multilabel_margin_loss`` with a fixed reduction."""

    def forward(self, input, target):
        """The multi-label hinge loss."""
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """``F.triplet_margin_with_distance_loss`` with fixed options."""

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function = distance_function
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        """The triplet loss under this module's distance."""
        return F.triplet_margin_with_distance_loss(anchor, positive, negative, distance_function=self.distance_function,
                                                   margin=self.margin, swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """``F.ctc_loss`` with fixed ``blank``, reduction and ``zero_infinity``."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        """The CTC loss."""
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross-entropy of ``target`` under the logits of an internal bias-optional
    ``Linear(in_features, num_classes * prod(out_features))`` (PyTorch 2.13's module,
    its parameters under ``linear.weight``/``linear.bias``): logits ``(N, C,
    *out_features)`` for an input ``(N, in_features)``, ``(C, *out_features)`` for
    ``(in_features,)``; ``target`` class indices or class probabilities, ``weight``,
    ``ignore_index`` (None: -100), ``reduction`` and ``label_smoothing`` as
    :class:`CrossEntropyLoss`. With class indices and no ``out_features`` or class
    weights, the loss is :func:`arraykit.nn.functional.linear_cross_entropy`'s chunked
    kernel, which never forms the logits; ``options`` (PyTorch's chunking settings)
    is kept as given and not read: that kernel chooses its own chunks."""

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None,
                 dtype=None, reduction="mean", weight=None, ignore_index=None,
                 label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        super().__init__(weight, None, None, reduction)
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        size = num_classes
        for extent in self.out_features:
            size *= extent
        self.linear = Linear(in_features, size, bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input, target):  # noqa: A002 (PyTorch's names)
        """The loss of ``input``'s logits against ``target``."""
        ignore_index = -100 if self.ignore_index is None else self.ignore_index
        weight, bias = self.linear.weight, self.linear.bias
        indices = target._dtype.kind in ("int", "uint")
        if (indices and not self.out_features and self.weight is None and input.ndim >= 2
                and target.shape == input.shape[:-1]):
            return F.linear_cross_entropy(input, weight, target, bias, ignore_index,
                                          self.reduction, self.label_smoothing)
        logits = F.linear(input, weight, bias)
        logits = logits.reshape(logits.shape[:-1] + (self.num_classes,) + self.out_features)
        return F.cross_entropy(logits, target, weight=self.weight, ignore_index=ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)

    def extra_repr(self):
        """The module's options, as PyTorch prints them."""
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
