"""The kernel cache: compilations are cached, observable, and offsets go dynamic."""

import numpy as np

import arraykit as ak
from arraykit.kernels import launch, size_buckets


def _traces():
    return ak.cache_info()["traces"]


def test_repeated_op_hits_the_cache():
    x = ak.asarray(np.arange(7.0))
    for _ in range(size_buckets.EXACT_AFTER + 1):  # small CPU kernels start in size buckets
        y = x * 3.0 + 1.0
    before = ak.cache_info()
    for _ in range(5):
        y = x * 3.0 + 1.0
    after = ak.cache_info()
    assert after["traces"] == before["traces"]
    assert after["hits"] >= before["hits"] + 10
    np.testing.assert_array_equal(y.numpy(), np.arange(7.0) * 3 + 1)


def test_element_loop_compiles_a_bounded_number_of_kernels():
    values = np.arange(53.0) * 1.5
    x = ak.asarray(values)
    x[2:11].numpy()  # unrelated warm-up shape
    start = _traces()
    got = [x[i].item() for i in range(40)]
    assert got == list(values[:40])
    assert _traces() - start <= launch.DYNAMIC_AFTER + 1


def test_element_write_loop_compiles_a_bounded_number_of_kernels():
    x = ak.zeros((37, 5))
    start = _traces()
    for i in range(37):
        x[i] = float(i)
    assert _traces() - start <= launch.DYNAMIC_AFTER + 1
    np.testing.assert_array_equal(x.numpy(), np.repeat(np.arange(37.0)[:, None], 5, axis=1))


def test_dynamic_offsets_read_the_right_elements_of_strided_views():
    base = np.arange(200.0).reshape(20, 10)
    x = ak.asarray(base)
    for i in range(12):
        np.testing.assert_array_equal(x[i, ::-3].numpy(), base[i, ::-3])
        np.testing.assert_array_equal(x[i:i + 5, 1::2].mT.numpy(), base[i:i + 5, 1::2].T)


def test_a_wrapped_jax_array_deleted_by_its_owner_raises_instead_of_retrying_forever():
    import jax.numpy as jnp
    import pytest

    owner = jnp.ones(4)
    t = ak.asarray(owner)  # wrapped without a copy, marked shared
    owner.delete()
    with pytest.raises(RuntimeError, match="deleted"):
        t + 1.0


def test_elements_of_storages_of_any_size_share_one_kernel():
    shapes = [(3, 4), (5,), (2, 7), (6, 1)]
    xs = [np.arange(np.prod(s), dtype=np.float64).reshape(s) * 0.5 - 1 for s in shapes]
    ts = [ak.asarray(x) for x in xs]
    (ts[0][0, 0] * ts[1][0]).item()  # warm-up: the 0-d by-value kernel
    start = ak.cache_info()["misses"]
    for x, t in zip(xs, ts):
        for idx in np.ndindex(x.shape):
            assert (t[idx] * ts[1][3]).item() == x[idx] * xs[1][3]
    assert ak.cache_info()["misses"] == start


def _tiered():
    """What compile_options gives a large kernel that wants XLA's default emitters: the
    classic ones first where this jaxlib has them (see arraykit.kernels.tiers)."""
    from arraykit.kernels import tiers

    return None if launch.large_compile_options() is None else tiers.TIERED


def test_small_cpu_kernels_get_fast_compile_options_and_large_ones_do_not():
    import jax.numpy as jnp

    def body(a):
        return jnp.sin(a) * 2.0

    small = launch.compile_options(body, (np.ones(8, np.float32),), "cpu", (8,))
    big_in = launch.compile_options(body, (np.ones(8, np.float32),), "cpu", (10**6,))
    big_out = launch.compile_options(
        lambda a: jnp.zeros(10**6) + a[0], (np.ones(8, np.float32),), "cpu", (8,))
    assert small == launch.fast_compile_options() is not None
    assert big_in == _tiered()  # sin: XLA's default emitters, in tiers (see the test below)
    assert big_out == launch.large_compile_options()
    assert launch.compile_options(body, (np.ones(8, np.float32),), "gpu", (8,)) is None


def test_large_cpu_kernels_keep_xla_defaults_where_they_convolve_or_are_transcendental():
    import jax
    import jax.numpy as jnp

    x = np.ones((128, 64), np.float32)  # above SMALL_KERNEL_ELEMENTS
    w = np.ones((4, 1, 3, 3), np.float32)

    def conv(a, k):
        return jax.lax.conv(a[None, None], k, (1, 1), "SAME")

    def nested_exp(a):
        return jax.jit(lambda b: jnp.exp(b) + 1)(a)

    def affine(a):
        return jnp.sqrt(a * 2.0 + 1.0).sum(0)

    assert launch.compile_options(conv, (x, w), "cpu", (x.size, w.size)) == _tiered()
    assert launch.compile_options(nested_exp, (x,), "cpu", (x.size,)) == _tiered()
    large = launch.compile_options(affine, (x,), "cpu", (x.size,))
    assert large == launch.large_compile_options()
    if large is not None:  # the classic emitters, where this jaxlib has the option
        assert large == {"xla_cpu_use_fusion_emitters": False}


def test_fast_compile_options_drop_what_the_compiler_refuses(monkeypatch):
    # jaxlib 0.11 refuses xla_cpu_use_fusion_emitters; a refused option must be left out,
    # not fail every small kernel's compilation.
    accepted = launch.fast_compile_options()  # what this jaxlib takes of the real options
    wanted = dict(launch.FAST_COMPILE_WANTED, xla_option_no_jaxlib_has=True)
    monkeypatch.setattr(launch, "FAST_COMPILE_WANTED", wanted)
    monkeypatch.setattr(launch, "_FAST_COMPILE_ACCEPTED", [])
    assert launch.fast_compile_options() == accepted
    monkeypatch.setattr(launch, "FAST_COMPILE_WANTED", {"xla_option_no_jaxlib_has": True})
    monkeypatch.setattr(launch, "_FAST_COMPILE_ACCEPTED", [])
    assert launch.fast_compile_options() is None


def test_an_eager_small_kernel_is_reused_inside_an_outer_jax_jit():
    import jax

    x = ak.asarray(np.arange(6.0).reshape(2, 3))
    eager = (x * 2.0 + 1.0).numpy()

    @jax.jit
    def step(t):
        return t * 2.0 + 1.0

    np.testing.assert_array_equal(step(x).numpy(), eager)


def _primitives(jaxpr):
    """Names of every primitive in ``jaxpr``, nested jaxprs included."""
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for param in eqn.params.values():
            inner = getattr(param, "jaxpr", param)
            if hasattr(inner, "eqns"):
                names |= _primitives(inner)
    return names


def test_split_views_read_as_static_slices_of_their_buffer():
    import jax
    import jax.numpy as jnp

    from arraykit.kernels import strided

    # k of q, k, v = qkv.split(c, dim=-1), viewed as heads: no pad, no dynamic slice
    b, t, heads, hd = 2, 3, 2, 4
    c = heads * hd
    base = np.arange(b * t * 3 * c, dtype=np.float32)
    qkv = ak.asarray(base.reshape(b, t, 3 * c))
    k = qkv.split(c, dim=2)[1].view(b, t, heads, hd).transpose(1, 2)
    jaxpr = jax.make_jaxpr(lambda buf: strided.read(buf, k._layout))(jnp.asarray(base))
    names = _primitives(jaxpr.jaxpr)
    assert not names & {"pad", "dynamic_slice", "gather"}, names
    expected = base.reshape(b, t, 3 * c)[..., c:2 * c].reshape(b, t, heads, hd).transpose(0, 2, 1, 3)
    np.testing.assert_array_equal(np.asarray(strided.read(jnp.asarray(base), k._layout)), expected)


def test_offsets_stay_static_under_a_trace():
    import jax

    x = ak.asarray(np.arange(36.0, dtype=np.float32).reshape(3, 12))
    a, b, c = x.split(4, dim=1)  # one geometry at three offsets: eagerly, offsets go dynamic
    eager = ak.where(a > 5.0, b, c)
    jaxpr = jax.make_jaxpr(lambda t: ak.where(t[:, :4] > 5.0, t[:, 4:8], t[:, 8:]))(x)
    assert "dynamic_slice" not in _primitives(jaxpr.jaxpr)
    traced = jax.jit(lambda t: ak.where(t[:, :4] > 5.0, t[:, 4:8], t[:, 8:]))(x)
    np.testing.assert_array_equal(np.asarray(traced), eager.numpy())


def test_in_place_writes_keep_static_offsets_under_a_trace():
    import jax

    x = ak.zeros((5, 3))
    for i in range(5):  # eagerly, the row's offset goes dynamic
        x[i] = float(i)

    def shifted(t):
        t = t.clone()
        for i in range(5):
            t[i] = t[i] + float(i)
        return t

    names = _primitives(jax.make_jaxpr(shifted)(x).jaxpr)
    assert not names & {"dynamic_slice", "dynamic_update_slice"}, names
    expected = np.repeat(np.arange(5.0)[:, None] * 2, 3, axis=1)
    np.testing.assert_array_equal(np.asarray(jax.jit(shifted)(x)), expected)


def _doubled(a):
    """A body of lax operations only (jax.numpy's own jitted helpers keep a cache entry
    per shape in JAX, whatever arraykit does)."""
    import jax.lax as lax

    return lax.add(a, a)


def _entry_for(fn):
    return [e for k, e in launch._KERNELS.items() if k[0] is fn]


def test_a_compiled_kernel_keeps_its_executable_and_no_traced_program():
    import gc
    import inspect

    import jax

    from arraykit.kernels.launch import apply

    def live_jaxprs():
        gc.collect()
        return sum(type(o).__name__ == "Jaxpr" for o in gc.get_objects())

    xs = [ak.arange(float(n), device="cpu") for n in range(5000, 5040)]
    apply(_doubled, (xs[0],))
    before = live_jaxprs()
    for x in xs[1:]:
        np.testing.assert_array_equal(apply(_doubled, (x,)).numpy(), 2 * x.numpy())
    entries = _entry_for(_doubled)
    assert len(entries) == len(xs)
    # each holds its executable's call path: no jax.jit wrapper, no stand-in still to compile
    assert all("call" not in e.general and not inspect.isfunction(e.call)
               and e.pending is None for e in entries)
    assert live_jaxprs() - before < 5  # was one or more per kernel with jax.jit wrappers


def test_a_kernel_called_with_another_storage_size_or_device_falls_back_to_jit():
    import jax

    from arraykit.kernels.launch import apply

    small, large = ak.arange(10.0, device="cpu"), ak.arange(30.0, device="cpu")
    views = [small[2:5], large[2:5], small[2:5], large[2:5]]  # one layout, two storage sizes
    for v in views:
        np.testing.assert_array_equal(apply(_doubled, (v,)).numpy(), 2 * v.numpy())
    layout = views[0]._layout
    (entry,) = [e for k, e in launch._KERNELS.items()
                if k[0] is _doubled and k[3] in (layout, layout.geometry)]
    assert entry.general == ("call",)  # generalized to a jax.jit wrapper
    for t in (small, large):  # in-place writes through one layout into both storages
        for value in (1.0, 2.0):
            t[2:5] = value
            np.testing.assert_array_equal(t[2:5].numpy(), [value] * 3)
    np.testing.assert_array_equal(small.numpy()[5:], np.arange(5.0, 10.0))
    np.testing.assert_array_equal(large.numpy()[5:], np.arange(5.0, 30.0))


ANOTHER_DEVICE = """
import numpy as np, jax, arraykit as ak
from arraykit.kernels import size_buckets
cpu0, cpu1 = jax.devices("cpu")
a = ak.arange(6.0, device=cpu0)
b = ak.arange(6.0, device=cpu1) * 3
for _ in range(size_buckets.EXACT_AFTER + 1):  # past the size buckets: an executable for cpu0
    y = a * 2.0
z = b * 2.0  # the same kernel key, arguments on cpu1
assert z.device == cpu1 and z._storage._buffer.devices() == {cpu1}, z.device
np.testing.assert_array_equal(z.numpy(), np.arange(6.0) * 6)
np.testing.assert_array_equal(y.numpy(), np.arange(6.0) * 2)
b[1:3] = 7.0
a[1:3] = 5.0
np.testing.assert_array_equal(b.numpy(), [0, 7, 7, 9, 12, 15])
np.testing.assert_array_equal(a.numpy(), [0, 5, 5, 3, 4, 5])
print("ok")
"""


def test_a_kernel_compiled_for_one_cpu_device_serves_another_in_subprocess():
    from test_interop import _run_with_two_cpus

    _run_with_two_cpus(ANOTHER_DEVICE)


def test_the_cache_forgets_the_least_recently_called_kernels_beyond_its_limit(monkeypatch):
    from arraykit.kernels.launch import apply

    monkeypatch.setattr(launch, "KERNEL_LIMIT", 8)
    launch.cache_clear()
    hot = ak.arange(3.0, device="cpu")
    apply(_doubled, (hot,))
    for n in range(4, 40):
        x = ak.arange(float(n), device="cpu")
        np.testing.assert_array_equal(apply(_doubled, (x,)).numpy(), 2 * np.arange(n))
        np.testing.assert_array_equal(apply(_doubled, (hot,)).numpy(), [0, 2, 4])
        assert ak.cache_info()["size"] <= 8
    info = ak.cache_info()
    assert info["misses"] == 37  # the hot kernel survived every eviction: one compile
    cold = ak.arange(4.0, device="cpu")  # forgotten long ago: compiled again, same values
    np.testing.assert_array_equal(apply(_doubled, (cold,)).numpy(), [0, 2, 4, 6])
    assert ak.cache_info()["misses"] == 38
