"""PyTorch's ``torch.*`` spellings of neural-network functions (``torch.conv2d``,
``torch.layer_norm``, ``torch.dropout``, ``torch.kl_div``...), which ``arraykit``
exports beside the array API.

Where ``torch.<name>`` takes the arguments of ``torch.nn.functional.<name>`` it is
the same object (``arraykit.conv2d is arraykit.nn.functional.conv2d``). The others
keep PyTorch's own (ATen) signatures, which differ from the functional ones:

* the losses take ``reduction`` as PyTorch's integer code (0 ``"none"``, 1
  ``"mean"``, 2 ``"sum"``) and their arguments by position;
* ``batch_norm``/``instance_norm`` take ``weight, bias`` before the running
  statistics, and every argument; ``layer_norm``/``group_norm`` a trailing
  ``cudnn_enable(d)`` flag (ignored: there is no cuDNN);
* ``dropout``, ``alpha_dropout``, ``feature_dropout`` and ``feature_alpha_dropout``
  take ``(input, p, train)`` without defaults, and have in-place ``_`` forms;
* ``adaptive_max_pool1d`` always returns ``(values, indices)``;
* ``grid_sampler`` (and its ``_2d``/``_3d`` forms) takes the interpolation and padding
  modes as integer codes (0 bilinear, 1 nearest, 2 bicubic; 0 zeros, 1 border,
  2 reflection) and ``align_corners`` without a default, ``affine_grid_generator``
  ``(theta, size, align_corners)``.
"""

from __future__ import annotations

from .functional import activation as A
from .functional import conv, ctc, distance, dropouts, loss, normalization, pixelshuffle, pooling
from .functional import dense, grid_sampling

__all__ = [
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "affine_grid_generator", "alpha_dropout",
    "alpha_dropout_", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d",
    "avg_pool1d", "batch_norm", "bilinear", "binary_cross_entropy_with_logits", "celu",
    "celu_", "channel_shuffle", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "cosine_embedding_loss", "cosine_similarity",
    "ctc_loss", "dropout", "dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
    "feature_dropout", "feature_dropout_", "group_norm", "hardshrink", "hinge_embedding_loss",
    "instance_norm", "kl_div", "layer_norm", "margin_ranking_loss", "max_pool1d",
    "max_pool1d_with_indices", "max_pool2d", "max_pool3d", "pairwise_distance", "pdist",
    "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss", "prelu", "rms_norm", "rrelu",
    "rrelu_", "selu", "selu_", "threshold", "threshold_", "triplet_margin_loss",
]

# Same arguments as the functional form: one object under both names.
adaptive_avg_pool1d = pooling.adaptive_avg_pool1d
avg_pool1d = pooling.avg_pool1d
max_pool1d = pooling.max_pool1d
max_pool1d_with_indices = pooling.max_pool1d_with_indices
max_pool2d = pooling.max_pool2d
max_pool3d = pooling.max_pool3d
bilinear = dense.bilinear
celu, celu_ = A.celu, A.celu_
selu, selu_ = A.selu, A.selu_
rrelu, rrelu_ = A.rrelu, A.rrelu_
threshold, threshold_ = A.threshold, A.threshold_
hardshrink = A.hardshrink
prelu = A.prelu
channel_shuffle = pixelshuffle.channel_shuffle
pixel_shuffle = pixelshuffle.pixel_shuffle
pixel_unshuffle = pixelshuffle.pixel_unshuffle
conv1d, conv2d, conv3d = conv.conv1d, conv.conv2d, conv.conv3d
conv_transpose1d = conv.conv_transpose1d
conv_transpose2d = conv.conv_transpose2d
conv_transpose3d = conv.conv_transpose3d
cosine_similarity = distance.cosine_similarity
pairwise_distance = distance.pairwise_distance
pdist = distance.pdist
rms_norm = normalization.rms_norm

_REDUCTIONS = ("none", "mean", "sum")  # PyTorch's at::Reduction codes 0, 1, 2


def _reduction(name, code):
    """The functional form's ``reduction`` string for PyTorch's integer ``code``."""
    if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < len(_REDUCTIONS):
        raise ValueError(f"{name}(): reduction must be PyTorch's code 0 (none), 1 (mean) or "
                         f"2 (sum), got {code!r}")
    return _REDUCTIONS[code]


def adaptive_max_pool1d(input, output_size):  # noqa: A002 (PyTorch's name)
    """``(values, indices)`` of 1-D adaptive max pooling (the functional form with
    ``return_indices=True``)."""
    return pooling.adaptive_max_pool1d(input, output_size, return_indices=True)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,  # noqa: A002
               cudnn_enabled):
    """Batch normalization with ATen's argument order (``weight, bias`` first; see
    :func:`arraykit.nn.functional.batch_norm`); ``cudnn_enabled`` is ignored."""
    return normalization.batch_norm(input, running_mean, running_var, weight, bias, training,
                                    momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,  # noqa: A002
                  momentum, eps, cudnn_enabled):
    """Instance normalization with ATen's argument order (see
    :func:`arraykit.nn.functional.instance_norm`); ``cudnn_enabled`` is ignored."""
    return normalization.instance_norm(input, running_mean, running_var, weight, bias,
                                       use_input_stats, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05,  # noqa: A002
               cudnn_enable=True):
    """:func:`arraykit.nn.functional.layer_norm` (``cudnn_enable`` is ignored)."""
    return normalization.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05,  # noqa: A002
               cudnn_enabled=True):
    """:func:`arraykit.nn.functional.group_norm` (``cudnn_enabled`` is ignored)."""
    return normalization.group_norm(input, num_groups, weight, bias, eps)


def dropout(input, p, train):  # noqa: A002
    """:func:`arraykit.nn.functional.dropout` with ``training=train``."""
    return dropouts.dropout(input, p, train)


def dropout_(input, p, train):  # noqa: A002
    """:func:`dropout` written into ``input``."""
    return dropouts.dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):  # noqa: A002
    """:func:`arraykit.nn.functional.alpha_dropout` with ``training=train``."""
    return dropouts.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):  # noqa: A002
    """:func:`alpha_dropout` written into ``input``."""
    return dropouts.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):  # noqa: A002
    """:func:`arraykit.nn.functional.feature_alpha_dropout` with ``training=train``."""
    return dropouts.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):  # noqa: A002
    """:func:`feature_alpha_dropout` written into ``input``."""
    return dropouts.feature_alpha_dropout(input, p, train, inplace=True)


def feature_dropout(input, p, train):  # noqa: A002
    """Dropout of whole channels: each ``input[n, c]`` is zeroed with probability ``p``
    and the rest scaled by ``1 / (1 - p)`` (an input of at least 2 dimensions)."""
    return dropouts._feature_dropout(input, p, train, False, "feature_dropout", True)


def feature_dropout_(input, p, train):  # noqa: A002
    """:func:`feature_dropout` written into ``input``."""
    return dropouts._feature_dropout(input, p, train, True, "feature_dropout_", True)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,  # noqa: A002
                                     reduction=1):
    """:func:`arraykit.nn.functional.binary_cross_entropy_with_logits` with an integer
    ``reduction``."""
    return loss.binary_cross_entropy_with_logits(
        input, target, weight, reduction=_reduction("binary_cross_entropy_with_logits",
                                                    reduction), pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    """:func:`arraykit.nn.functional.cosine_embedding_loss` with an integer ``reduction``."""
    return loss.cosine_embedding_loss(input1, input2, target, margin,
                                      reduction=_reduction("cosine_embedding_loss", reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
             zero_infinity=False):
    """:func:`arraykit.nn.functional.ctc_loss` with an integer ``reduction``."""
    return ctc.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                        _reduction("ctc_loss", reduction), zero_infinity)


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):  # noqa: A002
    """:func:`arraykit.nn.functional.hinge_embedding_loss` with an integer ``reduction``."""
    return loss.hinge_embedding_loss(input, target, margin,
                                     reduction=_reduction("hinge_embedding_loss", reduction))


def kl_div(input, target, reduction=1, *, log_target=False):  # noqa: A002
    """:func:`arraykit.nn.functional.kl_div` with an integer ``reduction`` (``1``, the
    mean over every element, as ATen's; the functional form's ``"batchmean"`` has no
    code)."""
    return loss.kl_div(input, target, reduction=_reduction("kl_div", reduction),
                       log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    """:func:`arraykit.nn.functional.margin_ranking_loss` with an integer ``reduction``."""
    return loss.margin_ranking_loss(input1, input2, target, margin,
                                    reduction=_reduction("margin_ranking_loss", reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):  # noqa: A002
    """:func:`arraykit.nn.functional.poisson_nll_loss` with every argument by position
    and an integer ``reduction``."""
    return loss.poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_reduction("poisson_nll_loss", reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False,
                        reduction=1):
    """:func:`arraykit.nn.functional.triplet_margin_loss` with an integer ``reduction``."""
    return loss.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction("triplet_margin_loss", reduction))


def affine_grid_generator(theta, size, align_corners):
    """:func:`arraykit.nn.functional.affine_grid` with ``align_corners`` required."""
    return grid_sampling.affine_grid(theta, size, align_corners)


def _code(name, table, code):
    if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < len(table):
        raise ValueError(f"{name}(): expected one of the codes "
                         f"{dict(enumerate(table))}, got {code!r}")
    return table[code]


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
    """:func:`arraykit.nn.functional.grid_sample` with PyTorch's integer mode codes."""
    return grid_sampling.grid_sample(
        input, grid, _code("grid_sampler", grid_sampling.MODES, interpolation_mode),
        _code("grid_sampler", grid_sampling.PADDINGS, padding_mode), bool(align_corners))


def _grid_sampler_of(ndim):
    def function(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
        if getattr(input, "ndim", None) != ndim:
            raise RuntimeError(f"grid_sampler_{ndim - 2}d(): expected a {ndim}-D input, got "
                               f"shape {getattr(input, 'shape', None)}")
        return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)
    function.__name__ = function.__qualname__ = f"grid_sampler_{ndim - 2}d"
    function.__doc__ = f":func:`grid_sampler` of a {ndim}-D input."
    return function


grid_sampler_2d = _grid_sampler_of(4)
grid_sampler_3d = _grid_sampler_of(5)
