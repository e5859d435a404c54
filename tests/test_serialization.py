"""arraykit.save / arraykit.load: round trips, shared storages, mmap, .npy/.npz, safety."""

import collections
import inspect
import io
import os
import pickle
import zipfile

import jax
import numpy as np
import pytest

import arraykit as ak


def round_trip(obj, **kw):
    f = io.BytesIO()
    ak.save(obj, f)
    f.seek(0)
    return ak.load(f, **kw)


DTYPES = [ak.bool, ak.int8, ak.int64, ak.uint8, ak.uint64, ak.float16, ak.bfloat16, ak.float32,
          ak.float64, ak.complex64, ak.complex128]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_dtypes_round_trip(dtype):
    values = (np.arange(24) * 7 - 50).reshape(2, 3, 4)
    if dtype is ak.bool:
        values = values % 3 == 0
    elif dtype.kind == "uint":
        values = np.abs(values)
    x = ak.asarray(values, dtype=dtype)
    if dtype is ak.uint64:
        x = x + ak.asarray(2**63, dtype=ak.uint64)
    if dtype.kind == "complex":
        x = x * ak.asarray(1 - 2j, dtype=dtype)
    y = round_trip(x)
    assert y.dtype is dtype and y.shape == x.shape
    np.testing.assert_array_equal(y.numpy(), x.numpy())


@pytest.mark.parametrize("make", [
    lambda: ak.asarray(3.5),
    lambda: ak.zeros((0, 3)),
    lambda: ak.arange(20.0).reshape(4, 5).T,
    lambda: ak.arange(20.0).reshape(4, 5)[::-1, 1::2],
    lambda: ak.arange(30).reshape(5, 6)[1:4, 2],
    lambda: ak.arange(6.0).flip(0),
    lambda: ak.arange(3.0).expand(4, 3),
])
def test_layouts_round_trip(make):
    x = make()
    y = round_trip(x)
    assert y.shape == x.shape and y.stride() == x.stride()
    assert y.storage_offset() == x.storage_offset()
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_shared_storages_stay_shared():
    base = ak.arange(12.0).reshape(3, 4)
    obj = {"base": base, "row": base[1], "col": base[:, 2], "other": ak.ones(3)}
    out = round_trip(obj)
    assert out["row"]._storage is out["base"]._storage is out["col"]._storage
    assert out["other"]._storage is not out["base"]._storage
    out["row"][2] = -1.0
    assert out["base"][1, 2].item() == -1.0 and out["col"][1].item() == -1.0
    assert base[1, 2].item() == 6.0


def test_nested_structures_and_scalars():
    obj = collections.OrderedDict(
        model={"w": ak.ones((2, 2)), "b": None},
        optim={"step": 10, "lr": 1e-3, "betas": (0.9, 0.999), "nan": float("nan")},
        names=["a", "b"], flag=True, z=1 + 2j, dtype=ak.float64, big=2**70,
        ints={0: ak.zeros(1), 1: [ak.ones(1)]}, npscalar=np.float32(0.5),
    )
    out = round_trip(obj)
    assert type(out) is collections.OrderedDict and list(out) == list(obj)
    assert out["optim"]["step"] == 10 and type(out["optim"]["step"]) is int
    assert out["optim"]["betas"] == (0.9, 0.999) and np.isnan(out["optim"]["nan"])
    assert out["names"] == ["a", "b"] and out["flag"] is True and out["z"] == 1 + 2j
    assert out["dtype"] is ak.float64 and out["big"] == 2**70 and out["npscalar"] == 0.5
    assert set(out["ints"]) == {0, 1} and out["ints"][1][0].item() == 1.0
    assert out["model"]["b"] is None


def test_requires_grad_is_kept():
    w = ak.ones(3).requires_grad_()
    out = round_trip({"w": w, "d": ak.ones(2)})
    assert out["w"].requires_grad and out["w"].is_leaf and not out["d"].requires_grad


def test_paths_are_written_exactly(tmp_path):
    path = tmp_path / "checkpoint"
    ak.save({"x": ak.ones(2)}, path)
    assert os.listdir(tmp_path) == ["checkpoint"]
    assert ak.load(str(path))["x"].tolist() == [1.0, 1.0]
    with open(tmp_path / "f.bin", "wb") as f:
        f.write(b"header")
        ak.save(ak.arange(3), f)
    with open(tmp_path / "f.bin", "rb") as f:
        assert f.read(6) == b"header"
        assert ak.load(f).tolist() == [0, 1, 2]


def test_mmap_maps_the_file(tmp_path):
    path = tmp_path / "big"
    x = ak.arange(1_000_000, dtype=ak.float32)
    ak.save({"x": x, "view": x[10:20]}, path)
    out = ak.load(path, mmap=True)
    y = out["x"]
    assert y._storage is out["view"]._storage
    if y.device.platform == "cpu":
        mapped = np.asarray(y._storage.buffer)
        # the buffer is the mapped file (no copy): its memory lies in the mapping
        assert y._storage.shared and not mapped.flags.writeable
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    y[0] = 5.0  # copy-on-write: the file is not changed
    assert ak.load(path)["x"][0].item() == 0.0 and y[0].item() == 5.0
    with pytest.raises(ValueError, match="path"):
        ak.load(io.BytesIO(b""), mmap=True)


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_mmap_does_not_read_the_data(tmp_path):
    path = tmp_path / "big"
    ak.save(ak.ones(25_000_000), path)  # 100 MB
    before = _rss_mb()
    y = ak.load(path, mmap=True)
    grown = _rss_mb() - before
    if y.device.platform == "cpu":
        assert grown < 20, f"mmap load grew RSS by {grown:.0f} MB"
    assert y[12345].item() == 1.0


def test_map_location():
    cpu = jax.devices("cpu")[0]
    assert round_trip(ak.ones(2), map_location="cpu").device == cpu
    assert round_trip(ak.ones(2), map_location=cpu).device == cpu
    with pytest.raises(TypeError, match="map_location"):
        round_trip(ak.ones(2), map_location={"cuda:0": "cpu"})


def test_load_takes_torch_loads_argument_order():
    """map_location second, weights_only and mmap keyword-only, as in torch.load."""
    import torch

    ours = inspect.signature(ak.load).parameters
    theirs = inspect.signature(torch.load).parameters
    assert list(ours) == ["f", "map_location", "weights_only", "mmap"]
    for name, parameter in ours.items():
        assert parameter.kind is theirs[name].kind, name
    positional = [n for n, p in theirs.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional[:2] == [n for n, p in ours.items() if p.kind is p.POSITIONAL_OR_KEYWORD]


def _mapped(path):
    """Whether this process maps the file ``path`` (``mmap=True`` loads do)."""
    with open("/proc/self/maps") as f:
        return str(path) in f.read()


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc")
def test_load_map_location_positional_does_not_map_the_file(tmp_path):
    path = tmp_path / "ck"
    ak.save({"x": ak.arange(6, dtype=ak.float32)}, path)
    y = ak.load(path, "cpu")["x"]
    assert y.device == jax.devices("cpu")[0] and not _mapped(path)
    assert y.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    mapped = ak.load(path, "cpu", mmap=True)["x"]
    assert _mapped(path) and mapped.tolist() == y.tolist()
    with pytest.raises(TypeError, match="positional"):
        ak.load(path, "cpu", True)  # mmap is keyword-only, as in torch.load


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc")
def test_load_accepts_torch_loads_defaults(tmp_path):
    """torch.load's defaults spelled out: weights_only=None (True) and mmap=None (False)."""
    path = tmp_path / "ck"
    ak.save(ak.ones(3), path)
    y = ak.load(path, None, weights_only=None, mmap=None)
    assert y.tolist() == [1.0, 1.0, 1.0] and not _mapped(path)
    with pytest.raises(ValueError, match="weights_only=False"):
        ak.load(path, weights_only=False)


def test_npy_and_npz(tmp_path):
    a = np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::2]
    np.save(tmp_path / "a.npy", a)
    for mmap in (False, True):
        t = ak.load(tmp_path / "a.npy", mmap=mmap)
        assert t.dtype is ak.int16
        np.testing.assert_array_equal(t.numpy(), a)
    np.savez(tmp_path / "b.npz", x=np.ones(3), y=np.arange(4))
    d = ak.load(tmp_path / "b.npz")
    assert set(d) == {"x", "y"} and d["y"].tolist() == [0, 1, 2, 3]
    buf = io.BytesIO()
    np.save(buf, a)
    buf.seek(0)
    np.testing.assert_array_equal(ak.load(buf).numpy(), a)


class _Boom:
    def __reduce__(self):
        return (os.system, ("touch /tmp/arraykit_pwned",))


def test_pickles_are_never_run(tmp_path):
    marker = "/tmp/arraykit_pwned"
    if os.path.exists(marker):
        os.remove(marker)
    evil = pickle.dumps(_Boom())
    torch_like = tmp_path / "model.pt"
    with zipfile.ZipFile(torch_like, "w") as zf:
        zf.writestr("archive/data.pkl", evil)
    with pytest.raises(ValueError, match=r"refused: .*global (posix|nt)\.system"):
        ak.load(torch_like)
    raw = tmp_path / "raw.pkl"
    raw.write_bytes(evil)
    with pytest.raises(ValueError, match="not an arraykit checkpoint"):
        ak.load(raw)
    np.save(tmp_path / "obj.npy", np.array([_Boom()], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="unpickling"):
        ak.load(tmp_path / "obj.npy")
    assert not os.path.exists(marker)


def _corrupt(tmp_path, manifest=None, drop_storage=False):
    good = io.BytesIO()
    ak.save({"x": ak.ones(4)}, good)
    path = tmp_path / "bad"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            if drop_storage and info.filename.startswith("storages/"):
                continue
            data = src.read(info)
            if manifest is not None and info.filename == "arraykit.json":
                data = manifest(data)
            dst.writestr(info.filename, data)
    return path


@pytest.mark.parametrize("change", [
    lambda d: b"{not json",
    lambda d: d.replace(b'"size": 4', b'"size": 5'),
    lambda d: d.replace(b'"offset": 0', b'"offset": 3'),
    lambda d: d.replace(b'"float32"', b'"float99"', 1),
    lambda d: d.replace(b'"t": "tensor"', b'"t": "pickle"'),
    lambda d: d.replace(b'"version": 1', b'"version": 99'),
])
def test_corrupted_files_are_rejected(tmp_path, change):
    with pytest.raises(ValueError, match="corrupted|unsupported"):
        ak.load(_corrupt(tmp_path, change))


def test_missing_storage_and_truncated_file(tmp_path):
    with pytest.raises(ValueError, match="corrupted"):
        ak.load(_corrupt(tmp_path, drop_storage=True))
    good = io.BytesIO()
    ak.save(ak.ones(100), good)
    with pytest.raises(ValueError):
        ak.load(io.BytesIO(good.getvalue()[:-200]))


@pytest.mark.parametrize("obj, where", [
    ({"a": [1, object()]}, r"obj\['a'\]\[1\]"),
    ({"a": {1, 2}}, r"obj\['a'\]"),
    ({(1, 2): ak.ones(1)}, "tuple key"),
    (np.ones(3), "ndarray"),
])
def test_unsupported_objects_are_named(obj, where):
    with pytest.raises(TypeError, match=where):
        ak.save(obj, io.BytesIO())
