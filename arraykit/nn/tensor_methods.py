"""``Tensor`` methods whose functions live in :mod:`arraykit.nn.functional`:
``x.softmax(dim)``, ``x.log_softmax(dim)``, ``x.logsumexp(dim)``, ``x.relu()``,
``x.sigmoid()`` and the in-place ``x.relu_()``, ``x.sigmoid_()``; ``x.hardshrink(lambd)``
and ``x.prelu(weight)``. They are attached
here, above the api layer, because their functions are (``arraykit.softmax`` is
``arraykit.nn.functional.softmax``)."""

from __future__ import annotations

from ..api.tensor_methods import _attach, _inplace_twin
from ..api.torch_pointwise import floating
from .functional import activation as F


def _softmax(self, dim, dtype=None):
    return F.softmax(self, dim, dtype=dtype)


def _log_softmax(self, dim, dtype=None):
    return F.log_softmax(self, dim, dtype=dtype)


def _logsumexp(self, dim, keepdim=False):
    return F.logsumexp(floating(self), dim, keepdim)


def _relu(self):
    return F.relu(self)


def _sigmoid(self):
    return F.sigmoid(floating(self))


_attach("softmax", _softmax, "``x.softmax(dim, dtype=None)``: "
        ":func:`arraykit.softmax` along ``dim``.")
_attach("log_softmax", _log_softmax, "``x.log_softmax(dim, dtype=None)``: "
        ":func:`arraykit.log_softmax` along ``dim``.")
_attach("logsumexp", _logsumexp, "``x.logsumexp(dim, keepdim=False)``: "
        ":func:`arraykit.logsumexp` (integer tensors computed in float32).")
_attach("relu", _relu, "``x.relu()``: ``max(x, 0)`` (:func:`arraykit.relu`).")
_attach("sigmoid", _sigmoid, "``x.sigmoid()``: ``1 / (1 + exp(-x))`` (integer tensors "
        "computed in float32).")
_inplace_twin("relu")
_inplace_twin("sigmoid")


def _hardshrink(self, lambd=0.5):
    return F.hardshrink(self, lambd)


def _prelu(self, weight):
    return F.prelu(self, weight)


_attach("hardshrink", _hardshrink, "``x.hardshrink(lambd=0.5)``: "
        ":func:`arraykit.nn.functional.hardshrink`.")
_attach("prelu", _prelu, "``x.prelu(weight)``: :func:`arraykit.nn.functional.prelu`.")
