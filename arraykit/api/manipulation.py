"""Manipulation functions of the array API.

Functions whose result can address the input's elements in place are views: they
build a new layout over the same storage and launch nothing (``broadcast_to``,
``broadcast_arrays``, ``expand_dims``, ``flip``, ``moveaxis``, ``permute_dims``,
``squeeze``, ``unstack``, and ``reshape`` whenever the layout allows it). The
others (``concat``, ``stack``, ``repeat``, ``roll``, ``tile``) run one kernel that
reads every input through its layout.
"""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import check_same_device
from ..kernels.launch import apply
from ..tensors import host_paths
from ..tensors.tensor_type import Tensor, require_tensor
from . import torch_keywords as T
from . import host_results

__all__ = [
    "broadcast_arrays",
    "broadcast_shapes",
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "moveaxis",
    "permute_dims",
    "repeat",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "tile",
    "unstack",
]


# ----------------------------------------------------------------------------
# Argument checks
# ----------------------------------------------------------------------------


def _axis(axis, ndim):
    """One axis in ``[-ndim, ndim)``, wrapped; IndexError otherwise (0-d has none)."""
    if ndim == 0:
        raise IndexError(
            f"axis {operator.index(axis)} is out of bounds for an array of 0 dimensions"
        )
    return L.normalize_dim(axis, ndim, "axis")


def _axes(axis, ndim):
    """``None`` (every axis), an int or a sequence of ints as a tuple of wrapped axes."""
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, (tuple, list)):
        return (_axis(axis, ndim),)
    if ndim == 0 and axis:
        raise IndexError(f"axes {tuple(axis)} are out of bounds for an array of 0 dimensions")
    return L.normalize_dims(tuple(axis), ndim, "axis")


def _shape_arg(shape, fname):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        return tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"{fname}: shape must be a tuple of ints, got {shape!r}") from None


def _tensor_and_sizes(function, x, input, sizes, torch_sizes, negative):  # noqa: A002
    """``x`` (or PyTorch's ``input=``) and the sizes ``sizes = (name, value)`` (or PyTorch's
    spelling ``torch_sizes = (name, value)``) as a tuple of ints; a negative size raises
    ValueError with the message ``negative`` (``{}`` stands for the sizes)."""
    name, value = sizes
    if input is not None or torch_sizes[1] is not None:
        x = T.pick_input(function, x, input)
        value = T.pick(function, name, value, *torch_sizes)
    require_tensor(x, function)
    value = _shape_arg(value, function)
    if any(n < 0 for n in value):
        raise ValueError(f"{function}: " + negative.format(value))
    return x, value


def _sequence(arrays, fname):
    """Check ``arrays`` (a non-empty tuple or list of tensors on one device); ``arrays`` as a
    tuple, and their promoted dtype."""
    if isinstance(arrays, Tensor) or not isinstance(arrays, (tuple, list)):
        raise TypeError(
            f"{fname} expects a tuple or list of tensors, got {type(arrays).__name__}"
        )
    if not arrays:
        raise ValueError(f"{fname} needs at least one array")
    first = arrays[0]
    dtype = require_tensor(first, fname)._dtype
    for a in arrays[1:]:
        require_tensor(a, fname)
        check_same_device(first.device, a.device, fname)
        dtype = D.promote(dtype, a._dtype)
    return tuple(arrays), dtype


def _joined_torch_style(join, name, arrays, tensors, axis, dim, out):
    """``join(arrays, axis=)`` (``concat``, ``stack``) with PyTorch's ``tensors=``,
    ``dim`` and ``out=``."""
    arrays = T.pick(name, "arrays", arrays, "tensors", tensors)
    if arrays is None:
        raise TypeError(f"{name}() missing its sequence of tensors (arrays, or tensors=)")
    axis = T.pick(name, "axis", axis, "dim", dim, 0)
    result = join(arrays, axis=axis)
    return result if out is None else T.into(name, result, out)


# ----------------------------------------------------------------------------
# Views
# ----------------------------------------------------------------------------


def broadcast_shapes(*shapes):
    """The shape that ``shapes`` broadcast to (ValueError naming the clashing ones)."""
    shapes = [_shape_arg(s, "broadcast_shapes") for s in shapes]
    for s in shapes:
        if any(n < 0 for n in s):
            raise ValueError(f"broadcast_shapes: negative dimension in shape {s}")
    return L.broadcast_shapes(*shapes)


def broadcast_to(x=None, /, shape=None, *, input=None, size=None):  # noqa: A002
    """A view of ``x`` broadcast to ``shape`` (new and size-1 dims get stride 0); PyTorch's
    ``input=`` and ``size=`` are accepted."""
    x, shape = _tensor_and_sizes(
        "broadcast_to", x, input, ("shape", shape), ("size", size),
        "negative dimension in target shape {}",
    )
    return x._view(L.broadcast_to(x._layout, shape))


def broadcast_arrays(*arrays):
    """Views of ``arrays`` broadcast against one another, as a tuple."""
    for a in arrays:
        require_tensor(a, "broadcast_arrays")
    shape = L.broadcast_shapes(*(a._layout.shape for a in arrays))
    return tuple(
        a if a._layout.shape == shape else a._view(L.broadcast_to(a._layout, shape))
        for a in arrays
    )


def expand_dims(x, /, axis):
    """A view of ``x`` with size-1 axes inserted at ``axis`` (an int or a tuple)."""
    require_tensor(x, "expand_dims")
    lay = x._layout
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    ndim = lay.ndim + len(axes)
    new = sorted(L.normalize_dim(a, ndim, "axis") for a in axes)
    if len(set(new)) != len(new):
        raise ValueError(f"expand_dims: axis {axis} repeats a position (an output of {ndim} dimensions)")
    shape = list(lay.shape)
    strides = list(lay.strides)
    for d in new:
        stride = strides[d] * max(shape[d], 1) if d < len(shape) else 1
        shape.insert(d, 1)
        strides.insert(d, stride)
    return x._view(L.Layout(shape, strides, lay.offset))


def flip(x=None, /, dims=None, *, axis=None, input=None):  # noqa: A002 (PyTorch's name)
    """A view of ``x`` reversed along ``axis`` (all axes by default): negative strides.
    PyTorch's ``input=`` and ``dims=`` are accepted."""
    if input is not None or dims is not None:
        x = T.pick_input("flip", x, input)
        axis = T.pick("flip", "axis", axis, "dims", dims)
    require_tensor(x, "flip")
    return x._view(L.flip(x._layout, _axes(axis, x.ndim)))


def permute_dims(x, /, axes):
    """A view of ``x`` with its axes reordered: result axis i is input axis ``axes[i]``."""
    require_tensor(x, "permute_dims")
    axes = tuple(axes)
    if len(axes) != x.ndim:
        raise ValueError(
            f"permute_dims: axes {axes} must name each of the {x.ndim} axes of an array "
            f"of shape {x.shape} once"
        )
    return x._view(L.permute(x._layout, axes))


def moveaxis(x=None, /, source=None, destination=None, *, input=None):  # noqa: A002
    """A view of ``x`` with axes ``source`` moved to positions ``destination``."""
    if input is not None:
        x = T.pick_input("moveaxis", x, input)
    require_tensor(x, "moveaxis")
    ndim = x.ndim
    src = _axes(source, ndim)
    dst = _axes(destination, ndim)
    if len(src) != len(dst):
        raise ValueError(
            f"moveaxis: source {source} and destination {destination} must have the "
            "same number of elements"
        )
    order = [d for d in range(ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return x._view(L.permute(x._layout, order))


def squeeze(x=None, /, axis=None, *, dim=None, input=None, out=None):  # noqa: A002
    """A view of ``x`` without the size-1 axes ``axis`` (ValueError for other sizes).

    With PyTorch's keywords (``dim=``, ``input=``, ``out=``), PyTorch's meaning: axes of
    another size in ``dim`` are left as they are, and no ``dim`` squeezes every size-1
    axis.
    """
    if dim is not None or input is not None or out is not None:
        x = require_tensor(T.pick_input("squeeze", x, input), "squeeze")
        dims = T.pick("squeeze", "axis", axis, "dim", dim)
        dims = range(x.ndim) if dims is None else _axes(dims, x.ndim)
        result = squeeze(x, tuple(d for d in dims if x.shape[d] == 1))
        return result if out is None else T.into("squeeze", result, out)
    require_tensor(x, "squeeze")
    return x._view(L.squeeze(x._layout, _axes(axis, x.ndim), strict=True))


def unstack(x, /, *, axis=0):
    """Views of ``x`` at each position along ``axis``, as a tuple."""
    require_tensor(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack needs an array of at least one dimension, got a 0-d array")
    lay = x._layout
    d = _axis(axis, lay.ndim)
    shape = lay.shape[:d] + lay.shape[d + 1:]
    strides = lay.strides[:d] + lay.strides[d + 1:]
    step = lay.strides[d]
    return tuple(
        x._view(L.Layout(shape, strides, lay.offset + i * step)) for i in range(lay.shape[d])
    )


def _reshaped(x, shape):
    return x.reshape(shape)


def reshape(x=None, /, shape=None, *, copy=None, input=None):  # noqa: A002 (PyTorch's name)
    """``x`` with a new shape: a view when the layout allows, else a contiguous copy.

    ``copy=True`` always copies; ``copy=False`` raises ValueError when no view exists.
    """
    if input is not None:
        x = T.pick_input("reshape", x, input)
    require_tensor(x, "reshape")
    shape = L.infer_shape(_shape_arg(shape, "reshape"), x._layout.numel)
    if not copy:
        lay = L.try_view(x._layout, shape)
        if lay is not None:
            return x._view(lay)
        if copy is False:
            raise ValueError(
                f"reshape(copy=False): shape {x.shape} with strides {x._layout.strides} "
                f"cannot be viewed as shape {shape} without a copy"
            )
    if host_paths.still_new(_reshaped, x._layout.geometry, x._dtype,
                            shape) and host_paths.applies(x):  # no copy kernel per shape
        return host_paths.computed(lambda values: values.reshape(shape), x)
    return apply(_reshaped, (x,), (shape,))


# ----------------------------------------------------------------------------
# Copies
# ----------------------------------------------------------------------------


def _concat(*args):
    *xs, axis, dtype = args
    if axis is None:
        xs = [x.reshape(-1) for x in xs]
        axis = 0
    return jnp.concatenate([x.astype(dtype) for x in xs], axis=axis)


def concat(arrays=None, /, dim=None, *, axis=0, out=None, tensors=None):
    """Join ``arrays`` along an existing ``axis`` (flattened first when ``axis`` is None);
    PyTorch's ``tensors=``, ``dim`` (also positional: ``concat(ts, 1)``) and ``out=`` are
    accepted."""
    if dim is not None or out is not None or tensors is not None:
        return _joined_torch_style(concat, "concat", arrays, tensors, axis, dim, out)
    arrays, dtype = _sequence(arrays, "concat")
    if axis is not None:
        shapes = [a.shape for a in arrays]
        ndim = len(shapes[0])
        if ndim == 0:
            raise ValueError("concat: zero-dimensional arrays cannot be concatenated along an axis")
        axis = _axis(axis, ndim)
        for s in shapes[1:]:
            if len(s) != ndim:
                raise ValueError(
                    f"concat: all arrays must have the same number of dimensions, got "
                    f"shapes {shapes}"
                )
            for d in range(ndim):
                if d != axis and s[d] != shapes[0][d]:
                    raise ValueError(
                        f"concat: shapes must match except along axis {axis}; got shapes "
                        f"{shapes}, which differ in dimension {d}"
                    )
    if host_paths.joins(arrays, dtype.np):  # small CPU tensors: no kernel to compile per shape
        return host_paths.concat(arrays, axis, dtype.np)
    return apply(_concat, arrays, (axis, dtype.np))


def _stack(*args):
    *xs, axis, dtype = args
    return jnp.stack([x.astype(dtype) for x in xs], axis=axis)


def stack(arrays=None, /, dim=None, *, axis=0, out=None, tensors=None):
    """Join equally shaped ``arrays`` along a new ``axis``; PyTorch's ``tensors=``,
    ``dim`` (also positional: ``stack(ts, 1)``) and ``out=`` are accepted."""
    if dim is not None or out is not None or tensors is not None:
        return _joined_torch_style(stack, "stack", arrays, tensors, axis, dim, out)
    arrays, dtype = _sequence(arrays, "stack")
    shape = arrays[0].shape
    for a in arrays[1:]:
        if a.shape != shape:
            raise ValueError(
                f"stack: all arrays must have the same shape, got shapes "
                f"{[b.shape for b in arrays]}"
            )
    axis = L.normalize_dim(axis, len(shape) + 1, "axis")
    if host_paths.joins(arrays, dtype.np):  # small CPU tensors: no kernel to compile per shape
        return host_paths.stack(arrays, axis, dtype.np)
    return apply(_stack, arrays, (axis, dtype.np))


def _repeat_int(x, repeats, axis):
    if axis is None:
        return jnp.repeat(x.reshape(-1), repeats, axis=0)
    return jnp.repeat(x, repeats, axis=axis)


def _repeat_counts(r, size):
    r = jnp.broadcast_to(r.reshape(-1), (size,)).astype(jnp.int64)
    return jnp.stack([jnp.sum(r), jnp.min(r, initial=0)])


def _repeat_array(x, r, axis, size, total):
    r = jnp.broadcast_to(r.reshape(-1), (size,)).astype(jnp.int64)
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    return jnp.repeat(x, r, axis=axis, total_repeat_length=total)


def repeat(x, repeats, /, *, axis=None):
    """Repeat each element of ``x`` ``repeats`` times along ``axis`` (flattened if None).

    An array of ``repeats`` makes the output shape depend on its values: their sum
    is copied to the host once (a device synchronization), and they cannot be
    traced values inside ``arraykit.jit``. CPU tensors are then repeated by NumPy
    (:mod:`arraykit.host_results`: no compilation per shape).
    """
    require_tensor(x, "repeat")
    if axis is not None:
        axis = _axis(axis, x.ndim)
    size = x.size if axis is None else x.shape[axis]
    if not isinstance(repeats, Tensor):
        repeats = operator.index(repeats)
        if repeats < 0:
            raise ValueError(f"repeat: repeats must be non-negative, got {repeats}")
        return apply(_repeat_int, (x,), (repeats, axis))
    if repeats._dtype.kind not in ("int", "uint"):
        raise TypeError(f"repeat: repeats must have an integer dtype, got {repeats._dtype}")
    check_same_device(x.device, repeats.device, "repeat")
    if repeats.shape not in ((), (1,), (size,)):
        raise ValueError(
            f"repeat: repeats of shape {repeats.shape} cannot be broadcast to ({size},), "
            f"the length of {'the flattened array' if axis is None else f'axis {axis}'} "
            f"of an array of shape {x.shape}"
        )
    if isinstance(repeats._storage._buffer, jax.core.Tracer):
        raise TypeError(
            "repeat: an array of repeats must hold concrete values (the output shape "
            "depends on them); pass a Python int or compute repeats outside the trace"
        )
    values = host_results.host_values(x, repeats)
    if values is not None:
        return _repeat_on_host(*values, axis, size, x.device)
    total, lowest = apply(_repeat_counts, (repeats,), (size,)).tolist()
    if lowest < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got a repeat of {lowest}")
    return apply(_repeat_array, (x, repeats), (axis, size, total))


def _repeat_on_host(x, repeats, axis, size, device):
    """:func:`repeat` of a CPU tensor by an array of repeats, computed by NumPy."""
    repeats = np.broadcast_to(repeats.reshape(-1), (size,)).astype(np.int64)
    lowest = int(repeats.min(initial=0))
    if lowest < 0:
        raise ValueError(f"repeat: repeats must be non-negative, got a repeat of {lowest}")
    out = np.repeat(x.reshape(-1) if axis is None else x, repeats, axis=0 if axis is None else axis)
    return host_results.to_tensors([out], device)[0]


def _roll(x, *args):
    *shifts, axes, shape = args
    if shape is not None:
        return jnp.roll(x.reshape(-1), shifts[0]).reshape(shape)
    for s, a in zip(shifts, axes):
        x = jnp.roll(x, s, axis=a)
    return x


def roll(x=None, /, shift=None, dims=None, *, axis=None, input=None, shifts=None):  # noqa: A002
    """``x`` with elements shifted cyclically by ``shift`` along ``axis`` (flattened if None).

    Shifts are passed to the kernel as values, so a new shift does not recompile.
    PyTorch's ``input=``, ``shifts=`` and ``dims=`` are accepted.
    """
    if input is not None or shifts is not None or dims is not None:
        x = T.pick_input("roll", x, input)
        shift = T.pick("roll", "shift", shift, "shifts", shifts)
        axis = T.pick("roll", "axis", axis, "dims", dims)
    require_tensor(x, "roll")
    shifts = tuple(operator.index(s) for s in shift) if isinstance(shift, (tuple, list)) else (operator.index(shift),)
    if axis is None:
        if len(shifts) != 1:
            raise ValueError(f"roll: a tuple shift {shifts} needs a tuple axis of the same length")
        n = x.size
        s = shifts[0] % n if n else 0
        return apply(_roll, (x, np.int64(s)), ((), x.shape))
    axes = tuple(_axis(a, x.ndim) for a in axis) if isinstance(axis, (tuple, list)) else (_axis(axis, x.ndim),)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError(
            f"roll: shift {shift} and axis {axis} must have the same length "
            f"(or one of them a single value)"
        )
    net = {}
    for s, a in zip(shifts, axes):
        net[a] = net.get(a, 0) + s
    axes = tuple(sorted(net))
    values = tuple(np.int64(net[a] % x.shape[a] if x.shape[a] else 0) for a in axes)
    return apply(_roll, (x,) + values, (axes, None))


def _tile(x, reps):
    return jnp.tile(x, reps)


def tile(x=None, repetitions=None, /, *, input=None, dims=None):  # noqa: A002 (PyTorch's name)
    """``x`` repeated ``repetitions[i]`` times along each axis (shorter side padded with 1s);
    PyTorch's ``input=`` and ``dims=`` are accepted."""
    x, reps = _tensor_and_sizes(
        "tile", x, input, ("repetitions", repetitions), ("dims", dims),
        "repetitions must be non-negative, got {}",
    )
    if host_paths.still_new(_tile, x._layout.geometry, x._dtype,
                            reps) and host_paths.applies(x):  # no kernel per shape
        return host_paths.computed(lambda values: np.tile(values, reps), x)
    return apply(_tile, (x,), (reps,))
