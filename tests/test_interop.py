"""DLPack and NumPy interop, device moves, and the export safety property.

A DLPack export (``np.from_dlpack``, ``torch.from_dlpack``,
``jax.dlpack.from_dlpack``) is a snapshot: writes into the tensor afterwards never
reach it, and the tensor sees every one of its own writes. ``np.asarray`` of a CPU
tensor is PyTorch's: a writable view sharing the tensor's memory, like ``numpy()``
(tests/test_scipy_backend_fixes.py tests the sharing both ways).
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import arraykit as ak
from tests.strategies import make_view, strided_pairs, values

SETTINGS = settings(max_examples=25, deadline=None)
TORCH_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64",
                "complex64", "complex128")
LAYOUTS = ("contiguous", "transposed", "stepped", "flipped", "broadcast")


def aligned(values):
    """A copy of ``values`` in 64-byte-aligned memory (JAX can alias it)."""
    raw = np.zeros(values.nbytes + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    out = raw[start:start + values.nbytes].view(values.dtype).reshape(values.shape)
    out[...] = values
    return out


# ---------------------------------------------------------------------- export


@SETTINGS
@given(pair=strided_pairs(), kind=st.sampled_from(LAYOUTS))
def test_export_to_numpy(pair, kind):
    _, ref = pair
    t = make_view(ref, kind)
    host = make_view(ref, kind, device="cpu")  # NumPy's DLPack import takes host memory only
    for out in (np.from_dlpack(host), np.asarray(t), np.array(t), t.numpy()):
        assert out.shape == ref.shape and out.dtype == ref.dtype
        np.testing.assert_array_equal(out, ref)
    assert np.asarray(t, dtype=np.complex128).dtype == np.complex128


@SETTINGS
@given(pair=strided_pairs(dtype=st.sampled_from(TORCH_DTYPES)), kind=st.sampled_from(LAYOUTS))
def test_export_to_torch_and_jax(pair, kind):
    _, ref = pair
    t = make_view(ref, kind)
    out = torch.from_dlpack(t)
    assert tuple(out.shape) == ref.shape
    np.testing.assert_array_equal(out.cpu().numpy(), ref)
    with jax.enable_x64(True):  # JAX keeps 64-bit dtypes only in its 64-bit mode
        j = jax.dlpack.from_dlpack(t)
    assert j.shape == ref.shape and j.dtype == ref.dtype
    np.testing.assert_array_equal(np.asarray(j), ref)


def test_export_is_zero_copy_on_cpu():
    t = ak.arange(12.0, device="cpu").reshape(3, 4)
    n = np.from_dlpack(t)
    assert n.ctypes.data == t.data_ptr()
    assert not n.flags.writeable
    v = t[:, 1::2]
    nv = np.from_dlpack(v)
    assert nv.ctypes.data == v.data_ptr() and nv.strides == (16, 8)
    tt = torch.from_dlpack(t.mT)
    assert tt.data_ptr() == t.data_ptr() and tt.stride() == (1, 4)


def test_dunder_dlpack_arguments():
    t = ak.arange(6.0, device="cpu").reshape(2, 3)
    assert tuple(t.__dlpack_device__()) == (1, 0)
    assert int(t.__dlpack_device__()[0]) == 1
    for kw in ({}, {"max_version": (1, 0)}, {"max_version": (0, 8)}, {"copy": True},
               {"copy": False}, {"dl_device": (1, 0)}, {"stream": None},
               {"copy": False, "max_version": (1, 2), "dl_device": (1, 0)}):
        t.__dlpack__(**kw)
    flipped = t.flip(1)
    flipped.__dlpack__(copy=True)
    np.testing.assert_array_equal(np.from_dlpack(flipped), np.arange(6.0).reshape(2, 3)[:, ::-1])
    with pytest.raises(BufferError, match="copy=False"):
        flipped.__dlpack__(copy=False)
    with pytest.raises(BufferError, match="copy=False"):
        t[:, ::2].__dlpack__(copy=False)
    t[:, ::2].__dlpack__(copy=False, max_version=(1, 0))
    with pytest.raises(BufferError, match="copy=False"):
        t.__dlpack__(dl_device=(2, 0), copy=False)
    copied = np.from_dlpack(t, copy=True)
    assert copied.flags.writeable and copied.ctypes.data != t.data_ptr()


def test_export_of_traced_tensor_raises():
    def f(x):
        ak.asarray(x).__dlpack_device__()
        return x

    with pytest.raises(BufferError, match="traced"):
        jax.jit(f)(jnp.ones(2))


# ---------------------------------------------------------------------- the safety property


def _writes(draw_ops, t, model):
    """Apply a list of in-place operations to ``t`` and to the NumPy ``model``."""
    for op, i, value in draw_ops:
        i = i % model.shape[0]
        if op == "setitem":
            t[i] = value
            model[i] = value
        elif op == "slice":
            t[i:] = value
            model[i:] = value
        elif op == "iadd":
            t += value
            model += value
        elif op == "view":
            v = t[::2]
            v *= 2
            model[::2] *= 2
        elif op == "fill":
            t.fill_(value)
            model[...] = value
        elif op == "copy":
            src = np.arange(model.size, dtype=model.dtype).reshape(model.shape)
            t.copy_(ak.asarray(src))
            model[...] = src


ops = st.lists(
    st.tuples(st.sampled_from(["setitem", "slice", "iadd", "view", "fill", "copy"]),
              st.integers(0, 100), st.integers(-5, 5)),
    min_size=1, max_size=12,
)


EXPORTERS = {
    "np.from_dlpack": np.from_dlpack,
    "torch.from_dlpack": torch.from_dlpack,
    "jax.dlpack": lambda t: jax.enable_x64(True)(jax.dlpack.from_dlpack)(t),
    "__dlpack__ legacy": lambda t: torch.utils.dlpack.from_dlpack(t.__dlpack__()),
}


def _read(export):
    """The values an export holds now, in NumPy (a torch export may be on a GPU)."""
    return export.cpu().numpy() if isinstance(export, torch.Tensor) else np.asarray(export)


@SETTINGS
@given(ref=values("float64", hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=6)),
       writes=ops, view=st.sampled_from(["whole", "tail", "transposed"]),
       exporter=st.sampled_from(sorted(EXPORTERS)))
def test_exports_are_snapshots_under_writes(ref, writes, view, exporter):
    """One exporter per example: an export alone must protect its memory from later writes."""
    # NumPy's DLPack import takes host memory only
    t = ak.asarray(ref, device="cpu" if exporter == "np.from_dlpack" else None)
    if ref.ndim == 1 and view == "transposed":
        view = "whole"
    exported = {"whole": lambda: t, "tail": lambda: t[1:], "transposed": lambda: t.T}[view]()
    snapshot = exported.clone().numpy()  # numpy() of the tensor itself would share its memory
    out = EXPORTERS[exporter](exported)
    model = ref.copy()
    _writes(writes, t, model)
    np.testing.assert_array_equal(t.numpy(), model)
    np.testing.assert_array_equal(_read(out), snapshot)
    expected_now = {"whole": model, "tail": model[1:], "transposed": model.T}[view]
    np.testing.assert_array_equal(_read(EXPORTERS[exporter](exported)), expected_now)


def test_exports_outlive_the_tensor():
    """NumPy's exports of a CPU tensor, torch's of a tensor on the default device."""
    t, g = ak.full((1000,), 3.0, device="cpu"), ak.full((1000,), 3.0)
    n, tt, j = np.from_dlpack(t), torch.from_dlpack(g), np.from_dlpack(t[::3])
    for _ in range(50):
        t += 1
        g += 1
    del t, g
    gc.collect()
    filler = [ak.full((1000,), -1.0, device=device) for device in ("cpu", None) for _ in range(8)]
    assert (n == 3).all() and (tt == 3).all() and (j == 3).all()
    assert all(f[0].item() == -1 for f in filler)


def test_write_after_export_copies_once_then_donates():
    t = ak.zeros(8, device="cpu")  # np.from_dlpack of a GPU tensor is a copy, not an export
    before = t.data_ptr()
    n = np.from_dlpack(t)
    t[0] = 1.0
    moved = t.data_ptr()
    assert moved != before
    t[1] = 2.0
    assert t.data_ptr() == moved
    assert n[0] == 0 and n[1] == 0


def test_multi_tensor_writes_keep_live_exports_and_donate_after_they_die():
    """``clip_grad_norm_`` writes every gradient in one program
    (``kernels/multi_write.py``): a live export keeps its snapshot, as for one write."""
    grads = [ak.full((64,), 3.0, device="cpu"), ak.full((4, 4), 4.0, device="cpu")]
    for g in grads:
        g.requires_grad_(False)
    params = [ak.zeros(g.shape, device="cpu", requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g
    snapshot = np.from_dlpack(params[0].grad)
    ak.nn.utils.clip_grad_norm_(params, max_norm=1.0)
    np.testing.assert_array_equal(snapshot, np.full(64, 3.0, np.float32))
    assert params[0].grad.numpy()[0] < 1.0
    del snapshot
    gc.collect()
    moved = params[0].grad.data_ptr()
    ak.nn.utils.clip_grad_norm_(params, max_norm=0.5)
    assert params[0].grad.data_ptr() == moved  # dead export: donated again


def test_numpy_operands_of_a_placed_tensor():
    """NumPy operands and written values go to the tensor's placement (a sharding too)."""
    from jax.sharding import SingleDeviceSharding

    x = ak.ones(3, device=SingleDeviceSharding(jax.devices("cpu")[0]))
    np.testing.assert_array_equal((x + np.arange(3, dtype=np.float32)).numpy(), [1, 2, 3])
    x[...] = np.full(3, 5, np.float32)
    x += np.ones(3, np.float32)
    np.testing.assert_array_equal(x.numpy(), [6, 6, 6])


# ---------------------------------------------------------------------- import


@SETTINGS
@given(pair=strided_pairs(), kind=st.sampled_from(["plain", "transposed", "stepped", "flipped",
                                                   "broadcast", "readonly"]),
       copy=st.sampled_from([None, True]))
def test_from_dlpack_numpy_layouts(pair, kind, copy):
    _, ref = pair
    src = ref
    if kind == "transposed" and ref.ndim >= 2:
        src = np.ascontiguousarray(ref.swapaxes(0, 1)).swapaxes(0, 1)
    elif kind == "stepped" and ref.ndim >= 1:
        big = np.zeros((ref.shape[0] * 3,) + ref.shape[1:], ref.dtype)
        big[::3] = ref
        src = big[::3]
    elif kind == "flipped" and ref.ndim >= 1:
        src = np.ascontiguousarray(ref[::-1])[::-1]
    elif kind == "broadcast" and ref.ndim >= 1:
        src = np.broadcast_to(ref[:1], ref.shape) if (ref == ref[:1]).all() else ref
    elif kind == "readonly":
        src = ref.copy()
        src.flags.writeable = False
    for source in (src, aligned(src.copy(order="C"))):
        t = ak.from_dlpack(source, copy=copy)
        assert t.shape == ref.shape and t.dtype.np == ref.dtype
        np.testing.assert_array_equal(t.numpy(), ref)


def test_from_dlpack_copy_semantics_numpy():
    a = aligned(np.arange(16, dtype=np.float32).reshape(4, 4))
    alias = ak.from_dlpack(a)
    copied = ak.from_dlpack(a, copy=True)
    strided = ak.from_dlpack(a[::-1, ::2], copy=False)
    assert alias.data_ptr() == a.ctypes.data
    a[0, 0] = 100
    assert alias[0, 0].item() == 100 and copied[0, 0].item() == 0
    assert strided[3, 0].item() == 100 and strided.stride() == (-4, 2)
    alias[1, 1] = -7
    assert a[1, 1] == 5 and alias[1, 1].item() == -7
    unaligned = np.arange(9, dtype=np.float32)[1:]
    if unaligned.ctypes.data % 64:
        with pytest.raises(ValueError, match="aligned"):
            ak.from_dlpack(unaligned, copy=False)
        np.testing.assert_array_equal(ak.from_dlpack(unaligned).numpy(), unaligned)
    with pytest.raises(AttributeError):
        ak.from_dlpack([1, 2, 3])


@pytest.mark.parametrize("dtype", TORCH_DTYPES)
def test_torch_roundtrip(dtype):
    ref = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    src = torch.from_numpy(ref.copy())
    for view in (src, src.T, src[:, 1::2]):
        t = ak.from_dlpack(view)
        np.testing.assert_array_equal(t.numpy(), view.numpy())
        back = torch.from_dlpack(t)
        assert torch.equal(back, view)
        np.testing.assert_array_equal(ak.asarray(view).numpy(), view.numpy())


def test_torch_alias_and_copy():
    src = torch.arange(8, dtype=torch.float64)
    alias = ak.from_dlpack(src)
    copied = ak.asarray(src)
    src[0] = 42
    assert alias[0].item() == 42 and copied[0].item() == 0
    alias[1] = -1
    assert src[1].item() == 1 and alias[1].item() == -1
    with pytest.raises(BufferError, match="gradient"):
        ak.from_dlpack(torch.ones(2, requires_grad=True))



def test_jax_roundtrip():
    j = jnp.arange(6, dtype=jnp.int32).reshape(2, 3)
    t = ak.from_dlpack(j)
    np.testing.assert_array_equal(t.numpy(), np.arange(6).reshape(2, 3))
    flat = jnp.arange(5.0)
    w = ak.from_dlpack(flat)
    assert w.untyped_storage().buffer is flat
    w[0] = 3.0
    assert float(flat[0]) == 0.0
    assert ak.from_dlpack(t) is t
    c = ak.from_dlpack(t, copy=True)
    assert c.untyped_storage() is not t.untyped_storage()
    np.testing.assert_array_equal(np.asarray(jax.dlpack.from_dlpack(t.mT)), np.arange(6).reshape(2, 3).T)


# ---------------------------------------------------------------------- devices, to()


def test_to_device_and_to():
    y = ak.zeros(2)  # on the default device, whichever it is: staying there is no move
    assert y.to_device(y.device) is y and y.to(y.device) is y
    x = ak.arange(6, dtype=ak.int32, device="cpu").reshape(2, 3)
    dev = jax.devices("cpu")[0]
    assert x.to_device(dev) is x and x.to_device("cpu") is x
    assert x.to(dev) is x and x.to("cpu") is x and x.to(ak.int32) is x
    f = x.to(ak.float64)
    assert f.dtype is ak.float64 and f.device == dev
    np.testing.assert_array_equal(f.numpy(), np.arange(6.0).reshape(2, 3))
    assert x.to("float32").dtype is ak.float32
    assert x.to("cpu", ak.int8).dtype is ak.int8
    assert x.to(dtype=ak.uint8, device="cpu").dtype is ak.uint8
    other = ak.zeros(1, dtype=ak.complex64)
    assert x.to(other).dtype is ak.complex64
    c = x.to(ak.int32, copy=True)
    assert c is not x and c.untyped_storage() is not x.untyped_storage()


MULTI_DEVICE = textwrap.dedent("""
    import jax, numpy as np, torch
    import arraykit as ak
    d0, d1 = jax.devices("cpu")
    assert ak.__array_namespace_info__().devices() == (d0, d1)
    a = ak.arange(4.0, device="cpu:0")
    b = ak.ones(4, device=d1)
    assert a.device == d0 and b.device == d1
    assert b.untyped_storage().buffer.devices() == {d1}
    for make in (lambda: a + b, lambda: ak.meshgrid(a, b), lambda: ak.asarray([a, b])):
        try:
            make()
        except ValueError as e:
            assert str(d0) in str(e) and str(d1) in str(e), str(e)
        else:
            raise AssertionError("mixing devices did not raise")
    moved = a[::2].to_device(d1)
    assert moved.device == d1 and moved.untyped_storage().buffer.devices() == {d1}
    assert (moved + b[:2]).numpy().tolist() == [1.0, 3.0]
    assert ak.asarray(a, device=d1).device == d1
    assert ak.zeros_like(b).device == d1 and ak.full_like(b, 2).device == d1
    assert ak.astype(a, ak.int32, device=d1).device == d1
    assert ak.from_dlpack(np.arange(3.0), device=d1).device == d1
    assert ak.from_dlpack(torch.arange(3.0), device=d1).untyped_storage().buffer.devices() == {d1}
    assert ak.asarray(a, device="cpu:1").device == d1
    try:
        ak.asarray(a, device=d1, copy=False)
    except ValueError:
        pass
    else:
        raise AssertionError("copy=False across devices did not raise")
    for f in (ak.eye, ak.arange, ak.zeros):
        assert f(3, device=d1).untyped_storage().buffer.devices() == {d1}
    assert ak.linspace(0, 1, 3, device=d1).untyped_storage().buffer.devices() == {d1}
    print("ok")
""")


DEFAULT_DEVICE = textwrap.dedent("""
    import threading
    import jax, numpy as np
    import arraykit as ak
    d0, d1 = jax.devices("cpu")

    def placed():  # where new tensors go, and what the namespace reports
        made = (ak.zeros(3), ak.arange(3), ak.asarray([1, 2]), ak.asarray(np.ones(2)),
                ak.eye(2), ak.full((), 1.5))
        found = {t.device for t in made} | {ak.__array_namespace_info__().default_device()}
        found |= {d for t in made for d in t.untyped_storage().buffer.devices()}
        return found

    assert placed() == {d0}
    with jax.default_device(d1):
        assert placed() == {d1}
        other = []  # the context manager is thread-local: another thread keeps d0
        thread = threading.Thread(target=lambda: other.append(ak.zeros(1).device))
        thread.start()
        thread.join()
        assert other == [d0], other
        assert ak.zeros(2, device=d0).device == d0  # an explicit device still wins
    assert placed() == {d0}
    with jax.default_device("cpu"):  # a platform name: its first device
        assert placed() == {d0}
    jax.config.update("jax_default_device", d1)
    assert placed() == {d1}
    jax.config.update("jax_default_device", None)
    assert placed() == {d0}
    print("ok")
""")


KERNELS_OVER_HOST_DATA = textwrap.dedent("""
    import jax, numpy as np
    import arraykit as ak
    d0, d1 = jax.devices("cpu")
    jax.config.update("jax_default_device", d1)  # stands for a GPU default device
    a = np.arange(6.0)
    x = ak.from_numpy(a)  # a d0 tensor over NumPy memory, whatever the default
    made = {
        "x * 2": x * 2, "x[2] + 1": x[2] + 1, "x.sum()": x.sum(),
        "asarray(d0)[1] * x[0]": ak.asarray(np.ones(3), device=d0)[1] * x[0],
    }
    x.add_(1)  # computed by a kernel over a private copy, stored by NumPy
    for name, t in made.items():
        assert t.device == d0 and t.untyped_storage().buffer.devices() == {d0}, name
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert (x * 2 + ak.ones(6, device=d0)).tolist() == [3.0, 5.0, 7.0, 9.0, 11.0, 13.0]
    # from_dlpack without a device keeps the producer's (the array API): a host
    # producer gives a CPU tensor, aliasing its memory
    import torch
    for producer in (np.arange(8.0), torch.arange(8.0)):
        assert ak.from_dlpack(producer).device == d0
    assert ak.asarray(torch.arange(8.0)).device == d0  # through from_dlpack
    print("ok")
""")


def _run_with_two_cpus(script):
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip()
    env["JAX_PLATFORMS"] = "cpu"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith("ok")


def test_two_cpu_devices_in_subprocess():
    _run_with_two_cpus(MULTI_DEVICE)


def test_default_device_follows_jax_in_subprocess():
    _run_with_two_cpus(DEFAULT_DEVICE)


def test_host_data_stays_on_the_cpu_with_another_default_device():
    # kernels whose arguments are all host data (copies of NumPy memory, 0-d CPU views,
    # cached scalars) ran on JAX's default device, with results claiming another;
    # from_dlpack of a host producer went to the default device
    _run_with_two_cpus(KERNELS_OVER_HOST_DATA)


def _gpus():
    try:
        return jax.devices("gpu")
    except RuntimeError:
        return []


@pytest.mark.skipif(not _gpus(), reason="needs a GPU")
def test_default_device_follows_jax_on_gpu():
    gpu, cpu = _gpus()[0], jax.devices("cpu")[0]
    assert ak.zeros(2).device == jax.devices()[0]
    with jax.default_device(cpu):
        assert ak.zeros(2).device == cpu and ak.arange(3).device == cpu
        assert ak.__array_namespace_info__().default_device() == cpu
    with jax.default_device("gpu"):
        assert ak.zeros(2).device == gpu
    with jax.default_device(cpu):
        with jax.default_device(gpu):
            t = ak.asarray([1.0, 2.0])
    assert t.device == gpu and t.untyped_storage().buffer.devices() == {gpu}
