"""Creation functions of the array API (asarray, zeros, arange, linspace, eye, ...).

Values are computed on the target device by cached jitted kernels, except small
results on the CPU, which NumPy computes on the host from the same bodies (no
compile per new shape); data the user hands in from the host (NumPy arrays, nested
sequences, buffers) is converted on the host and then transferred. Every function takes ``device=`` (a JAX device or
a string such as ``"cpu"`` or ``"cuda:1"``).

Copy semantics of :func:`asarray` and :func:`from_dlpack`:

* an arraykit tensor is returned as is unless a copy or conversion is needed;
* a JAX array is wrapped without a copy when its dtype and device already match
  and ``copy`` is not true (JAX arrays are immutable; the array is marked exported,
  so a write to the tensor while the caller still holds the array copies instead of
  donating it); otherwise it is copied once;
* host data (NumPy arrays, buffers, sequences) is copied with ``copy=None`` because
  the tensor may be written while the host array is still in use; ``copy=False``
  aliases the host memory when JAX can (64-byte-aligned CPU memory) and raises
  ``ValueError`` otherwise;
* :func:`from_dlpack` aliases the producer's memory whenever it can (DLPack
  semantics). An aliased storage is never written: arraykit's in-place writes on
  it copy first, so they are not seen by the producer.

PyTorch's spellings: :func:`tensor` always copies (like ``torch.tensor``);
:func:`from_numpy` shares the NumPy array's memory both ways on the CPU (like
``torch.from_numpy``; :mod:`arraykit.core.host_memory`).
"""

from __future__ import annotations

import functools
import math
import operator

import jax
import jax.numpy as jnp
import numpy as np

from ..core import dtypes as D
from ..core import host_memory
from ..core import layout as L
from ..core import x64
from ..core.devices import (
    Placement, addressable, as_device, check_same_device, default_device, host_to_device,
    import_dlpack, import_host, jax_target, one_cpu, put_global, sharding_of,
)
from ..core.storage import Storage
from ..core.jax_compat import trace_state_clean
from ..kernels import compilation_cache
from ..kernels.ahead import FirstCall
from ..kernels.kernel_names import stable_text
from ..kernels.launch import apply, call_or_nested, compile_options, eager_jit, options_inputs
from ..tensors.tensor_type import Tensor
from . import torch_keywords as T
from .naming import named

__all__ = [
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "from_numpy", "full",
    "full_like", "get_default_dtype", "linspace", "meshgrid", "ones", "ones_like",
    "set_default_dtype", "tensor", "tril", "triu", "zeros", "zeros_like",
]


def set_default_dtype(d, /):
    """Make ``d`` (``float32`` or ``float64``) the default floating dtype of the process,
    as PyTorch's ``torch.set_default_dtype``: creation functions, ``asarray`` of Python
    floats (and of complex numbers: complex64 or complex128 to match), random draws,
    float results of integer inputs and ``__array_namespace_info__().default_dtypes()``
    follow it. Any other dtype raises TypeError. Compiled ``arraykit.jit`` programs
    are keyed by it (a change retraces them)."""
    D.set_default_float(D.as_dtype(d))


def get_default_dtype():
    """The default floating dtype (``float32`` unless :func:`set_default_dtype` changed it)."""
    return D.DEFAULT_FLOAT


_PY_SCALARS = (bool, int, float, complex)


def _shape(shape):
    """Validate a shape given as an int or a sequence of ints."""
    if type(shape) is int:
        shape = (shape,)
    elif type(shape) is not tuple or not all(type(n) is int for n in shape):
        if isinstance(shape, (int, np.integer)):
            shape = (shape,)
        try:
            shape = tuple(operator.index(n) for n in shape)
        except TypeError:
            raise TypeError(f"shape must be an int or a sequence of ints, got {shape!r}") from None
    if shape and min(shape) < 0:
        raise ValueError(f"negative dimensions are not allowed, got shape {shape}")
    return shape


def _varargs_shape(shape, sizes, name):
    """``shape`` plus PyTorch's varargs sizes: ``zeros(2, 3)`` means ``zeros((2, 3))``."""
    if not sizes:
        return shape
    try:
        return (operator.index(shape),) + tuple(operator.index(n) for n in sizes)
    except TypeError:
        raise TypeError(
            f"{name}() takes the shape as one sequence or as separate ints, got "
            f"{(shape, *sizes)!r}"
        ) from None


def _grad(out, requires_grad):
    """``out``, made a leaf that requires grad when ``requires_grad`` (PyTorch's keyword on
    creation functions; raises for dtypes that cannot require grad)."""
    if requires_grad:
        out.requires_grad_(True)
    return out


def _dtype_or(dtype, default):
    return default if dtype is None else D.as_dtype(dtype)


def _wrap(buf, layout, dtype, device, shared=False, exported=False):
    storage = Storage(buf, dtype, device, shared, exported=exported)
    return Tensor._make(storage, layout, dtype)


# ---------------------------------------------------------------------- kernels

_CREATE = {}
HOST_ELEMENTS = 4096


@x64.scoped
def _launch(fn, static, device, numel, *args):
    """``fn(xp, *args, *static)`` (``numel`` elements) as a new buffer on ``device``.

    Bodies are written once against an array namespace ``xp``. Outside traces, a
    result of at most ``HOST_ELEMENTS`` elements on one CPU device is computed by
    NumPy on the host and transferred: no compilation per new shape, which costs
    milliseconds and keeps a jitted kernel alive for each. Otherwise ``fn`` with
    ``jax.numpy`` runs as a cached kernel placed on ``device``.
    """
    if numel <= HOST_ELEMENTS and one_cpu(device) and trace_state_clean():
        with np.errstate(all="ignore"):  # JAX's kernels overflow and cast silently too
            values = np.asarray(fn(np, *args, *static), order="C")  # 0-d stays 0-d
        return jax.device_put(values, device)  # a private array: JAX may alias it
    key = (fn, static, device)
    kernels = _CREATE.get(key)
    if kernels is None:

        def body(*a):
            return fn(jnp, *a, *static)

        placed = sharding_of(device)
        nested = jax.jit(body, out_shardings=placed)
        name = _kernel_name(fn, static, device)
        if name is None:
            call = eager_jit(body, compile_options(body, args, device.platform), out_shardings=placed)
        else:  # through the persistent compilation cache, found by name
            call = FirstCall(body, functools.partial(compile_options, body, args, device.platform),
                             (), nested, name, devices=(device,), out_shardings=placed)
        kernels = _CREATE[key] = (call, nested)
    return call_or_nested(*kernels, *args)


def _kernel_name(fn, static, device):
    """The name of a creation kernel in the persistent compilation cache (see
    :mod:`arraykit.kernels.kernel_names`; its device named too: the kernel places its
    result there, whatever its arguments), or None when the cache is off or there is none."""
    if compilation_cache.get_compilation_cache_dir() is None or not isinstance(device, jax.Device):
        return None
    name = stable_text((fn, static, options_inputs()))
    return None if name is None else f"{name}|{device.platform}:{device.id}"


def _const(xp, shape, value, np_dtype):
    """A constant compiled into the kernel (zeros, ones), of ``shape``."""
    return xp.full(shape, value, dtype=np_dtype)


def _fill(xp, value, shape, np_dtype):
    """A run-time ``value`` (one kernel for every fill value), of ``shape``."""
    return xp.full(shape, value, dtype=np_dtype)


def _filled(shape, value, dtype, device):
    """A new tensor of ``shape`` holding the constant ``value`` (0 or 1) of ``dtype``."""
    shape = _shape(shape)
    device = as_device(device)
    buf = _launch(_const, (shape, value, dtype.np), device, math.prod(shape))
    return _wrap(buf, L.contiguous(shape), dtype, device)


def _scalar_of(value, dtype, what):
    """``value`` (a Python/NumPy scalar) as a NumPy scalar of ``dtype``."""
    is_complex = D.scalar_kind(value) == "complex" or (
        isinstance(value, np.generic) and value.dtype.kind == "c"
    )
    if is_complex and dtype.kind != "complex":
        raise TypeError(f"{what}: cannot store the complex value {value!r} in dtype {dtype}")
    with np.errstate(over="ignore"):  # beyond float32's range: inf, quietly (PyTorch)
        return dtype.np.type(value)


def _py(value, what):
    """A Python/NumPy scalar, or the value of a 0-d tensor (one device sync)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise TypeError(f"{what} must be a scalar, got a tensor of shape {value.shape}")
        return value.item()
    if isinstance(value, (*_PY_SCALARS, np.generic)):
        return value
    raise TypeError(f"{what} must be a Python scalar, got {type(value).__name__}")


# ---------------------------------------------------------------------- constant fills


def _constant_creator(name, value, doc):
    """The creator ``name`` (``zeros``, ``ones``, ``empty``): a new tensor holding the
    constant ``value`` everywhere (default dtype: :func:`get_default_dtype`), documented by ``doc``."""

    def create(shape, *sizes, dtype=None, device=None, requires_grad=False, out=None):
        if out is not None:  # PyTorch's
            make = functools.partial(create, shape, *sizes, requires_grad=requires_grad)
            return T.created_into(name, make, out, dtype, device)
        shape = _varargs_shape(shape, sizes, name)
        filled = _filled(shape, value, _dtype_or(dtype, D.DEFAULT_FLOAT), device)
        return _grad(filled, requires_grad)

    return named(create, name, doc)


zeros = _constant_creator(
    "zeros", 0,
    """A new tensor of zeros (default dtype: :func:`get_default_dtype`).

    The shape is a sequence or, as in PyTorch, separate ints: ``zeros(2, 3)``.
    """,
)
ones = _constant_creator(
    "ones", 1,
    """A new tensor of ones (default dtype: :func:`get_default_dtype`).

    The shape is a sequence or, as in PyTorch, separate ints: ``ones(2, 3)``.
    """,
)
empty = _constant_creator(
    "empty", 0,
    """A new tensor with unspecified values (zeros: JAX buffers are always initialized).

    The shape is a sequence or, as in PyTorch, separate ints: ``empty(2, 3)``.
    """,
)


def _default_for(value):
    """The dtype a scalar fill value gets: NumPy scalars keep theirs, Python ones the defaults."""
    kind = None if isinstance(value, np.generic) else D.scalar_kind(value)
    if kind is None:
        return D.from_numpy(np.asarray(value).dtype)
    return {"bool": D.bool_, "int": D.DEFAULT_INT, "float": D.DEFAULT_FLOAT,
            "complex": D.DEFAULT_COMPLEX}[kind]


def full(shape, fill_value, *, dtype=None, device=None, requires_grad=False, out=None):
    """A new tensor filled with ``fill_value`` (dtype inferred from a Python scalar)."""
    if out is not None:  # PyTorch's
        make = functools.partial(full, shape, fill_value, requires_grad=requires_grad)
        return T.created_into("full", make, out, dtype, device)
    fill_value = _py(fill_value, "full: fill_value")
    dtype = _default_for(fill_value) if dtype is None else D.as_dtype(dtype)
    shape = _shape(shape)
    device = as_device(device)
    value = _scalar_of(fill_value, dtype, "full")
    buf = _launch(_fill, (shape, dtype.np), device, math.prod(shape), value)
    return _grad(_wrap(buf, L.contiguous(shape), dtype, device), requires_grad)


def _like(x, dtype, device, input=None):  # noqa: A002 (PyTorch's name)
    if input is not None:
        x = T.pick_input("*_like", x, input)
    if not isinstance(x, Tensor):
        raise TypeError(f"expected an arraykit tensor, got {type(x).__name__}")
    return x.shape, x.dtype if dtype is None else D.as_dtype(dtype), (
        x.device if device is None else device
    )


def zeros_like(x=None, /, *, dtype=None, device=None, requires_grad=False,
               input=None):  # noqa: A002 (PyTorch's name)
    """Zeros with the shape (and by default dtype and device) of ``x``."""
    shape, dtype, device = _like(x, dtype, device, input)
    return _grad(_filled(shape, 0, dtype, device), requires_grad)


def ones_like(x=None, /, *, dtype=None, device=None, requires_grad=False, input=None):  # noqa: A002
    """Ones with the shape (and by default dtype and device) of ``x``."""
    shape, dtype, device = _like(x, dtype, device, input)
    return _grad(_filled(shape, 1, dtype, device), requires_grad)


def empty_like(x=None, /, *, dtype=None, device=None, requires_grad=False,
               input=None):  # noqa: A002 (PyTorch's name)
    """An uninitialized (zero) tensor with the shape, dtype and device of ``x``."""
    shape, dtype, device = _like(x, dtype, device, input)
    return _grad(_filled(shape, 0, dtype, device), requires_grad)


def full_like(x=None, /, fill_value=None, *, dtype=None, device=None, requires_grad=False,
              input=None, out=None):  # noqa: A002 (PyTorch's name)
    """``fill_value`` everywhere, with the shape (and by default dtype, device) of ``x``."""
    if fill_value is None:
        raise TypeError("full_like() missing its fill_value")
    if out is not None:
        made = full_like(x, fill_value, dtype=dtype, device=device, input=input)
        return T.into("full_like", made, out)
    shape, dtype, device = _like(x, dtype, device, input)
    return full(shape, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


# ---------------------------------------------------------------------- ranges


def _arange_body(xp, start, delta, second, n, compute, out):
    index = xp.arange(n)
    values = start + index.astype(compute) * delta
    return xp.where(index == 1, second, values).astype(out)


def _int_scalar(value, np_dtype):
    """``value`` truncated and wrapped into the integer ``np_dtype`` (modular)."""
    bits = np_dtype.itemsize * 8
    v = int(value) % (1 << bits)
    if np_dtype.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return np_dtype.type(v)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None, requires_grad=False,
           out=None):
    """Evenly spaced values in ``[start, stop)`` (NumPy's values: ``start + i*delta``).

    As in NumPy, the first two values are ``start`` and ``start + step`` converted to
    ``dtype`` and ``delta`` is their difference in ``dtype``.
    """
    if out is not None:  # PyTorch's
        make = functools.partial(arange, start, stop, step, requires_grad=requires_grad)
        return T.created_into("arange", make, out, dtype, device)
    start = _py(start, "arange: start")
    stop = None if stop is None else _py(stop, "arange: stop")
    step = _py(step, "arange: step")
    if stop is None:
        start, stop = 0, start
    if any(isinstance(v, (complex, np.complexfloating)) for v in (start, stop, step)):
        raise TypeError("arange: start, stop and step must be real numbers")
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if dtype is None:
        is_float = any(isinstance(v, (float, np.floating)) for v in (start, stop, step))
        dtype = D.DEFAULT_FLOAT if is_float else D.DEFAULT_INT
    else:
        dtype = D.as_dtype(dtype)
    exact = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
    if exact:
        start, stop, step = int(start), int(stop), int(step)
        n = max(0, -((start - stop) // step))
    else:
        n = max(0, math.ceil((stop - start) / step))
    if dtype is D.bool_ and n > 2:
        raise TypeError(f"arange: a bool result can have at most 2 elements, this one has {n}")
    computed = {"complex": D.real_dtype(dtype), "bool": D.int64}.get(dtype.kind, dtype)
    compute = computed.np
    second = start + step if n > 1 else start
    if computed.kind == "float":  # bfloat16's NumPy kind is "V"
        first, second = compute.type(start), compute.type(second)
        delta = second - first
        if compute.itemsize < 4:  # half precision: computed in float32, then rounded to it
            compute = np.dtype(np.float32)
            first, second, delta = compute.type(first), compute.type(second), compute.type(delta)
    else:
        first, second = compute.type(int(start)), compute.type(int(second))
        delta = _int_scalar(int(second) - int(first), compute)
    device = as_device(device)
    buf = _launch(_arange_body, (n, compute, dtype.np), device, n, first, delta, second)
    return _grad(_wrap(buf, L.contiguous((n,)), dtype, device), requires_grad)


def _linspace_body(xp, start, stop, divisor, num, endpoint, out):
    # ``divisor`` (num - 1, or num without the endpoint) is a run-time value: XLA would
    # turn a division by a constant into a product with its rounded reciprocal
    div = num - 1 if endpoint else num
    index = xp.arange(num)
    y = index.astype(start.dtype)
    delta = stop - start
    if div > 0:
        step = delta / divisor
        y = xp.where(step == 0, y / divisor * delta, y * step)
    else:
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        y = xp.where(index == num - 1, stop, y)
    if np.dtype(out).kind in "iu":
        # XLA's CPU code flushes subnormal values to zero; flushing them here too makes
        # the host and kernel paths round -1e-308 alike (to 0; NumPy's floor gives -1)
        tiny = np.finfo(y.dtype).smallest_normal
        y = xp.where(xp.abs(y) < tiny, xp.zeros_like(y), y)
        return _to_integer(xp, xp.floor(y), out)
    return y.astype(out)


def _to_integer(xp, y, out):
    """Float ``y`` cast to the integer dtype ``out`` as XLA casts: NaN to 0, values out
    of range to the nearest bound (NumPy's cast is undefined there)."""
    info = np.iinfo(out)
    top = float(info.max)
    if int(top) > info.max:  # 2**63 - 1 and 2**64 - 1 round up in float64
        top = float(np.nextafter(top, 0.0))
    kept = xp.clip(xp.where(xp.isnan(y), 0.0, y), float(info.min), top)
    return xp.where(y > top, np.dtype(out).type(info.max), kept.astype(out))


def linspace(start, stop, /, num=None, *, dtype=None, device=None, endpoint=True,
             requires_grad=False, steps=None, out=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (NumPy's algorithm).

    Values are computed in double precision and rounded to ``dtype`` (integer dtypes
    round down, as NumPy 2 does). PyTorch's ``steps=`` (for ``num``) and ``out=`` are
    accepted.
    """
    if steps is not None:
        num = T.pick("linspace", "num", num, "steps", steps)
    if num is None:
        raise TypeError("linspace() missing its number of samples (num, or steps=)")
    if out is not None:
        make = functools.partial(linspace, start, stop, num, endpoint=endpoint,
                                 requires_grad=requires_grad)
        return T.created_into("linspace", make, out, dtype, device)
    start = _py(start, "linspace: start")
    stop = _py(stop, "linspace: stop")
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    is_complex = any(isinstance(v, (complex, np.complexfloating)) for v in (start, stop))
    if dtype is None:
        dtype = D.DEFAULT_COMPLEX if is_complex else D.DEFAULT_FLOAT
    else:
        dtype = D.as_dtype(dtype)
    if is_complex and dtype.kind != "complex":
        raise TypeError(f"linspace: complex start/stop cannot produce dtype {dtype}")
    compute = np.dtype(np.complex128 if dtype.kind == "complex" else np.float64)
    device = as_device(device)
    buf = _launch(
        _linspace_body, (num, bool(endpoint), dtype.np), device, num,
        compute.type(start), compute.type(stop), np.float64(num - 1 if endpoint else num),
    )
    return _grad(_wrap(buf, L.contiguous((num,)), dtype, device), requires_grad)


def _eye_body(xp, n_rows, n_cols, k, np_dtype):
    if n_rows == 0 or n_cols == 0:  # no row or column indices to build
        return xp.zeros((n_rows, n_cols), np_dtype)
    return (xp.arange(n_rows)[:, None] + k == xp.arange(n_cols)).astype(np_dtype)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None, requires_grad=False,
        out=None):
    """A 2-D tensor with ones on the ``k``-th diagonal and zeros elsewhere (PyTorch's
    ``out=`` accepted)."""
    if out is not None:
        make = functools.partial(eye, n_rows, n_cols, k=k, requires_grad=requires_grad)
        return T.created_into("eye", make, out, dtype, device)
    n_rows = operator.index(n_rows)
    n_cols = n_rows if n_cols is None else operator.index(n_cols)
    k = operator.index(k)
    if n_rows < 0 or n_cols < 0:
        raise ValueError(f"eye: negative dimensions are not allowed, got ({n_rows}, {n_cols})")
    dtype = _dtype_or(dtype, D.DEFAULT_FLOAT)
    device = as_device(device)
    k = max(-n_rows, min(k, n_cols))  # every diagonal past the edges is empty alike
    buf = _launch(_eye_body, (n_rows, n_cols, k, dtype.np), device, n_rows * n_cols)
    return _grad(_wrap(buf, L.contiguous((n_rows, n_cols)), dtype, device), requires_grad)


# ---------------------------------------------------------------------- from tensors


def _tril_body(x, k):
    return jnp.tril(x, k)


def _triu_body(x, k):
    return jnp.triu(x, k)


def _triangle(body, x, k, name, diagonal, input, out):  # noqa: A002
    if input is not None:
        x = T.pick_input(name, x, input)
    if diagonal is not None:
        k = T.pick(name, "k", k, "diagonal", diagonal, 0)
    if out is not None:
        return T.into(name, _triangle(body, x, k, name, None, None, None), out)
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected an arraykit tensor, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"{name}: expected a tensor with at least 2 dimensions, got shape {x.shape}")
    return apply(body, (x,), (operator.index(k),))


def tril(x=None, /, diagonal=None, *, k=0, input=None, out=None):  # noqa: A002
    """The lower triangle of the last two dimensions of ``x`` (elements above diagonal ``k``
    zeroed). PyTorch's ``diagonal`` (for ``k``, also positional), ``input=`` and ``out=``
    are accepted."""
    return _triangle(_tril_body, x, k, "tril", diagonal, input, out)


def triu(x=None, /, diagonal=None, *, k=0, input=None, out=None):  # noqa: A002
    """The upper triangle of the last two dimensions of ``x`` (elements below diagonal ``k``
    zeroed). PyTorch's ``diagonal`` (for ``k``, also positional), ``input=`` and ``out=``
    are accepted."""
    return _triangle(_triu_body, x, k, "triu", diagonal, input, out)


def _meshgrid_body(*args):
    *arrays, indexing = args
    return tuple(jnp.meshgrid(*arrays, indexing=indexing))


def meshgrid(*arrays, indexing="xy"):
    """Coordinate grids from 1-D tensors (``'xy'`` Cartesian or ``'ij'`` matrix indexing).

    Returns new tensors (copies, as NumPy), computed by one kernel.
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for i, a in enumerate(arrays):
        if not isinstance(a, Tensor):
            raise TypeError(f"meshgrid: argument {i} is a {type(a).__name__}, not a tensor")
        if a.ndim != 1:
            raise ValueError(f"meshgrid: argument {i} must be 1-D, got shape {a.shape}")
        check_same_device(arrays[0].device, a.device, "meshgrid")
    if not arrays:
        return ()
    return tuple(apply(_meshgrid_body, arrays, (indexing,), multiple=True))


# ---------------------------------------------------------------------- conversion


def from_numpy(array, *, device=None):
    """A tensor over the memory of the NumPy array ``array`` (PyTorch's ``from_numpy``).

    On the CPU (the default, whatever the default device is) the tensor shares
    ``array``'s memory both ways and keeps its shape and strides: writes through the
    tensor or any view of it are seen in ``array``, and NumPy's writes into
    ``array`` are seen by the tensor (:mod:`arraykit.core.host_memory` says how). Rebinding
    a name (``a = a + 1``) makes a new array and leaves the tensor alone. On another
    ``device`` the tensor holds a copy.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a NumPy array, got {type(array).__name__}")
    dtype = D.from_numpy(array.dtype)
    device = as_device("cpu" if device is None else device)
    if device.platform != "cpu":
        buf = host_to_device(np.ascontiguousarray(array), device)
        return _wrap(buf, L.contiguous(array.shape), dtype, device)
    buf, layout = host_memory.share(array)
    return _wrap(buf, layout, dtype, device)


def _from_tensor(x, dtype, target, copy):
    same_dtype = dtype is None or dtype is x._dtype
    same_device = target is None or target == x.device
    if same_dtype and same_device and not copy:
        return x
    if copy is False:
        raise ValueError(
            f"asarray(copy=False): converting a tensor of dtype {x.dtype} on {x.device} to "
            f"dtype {dtype or x.dtype} on {target or x.device} needs a copy"
        )
    if same_dtype:
        return x.clone() if same_device else x.to_device(target)
    from .dtype_functions import astype

    return astype(x, dtype, device=target)


def _copy_cast(a, np_dtype):
    return jnp.array(a.astype(np_dtype), copy=True)


_cast = jax.jit(_copy_cast, static_argnums=1)


def _from_jax(obj, dtype, device, copy):
    traced = isinstance(obj, jax.core.Tracer)
    placed = () if traced else obj.devices()
    if len(placed) > 1:
        source = Placement(obj.sharding)
    else:
        source = next(iter(placed)) if placed else None
    target = device if device is not None else source or default_device()
    dtype = D.from_numpy(obj.dtype) if dtype is None else dtype
    moved = not traced and target != source
    if copy is False and (moved or dtype.np != obj.dtype):
        raise ValueError(
            f"asarray(copy=False): converting a JAX array of dtype {obj.dtype} on {source} "
            f"to dtype {dtype} on {target} needs a copy"
        )
    if dtype.np == obj.dtype and not copy:
        buf, exported = obj, not traced
    else:
        buf, exported = _cast(obj, dtype.np), False
    if moved and addressable(source) and not addressable(target):
        # a mesh over several processes: each places its own copy, no cross-host transfer
        buf, exported = put_global(buf, target.sharding), False
    elif moved:
        buf, exported = jax.device_put(buf, jax_target(target)), False
    return _wrap(buf, L.contiguous(obj.shape), dtype, target, exported=exported)


def _from_host(arr, dtype, device, copy, owned=False):
    """A tensor from a NumPy array under the module's copy rules.

    ``owned``: ``arr`` was made by arraykit (nobody else can change it), so JAX may
    alias it instead of copying.
    """
    if dtype is not None and arr.dtype != dtype.np:
        if copy is False:
            raise ValueError(
                f"asarray(copy=False): converting dtype {arr.dtype} to {dtype} needs a copy"
            )
        if arr.dtype.kind == "c" and dtype.kind != "complex":
            raise TypeError(f"asarray: cannot convert complex values to dtype {dtype}")
        arr, owned = arr.astype(dtype.np), True
    else:
        dtype = D.from_numpy(arr.dtype)
    if device is None:
        device = default_device()
    if owned:
        buf, _ = host_to_device(np.ascontiguousarray(arr), device, copy=False)
        return _wrap(buf, L.contiguous(arr.shape), dtype, device)
    buf, layout, shared = import_host(arr, device, True if copy is None else copy)
    return _wrap(buf, layout, dtype, device, shared)


def _scan(seq, tensors, kinds):
    """Shape of a nested sequence; collects tensor leaves and Python scalar kinds.

    Returns None when a leaf is neither (NumPy arrays, NumPy scalars, others).
    """
    types = set(map(type, seq))
    if types <= {bool, int, float, complex}:
        kinds.update(types)
        return (len(seq),)
    inner = None
    for item in seq:
        if isinstance(item, (list, tuple)):
            shape = _scan(item, tensors, kinds)
        elif isinstance(item, Tensor):
            tensors.append(item)
            shape = item.shape
        elif type(item) in _PY_SCALARS:
            kinds.add(type(item))
            shape = ()
        else:
            return None
        if shape is None:
            return None
        if inner is None:
            inner = shape
        elif shape != inner:
            raise ValueError(
                f"asarray: inhomogeneous nested sequence (element shapes {inner} and {shape})"
            )
    return (len(seq),) + (inner or ())


def _leaves(seq, out):
    for item in seq:
        if isinstance(item, (list, tuple)):
            _leaves(item, out)
        else:
            out.append(item)
    return out


def _stack_body(*args):
    *leaves, shape, np_dtype = args
    return jnp.stack([jnp.asarray(v).astype(np_dtype) for v in leaves]).reshape(shape)


def _python_default(kinds):
    """Default dtype for a set of Python scalar types (the standard's precedence);
    the defaults are read now (:func:`set_default_dtype` may have changed them)."""
    if complex in kinds:
        return D.DEFAULT_COMPLEX
    if float in kinds:
        return D.DEFAULT_FLOAT
    if int in kinds:
        return D.DEFAULT_INT
    if bool in kinds:
        return D.bool_
    return D.DEFAULT_FLOAT


def _from_sequence(obj, dtype, device):
    tensors, kinds = [], set()
    shape = _scan(obj, tensors, kinds)
    if shape is None:
        arr = np.asarray(obj) if dtype is None else np.asarray(obj, dtype=dtype.np)
        return _from_host(arr, dtype, device, None, owned=True)
    if not tensors:
        dtype = _python_default(kinds) if dtype is None else dtype
        if dtype.kind != "complex" and complex in kinds:
            raise TypeError(f"asarray: cannot convert complex values to dtype {dtype}")
        return _from_host(np.asarray(obj, dtype=dtype.np), dtype, device, None, owned=True)
    if dtype is None:
        from .dtype_functions import result_type

        dtype = result_type(*tensors, *(t() for t in kinds))
    for t in tensors[1:]:
        check_same_device(tensors[0].device, t.device, "asarray")
    leaves = [
        v if isinstance(v, Tensor) else np.asarray(_scalar_of(v, dtype, "asarray"))
        for v in _leaves(obj, [])
    ]
    out = apply(_stack_body, leaves, (shape, dtype.np))
    return out if device is None else out.to_device(device)


def asarray(obj, /, *, dtype=None, device=None, copy=None, requires_grad=False):
    """Convert a tensor, JAX/NumPy array, DLPack or buffer-protocol object, Python
    scalar or (possibly nested) sequence of these to a tensor.

    Python scalars get the default dtypes (bool, int64, and the default float and complex
    dtypes: float32 and complex64 unless :func:`set_default_dtype` changed them) unless
    ``dtype`` is given; nested sequences may mix tensors and Python scalars (their
    dtype follows :func:`result_type`). See the module docstring for ``copy``.
    ``requires_grad=True`` (as in PyTorch) makes the result a leaf that requires grad.
    """
    return _grad(_asarray(obj, dtype, device, copy), requires_grad)


@x64.scoped
def _asarray(obj, dtype, device, copy):
    # The dtype and device spellings are resolved here, once: the helpers below
    # take a DType and a device (or None: not given) as they are.
    if dtype is not None:
        dtype = D.as_dtype(dtype)
    if device is not None:
        device = as_device(device)
    if isinstance(obj, Tensor):
        return _from_tensor(obj, dtype, device, copy)
    if isinstance(obj, jax.Array):
        return _from_jax(obj, dtype, device, copy)
    if isinstance(obj, np.ndarray):
        return _from_host(obj, dtype, device, copy)
    if isinstance(obj, (*_PY_SCALARS, np.generic)):
        if copy is False:
            raise ValueError("asarray(copy=False): a scalar cannot be converted without a copy")
        if dtype is None:
            dtype = _default_for(obj)
        return full((), obj, dtype=dtype, device=device)
    if isinstance(obj, (list, tuple)):
        if copy is False:
            raise ValueError("asarray(copy=False): a sequence cannot be converted without a copy")
        return _from_sequence(obj, dtype, device)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        out = from_dlpack(obj, device=device, copy=True if copy is None else copy)
        return out if dtype in (None, out.dtype) else _from_tensor(out, dtype, None, copy)
    try:
        view = memoryview(obj)
    except TypeError:
        view = None
    if view is not None:
        return _from_host(np.asarray(view), dtype, device, copy)
    if hasattr(obj, "__array__"):
        arr = np.asarray(obj, copy=False) if copy is False else np.asarray(obj)
        return _from_host(arr, dtype, device, copy)
    shown = repr(obj)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise TypeError(
        f"Unsupported input for asarray(): {shown} of type {type(obj).__name__} (a tensor, "
        "an array, a buffer, a Python scalar or a nested sequence of them converts)"
    )


def tensor(data, *, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of ``data`` (PyTorch's ``torch.tensor``).

    ``data`` is anything :func:`asarray` takes (nested sequences, scalars, NumPy
    arrays, tensors); it is always copied, so later changes to ``data`` never show.
    Python scalars get the default dtypes (bool, int64, and the default float and complex
    dtypes: float32 and complex64 unless :func:`set_default_dtype` changed them), NumPy
    data keeps its dtype. ``requires_grad=True`` is handed to the tensor's
    ``requires_grad_`` (arraykit's autograd).
    """
    return asarray(data, dtype=dtype, device=device, copy=True, requires_grad=requires_grad)


@x64.scoped
def from_dlpack(x, /, *, device=None, copy=None):
    """A tensor with the data of ``x`` (any object with ``__dlpack__``), aliased when possible.

    ``copy=True`` always copies; ``copy=False`` never does and raises ``ValueError``
    when a copy is needed (different device, unaligned or non-strided memory).
    """
    if isinstance(x, (Tensor, jax.Array)):  # asarray's path, as for any tensor or JAX array
        return _asarray(x, None, device, copy)
    if not hasattr(x, "__dlpack__") or not hasattr(x, "__dlpack_device__"):
        raise AttributeError(
            f"from_dlpack: {type(x).__name__} has no __dlpack__/__dlpack_device__ methods"
        )
    buf, layout, shared = import_dlpack(x, None if device is None else as_device(device), copy)
    dtype = D.from_numpy(buf.dtype)
    return _wrap(buf, layout, dtype, next(iter(buf.devices())), shared)
