"""``AdaptiveLogSoftmaxWithLoss``: PyTorch's efficient softmax approximation for large
vocabularies (Grave et al., 2016), with PyTorch's parameters, initialisation, outputs
and errors.

The head scores the ``cutoffs[0]`` most frequent classes and one entry per cluster of
the rest; each cluster's tail (two bias-free linear layers, the hidden size divided
by ``div_value`` per cluster) scores only the rows whose target is in that cluster,
as in PyTorch (the rows are found on the host: ``forward`` reads the targets).
"""

from __future__ import annotations

import collections

from ...api import creation as C
from ...api import elementwise as E
from ...api import manipulation as M
from ...api import searching as S
from ...api import statistical as ST
from .. import functional as F
from ..module import Module
from .container import ModuleList, Sequential
from .linear import Linear

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

OutputLoss = collections.namedtuple("OutputLoss", ["output", "loss"])
OutputLoss.__doc__ = ("``(output, loss)`` of :class:`AdaptiveLogSoftmaxWithLoss`: each row's "
                      "target log-probability and the mean negative log-likelihood.")


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive log-softmax over ``n_classes`` classes split at ``cutoffs`` (increasing,
    between 1 and ``n_classes - 1``): ``forward(input, target)`` returns ``(output,
    loss)``, :meth:`~AdaptiveLogSoftmaxWithLoss.log_prob` the full log-probabilities,
    :meth:`~AdaptiveLogSoftmaxWithLoss.predict` the most likely class."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > (n_classes - 1)
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             f"n_classes-1 (n_classes={n_classes}), got {cutoffs}")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        options = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **options)
        tails = []
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            tails.append(Sequential(Linear(in_features, hidden, bias=False, **options),
                                    Linear(hidden, size, bias=False, **options)))
        self.tail = ModuleList(tails)

    def reset_parameters(self):
        """Re-initialise the head and every tail layer as at construction."""
        self.head.reset_parameters()
        for projection, output in self.tail:
            projection.reset_parameters()
            output.reset_parameters()

    def forward(self, input, target):  # noqa: A002 (PyTorch's names)
        """``(output, loss)``: the log-probability of each row's target (``input``
        ``(N, in_features)`` or ``(in_features,)``, ``target`` ``(N,)`` or ``()``) and
        their mean negative."""
        batched = target.ndim == 1
        if target.ndim > 1:
            raise RuntimeError(f"1D target tensor expected, multi-target not supported (target "
                               f"shape {target.shape})")
        if input.ndim != target.ndim + 1:
            raise RuntimeError(f"{target.ndim}D target tensor expects {target.ndim + 1}D input "
                               f"tensors, but found inputs with size {input.shape}")
        if not batched:
            input, target = input.reshape((1, -1)), target.reshape((1,))
        if input.shape[0] != target.shape[0]:
            raise RuntimeError("Input and target should have the same size in the batch "
                               f"dimension, got {input.shape[0]} and {target.shape[0]}")
        rows = target.shape[0]
        output = C.zeros((rows,), dtype=input.dtype, device=input.device)
        head_column = target.clone()
        used = 0
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            low, high = bounds[i], bounds[i + 1]
            in_cluster = E.logical_and(E.greater_equal(target, low), E.less(target, high))
            row_indices = S.nonzero(in_cluster, as_tuple=True)[0]
            if row_indices.shape[0] == 0:
                continue
            used += row_indices.shape[0]
            if i == 0:
                continue  # the shortlist's rows read their class from the head directly
            relative = E.subtract(target[row_indices], low)
            cluster = self.tail[i - 1](input[row_indices])
            log_probs = F.log_softmax(cluster, dim=1)
            chosen = log_probs.gather(1, relative.reshape((-1, 1))).reshape((-1,))
            output = output.index_copy(0, row_indices, chosen)
            head_column = head_column.index_fill(0, row_indices, self.shortlist_size + i - 1)
        if used != rows:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{int(ST.min(target).item())}, "
                               f"{int(ST.max(target).item())}] were found. ")
        head_log_probs = F.log_softmax(self.head(input), dim=1)
        output = E.add(output, head_log_probs.gather(1, head_column.reshape((-1, 1)))
                       .reshape((-1,)))
        loss = ST.mean(E.negative(output))
        return OutputLoss(output if batched else output.reshape(()), loss)

    def _full_log_prob(self, input, head_output):  # noqa: A002
        head_log_probs = F.log_softmax(head_output, dim=1)
        parts = [head_log_probs[:, :self.shortlist_size]]
        for i, tail in enumerate(self.tail):
            cluster = F.log_softmax(tail(input), dim=1)
            parts.append(E.add(cluster, head_log_probs[:, self.shortlist_size + i:
                                                       self.shortlist_size + i + 1]))
        return M.concat(parts, axis=1)

    def log_prob(self, input):  # noqa: A002
        """The log-probabilities of every class, ``(N, n_classes)`` (or ``(n_classes,)``)."""
        batched = input.ndim == 2
        x = input if batched else input.reshape((1, -1))
        out = self._full_log_prob(x, self.head(x))
        return out if batched else out.reshape((-1,))

    def predict(self, input):  # noqa: A002
        """The most likely class of each row (``(N,)``, or ``()`` for a 1-D input)."""
        return S.argmax(self.log_prob(input), axis=-1)
