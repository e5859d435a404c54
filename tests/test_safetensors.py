"""safetensors files through the safetensors package: ak.load (by content) and
ak.save(..., format="safetensors"), against the package's own torch functions."""

import io

import numpy as np
import pytest

import arraykit as ak

safetensors = pytest.importorskip("safetensors")
torch = pytest.importorskip("torch")
from safetensors.torch import load_file, save_file  # noqa: E402

DTYPES = [
    (torch.bool, ak.bool), (torch.uint8, ak.uint8), (torch.int8, ak.int8), (torch.int16, ak.int16),
    (torch.uint16, ak.uint16), (torch.int32, ak.int32), (torch.uint32, ak.uint32), (torch.int64, ak.int64),
    (torch.uint64, ak.uint64), (torch.float16, ak.float16), (torch.bfloat16, ak.bfloat16),
    (torch.float32, ak.float32), (torch.float64, ak.float64), (torch.complex64, ak.complex64),
]


def values(t):
    if isinstance(t, torch.Tensor):
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    return np.asarray(t.numpy(), np.float32) if t.dtype is ak.bfloat16 else t.numpy()


def torch_tensors():
    out = {}
    for i, (torch_dtype, _) in enumerate(DTYPES):
        t = torch.arange(-3, 9).reshape(3, 4) * (i + 1)
        if torch_dtype == torch.bool:
            t = t > 0
        elif torch_dtype.is_floating_point or torch_dtype.is_complex:
            t = (t / 3).to(torch_dtype)
        else:
            t = (t if torch_dtype.is_signed else t.abs()).to(torch_dtype)
        out[str(torch_dtype)] = t
    out["scalar"] = torch.tensor(2.5)
    out["empty"] = torch.zeros(0, 3)
    return out


@pytest.mark.parametrize("mmap", [False, True])
def test_files_the_package_writes_load(tmp_path, mmap):
    saved = torch_tensors()
    path = tmp_path / "weights.bin"  # detected by content, not by name
    save_file(saved, path)
    got = ak.load(path, mmap=mmap)
    assert sorted(got) == sorted(saved)
    for (torch_dtype, dtype) in DTYPES:
        assert got[str(torch_dtype)].dtype is dtype
    for name, t in saved.items():
        assert got[name].shape == tuple(t.shape)
        np.testing.assert_array_equal(values(got[name]), values(t))
    from_bytes = ak.load(io.BytesIO(path.read_bytes()))
    for name, t in saved.items():
        np.testing.assert_array_equal(values(from_bytes[name]), values(t))


def test_arraykit_writes_what_the_package_reads(tmp_path):
    saved = torch_tensors()
    mine = {name: ak.asarray(values(t)).to(ak.bfloat16) if t.dtype == torch.bfloat16
            else ak.asarray(values(t)) for name, t in saved.items()}
    base = ak.arange(12.0).reshape(3, 4)
    mine["view"] = base.T[::2]  # written as its own values, row-major
    ak.save(mine, tmp_path / "a.safetensors", format="safetensors")
    got = load_file(tmp_path / "a.safetensors")
    for name, t in saved.items():
        assert got[name].dtype == t.dtype
        np.testing.assert_array_equal(values(got[name]), values(t))
    np.testing.assert_array_equal(got["view"].numpy(), base.T[::2].numpy())
    with safetensors.safe_open(tmp_path / "a.safetensors", framework="pt") as f:
        assert f.metadata() == {"format": "pt"}
    f = io.BytesIO()
    ak.save(mine, f, format="safetensors")
    assert f.getvalue() == (tmp_path / "a.safetensors").read_bytes()


def test_mmap_loads_and_never_writes_the_file(tmp_path):
    path = tmp_path / "w.safetensors"
    save_file({"w": torch.arange(4096.0)}, path)
    got = ak.load(path, mmap=True)["w"]
    np.testing.assert_array_equal(got.numpy(), np.arange(4096.0, dtype=np.float32))
    got[0] = 7.0  # a mapped storage is copied before a write: the file stays
    assert load_file(path)["w"][0].item() == 0.0


@pytest.mark.parametrize("damage", [
    lambda b: b[:-10],                                          # data cut short
    lambda b: b[:8] + b[8:].replace(b'"data_offsets":[0,', b'"data_offsets":[4,', 1),  # a gap / overlap
    lambda b: b.replace(b'"dtype":"F32"', b'"dtype":"F99"', 1),  # an unknown dtype code
])
def test_damaged_files_are_refused(tmp_path, damage):
    path = tmp_path / "bad.safetensors"
    save_file({"a": torch.ones(4), "b": torch.zeros(3)}, path)
    data = damage(path.read_bytes())
    path.write_bytes(data)
    with pytest.raises(ValueError):
        ak.load(path)
    with pytest.raises(ValueError):
        ak.load(io.BytesIO(data))


def test_what_the_format_cannot_hold_is_named(tmp_path):
    with pytest.raises(TypeError, match="complex128"):
        ak.save({"z": ak.ones(2, dtype=ak.complex128)}, io.BytesIO(), format="safetensors")
    with pytest.raises(TypeError, match="dict of named tensors"):
        ak.save([ak.ones(2)], io.BytesIO(), format="safetensors")
    with pytest.raises(TypeError, match="int"):
        ak.save({1: ak.ones(2)}, io.BytesIO(), format="safetensors")
    save_file({"f8": torch.ones(2, dtype=torch.float8_e4m3fn)}, tmp_path / "f8.safetensors")
    with pytest.raises(ValueError, match="F8_E4M3"):
        ak.load(tmp_path / "f8.safetensors")
