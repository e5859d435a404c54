"""Lazy modules: layers whose input size (``in_features``, ``in_channels``,
``num_features``) is read from their first input, as PyTorch's ``Lazy*`` layers.

A lazy layer holds no parameters until its first call; that call builds it as the layer
it stands for (``cls_to_become``) with the size read from the input, draws its
parameters with that layer's initialisation, and the module then is that layer (its
class changes, as in PyTorch). Build the optimizer after a first (dry-run) call."""

from __future__ import annotations

from ..module import Module

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """Mixin of the lazy layers: ``cls_to_become`` is the layer built at the first
    call, ``_input_size(input)`` the size that call reads."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        self._lazy_arguments = (args, kwargs)

    def has_uninitialized_params(self):
        """Whether the layer still waits for its first input (always, while it is lazy:
        the first call turns it into its ``cls_to_become``)."""
        return True

    def initialize_parameters(self, input):
        """Build the layer for ``input``'s size (what the first call does)."""
        args, kwargs = self._lazy_arguments
        training = self.training
        size = self._input_size(input)
        target = self.cls_to_become
        target.__init__(self, size, *args, **kwargs)
        self.train(training)
        self.__class__ = target

    def forward(self, input, *rest, **kwargs):
        """Build the layer from ``input``'s size, then run it."""
        self.initialize_parameters(input)
        return self.forward(input, *rest, **kwargs)

    def extra_repr(self):
        """The arguments the layer will be built with."""
        args, kwargs = self._lazy_arguments
        return ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
