"""PyTorch's keyword names beside the array API's, at no cost when they are unused.

Namespace functions take PyTorch's spellings of their parameters as extra
parameters that default to None: ``input=`` for the first tensor, ``other=`` for the
second, ``dim=``/``keepdim=`` beside ``axis=``/``keepdims=``, ``diagonal=`` beside
``k=``, and ``out=`` where PyTorch has it. A function reads them only when one is
given, so the array API spelling runs the same code as before (no wrapper). Giving
both spellings of one parameter raises ``TypeError`` naming both.

``out=`` writes the result into the given tensor and returns that tensor, as
PyTorch does. The tensor must have the result's shape (an empty tensor is resized,
as PyTorch resizes one) and a dtype the result casts to within its kind or to a
higher one (PyTorch's rule for in-place results); otherwise the error names both.
"""

from __future__ import annotations

from ..tensors import namespace_registry
from ..tensors.operands import check_writable_dtype
from ..tensors.tensor_type import Tensor

_POSITIONAL = ("x", "x1", "x2", "arrays")  # array API parameters passed by position only


def pick(function, name, value, torch_name, torch_value, default=None):
    """The value of one parameter given as ``name=value`` (the array API's spelling)
    or ``torch_name=torch_value`` (PyTorch's); ``default`` is ``name``'s default.

    Called only when ``torch_value`` may be set: raises TypeError when both are."""
    if torch_value is None:
        return value
    if value is not default and value is not None:
        given = f"a positional {name}" if name in _POSITIONAL else f"{name}={value!r}"
        raise TypeError(
            f"{function}() got both {given} and PyTorch's {torch_name}= for the same "
            "parameter; pass one of them"
        )
    return torch_value


def pick_input(function, x, input):  # noqa: A002 (PyTorch's name)
    """The first tensor: positional ``x`` or PyTorch's ``input=`` (not both, not neither)."""
    if input is None:
        if x is None:
            raise TypeError(f"{function}() missing its tensor argument (x, or input=)")
        return x
    return pick(function, "x", x, "input", input)


def pick_pair(function, x1, x2, input, other):  # noqa: A002 (PyTorch's name)
    """The two operands of a binary function: ``x1``, ``x2`` or ``input=``, ``other=``."""
    x1 = pick(function, "x1", x1, "input", input)
    x2 = pick(function, "x2", x2, "other", other)
    if x1 is None or x2 is None:
        raise TypeError(f"{function}() takes two operands (x1, x2, or input=, other=)")
    return x1, x2


def reduction_axes(function, axis, keepdims, dim, keepdim):
    """``(axis, keepdims)`` from the array API's or PyTorch's spellings (``dim`` may be a
    list, as PyTorch allows)."""
    axis = pick(function, "axis", axis, "dim", dim)
    if isinstance(axis, list):
        axis = tuple(axis)
    if keepdim is not None:
        keepdims = pick(function, "keepdims", keepdims or None, "keepdim", bool(keepdim))
    return axis, keepdims


def into(function, result, out):
    """PyTorch's ``out=``: ``result`` written into ``out``; returns ``out``."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{function}(): out= must be an arraykit Tensor, got {type(out).__name__}")
    if out.shape != result.shape:
        if out._layout.numel != 0:
            raise RuntimeError(
                f"{function}(): out= has shape {out.shape} but the result has shape "
                f"{result.shape}; pass a tensor of the result's shape, or an empty one to "
                "have it resized"
            )
        fresh = namespace_registry.namespace.empty(result.shape, dtype=out.dtype, device=out.device)
        out._storage, out._layout = fresh._storage, fresh._layout
    try:
        check_writable_dtype(result._dtype, out._dtype)  # PyTorch's same-kind rule for out=
        out[...] = result
    except TypeError as exc:
        raise TypeError(
            f"{function}(): the result's dtype {result.dtype} cannot be written into out= of "
            f"dtype {out.dtype} ({exc})"
        ) from None
    return out



def into_if_given(function, result, out):
    """``result``, or :func:`into` ``out`` when PyTorch's ``out=`` was given."""
    return result if out is None else into(function, result, out)


def into_each(function, results, outs):
    """``out=`` for a function returning a named tuple: one ``out`` tensor per field."""
    if not isinstance(outs, (tuple, list)) or len(outs) != len(results):
        raise TypeError(
            f"{function}(): out= must be a tuple of {len(results)} tensors, got {outs!r}"
        )
    return type(results)(*(into(function, r, o) for r, o in zip(results, outs)))


def reduction(function, name, x, input, axis, keepdims, dim, keepdim, out, **options):  # noqa: A002
    """``function(x, axis=, keepdims=, **options)`` called with PyTorch's spellings
    (``input``, ``dim``, ``keepdim``, ``out``) resolved; the namespace reductions call
    it only when one of those is given."""
    x = pick_input(name, x, input)
    axis, keepdims = reduction_axes(name, axis, keepdims, dim, keepdim)
    result = function(x, axis=axis, keepdims=keepdims, **options)
    return result if out is None else into(name, result, out)


def created_into(function, make, out, dtype, device):
    """``out=`` of a creation function: ``make(dtype=, device=)`` (``out``'s dtype and
    device unless given, as PyTorch) written into ``out``."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{function}(): out= must be an arraykit Tensor, got {type(out).__name__}")
    made = make(dtype=out.dtype if dtype is None else dtype,
                device=out.device if device is None else device)
    return into(function, made, out)


def forward(function, name, x, input, out, *args, **kwargs):  # noqa: A002
    """``function(x, *args, **kwargs)`` with PyTorch's ``input=`` (for ``x``) and ``out=``
    resolved; functions call it only when one of them is given."""
    result = function(pick_input(name, x, input), *args, **kwargs)
    return result if out is None else into(name, result, out)
