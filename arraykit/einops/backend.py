"""einops on arraykit tensors: ``einops.rearrange``, ``reduce``, ``repeat``, ``einsum``,
``pack`` and ``unpack`` take arraykit tensors directly.

einops finds the backend of a tensor among the subclasses of its
``einops._backends.AbstractBackend`` whose ``framework_name`` is an imported module.
Defining :class:`ArraykitBackend` is the registration: ``import arraykit`` imports
this module (through :mod:`arraykit.einops`) when einops is installed
(``importlib.util.find_spec``, which imports nothing) and never imports einops
otherwise, so einops stays optional. Every
operation is an arraykit namespace function, so results carry autograd history and
trace under ``arraykit.jit`` like any other code.
"""

from __future__ import annotations

import numpy as np
from einops._backends import AbstractBackend

from ..api.creation import arange, asarray
from ..api.dtype_functions import isdtype
from ..api.manipulation import (
    broadcast_to,
    concat,
    expand_dims,
    permute_dims,
    reshape,
    stack,
    tile,
)
from ..api.statistical import max, mean, min, prod, sum
from ..api.torch_products import einsum
from ..api.utility import all, any
from ..core import dtypes as D
from ..tensors.tensor_type import Tensor

__all__ = ["ArraykitBackend"]

_REDUCTIONS = {"min": min, "max": max, "sum": sum, "mean": mean, "prod": prod, "any": any,
               "all": all}


class ArraykitBackend(AbstractBackend):
    """einops' backend for :class:`arraykit.Tensor` (found by einops, not called directly)."""

    framework_name = "arraykit"

    def is_appropriate_type(self, tensor):
        """Whether einops should use this backend for ``tensor``."""
        return isinstance(tensor, Tensor)

    def from_numpy(self, x):
        """A tensor from a NumPy array (floating ones require grad, as einops' tests expect)."""
        t = asarray(x)
        return t.requires_grad_() if self.is_float_type(t) else t

    def to_numpy(self, x):
        """The tensor's values as a NumPy array."""
        return np.asarray(x.detach())

    def arange(self, start, stop):
        """``arange(start, stop)`` as int64."""
        return arange(start, stop, dtype=D.int64)

    def shape(self, x):
        """The tensor's shape (static under ``arraykit.jit`` too)."""
        return tuple(x.shape)

    def reshape(self, x, shape):
        """``x`` with shape ``shape`` (a view where the layout allows)."""
        return reshape(x, tuple(shape))

    def transpose(self, x, axes):
        """``x``'s axes permuted (a view)."""
        return permute_dims(x, tuple(axes))

    def reduce(self, x, operation, axes):
        """The einops reduction ``operation`` of ``x`` over ``axes``."""
        return _REDUCTIONS[operation](x, axis=tuple(axes))

    def stack_on_zeroth_dimension(self, tensors):
        """The tensors stacked along a new first axis."""
        return stack(list(tensors))

    def add_axis(self, x, new_position):
        """``x`` with a new axis of length 1 at ``new_position``."""
        return expand_dims(x, axis=new_position)

    def add_axes(self, x, n_axes, pos2len):
        """``x`` with new axes at the positions of ``pos2len``, broadcast to their lengths
        (a view, no copy)."""
        shape = []
        sizes = iter(x.shape)
        for position in range(n_axes):
            shape.append(pos2len[position] if position in pos2len else next(sizes))
        for position in sorted(pos2len):
            x = expand_dims(x, axis=position)
        return broadcast_to(x, tuple(shape))

    def tile(self, x, repeats):
        """``x`` repeated ``repeats[i]`` times along axis ``i``."""
        return tile(x, tuple(repeats))

    def concat(self, tensors, axis):
        """The tensors joined along ``axis``."""
        return concat(list(tensors), axis=axis)

    def is_float_type(self, x):
        """Whether ``x`` has a real floating dtype (einops' ``mean`` needs one)."""
        return isdtype(x.dtype, "real floating")

    def einsum(self, pattern, *x):
        """``arraykit.einsum(pattern, *x)``."""
        return einsum(pattern, *x)
