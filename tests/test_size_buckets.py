"""Size-bucket programs for small element-wise CPU kernels (arraykit.kernels.size_buckets):
a new small shape compiles nothing until it has been used EXACT_AFTER times, the bucket
program gives the exact kernel's values bit for bit and NumPy's values, whatever the
operands' layouts, and it stays out of autograd, traces and other devices."""

from __future__ import annotations

import itertools
import math

import jax
import numpy as np
import pytest

import arraykit as ak
from arraykit.kernels import bodies, launch, size_buckets
from strategies import make_view
from test_elementwise import BINARY, UNARY
from test_interop import _run_with_two_cpus

CPU = "cpu"


def _fresh():
    """Forget every compiled kernel, so the next call of any kernel starts at a miss."""
    launch.cache_clear()


def _special(dtype, shape, seed):
    """An array of ``dtype`` mixing random values with its special ones."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        special = [0, 1, info.min, info.max, info.max // 2, 3]
        values = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    else:
        special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 1e30, -1e-30]
        values = rng.normal(0, 10, n)
        if dt.kind == "c":
            values = values + 1j * rng.normal(0, 10, n)
            special = special + [complex(np.inf, np.nan), complex(0.0, -0.0), complex(-1, 0)]
    k = min(len(special), n)
    with np.errstate(all="ignore"):
        values = values.astype(dt)
        values[rng.choice(n, k, replace=False)] = np.array(special[:k]).astype(dt)
    return values.reshape(shape)


def _both_tiers(monkeypatch, call):
    """``call()`` served by a bucket program, then by the exact kernel, as NumPy arrays."""
    _fresh()
    monkeypatch.setattr(size_buckets, "EXACT_AFTER", 10**6)
    bucketed = call().numpy()
    if ak.cache_info()["traces"] == 0:  # a view (real of a real tensor): no kernel at all
        return bucketed, bucketed
    buckets = size_buckets.traces()
    assert buckets >= 1 and ak.cache_info()["traces"] == buckets  # no exact kernel
    monkeypatch.setattr(size_buckets, "EXACT_AFTER", 0)
    exact = call().numpy()
    assert ak.cache_info()["traces"] >= 2 * buckets and size_buckets.traces() == buckets
    return bucketed, exact


# With the classic element emitters (jaxlib 0.10's small-kernel options) a program
# computes each element by the same code whatever the shape; a compiler without that
# option (jaxlib 0.11) may vectorize a transcendental differently per shape.
CLASSIC_EMITTERS = (launch.fast_compile_options() or {}).get("xla_cpu_use_fusion_emitters") is False


def _same_bits(a, b):
    """Bit for bit; floating values within two units of their precision when the compiler
    may vectorize per shape (see CLASSIC_EMITTERS)."""
    assert a.dtype == b.dtype and a.shape == b.shape
    if CLASSIC_EMITTERS or a.dtype.kind not in "fcV":
        np.testing.assert_array_equal(np.ascontiguousarray(a).view(np.uint8),
                                      np.ascontiguousarray(b).view(np.uint8))
        return
    if a.dtype.kind == "c":
        _same_bits(a.real.copy(), b.real.copy())
        _same_bits(a.imag.copy(), b.imag.copy())
        return
    wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(wide_a), np.isnan(wide_b))
    both = np.where(np.isnan(wide_a), 0.0, np.maximum(np.abs(wide_a), np.abs(wide_b)))
    with np.errstate(invalid="ignore"):  # inf - inf
        close = (wide_a == wide_b) | (
            np.abs(wide_a - wide_b) <= 2 * float(jax.numpy.finfo(a.dtype).eps) * both)
    assert (close | np.isnan(wide_a)).all(), (a[~close], b[~close])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_bucket_programs_give_the_exact_kernels_bits(name, monkeypatch):
    for dtype in UNARY[name][1]:
        base = _special(dtype, (4, 6), seed=len(name))
        x = ak.asarray(base, device=CPU)[::-1, 1::2]  # negative and stepped strides
        with np.errstate(all="ignore"):
            bucketed, exact = _both_tiers(monkeypatch, lambda: getattr(ak, name)(x))
        _same_bits(bucketed, exact)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_bucket_programs_give_the_exact_kernels_bits(name, monkeypatch):
    for dtype in BINARY[name][1]:
        a = ak.asarray(_special(dtype, (3, 1), seed=1), device=CPU)
        b = ak.asarray(_special(dtype, (5, 4), seed=2), device=CPU)[::2, ::-1]  # broadcast, strided
        if name in ("bitwise_left_shift", "bitwise_right_shift"):
            b = ak.remainder(b, 9 if np.dtype(dtype).itemsize == 1 else 70)
        bucketed, exact = _both_tiers(monkeypatch, lambda: getattr(ak, name)(a, b))
        _same_bits(bucketed, exact)


_WITH_SCALARS = {
    "add": lambda a, c: (a + c, c + a), "subtract": lambda a, c: (a - c, c - a),
    "multiply": lambda a, c: (a * c, c * a), "divide": lambda a, c: (a / c, c / a),
    "pow": lambda a, c: (a ** c, c ** a), "less": lambda a, c: (a < c, c < a),
    "maximum": lambda a, c: (ak.maximum(a, c), ak.maximum(c, a)),
    "remainder": lambda a, c: (a % c, c % a),
    "floor_divide": lambda a, c: (a // c, c // a),
}


@pytest.mark.parametrize("name", sorted(_WITH_SCALARS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "complex64"])
def test_scalar_operands_spread_by_bucket_programs_give_the_exact_kernels_bits(
        name, dtype, monkeypatch):
    """A bucket program broadcasts a Python scalar operand on the host; the exact kernel
    takes it 0-d: the same bits either way, on either side of the operator."""
    if dtype == "complex64" and name in ("less", "maximum", "remainder", "floor_divide"):
        pytest.skip("not defined for complex numbers")
    x = ak.asarray(_special(dtype, (4, 5), seed=3), device=CPU)[:, ::-2]
    for scalar in (3, -0.5, 0.1, 0.001) if dtype != "int32" else (3, -2):
        for i in range(2):
            with np.errstate(all="ignore"):
                bucketed, exact = _both_tiers(
                    monkeypatch, lambda: _WITH_SCALARS[name](x, scalar)[i])
            _same_bits(bucketed, exact)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sixteen_bit_floats_give_the_exact_kernels_bits(dtype, monkeypatch):
    base = _special("float32", (5, 3), seed=7)
    base[np.abs(base) > 6e4] = 6e4  # within float16's range
    x = ak.asarray(base, device=CPU, dtype=getattr(ak, dtype)).mT
    y = ak.asarray(base[0], device=CPU, dtype=getattr(ak, dtype))
    for call in (lambda: ak.exp(x), lambda: ak.tanh(x), lambda: x + y[:, None],
                 lambda: ak.where(x > y[:, None], x, y[:, None])):
        with np.errstate(all="ignore"):
            bucketed, exact = _both_tiers(monkeypatch, call)
        _same_bits(bucketed, exact)


_REDUCED_SHAPES = [(5,), (3, 7), (1, 66), (2, 3, 5), (33, 2), (130,)]


def _axes_of(ndim):
    return [None] + [axes for r in range(1, ndim + 1)
                     for axes in itertools.combinations(range(ndim), r)]


@pytest.mark.parametrize("name", ["sum", "max", "min", "any", "all", "argmax", "argmin"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "uint8", "bool",
                                   "complex64"])
def test_reduction_bucket_programs_give_the_exact_kernels_bits(name, dtype, monkeypatch):
    """Each axis padded to its bucket (with -0.0 for sums, the lowest or highest element
    for max and min, True or False for all and any): the same bits as the exact kernel,
    over any axes, NaN, infinities and signed zeros included."""
    if dtype == "complex64" and name in ("max", "min", "argmax", "argmin"):
        pytest.skip("not defined for complex numbers")
    fn = getattr(ak, name)
    ordered = name in ("max", "min", "argmax", "argmin")
    empty = [] if ordered else [(0, 3), ()]  # an empty axis: the identity
    for k, shape in enumerate(_REDUCED_SHAPES + empty):
        values = _special(dtype, shape, seed=k) if math.prod(shape) else np.ones(shape, dtype)
        x = ak.asarray(values, device=CPU)
        axes_list = _axes_of(len(shape))
        if name.startswith("arg"):  # one axis; None (flattened) served over one axis only
            axes_list = [None] * (len(shape) <= 1) + list(range(len(shape)))
        for axes in axes_list:
            for keepdims in (False, True):
                with np.errstate(all="ignore"):
                    bucketed, exact = _both_tiers(
                        monkeypatch, lambda: fn(x, axis=axes, keepdims=keepdims))
                _same_bits(bucketed, exact)


def test_bucketed_sums_and_extremes_match_numpy():
    _fresh()
    rng = np.random.default_rng(5)
    for n in range(1, 40):
        values = rng.normal(size=(3, n))
        values[0, n // 2] = values[0].max()  # a tie: the first index
        x = ak.asarray(values, device=CPU)[:, ::-1]  # read through a strided layout
        np.testing.assert_allclose(ak.sum(x, axis=1).numpy(), values[:, ::-1].sum(axis=1),
                                   rtol=1e-12)
        np.testing.assert_array_equal(ak.max(x, axis=1, keepdims=True).numpy(),
                                      values.max(axis=1, keepdims=True))
        np.testing.assert_array_equal(ak.min(x, axis=0).numpy(), values[:, ::-1].min(axis=0))
        np.testing.assert_array_equal(ak.argmax(x, axis=1).numpy(),
                                      values[:, ::-1].argmax(axis=1))
    assert ak.cache_info()["traces"] == size_buckets.traces() <= 16  # no exact kernel


def test_sums_do_not_depend_on_padding_their_axis():
    """A floating sum adds halves over its axis padded to a power of two with -0.0, so
    summing the same values padded further by hand gives the same bits."""
    rng = np.random.default_rng(6)
    for n in (3, 5, 17, 100, 300):
        values = rng.normal(size=n) * 10.0 ** rng.integers(-8, 8, size=n)
        whole = ak.sum(ak.asarray(values, device=CPU)).numpy()
        longer = 2 << (n - 1).bit_length()  # at most PAIRWISE_MAX: still added in halves
        padded = np.concatenate([values, np.full(longer - n, -0.0)])
        _same_bits(ak.sum(ak.asarray(padded, device=CPU)).numpy(), whole)


def test_reductions_too_long_or_large_for_buckets_compile_exact_kernels():
    _fresh()
    x = ak.asarray(np.ones((2, 2000)), device=CPU)  # a summed axis over PAIRWISE_MAX
    assert float(ak.sum(x, axis=1)[0]) == 2000.0
    y = ak.asarray(np.ones((5,) * 5), device=CPU)  # padded, 16 ** 5 elements: too many
    assert float(ak.max(y, axis=(0, 2))[0, 0, 0]) == 1.0
    assert size_buckets.traces() == 0 and ak.cache_info()["traces"] == 2


def test_new_small_shapes_of_one_bucket_share_one_program():
    _fresh()
    for n in range(9, 17):
        values = _special("float32", (n,), seed=n)
        got = ak.isnan(ak.asarray(values, device=CPU)).numpy()
        np.testing.assert_array_equal(got, np.isnan(values))
    assert ak.cache_info()["traces"] == size_buckets.traces() == 1  # the 16-element program


def test_the_exact_kernel_is_compiled_after_exact_after_calls():
    _fresh()
    x = ak.asarray(np.linspace(-3, 3, 11, dtype=np.float32), device=CPU)
    for _ in range(size_buckets.EXACT_AFTER):
        y = ak.tanh(x)
    assert ak.cache_info()["traces"] == 1 and ak.cache_info()["size"] == 0
    y2 = ak.tanh(x)  # compiles the exact kernel
    assert ak.cache_info()["traces"] == 2 and ak.cache_info()["size"] == 1
    before = ak.cache_info()
    for _ in range(3):
        ak.tanh(x)
    after = ak.cache_info()
    assert after["traces"] == 2 and after["hits"] == before["hits"] + 3
    np.testing.assert_array_equal(y.numpy(), y2.numpy())
    np.testing.assert_allclose(y.numpy(), np.tanh(x.numpy()), rtol=2e-7)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "flipped", "broadcast"])
def test_bucketed_operands_of_any_layout_match_numpy(layout):
    _fresh()
    a = _special("float64", (3, 4), seed=5)
    if layout == "broadcast":  # make_view broadcasts only equal rows
        a = np.broadcast_to(a[:1], a.shape).copy()
    b = _special("float64", (4,), seed=6)
    x = make_view(a, layout, device=CPU)
    got = ak.where(x > 0, x * b, ak.abs(x) - 1.5)
    with np.errstate(all="ignore"):
        want = np.where(a > 0, a * b, np.abs(a) - 1.5)
    assert got.shape == want.shape and got.stride() == ak.empty(want.shape).stride()
    np.testing.assert_array_equal(got.numpy(), want)
    assert size_buckets.traces() > 0 and ak.cache_info()["size"] == 0  # no exact kernel


def test_zero_dim_and_empty_operands():
    _fresh()
    s = ak.asarray(2.5, device=CPU)
    e = ak.zeros((0, 3), device=CPU)
    np.testing.assert_array_equal((s * 2).numpy(), np.float32(5.0))
    assert (e + 1).shape == (0, 3) and (e + 1).numpy().dtype == np.float32
    assert size_buckets.traces() == 2


def test_results_are_independent_fresh_storages():
    _fresh()
    x = ak.asarray([1.0, 2.0, 3.0], device=CPU)
    y = x + 0.0
    z = x + 0.0
    y[0] = 7.0
    assert y.untyped_storage().nbytes() == 3 * 4 and y.is_contiguous()
    np.testing.assert_array_equal(z.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(y.numpy(), [7.0, 2.0, 3.0])


ON_SECOND_CPU = """
import jax, numpy as np
import arraykit as ak
from arraykit.kernels import size_buckets
cpus = jax.devices("cpu")
x = ak.asarray(np.arange(5.0), device=cpus[1])
y = ak.exp(x) + x
assert size_buckets.traces() == 2, size_buckets.traces()
assert y.device == x.device and y._storage._buffer.devices() == {cpus[1]}, y._storage._buffer.devices()
np.testing.assert_allclose(y.numpy(), np.exp(np.arange(5.0)) + np.arange(5.0))
print("ok")
"""


def test_results_stay_on_the_operands_cpu_device():
    _run_with_two_cpus(ON_SECOND_CPU)


def test_recorded_and_traced_kernels_never_use_buckets():
    _fresh()
    values = np.array([0.5, -1.0, 2.0])
    x = ak.asarray(values, device=CPU, requires_grad=True)
    y = (ak.exp(x) * x).sum()
    assert size_buckets.traces() == 0  # recorded: the exact kernels, differentiated
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(values) * (1 + values), rtol=1e-6)

    @ak.jit
    def step(t):
        return ak.sin(t) + 1.0

    t = ak.asarray([3.0, 4.0, 5.0, 6.0, 7.0], device=CPU)
    before = size_buckets.traces()
    got = step(t)
    assert size_buckets.traces() == before  # traced: inlined into the one program
    np.testing.assert_allclose(got.numpy(), np.sin(t.numpy()) + 1.0, rtol=1e-6)


def test_a_body_marked_element_wise_by_mistake_is_refused(monkeypatch):
    import jax.numpy as jnp

    def running_total(x):
        return jnp.cumsum(x)[:1]

    monkeypatch.setattr(bodies, "ELEMENTWISE", bodies.ELEMENTWISE | {running_total})
    _fresh()
    with pytest.raises(AssertionError, match="running_total is marked element-wise"):
        launch.apply(running_total, (ak.asarray([1.0, 2.0], device=CPU),))


def test_windows_at_new_offsets_count_toward_one_kernel_that_goes_dynamic():
    _fresh()
    start = size_buckets.EXACT_AFTER
    values = np.arange(start + 100.0)
    x = ak.asarray(values, device=CPU)
    for i in range(start):  # a new offset each time: one bucket program
        np.testing.assert_array_equal((x[i:i + 3] * 2.0).numpy(), values[i:i + 3] * 2)
    assert ak.cache_info()["size"] == 0 and size_buckets.traces() == 1
    # then exact kernels, their offsets going dynamic
    for i in range(start + 8, start + 9 + launch.DYNAMIC_AFTER):
        np.testing.assert_array_equal((x[i:i + 3] * 2.0).numpy(), values[i:i + 3] * 2)
    kernels = ak.cache_info()["size"]
    # (fewer when an earlier test made this geometry's offsets dynamic already)
    assert 1 <= kernels <= launch.DYNAMIC_AFTER + 1 and size_buckets.traces() == 1
    # the kernel with a run-time offset serves every new offset
    for i in range(start + 28, start + 58):
        np.testing.assert_array_equal((x[i:i + 3] * 2.0).numpy(), values[i:i + 3] * 2)
    assert ak.cache_info()["size"] == kernels and size_buckets.traces() == 1
    window = slice(start + 29, start + 32)
    np.testing.assert_array_equal((x[window] - 2.0).numpy(), values[window] - 2)  # another body
    assert size_buckets.traces() == 2 and ak.cache_info()["size"] == kernels
