"""einops' layers as modules (:class:`arraykit.nn.Module`): ``Rearrange``, ``Reduce``
and ``EinMix``, the counterparts of ``einops.layers.torch``'s.

A model file's ``from einops.layers.torch import Rearrange`` becomes ``from
arraykit.einops.layers import Rearrange``. The layers are built as einops builds its
PyTorch layers, on einops' own mixins (pattern parsing, checks, the recipes, EinMix's
shapes and initialisation), so patterns, errors, ``repr`` and pickling are einops';
the computation is arraykit's (:mod:`arraykit.einops.backend`, ``arraykit.einsum``):
differentiable, and traced whole by ``arraykit.jit``. ``EinMix`` keeps its
parameters under einops' names and shapes (``weight``; ``bias`` where
``bias_shape`` is given), so a ``state_dict`` of ``einops.layers.torch.EinMix``
loads into it and the other way round.
"""

from __future__ import annotations

from einops.layers import RearrangeMixin, ReduceMixin
from einops.layers._einmix import _EinmixMixin

from ..api.creation import empty
from ..api.torch_products import einsum
from ..nn import init
from ..nn.module import Module
from ..nn.parameter import Parameter

__all__ = ["EinMix", "Rearrange", "Reduce"]


class Rearrange(RearrangeMixin, Module):
    """``einops.rearrange(x, pattern, **axes_lengths)`` as a layer (no parameters):
    ``Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=4, p2=4)``."""

    def forward(self, input):  # noqa: A002 (PyTorch's name)
        """``input`` rearranged by the layer's pattern (a view where the layout allows)."""
        return self._apply_recipe(input)


class Reduce(ReduceMixin, Module):
    """``einops.reduce(x, pattern, reduction, **axes_lengths)`` as a layer (no
    parameters): ``Reduce('b c (h 2) (w 2) -> b c h w', 'max')`` is a 2x2 max-pool;
    ``reduction`` is one of ``'min'``, ``'max'``, ``'sum'``, ``'mean'``, ``'prod'``,
    ``'any'``, ``'all'``."""

    def forward(self, input):  # noqa: A002 (PyTorch's name)
        """``input`` reduced by the layer's pattern and reduction."""
        return self._apply_recipe(input)


class EinMix(_EinmixMixin, Module):
    """A linear layer written as an einsum with einops' patterns:
    ``EinMix('t b cin -> t b cout', weight_shape='cin cout', bias_shape='cout',
    cin=10, cout=20)``.

    The parameters are einops': ``weight`` of the axes of ``weight_shape``, drawn
    uniformly from ``±sqrt(3 / fan_in)``, and where ``bias_shape`` is given ``bias``
    (1 on the output's other axes), from ``±sqrt(1 / fan_in)``, ``fan_in`` being the
    number of input elements mixed into one output element. Input groups on the left
    (``(h p)``) and output groups on the right are rearranged before and after the
    einsum, as einops does.
    """

    def _create_parameters(self, weight_shape, weight_bound, bias_shape, bias_bound):
        self.weight = Parameter(init.uniform_(empty(tuple(weight_shape)), -weight_bound, weight_bound))
        if bias_shape is not None:
            self.bias = Parameter(init.uniform_(empty(tuple(bias_shape)), -bias_bound, bias_bound))
        else:
            self.bias = None

    def _create_rearrange_layers(self, pre_reshape_pattern, pre_reshape_lengths, post_reshape_pattern,
                                 post_reshape_lengths):
        self.pre_rearrange = None
        if pre_reshape_pattern is not None:
            self.pre_rearrange = Rearrange(pre_reshape_pattern, **pre_reshape_lengths)
        self.post_rearrange = None
        if post_reshape_pattern is not None:
            self.post_rearrange = Rearrange(post_reshape_pattern, **post_reshape_lengths)

    def forward(self, input):  # noqa: A002 (PyTorch's name)
        """The einsum of ``input`` with ``weight``, plus ``bias``, with the pattern's
        rearrangements before and after."""
        if self.pre_rearrange is not None:
            input = self.pre_rearrange(input)  # noqa: A001
        result = einsum(self.einsum_pattern, input, self.weight)
        if self.bias is not None:
            result = result + self.bias
        if self.post_rearrange is not None:
            result = self.post_rearrange(result)
        return result
