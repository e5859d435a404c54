"""PyTorch's ``torch.Size`` and the value of ``Tensor.size``.

The array API makes ``x.size`` the number of elements (an ``int``); PyTorch makes
``x.size()`` the shape. :class:`ElementCount` is both: an ``int`` equal to the
element count that, called, returns the shape as a :class:`Size` (``x.size()``)
or one dimension (``x.size(d)``, ``d`` negative too).
"""

from __future__ import annotations

import math
import operator

__all__ = ["Size", "ElementCount"]


class Size(tuple):
    """A tensor's shape as PyTorch spells it: a tuple of ints with :meth:`numel`;
    slicing, ``+`` and ``*`` give a ``Size`` again."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        values = tuple(sizes)
        for i, v in enumerate(values):
            try:
                operator.index(v)
            except TypeError:
                raise TypeError(
                    f"arraykit.Size() takes an iterable of 'int' (item {i} is "
                    f"'{type(v).__name__}')"
                ) from None
        return super().__new__(cls, (operator.index(v) for v in values))

    def numel(self):
        """The number of elements of a tensor of this shape (the product)."""
        return math.prod(self)

    def __repr__(self):
        return f"arraykit.Size({list(self)})"

    __str__ = __repr__

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return Size(item) if isinstance(key, slice) else item

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __reduce__(self):
        return Size, (tuple(self),)


class ElementCount(int):
    """``x.size``: the number of elements (the array API's ``int``), callable as
    PyTorch's ``x.size()`` (the :class:`Size`) and ``x.size(dim)`` (one dimension)."""

    def __new__(cls, shape):
        count = super().__new__(cls, math.prod(shape))
        count.shape = shape
        return count

    def __call__(self, dim=None):
        if dim is None:
            return Size(self.shape)
        if not hasattr(dim, "__index__"):
            raise TypeError(
                f"size(): argument 'dim' (position 1) must be int, not {type(dim).__name__}"
            )
        dim = operator.index(dim)
        ndim = len(self.shape)
        if ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        if not -ndim <= dim < ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                f"but got {dim})"
            )
        return self.shape[dim]

    def __reduce__(self):
        return int, (int(self),)
