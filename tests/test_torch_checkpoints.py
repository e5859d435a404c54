"""PyTorch checkpoints: ak.load reads what torch.save (2.13) writes, without importing
torch, and ak.save(..., format="torch") writes what torch.load(weights_only=True)
reads. The oracle is torch itself: values, dtypes, layouts, storage sharing."""

import collections
import io
import os
import subprocess
import sys
import textwrap
import zipfile

import jax
import numpy as np
import pytest

import arraykit as ak

torch = pytest.importorskip("torch")

CPU = "cpu"
# every dtype PyTorch saves that arraykit has, as (torch dtype, arraykit dtype)
DTYPES = [
    (torch.bool, ak.bool), (torch.uint8, ak.uint8), (torch.int8, ak.int8),
    (torch.int16, ak.int16), (torch.int32, ak.int32), (torch.int64, ak.int64),
    (torch.uint16, ak.uint16), (torch.uint32, ak.uint32), (torch.uint64, ak.uint64),
    (torch.float16, ak.float16), (torch.bfloat16, ak.bfloat16), (torch.float32, ak.float32),
    (torch.float64, ak.float64), (torch.complex64, ak.complex64), (torch.complex128, ak.complex128),
]


def torch_values(t):
    """A torch tensor's values as NumPy (bfloat16 through float32, exact)."""
    t = t.detach()
    return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()


def ak_values(t):
    return np.asarray(t.numpy(), dtype=np.float32) if t.dtype is ak.bfloat16 else t.numpy()


def sample(torch_dtype):
    """Six values of ``torch_dtype`` that exercise its range (negative, large, fractional)."""
    if torch_dtype == torch.bool:
        return torch.tensor([True, False, True, True, False, False])
    if torch_dtype.is_complex:
        return torch.tensor([1 + 2j, -3.5j, 0, 1e3, -0.25 + 1j, 7], dtype=torch_dtype)
    if torch_dtype.is_floating_point:
        return torch.tensor([0.5, -1.25, 3e3, -0.0, 1 / 3, 65000.0], dtype=torch_dtype)
    big = min(torch.iinfo(torch_dtype).max, 2**31 - 1)
    low = torch.iinfo(torch_dtype).min if torch_dtype.is_signed else 0
    return torch.tensor([0, 1, low, big, 7, 3], dtype=torch_dtype)


def torch_file(obj):
    f = io.BytesIO()
    torch.save(obj, f)
    f.seek(0)
    return f


def ak_file(obj):
    f = io.BytesIO()
    ak.save(obj, f, format="torch")
    f.seek(0)
    return f


@pytest.mark.parametrize("torch_dtype, dtype", DTYPES, ids=lambda d: str(d).split(".")[-1])
def test_every_dtype_is_read(torch_dtype, dtype):
    saved = sample(torch_dtype).reshape(2, 3)
    got = ak.load(torch_file({"x": saved}))["x"]
    assert got.dtype is dtype and got.shape == (2, 3) and got.device == jax.devices(CPU)[0]
    np.testing.assert_array_equal(ak_values(got), torch_values(saved))


@pytest.mark.parametrize("torch_dtype, dtype", DTYPES, ids=lambda d: str(d).split(".")[-1])
def test_every_dtype_is_written(torch_dtype, dtype):
    values = sample(torch_dtype)
    x = ak.asarray(torch_values(values), dtype=dtype, device=CPU) if dtype is not ak.bfloat16 \
        else ak.asarray(torch_values(values), device=CPU).to(ak.bfloat16)
    got = torch.load(ak_file({"x": x, "dtype": dtype}), weights_only=True)
    assert got["x"].dtype == torch_dtype and got["dtype"] == torch_dtype
    np.testing.assert_array_equal(torch_values(got["x"]), torch_values(values))


def containers(t, name):
    """A checkpoint-like object built with the framework ``t`` (torch or arraykit)."""
    dev = {"device": CPU} if t is ak else {}
    return collections.OrderedDict(
        model=collections.OrderedDict(w=t.ones((2, 2), **dev), b=t.zeros(2, **dev)),
        optimizer={"state": {0: {"step": t.asarray(3.0, **dev)}}, "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.95), "params": [0]}]},
        iter_num=2000, best_val_loss=t.asarray(1.4698, **dev), config={"dataset": name, "bias": False, "dropout": 0.0},
        nested=[(1, 2.5, "x", None, True), {"deep": [[t.arange(3, **dev)]]}], big=2**70, neg=-(2**40),
        z=1 - 2j, raw=b"\x00\xffbytes", tags={1, 2}, empty=(), nothing=None, size=t.Size([2, 3]),
        dtype=t.float16,
    )


def assert_same_tree(got, want):
    """``got`` (one framework's load) has ``want``'s structure, types and values."""
    if isinstance(want, (torch.dtype, type(ak.float16))):
        assert str(got).split(".")[-1] == str(want).split(".")[-1]
        return
    assert type(got).__name__ == type(want).__name__
    if isinstance(want, dict):
        assert list(got) == list(want)
        for k in want:
            assert_same_tree(got[k], want[k])
    elif isinstance(want, (list, tuple)) and not isinstance(want, (torch.Size, ak.Size)):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert_same_tree(a, b)
    elif isinstance(want, (torch.Tensor, ak.Tensor)):
        a = torch_values(got) if isinstance(got, torch.Tensor) else ak_values(got)
        b = torch_values(want) if isinstance(want, torch.Tensor) else ak_values(want)
        assert got.shape == want.shape
        np.testing.assert_array_equal(a, b)
    elif isinstance(want, (torch.Size, ak.Size)):
        assert tuple(got) == tuple(want)
    else:
        assert got == want


def test_containers_and_scalars_both_ways():
    saved = containers(torch, "shakespeare")
    got = ak.load(torch_file(saved))
    assert type(got) is collections.OrderedDict and type(got["model"]) is collections.OrderedDict
    assert type(got["size"]) is ak.Size and got["dtype"] is ak.float16
    assert type(got["iter_num"]) is int and got["best_val_loss"].shape == ()
    assert_same_tree(got, saved)
    written = containers(ak, "shakespeare")
    back = torch.load(ak_file(written), weights_only=True)
    assert type(back["size"]) is torch.Size and back["dtype"] == torch.float16
    assert type(back) is collections.OrderedDict and back["tags"] == {1, 2}
    assert_same_tree(back, saved)


def test_devices_and_other_allowed_types_are_read():
    saved = {"device": torch.device("cpu"), "cuda": torch.device("cuda", 1), "fs": frozenset({3}),
             "counter": collections.Counter("aab"), "ba": bytearray(b"xy"), "p": torch.nn.Parameter(torch.ones(2))}
    got = ak.load(torch_file(saved))
    assert got["device"] == "cpu" and got["cuda"] == "cuda:1" and got["fs"] == frozenset({3})
    assert got["counter"] == collections.Counter("aab") and got["ba"] == bytearray(b"xy")
    assert got["p"].requires_grad and got["p"].is_leaf and isinstance(got["p"], ak.nn.Parameter)


def test_views_of_one_storage_stay_views():
    base = torch.arange(24.0).reshape(4, 6)
    saved = {"base": base, "slice": base[1:, ::2], "t": base.T, "row": base[2], "expand": base[0, :3].expand(5, 3),
             "overlap": base.view(-1).as_strided((3, 4), (2, 1), 3), "other": torch.ones(3)}
    got = ak.load(torch_file(saved))
    for name, want in saved.items():
        assert got[name].stride() == want.stride() and got[name].storage_offset() == want.storage_offset()
        np.testing.assert_array_equal(got[name].numpy(), want.numpy())
    assert all(got[k]._storage is got["base"]._storage for k in saved if k != "other")
    assert got["other"]._storage is not got["base"]._storage
    got["row"][1] = -1.0  # a write through one view is seen through the others, as in PyTorch
    assert got["base"][2, 1].item() == -1.0 and got["t"][1, 2].item() == -1.0


def test_views_are_written_as_views():
    base = ak.arange(24.0, device=CPU).reshape(4, 6)
    written = {"base": base, "slice": base[1:, ::2], "t": base.T, "expand": base[0, :3].expand(5, 3),
               "flip": base.flip(0), "other": ak.ones(3, device=CPU)}
    got = torch.load(ak_file(written), weights_only=True)
    for name, t in written.items():
        np.testing.assert_array_equal(got[name].numpy(), t.numpy())
    pointer = got["base"].untyped_storage().data_ptr()
    for name in ("slice", "t", "expand"):
        assert got[name].untyped_storage().data_ptr() == pointer
        assert got[name].stride() == written[name].stride()
        assert got[name].storage_offset() == written[name].storage_offset()
    # PyTorch has no negative strides: a flipped view is written as its own values
    assert got["flip"].untyped_storage().data_ptr() != pointer and got["flip"].is_contiguous()
    assert got["other"].untyped_storage().data_ptr() != pointer


def test_round_trip_through_the_torch_format(tmp_path):
    base = ak.arange(10.0, device=CPU)
    w = ak.nn.Parameter(ak.ones(3, device=CPU))
    ak.save({"base": base, "tail": base[4:], "w": w, "grad": ak.ones(2, device=CPU).requires_grad_()},
            tmp_path / "ck.pt", format="torch")
    got = ak.load(tmp_path / "ck.pt")
    assert got["tail"]._storage is got["base"]._storage and got["tail"].storage_offset() == 4
    assert isinstance(got["w"], ak.nn.Parameter) and got["w"].requires_grad
    assert got["grad"].requires_grad and not got["base"].requires_grad
    torch_side = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert isinstance(torch_side["w"], torch.nn.Parameter) and torch_side["grad"].requires_grad


def test_the_archive_is_laid_out_as_torch_lays_it_out(tmp_path):
    ak.save({"x": ak.arange(5.0, device=CPU)}, tmp_path / "ak.pt", format="torch")
    torch.save({"x": torch.arange(5.0)}, tmp_path / "torch.pt")

    def layout(path):
        with zipfile.ZipFile(path) as zf, open(path, "rb") as f:
            names = [n.split("/", 1)[1] for n in zf.namelist()]
            offsets = []
            for info in zf.infolist():
                f.seek(info.header_offset + 26)
                n, e = np.frombuffer(f.read(4), "<u2")
                offsets.append((info.header_offset + 30 + int(n) + int(e)) % 64)
            return names, offsets, zf.read(zf.namelist()[0].split("/")[0] + "/version")

    assert layout(tmp_path / "ak.pt") == layout(tmp_path / "torch.pt")
    mapped = torch.load(tmp_path / "ak.pt", weights_only=True, mmap=True)
    assert mapped["x"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_mmap_maps_the_storages(tmp_path):
    path = tmp_path / "big.pt"
    x = torch.arange(100_000, dtype=torch.float32)
    torch.save({"x": x, "view": x[10:20]}, path)
    got = ak.load(path, mmap=True)
    assert got["view"]._storage is got["x"]._storage and got["x"]._storage.shared
    np.testing.assert_array_equal(got["x"].numpy(), x.numpy())
    got["x"][0] = 5.0  # copy-on-write: the file is not changed
    assert torch.load(path, weights_only=True)["x"][0].item() == 0.0 and got["x"][0].item() == 5.0
    with pytest.raises(ValueError, match="path"):
        ak.load(io.BytesIO(path.read_bytes()), mmap=True)


def saved_on(location):
    """A checkpoint whose storage claims to come from ``location`` (torch here has no GPU)."""
    pkl_cpu = b"X\x03\x00\x00\x00cpu"
    raw = ak_file({"x": ak.arange(3.0, device=CPU)}).getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("data.pkl"):
                assert pkl_cpu in data
                data = data.replace(pkl_cpu, b"X" + len(location).to_bytes(4, "little") + location.encode())
            dst.writestr(info.filename, data)
    return out.getvalue()


def test_map_location_as_torch_spells_it():
    data = saved_on("cuda:0")
    cpu = jax.devices(CPU)[0]
    for spec in ("cpu", cpu, {"cuda:0": "cpu"}, {"cuda:0": cpu}, lambda storage, location: storage):
        got = ak.load(io.BytesIO(data), map_location=spec)["x"]
        assert got.device == cpu and got.tolist() == [0.0, 1.0, 2.0]
    for spec in ("cpu", {"cuda:0": "cpu"}, lambda storage, location: storage):  # torch reads them alike
        assert torch.load(io.BytesIO(data), map_location=spec, weights_only=True)["x"].tolist() == [0.0, 1.0, 2.0]
    seen = []
    ak.load(io.BytesIO(data), map_location=lambda storage, location: seen.append((storage.shape, location)))
    assert seen == [((3,), "cuda:0")]
    if not any(d.platform == "gpu" for d in jax.devices()):
        with pytest.raises(ValueError, match=r"'cuda:0'.*map_location"):
            ak.load(io.BytesIO(data))
    with pytest.raises(TypeError, match="map_location"):
        ak.load(io.BytesIO(data), map_location=lambda storage, location: "cpu")
    with pytest.raises(TypeError, match="map_location"):
        ak.load(io.BytesIO(data), map_location={0: "cpu"})


def test_weights_only_false_is_refused():
    with pytest.raises(ValueError, match="weights_only"):
        ak.load(torch_file({"x": torch.ones(1)}), weights_only=False)


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Embedding(11, 8), torch.nn.LayerNorm(8), torch.nn.Linear(8, 5))

    def forward(self, idx):
        return self.net(idx)


def ak_net():
    return ak.nn.Sequential(ak.nn.Embedding(11, 8), ak.nn.LayerNorm(8), ak.nn.Linear(8, 5))


def test_a_pytorch_trained_model_and_its_adamw_state_load(tmp_path):
    torch.manual_seed(0)
    model = TorchNet()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    idx = torch.tensor([[1, 4, 9], [0, 10, 3]])
    for _ in range(3):
        opt.zero_grad()
        model(idx).square().mean().backward()
        opt.step()
    torch.save({"model": model.net.state_dict(), "optimizer": opt.state_dict(), "iter_num": 3}, tmp_path / "ckpt.pt")

    ckpt = ak.load(tmp_path / "ckpt.pt")
    net = ak_net().to(CPU)
    net.load_state_dict(ckpt["model"])
    ak_idx = ak.asarray(idx.numpy(), device=CPU)
    np.testing.assert_allclose(net(ak_idx).detach().numpy(), model(idx).detach().numpy(), rtol=1e-5, atol=1e-6)
    ak_opt = ak.optim.AdamW(net.parameters(), lr=1e-2, weight_decay=0.1)
    ak_opt.load_state_dict(ckpt["optimizer"])
    # one more step on both sides: equal parameters only if the moments and step count were loaded
    opt.zero_grad()
    model(idx).square().mean().backward()
    opt.step()
    ak_opt.zero_grad()
    net(ak_idx).square().mean().backward()
    ak_opt.step()
    for (name, p), q in zip(model.net.named_parameters(), net.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_loading_never_imports_torch(tmp_path):
    path = tmp_path / "ck.pt"
    torch.save({"w": torch.arange(4.0).reshape(2, 2), "step": 7, "p": torch.nn.Parameter(torch.ones(1))}, path)
    script = textwrap.dedent(f"""
        import sys
        sys.modules["torch"] = None  # any import of torch fails
        import arraykit as ak
        got = ak.load({str(path)!r})
        assert got["w"].tolist() == [[0.0, 1.0], [2.0, 3.0]] and got["step"] == 7
        ak.save(got, {str(tmp_path / 'back.pt')!r}, format="torch")
        print("ok")
    """)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert done.stdout.strip() == "ok", done.stderr
    assert torch.load(tmp_path / "back.pt", weights_only=True)["w"].tolist() == [[0.0, 1.0], [2.0, 3.0]]


@pytest.mark.parametrize("obj, where", [
    ({"a": [1, object()]}, r"obj\['a'\]\[1\]"),
    ({"a": frozenset({1})}, "frozenset"),
    (np.ones(3), "ndarray"),
])
def test_unsupported_objects_are_named_when_writing(obj, where):
    with pytest.raises(TypeError, match=where):
        ak.save(obj, io.BytesIO(), format="torch")
    loop = []
    loop.append(loop)
    with pytest.raises(TypeError, match="contains itself"):
        ak.save(loop, io.BytesIO(), format="torch")


def test_unknown_format_is_refused():
    with pytest.raises(ValueError, match="format"):
        ak.save({}, io.BytesIO(), format="pickle")
