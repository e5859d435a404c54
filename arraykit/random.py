"""Random numbers: generators whose state is a tensor, and PyTorch's sampling functions.

A :class:`Generator`'s state is ``generator.state``, a ``uint32`` tensor of shape
``(2,)`` on the generator's device: the key data of a JAX threefry key. A draw is
two kernels: one samples from a subkey split off the state, the other writes the
next state in place (``state' = split(state)[0]``, the samples use
``split(state)[1]``). The key values are never held on the Python side, so a
program traced over arraykit's storages threads the state like any other tensor
written in place: each call draws new numbers, and the same seed gives the same
numbers eagerly and traced. (Under a plain ``jax.jit`` a draw writes a storage
created outside the trace, which arraykit refuses; pass explicit keys there.)

The numbers differ from PyTorch's (another generator); the distributions, the
signatures and the seeding behaviour follow PyTorch. Each device has a default
generator (:func:`default_generator`), seeded with PyTorch's default CPU seed
until :func:`manual_seed` reseeds them all.

Samplers for other modules: :func:`draw` and :func:`draw_into` run a module-level
function ``fn(key, ...)`` with a fresh key as one cached kernel.
"""

from __future__ import annotations

import functools
import operator
import os
import threading

import jax
import jax.numpy as jnp
import numpy as np

from .api import torch_keywords as T
from .api.creation import _shape, asarray
from .core import dtypes as D
from .core import layout as L
from .core.devices import as_device, check_same_device
from .kernels.bodies import at_least_float32
from .kernels.launch import apply, apply_inplace
from .tensors.tensor_type import Tensor, is_traced

__all__ = [
    "Generator", "manual_seed", "rand", "randn", "randint", "randperm", "normal", "uniform",
    "bernoulli", "multinomial", "rand_like", "randn_like", "randint_like",
]

DEFAULT_SEED = 67280421310721
"""The seed of the default generators until :func:`manual_seed` (PyTorch's CPU default)."""

_IMPL = "threefry2x32"


def _key_data(seed):
    """Threefry key data of a seed (JAX's ``random.key`` for a 64-bit seed)."""
    s = operator.index(seed)
    if not -(2**63) <= s < 2**64:
        raise ValueError(f"seed must be in [-2**63, 2**64), got {s}")
    s %= 2**64
    return s, np.array([s >> 32, s & 0xFFFFFFFF], np.uint32)


# ---------------------------------------------------------------------- kernels


def _split(state):
    return jax.random.split(jax.random.wrap_key_data(state, impl=_IMPL))


def _advance(state):
    return jax.random.key_data(_split(state)[0])


def _sample(state, *rest):
    *operands, fn, static = rest
    return fn(_split(state)[1], *operands, *static)


def _sample_into(cur, state, *rest):
    *operands, fn, static = rest
    return fn(_split(state)[1], cur, *operands, *static)


def _uniform(key, low, high, shape, np_dtype):
    return jax.random.uniform(key, shape, np_dtype, low, high)


def _normal(key, mean, std, shape, np_dtype):
    return jax.random.normal(key, shape, np_dtype) * std + mean


def _randint(key, low, high, shape, np_dtype):
    return jax.random.randint(key, shape, low, high, low.dtype).astype(np_dtype)


def _randperm(key, n, np_dtype):
    return jax.random.permutation(key, n).astype(np_dtype)


def _bernoulli(key, p, shape, np_dtype):
    return jax.random.bernoulli(key, p, shape).astype(np_dtype)


def _uniform_into(key, cur, low, high):
    return jax.random.uniform(key, cur.shape, cur.dtype, low, high)


def _normal_into(key, cur, mean, std):
    return jax.random.normal(key, cur.shape, cur.dtype) * std + mean


def _bernoulli_into(key, cur, p):
    return jax.random.bernoulli(key, jnp.broadcast_to(p, cur.shape)).astype(cur.dtype)


def _exponential_into(key, cur, rate):
    return (jax.random.exponential(key, cur.shape, cur.dtype) / rate).astype(cur.dtype)


def _log_normal_into(key, cur, mean, std):
    return jnp.exp(jax.random.normal(key, cur.shape, cur.dtype) * std + mean)


def _cauchy_into(key, cur, median, sigma):
    return (jax.random.cauchy(key, cur.shape, cur.dtype) * sigma + median).astype(cur.dtype)


def _geometric_into(key, cur, p):
    u = jax.random.uniform(key, cur.shape, jnp.float64 if cur.dtype == jnp.float64 else
                           jnp.float32, minval=jnp.finfo(jnp.float32).tiny)
    trials = jnp.maximum(jnp.ceil(jnp.log(u) / jnp.log1p(-p)), 1)
    return trials.astype(cur.dtype)


def _integers_into(key, cur, low, high):
    values = jax.random.randint(key, cur.shape, low, high, dtype=jnp.int64)
    return values.astype(cur.dtype)


# ---------------------------------------------------------------------- generators


class Generator:
    """A random number generator whose state is a tensor updated in place by each draw."""

    def __init__(self, device=None):
        self._device = as_device(device)
        self._seed, data = _key_data(DEFAULT_SEED)
        self._lock = threading.Lock()
        self.state = asarray(data, device=self._device)

    @property
    def device(self):
        """The device the generator's state and draws live on."""
        return self._device

    def manual_seed(self, seed):
        """Reseed in place (any int in ``[-2**63, 2**64)``); returns the generator."""
        self._seed, data = _key_data(seed)
        with self._lock:
            self.state.copy_(data)
        return self

    def seed(self):
        """Reseed from the operating system's entropy; returns the new seed."""
        seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(seed)
        return seed

    def initial_seed(self):
        """The seed last set (as an unsigned 64-bit int, as in PyTorch)."""
        return self._seed

    def get_state(self):
        """A copy of the state tensor (uint32, shape ``(2,)``)."""
        with self._lock:
            return self.state.clone()

    def set_state(self, new_state):
        """Copy ``new_state`` (from :meth:`get_state`) into the state; returns the generator."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"set_state expects a Tensor, got {type(new_state).__name__}")
        if new_state.dtype is not D.uint32 or new_state.shape != (2,):
            raise ValueError(
                "set_state expects a uint32 tensor of shape (2,) from get_state(), got "
                f"{new_state.dtype} of shape {new_state.shape}"
            )
        with self._lock:
            self.state.copy_(new_state.to_device(self._device))
        return self

    def __repr__(self):
        return f"<arraykit.Generator on {self._device}, initial seed {self._seed}>"


_DEFAULTS = {}
_DEFAULTS_LOCK = threading.Lock()
_SEED = [DEFAULT_SEED]


def default_generator(device=None):
    """The default generator of ``device`` (default: the default device), made on first use."""
    device = as_device(device)
    g = _DEFAULTS.get(device)
    if g is None:
        with _DEFAULTS_LOCK:
            g = _DEFAULTS.get(device)
            if g is None:
                g = _DEFAULTS[device] = Generator(device).manual_seed(_SEED[0])
    return g


def manual_seed(seed):
    """Seed every default generator (one per device); returns the default device's."""
    _key_data(seed)
    with _DEFAULTS_LOCK:
        _SEED[0] = seed
        generators = list(_DEFAULTS.values())
    for g in generators:
        g.manual_seed(seed)
    return default_generator()


def _generator(generator, device):
    """(generator, device) of a draw: ``device`` if given, else the generator's."""
    if generator is None:
        device = as_device(device)
        return default_generator(device), device
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be an arraykit.Generator, got {type(generator).__name__}")
    if device is None:
        return generator, generator.device
    device = as_device(device)
    check_same_device(generator.device, device, "random draw (generator and output)")
    return generator, device


def draw(fn, operands=(), static=(), generator=None, device=None):
    """``fn(key, *operand_values, *static)`` as one cached kernel, ``key`` fresh from the
    generator (default: ``device``'s default generator), whose state then advances in place.

    ``fn`` must be a module-level function and ``static`` hashable; tensor operands
    must be on the generator's device. Returns the kernel's result tensor.
    """
    g, device = _generator(generator, device)
    for x in operands:
        if isinstance(x, Tensor):
            check_same_device(x.device, g.device, "random draw (generator and operand)")
    with g._lock:
        out = apply(_sample, (g.state, *operands), (fn, tuple(static)))
        apply_inplace(_advance, g.state, ())
    return out


def draw_into(target, fn, operands=(), static=(), generator=None):
    """Write ``fn(key, target_values, *operand_values, *static)`` into ``target`` in place,
    ``key`` fresh from the generator (default: ``target``'s device's); returns ``target``."""
    g, _ = _generator(generator, target.device if generator is None else None)
    check_same_device(target.device, g.device, "random draw (generator and tensor)")
    with g._lock:
        apply_inplace(_sample_into, target, (g.state, *operands), (fn, tuple(static)))
        apply_inplace(_advance, g.state, ())
    return target


# ---------------------------------------------------------------------- functions


def _size(size, name):
    """PyTorch's sizes: ``f(2, 3)``, ``f((2, 3))`` or ``f([2, 3])``."""
    if len(size) == 1 and not isinstance(size[0], (int, np.integer)):
        size = size[0]
    try:
        return _shape(tuple(size))
    except TypeError:
        raise TypeError(f"{name}(): size must be ints or one sequence of ints, got {size!r}") from None


def _floating(dtype, name, complex_ok=False):
    dtype = D.DEFAULT_FLOAT if dtype is None else D.as_dtype(dtype)
    if dtype.kind == "float" or (complex_ok and dtype.kind == "complex"):
        return dtype
    kinds = "a floating or complex" if complex_ok else "a floating"
    raise TypeError(f"{name}(): dtype must be {kinds} dtype, got {dtype}")


def _finish(out, requires_grad):
    return out.requires_grad_() if requires_grad else out


def _number(value, name):
    if isinstance(value, Tensor) or D.scalar_kind(value) not in ("bool", "int", "float"):
        raise TypeError(f"{name} must be a real Python number here, got {type(value).__name__}")
    return float(value)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Uniform samples in ``[0, 1)`` of the given size (default dtype float32)."""
    if out is not None:  # PyTorch's
        make = functools.partial(rand, *size, generator=generator, requires_grad=requires_grad)
        return T.created_into("rand", make, out, dtype, device)
    return uniform(0.0, 1.0, _size(size, "rand"), generator=generator, dtype=dtype,
                   device=device, requires_grad=requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """Standard normal samples of the given size (complex dtypes: variance 1/2 per part)."""
    if out is not None:  # PyTorch's
        make = functools.partial(randn, *size, generator=generator, requires_grad=requires_grad)
        return T.created_into("randn", make, out, dtype, device)
    shape = _size(size, "randn")
    dtype = _floating(dtype, "randn", complex_ok=True)
    zero = dtype.np.type(0)
    one = D.real_dtype(dtype).np.type(1)
    out = draw(_normal, (zero, one), (shape, dtype.np), generator, device)
    return _finish(out, requires_grad)


def uniform(low=0.0, high=1.0, size=(), *, generator=None, dtype=None, device=None,
            requires_grad=False):
    """Uniform samples in ``[low, high)`` of shape ``size`` (default dtype float32)."""
    low, high = _number(low, "low"), _number(high, "high")
    if low > high:
        raise ValueError(f"uniform expects low <= high, got low={low} > high={high}")
    shape = _shape(size)
    dtype = _floating(dtype, "uniform")
    scalars = (dtype.np.type(low), dtype.np.type(high))
    return _finish(draw(_uniform, scalars, (shape, dtype.np), generator, device), requires_grad)


def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False,
            out=None):
    """Integers uniform in ``[low, high)``: ``randint(high, size)`` or ``randint(low, high,
    size)`` (size also as a keyword); default dtype int64."""
    if out is not None:  # PyTorch's
        make = functools.partial(randint, *args, size=size, generator=generator,
                                 requires_grad=requires_grad)
        return T.created_into("randint", make, out, dtype, device)
    if size is not None:
        args = (*args, size)
    if len(args) == 2:
        args = (0, *args)
    if len(args) != 3:
        raise TypeError("randint() takes (high, size) or (low, high, size)")
    low, high, size = args
    try:
        low, high = operator.index(low), operator.index(high)
    except TypeError:
        raise TypeError(f"randint(): low and high must be ints, got {low!r} and {high!r}") from None
    if low >= high:
        raise ValueError(f"randint expects low < high, got low={low} >= high={high}")
    shape = _shape(size)
    dtype = D.DEFAULT_INT if dtype is None else D.as_dtype(dtype)
    if dtype.kind not in ("int", "uint", "float"):
        raise TypeError(f"randint(): dtype must be an integer or floating dtype, got {dtype}")
    work = D.uint64 if dtype is D.uint64 else D.int64
    bounds = np.iinfo((dtype if dtype.kind != "float" else work).np)
    if low < bounds.min or high - 1 > bounds.max or high > np.iinfo(work.np).max:
        raise ValueError(f"randint(): [{low}, {high}) is out of the range of {dtype}")
    scalars = (work.np.type(low), work.np.type(high))
    return _finish(draw(_randint, scalars, (shape, dtype.np), generator, device), requires_grad)


def _like(input, dtype, device, name):  # noqa: A002 (PyTorch's name)
    """``input``'s shape, and the dtype and device given or ``input``'s."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}() expects an arraykit Tensor, got {type(input).__name__}")
    return (input.shape, input.dtype if dtype is None else dtype,
            input.device if device is None else device)


def rand_like(input, *, generator=None, dtype=None, layout=None, device=None,  # noqa: A002
              requires_grad=False, memory_format=None):
    """:func:`rand` of ``input``'s shape, dtype and device (unless given)."""
    shape, dtype, device = _like(input, dtype, device, "rand_like")
    return rand(shape, generator=generator, dtype=dtype, device=device,
                requires_grad=requires_grad)


def randn_like(input, *, generator=None, dtype=None, layout=None, device=None,  # noqa: A002
               requires_grad=False, memory_format=None):
    """:func:`randn` of ``input``'s shape, dtype and device (unless given)."""
    shape, dtype, device = _like(input, dtype, device, "randn_like")
    return randn(shape, generator=generator, dtype=dtype, device=device,
                 requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, layout=None,  # noqa: A002
                 device=None, requires_grad=False, memory_format=None):
    """:func:`randint` in ``[low, high)`` of ``input``'s shape, dtype and device (unless
    given); ``randint_like(input, high)`` starts at 0."""
    if high is None:
        low, high = 0, low
    shape, dtype, device = _like(input, dtype, device, "randint_like")
    return randint(low, high, shape, generator=generator, dtype=dtype, device=device,
                   requires_grad=requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    """A random permutation of the integers ``0`` to ``n - 1`` (default dtype int64)."""
    if out is not None:  # PyTorch's
        make = functools.partial(randperm, n, generator=generator, requires_grad=requires_grad)
        return T.created_into("randperm", make, out, dtype, device)
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"randperm(): n must be non-negative, got {n}")
    dtype = D.DEFAULT_INT if dtype is None else D.as_dtype(dtype)
    if dtype.kind not in ("int", "uint", "float"):
        raise TypeError(f"randperm(): dtype must be an integer or floating dtype, got {dtype}")
    if dtype.kind != "float" and n - 1 > np.iinfo(dtype.np).max:
        raise ValueError(f"randperm(): n={n} is too large for {dtype}")
    return _finish(draw(_randperm, (), (n, dtype.np), generator, device), requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False, out=None):
    """Normal samples, as ``torch.normal``: tensor ``mean`` and/or ``std`` (broadcast; the
    result is ``mean + std * z``, differentiable in both) or numbers with ``size``."""
    if out is not None:  # PyTorch's
        make = functools.partial(normal, mean, std, size, generator=generator,
                                 requires_grad=requires_grad)
        return T.created_into("normal", make, out, dtype, device)
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        if size is not None:
            raise TypeError("normal(): size is only taken when mean and std are both numbers")
        tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
        for t in tensors:
            if t.dtype.kind != "float":
                raise TypeError(f"normal(): mean and std must be floating, got {t.dtype}")
        if not isinstance(std, Tensor) and _number(std, "std") < 0:
            raise ValueError(f"normal expects std >= 0.0, but found std {std}")
        shape = L.broadcast_shapes(*(t.shape for t in tensors))
        dtype = tensors[0].dtype if len(tensors) == 1 else D.promote(mean.dtype, std.dtype)
        check_same_device(tensors[0].device, tensors[-1].device, "normal")
        z = randn(shape, generator=generator, dtype=dtype, device=tensors[0].device)
        return _finish(mean + z * std, requires_grad)
    if size is None:
        raise TypeError("normal(): pass size when mean and std are numbers")
    mean, std = _number(mean, "mean"), _number(std, "std")
    if std < 0:
        raise ValueError(f"normal expects std >= 0.0, but found std {std}")
    dtype = _floating(dtype, "normal")
    scalars = (dtype.np.type(mean), dtype.np.type(std))
    out = draw(_normal, scalars, (_shape(size), dtype.np), generator, device)
    return _finish(out, requires_grad)


def _probability(p, name):
    p = _number(p, name)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: p must be in [0, 1], got {p}")
    return p


def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 samples: ``bernoulli(probs)`` draws each element with the probability in
    ``probs`` (a floating tensor; values outside ``[0, 1]`` act as clipped), and
    ``bernoulli(input, p)`` with probability ``p`` in ``input``'s shape; ``input``'s dtype."""
    if out is not None:  # PyTorch's
        return T.into("bernoulli", bernoulli(input, p, generator=generator), out)
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): input must be a Tensor, got {type(input).__name__}")
    gen = generator if generator is not None else default_generator(input.device)
    if p is None:
        if input.dtype.kind != "float":
            raise TypeError(f"bernoulli(): probabilities must be floating, got {input.dtype}")
        return draw(_bernoulli, (input,), (input.shape, input.dtype.np), gen)
    p = np.float32(_probability(p, "bernoulli"))
    return draw(_bernoulli, (p,), (input.shape, input.dtype.np), gen)


def _multinomial(key, probs, num_samples, replacement, np_dtype):
    logits = jnp.log(probs.astype(at_least_float32(probs.dtype)))
    if replacement:
        shape = (num_samples,) + probs.shape[:-1]
        return jnp.moveaxis(jax.random.categorical(key, logits, -1, shape), 0, -1).astype(np_dtype)
    scores = logits + jax.random.gumbel(key, probs.shape, logits.dtype)  # Gumbel top-k
    return jax.lax.top_k(scores, num_samples)[1].astype(np_dtype)


def _check_distribution(values, num_samples, replacement):
    if not np.all(np.isfinite(values) & (values >= 0)):
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    if np.any(values.sum(-1) <= 0):
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and np.any(np.count_nonzero(values, -1) < num_samples):
        raise RuntimeError(
            f"multinomial: invalid multinomial distribution (with replacement=False, fewer than "
            f"num_samples={num_samples} categories of non-zero probability)"
        )


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """Indices drawn from the categorical distributions in the rows of ``input`` (1-D or
    2-D non-negative weights, not necessarily normalised), as ``torch.multinomial``:
    shape ``input.shape[:-1] + (num_samples,)``, int64. Without ``replacement`` a
    category is drawn at most once per row (Gumbel top-k); zero weights are never drawn.

    The weights are checked on the CPU (non-finite, negative, all-zero rows, too few
    non-zero categories without replacement); on a GPU such rows give unspecified
    indices (the check would wait for the device). ``out=`` writes the indices into
    that tensor, as PyTorch.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial(): input must be a Tensor, got {type(input).__name__}")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got shape {input.shape}")
    if input.dtype.kind != "float":
        raise TypeError(f"multinomial: weights must be floating, got {input.dtype}")
    num_samples = operator.index(num_samples)
    categories = input.shape[-1]
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples (got {num_samples})")
    if not replacement and num_samples > categories:
        raise RuntimeError(
            f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement "
            f"({num_samples} > {categories})"
        )
    if input.device.platform == "cpu" and not is_traced(input) and input.size:
        _check_distribution(input._values(), num_samples, replacement)
    gen = generator if generator is not None else default_generator(input.device)
    drawn = draw(_multinomial, (input,), (num_samples, bool(replacement), np.int64), gen)
    return drawn if out is None else T.into("multinomial", drawn, out)


# ---------------------------------------------------------------------- tensor methods


def _uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill with uniform samples in ``[a, b)`` in place; returns the tensor."""
    a, b = _number(a, "a"), _number(b, "b")
    if a > b:
        raise ValueError(f"uniform_ expects a <= b, got a={a} > b={b}")
    _floating(self.dtype, "uniform_")
    return draw_into(self, _uniform_into, (self.dtype.np.type(a), self.dtype.np.type(b)),
                     generator=generator)


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples of the given mean and std in place; returns the tensor."""
    mean, std = _number(mean, "mean"), _number(std, "std")
    if std < 0:
        raise ValueError(f"normal_ expects std >= 0.0, but found std {std}")
    _floating(self.dtype, "normal_", complex_ok=True)
    real = D.real_dtype(self.dtype).np.type
    return draw_into(self, _normal_into, (real(mean), real(std)), generator=generator)


def _bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 samples, 1 with probability ``p`` (a number or a floating tensor
    broadcast to this tensor's shape), in place; returns the tensor."""
    if isinstance(p, Tensor):
        if p.dtype.kind != "float":
            raise TypeError(f"bernoulli_(): probabilities must be floating, got {p.dtype}")
        L.broadcast_to(L.contiguous(p.shape), self.shape)
    else:
        p = np.float32(_probability(p, "bernoulli_"))
    return draw_into(self, _bernoulli_into, (p,), generator=generator)


def _positive(value, name, what):
    value = _number(value, name)
    if not value > 0:
        raise ValueError(f"{name} expects {what} > 0.0, but found {what}={value}")
    return value


def _exponential_(self, lambd=1.0, *, generator=None):
    """Fill with exponential samples of rate ``lambd`` (mean ``1 / lambd``) in place."""
    _floating(self.dtype, "exponential_")
    rate = _positive(lambd, "exponential_", "lambda")
    return draw_into(self, _exponential_into, (self.dtype.np.type(rate),), generator=generator)


def _log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with samples whose logarithm is normal with ``mean`` and ``std``, in place."""
    _floating(self.dtype, "log_normal_")
    mean, std = _number(mean, "mean"), _positive(std, "log_normal_", "std")
    real = self.dtype.np.type
    return draw_into(self, _log_normal_into, (real(mean), real(std)), generator=generator)


def _cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy samples of the given ``median`` and scale ``sigma``, in place."""
    _floating(self.dtype, "cauchy_")
    median, sigma = _number(median, "median"), _positive(sigma, "cauchy_", "sigma")
    real = self.dtype.np.type
    return draw_into(self, _cauchy_into, (real(median), real(sigma)), generator=generator)


def _geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2,
    ...), in place (any real dtype)."""
    p = _number(p, "p")
    if not 0.0 < p < 1.0:
        raise ValueError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if self.dtype.kind not in ("int", "uint", "float"):
        raise TypeError(f"geometric_(): expected a real tensor, got {self.dtype}")
    return draw_into(self, _geometric_into, (np.float32(p),), generator=generator)


def _random_bounds(dtype, low, high):
    """PyTorch's ``random_`` range ``[low, high)``: by default up to the largest integer
    the dtype holds exactly (``2 ** mantissa + 1`` for floats, its maximum for integers)."""
    if high is None:
        if dtype.kind == "float":
            high = 2 ** (np.finfo(dtype.np).nmant + 1) + 1
        elif dtype.kind == "bool":
            high = 2
        else:
            high = int(np.iinfo(dtype.np).max) + 1
    return int(low), int(high)


def _random_(self, from_=0, to=None, *, generator=None):
    """Fill with integers drawn uniformly from ``[from, to)`` in place (PyTorch's
    ``x.random_(to)``, ``x.random_(from, to)`` and ``x.random_()``: up to the largest
    integer the dtype holds exactly)."""
    if self.dtype.kind == "complex":
        raise TypeError(f"random_(): expected a real tensor, got {self.dtype}")
    if to is None and from_ != 0:
        from_, to = 0, from_
    low, high = _random_bounds(self.dtype, from_, to)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    if high > 2 ** 63 - 1:
        high = 2 ** 63 - 1  # int64's limit, where the draw is made
    return draw_into(self, _integers_into, (), (low, high), generator=generator)


def _bernoulli_method(self, p=None, *, generator=None):
    """``x.bernoulli()``: 0/1 samples with the probabilities in ``x``; ``x.bernoulli(p)``:
    with probability ``p`` in ``x``'s shape (:func:`bernoulli`)."""
    return bernoulli(self, p, generator=generator)


def _multinomial_method(self, num_samples, replacement=False, *, generator=None):
    """``x.multinomial(num_samples, replacement=False)``: :func:`multinomial` of ``x``."""
    return multinomial(self, num_samples, replacement, generator=generator)


for _name, _method in (("uniform_", _uniform_), ("normal_", _normal_), ("bernoulli_", _bernoulli_),
                       ("multinomial", _multinomial_method), ("exponential_", _exponential_),
                       ("log_normal_", _log_normal_), ("cauchy_", _cauchy_),
                       ("geometric_", _geometric_), ("random_", _random_),
                       ("bernoulli", _bernoulli_method)):
    _method.__name__ = _name
    _method.__qualname__ = f"Tensor.{_name}"
    setattr(Tensor, _name, _method)
