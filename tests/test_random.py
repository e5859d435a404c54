"""arraykit's random numbers: distributions, seeding, generator state as a tensor, errors."""

import jax
import numpy as np
import pytest

import arraykit as ak
import arraykit.nn.functional as F

N = 100_000


def gen(seed=0):
    return ak.Generator().manual_seed(seed)


def test_rand_randn_uniform_normal_distributions():
    g = gen()
    u = ak.rand(N, generator=g).numpy()
    assert u.dtype == np.float32 and u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    z = ak.randn(N, generator=g).numpy()
    assert abs(z.mean()) < 0.02 and abs(z.var() - 1) < 0.02
    w = ak.uniform(-2, 4, (N,), generator=g).numpy()
    assert w.min() >= -2 and w.max() < 4 and abs(w.mean() - 1) < 0.05
    n = ak.normal(3.0, 2.0, (N,), generator=g, dtype=ak.float64).numpy()
    assert n.dtype == np.float64 and abs(n.mean() - 3) < 0.05 and abs(n.std() - 2) < 0.05
    c = ak.randn(N, generator=g, dtype=ak.complex64).numpy()
    assert abs(c.real.var() - 0.5) < 0.02 and abs(c.imag.var() - 0.5) < 0.02


@pytest.mark.parametrize("dtype", [ak.float16, ak.bfloat16, ak.float64])
def test_floating_dtypes(dtype):
    x = ak.rand(1000, dtype=dtype, generator=gen())
    assert x.dtype is dtype
    v = x.numpy().astype(np.float64)
    assert v.min() >= 0 and v.max() < 1
    assert ak.randn(4, 5, dtype=dtype).dtype is dtype


def test_randint_and_randperm():
    g = gen(1)
    r = ak.randint(3, 10, (N,), generator=g)
    assert r.dtype is ak.int64
    v = r.numpy()
    assert v.min() == 3 and v.max() == 9
    assert np.all(np.abs(np.bincount(v)[3:] / N - 1 / 7) < 0.01)
    assert ak.randint(5, (3, 2), generator=g).shape == (3, 2)
    assert ak.randint(5, size=(4,), dtype=ak.uint8).dtype is ak.uint8
    b = ak.randint(-128, 128, (N,), dtype=ak.int8, generator=g).numpy()
    assert b.min() == -128 and b.max() == 127
    f = ak.randint(0, 4, (10,), dtype=ak.float32).numpy()
    assert set(f) <= {0.0, 1.0, 2.0, 3.0}
    p = ak.randperm(1000, generator=g)
    assert p.dtype is ak.int64
    np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(1000))
    assert not np.array_equal(p.numpy(), np.arange(1000))
    assert ak.randperm(0).shape == (0,)


def test_bernoulli():
    g = gen(2)
    probs = ak.full((N,), 0.3)
    b = ak.bernoulli(probs, generator=g).numpy()
    assert b.dtype == np.float32 and set(np.unique(b)) <= {0.0, 1.0}
    assert abs(b.mean() - 0.3) < 0.01
    half = ak.bernoulli(ak.zeros((N,), dtype=ak.float64), 0.75, generator=g).numpy()
    assert half.dtype == np.float64 and abs(half.mean() - 0.75) < 0.01
    edges = ak.bernoulli(ak.asarray([0.0, 1.0] * 50), generator=g).numpy()
    np.testing.assert_array_equal(edges, [0.0, 1.0] * 50)


def test_inplace_methods():
    g = gen(3)
    x = ak.zeros(N)
    assert x.uniform_(-1, 1, generator=g) is x
    v = x.numpy()
    assert v.min() >= -1 and v.max() < 1 and abs(v.mean()) < 0.02
    x.normal_(5, 0.5, generator=g)
    assert abs(x.numpy().mean() - 5) < 0.01 and abs(x.numpy().std() - 0.5) < 0.01
    x.bernoulli_(0.2, generator=g)
    assert abs(x.numpy().mean() - 0.2) < 0.01
    i = ak.zeros(N, dtype=ak.int32).bernoulli_(ak.asarray(0.9), generator=g)
    assert i.dtype is ak.int32 and abs(i.numpy().mean() - 0.9) < 0.01
    # a strided view: only its elements are written
    m = ak.zeros((4, 6))
    m[:, ::2].uniform_(1, 2)
    v = m.numpy()
    assert np.all(v[:, 1::2] == 0) and np.all(v[:, ::2] >= 1)


def test_same_seed_same_numbers_and_draws_differ():
    a = ak.rand(5, generator=gen(7)).numpy()
    b = ak.rand(5, generator=gen(7)).numpy()
    np.testing.assert_array_equal(a, b)
    g = gen(7)
    first, second = ak.rand(5, generator=g).numpy(), ak.rand(5, generator=g).numpy()
    np.testing.assert_array_equal(first, a)
    assert not np.array_equal(first, second)
    assert not np.array_equal(a, ak.rand(5, generator=gen(8)).numpy())


def test_manual_seed_reseeds_the_default_generator():
    g = ak.manual_seed(123)
    assert isinstance(g, ak.Generator) and g.initial_seed() == 123
    a = ak.randn(2, 3).numpy()
    ak.manual_seed(123)
    np.testing.assert_array_equal(ak.randn((2, 3)).numpy(), a)
    ak.manual_seed(-1)
    assert ak.random.default_generator().initial_seed() == 2**64 - 1


def test_generators_are_independent():
    g, h = gen(1), gen(1)
    ak.rand(10, generator=h)
    ak.rand(10)  # the default generator
    a = ak.rand(4, generator=g).numpy()
    np.testing.assert_array_equal(a, ak.rand(4, generator=gen(1)).numpy())


def test_get_set_state_round_trip_and_seed():
    g = gen(4)
    ak.rand(3, generator=g)
    state = g.get_state()
    assert state.dtype is ak.uint32 and state.shape == (2,)
    a = ak.rand(6, generator=g).numpy()
    g.set_state(state)
    np.testing.assert_array_equal(ak.rand(6, generator=g).numpy(), a)
    assert not np.array_equal(state.numpy(), g.state.numpy())  # a copy, not the state itself
    s = g.seed()
    assert g.initial_seed() == s
    with pytest.raises(ValueError, match="uint32 tensor of shape"):
        g.set_state(ak.zeros(2))
    with pytest.raises(TypeError, match="Tensor"):
        g.set_state([1, 2])


def test_state_is_a_tensor_written_in_place():
    g = gen(0)
    storage = g.state._storage
    v = storage.version
    ak.rand(3, generator=g)
    assert g.state._storage is storage and storage.version == v + 1
    ak.zeros(4).normal_(generator=g)
    F.dropout(ak.ones(4), 0.5, generator=g)
    assert storage.version == v + 3


def test_draws_are_not_baked_into_the_kernel():
    g = gen(0)
    ak.rand(17, generator=g)
    traces = ak.cache_info()["traces"]
    a, b = ak.rand(17, generator=g).numpy(), ak.rand(17, generator=g).numpy()
    assert ak.cache_info()["traces"] == traces and not np.array_equal(a, b)


def test_traced_draws_match_eager_ones():
    # What arraykit.jit does: the state enters the trace as a tensor and leaves updated.
    def step(state):
        g = ak.Generator()
        g.state = state
        return ak.rand(3, generator=g), ak.randn(2, generator=g), g.state

    g = gen(5)
    a, b, s = jax.jit(step)(g.get_state())
    np.testing.assert_array_equal(a.numpy(), ak.rand(3, generator=g).numpy())
    np.testing.assert_array_equal(b.numpy(), ak.randn(2, generator=g).numpy())
    np.testing.assert_array_equal(s.numpy(), g.state.numpy())
    a2, _, _ = jax.jit(step)(s)
    assert not np.array_equal(a.numpy(), a2.numpy())


def test_sizes_dtype_device_requires_grad():
    assert ak.rand(2, 3).shape == ak.rand((2, 3)).shape == ak.rand([2, 3]).shape == (2, 3)
    assert ak.randn().shape == ()
    assert ak.rand(0, 3).shape == (0, 3)
    cpu = jax.devices("cpu")[0]
    assert ak.rand(2, device="cpu").device == cpu
    assert ak.randn(2, device=cpu, generator=ak.Generator("cpu")).device == cpu
    x = ak.randn(3, requires_grad=True)
    assert x.requires_grad and x.is_leaf


def test_normal_with_tensors_broadcasts_and_differentiates():
    mean = ak.zeros((N,)).requires_grad_()
    std = ak.full((1,), 2.0)
    out = ak.normal(mean, std, generator=gen(9))
    assert out.shape == (N,) and abs(out.numpy().std() - 2) < 0.05
    out.sum().backward()
    np.testing.assert_array_equal(mean.grad.numpy(), np.ones(N, np.float32))
    assert ak.normal(1.0, ak.ones((2, 3))).shape == (2, 3)
    assert ak.normal(ak.ones(4), 0.5).shape == (4,)


def test_dropout_uses_the_generator():
    x = ak.ones((100, 100))
    a = F.dropout(x, 0.25, generator=gen(1)).numpy()
    np.testing.assert_array_equal(a, F.dropout(x, 0.25, generator=gen(1)).numpy())
    assert set(np.unique(a)) <= {0.0, np.float32(1 / 0.75)} and 0.2 < (a == 0).mean() < 0.3
    ak.manual_seed(0)
    b = F.dropout(x, 0.25).numpy()
    ak.manual_seed(0)
    np.testing.assert_array_equal(b, F.dropout(x, 0.25).numpy())
    y = ak.ones(8).requires_grad_()
    out = F.dropout(y, 0.5, generator=gen(2))
    out.sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), out.detach().numpy())


@pytest.mark.parametrize("call, error, match", [
    (lambda: ak.rand(2, -1), ValueError, "negative"),
    (lambda: ak.randn((2, "a")), TypeError, "ints"),
    (lambda: ak.rand(3, dtype=ak.int32), TypeError, "floating"),
    (lambda: ak.randn(3, dtype=ak.bool), TypeError, "floating or complex"),
    (lambda: ak.randint(5, 5, (2,)), ValueError, "low < high"),
    (lambda: ak.randint(0, 300, (2,), dtype=ak.uint8), ValueError, "range of"),
    (lambda: ak.randint(0, 2, (2,), dtype=ak.complex64), TypeError, "integer or floating"),
    (lambda: ak.randint(5), TypeError, "high, size"),
    (lambda: ak.randperm(-1), ValueError, "non-negative"),
    (lambda: ak.normal(0.0, -1.0, (2,)), ValueError, "std >= 0"),
    (lambda: ak.normal(0.0, 1.0), TypeError, "size"),
    (lambda: ak.uniform(1, 0, (2,)), ValueError, "low <= high"),
    (lambda: ak.bernoulli(ak.zeros(3), 1.5), ValueError, r"\[0, 1\]"),
    (lambda: ak.bernoulli(ak.zeros(3, dtype=ak.int32)), TypeError, "floating"),
    (lambda: ak.zeros(3).bernoulli_(-0.1), ValueError, r"\[0, 1\]"),
    (lambda: ak.zeros(3, dtype=ak.int64).uniform_(), TypeError, "floating"),
    (lambda: ak.zeros(3).normal_(0, -2), ValueError, "std >= 0"),
    (lambda: ak.rand(2, generator=jax.random.key(0)), TypeError, "Generator"),
    (lambda: ak.manual_seed(2**64), ValueError, "seed"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
