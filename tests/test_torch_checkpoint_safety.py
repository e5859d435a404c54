"""Hostile PyTorch checkpoints: each is refused with its reason, nothing in it runs,
and no storage is read before the whole file has been checked."""

import collections
import io
import os
import pickle
import re
import zipfile

import numpy as np
import pytest

import arraykit as ak
from arraykit.serialization import torch_reader

torch = pytest.importorskip("torch")

MARKER = "/tmp/arraykit_torch_pwned"


class Boom:
    def __reduce__(self):
        return (os.system, (f"touch {MARKER}",))


class StorageRef:
    """Pickled as torch pickles a storage: a persistent id."""

    def __init__(self, key, numel, kind=None, location="cpu"):
        self.pid = ("storage", kind or torch.FloatStorage, key, location, numel)


class TensorRef:
    """Pickled as torch pickles a tensor: ``_rebuild_tensor_v2`` of a storage view."""

    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, tuple(size), tuple(stride), False, collections.OrderedDict())

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2, self.args)


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, StorageRef) else None


def checkpoint(obj=None, records=None, pickled=None):
    """A PyTorch-laid-out zip whose ``data.pkl`` pickles ``obj`` (or is ``pickled``), with
    ``records``: {key: bytes} as ``data/<key>``."""
    if pickled is None:
        buffer = io.BytesIO()
        _Pickler(buffer, protocol=2).dump(obj)
        pickled = buffer.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("archive/data.pkl", pickled)
        zf.writestr("archive/byteorder", "little")
        for key, data in (records or {}).items():
            zf.writestr(f"archive/data/{key}", data)
        zf.writestr("archive/version", "3\n")
    out.seek(0)
    return out


FLOATS = np.arange(4, dtype=np.float32).tobytes()


@pytest.fixture
def reads(monkeypatch):
    """The storages the loader reads (none must be read from a refused file)."""
    seen = []
    real = torch_reader.storage_from_host
    monkeypatch.setattr(torch_reader, "storage_from_host", lambda *a, **k: seen.append(a) or real(*a, **k))
    if os.path.exists(MARKER):
        os.remove(MARKER)
    yield seen
    assert not os.path.exists(MARKER)


def test_the_helper_makes_loadable_checkpoints(reads):
    good = checkpoint({"x": TensorRef(StorageRef("0", 4), 1, (3,), (1,))}, {"0": FLOATS})
    assert ak.load(good)["x"].tolist() == [1.0, 2.0, 3.0] and len(reads) == 1


def test_a_reduce_calling_os_system_is_refused(reads):
    f = checkpoint({"x": TensorRef(StorageRef("0", 4), 0, (4,), (1,)), "evil": Boom()}, {"0": FLOATS})
    with pytest.raises(ValueError, match=r"refused: .*global (posix|nt)\.system"):
        ak.load(f)
    assert reads == []


def global_call(module, name, args=b")"):
    """A protocol 2 pickle calling ``module.name`` with ``args`` (pickled opcodes)."""
    return b"\x80\x02c" + f"{module}\n{name}\n".encode() + args + b"R."


@pytest.mark.parametrize("module, name", [
    ("builtins", "eval"), ("__builtin__", "exec"), ("builtins", "getattr"), ("builtins", "__import__"),
    ("subprocess", "Popen"), ("os", "remove"), ("posix", "system"), ("pickle", "loads"),
    ("numpy.core.multiarray", "_reconstruct"), ("torch.nn.modules.linear", "Linear"),
    ("torch", "load"), ("torch.serialization", "load"), ("collections", "defaultdict"),
    ("copyreg", "_reconstructor"), ("functools", "partial"), ("torch._utils", "_rebuild_qtensor"),
])
def test_gadget_globals_are_refused_by_name(module, name, reads):
    with pytest.raises(ValueError, match=rf"refused: .*global {module.replace('__builtin__', 'builtins')}\.{name}"):
        ak.load(checkpoint(pickled=global_call(module, name, b'X\x02\x00\x00\x00id\x85')))


def test_pickles_torch_itself_refuses_are_refused_here_too(tmp_path):
    f = checkpoint(pickled=global_call("builtins", "eval", b'X\x02\x00\x00\x00id\x85'))
    with pytest.raises(pickle.UnpicklingError):
        torch.load(io.BytesIO(f.getvalue()), weights_only=True)
    with pytest.raises(ValueError, match="refused"):
        ak.load(f)


def test_attributes_set_on_a_tensor_are_refused(reads):
    # BUILD on a tensor: the pickle would set attributes (here __class__) of what it built
    storage = StorageRef("0", 4)
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=2).dump(TensorRef(storage, 0, (4,), (1,)))
    pickled = buffer.getvalue()[:-1] + b"}X\x01\x00\x00\x00aK\x01sb."  # {'a': 1}, BUILD, STOP
    with pytest.raises(ValueError, match="attributes"):
        ak.load(checkpoint(pickled=pickled, records={"0": FLOATS}))
    assert reads == []


@pytest.mark.parametrize("args, reason", [
    (b"J\x00\x00\x00\x10\x85", "bytearray"),  # bytearray(2**28): a size, not bytes
    (b"X\x01\x00\x00\x00xX\x04\x00\x00\x00utf8\x86", "latin1"),
])
def test_allowed_globals_refuse_hostile_arguments(args, reason, reads):
    module, name = ("builtins", "bytearray") if reason == "bytearray" else ("_codecs", "encode")
    with pytest.raises(ValueError, match=reason):
        ak.load(checkpoint(pickled=global_call(module, name, args)))


def test_a_storage_larger_than_its_data_record_is_refused(reads):
    f = checkpoint({"x": TensorRef(StorageRef("0", 1_000_000), 0, (4,), (1,))}, {"0": FLOATS})
    with pytest.raises(ValueError, match=r"storage '0' is stated as 4000000 bytes, its record archive/data/0 holds 16"):
        ak.load(f)
    assert reads == []


@pytest.mark.parametrize("offset, size, stride", [
    (0, (5,), (1,)),          # one element past the end
    (3, (2,), (1,)),          # starts inside, overlaps the end
    (0, (2, 2), (3, 1)),      # the last row reaches past the end
    (5, (0,), (1,)),          # an empty view starting past the end
    (0, (2,), (10,)),
])
def test_views_outside_their_storage_are_refused(offset, size, stride, reads):
    f = checkpoint({"ok": TensorRef(StorageRef("0", 4), 0, (4,), (1,)),
                    "bad": TensorRef(StorageRef("0", 4), offset, size, stride)}, {"0": FLOATS})
    reason = rf"size {re.escape(str(list(size)))}, stride {re.escape(str(list(stride)))} and storage offset {offset} "
    with pytest.raises(ValueError, match=reason + r"reaches outside its storage '0' of 4 .*float32 elements"):
        ak.load(f)
    assert reads == []


def test_overlapping_views_inside_the_storage_load_as_torch_loads_them():
    # overlapping views are legitimate (expand, unfold, as_strided): torch writes and reads them
    refs = {"a": TensorRef(StorageRef("0", 4), 0, (3,), (1,)), "b": TensorRef(StorageRef("0", 4), 1, (3,), (1,)),
            "windows": TensorRef(StorageRef("0", 4), 0, (3, 2), (1, 1)), "expanded": TensorRef(StorageRef("0", 4), 2, (3, 2), (0, 1))}
    f = checkpoint(refs, {"0": FLOATS})
    want = torch.load(io.BytesIO(f.getvalue()), weights_only=True)
    got = ak.load(f)
    for name in refs:
        np.testing.assert_array_equal(got[name].numpy(), want[name].numpy())
        assert got[name]._storage is got["a"]._storage


@pytest.mark.parametrize("change, reason", [
    (lambda pid: ("storage", torch.FloatStorage, "0", "cpu", -1), "integer >= 0"),
    (lambda pid: ("storage", "FloatStorage", "0", "cpu", 4), "bad storage record"),
    (lambda pid: ("module", torch.FloatStorage, "0", "cpu", 4), "unknown persistent id"),
    (lambda pid: ("storage", torch.QInt8Storage, "0", "cpu", 4), "QInt8Storage"),
])
def test_bad_storage_records_are_refused(change, reason, reads):
    storage = StorageRef("0", 4)
    storage.pid = change(storage.pid)
    with pytest.raises(ValueError, match=reason):
        ak.load(checkpoint({"x": TensorRef(storage, 0, (4,), (1,))}, {"0": FLOATS}))


def test_a_missing_record_is_refused(reads):
    f = checkpoint({"x": TensorRef(StorageRef("0", 4), 0, (4,), (1,)), "y": TensorRef(StorageRef("1", 4), 0, (4,), (1,))},
                   {"0": FLOATS})
    with pytest.raises(ValueError, match=r"storage '1' has no data record \(archive/data/1 is missing\)"):
        ak.load(f)
    assert reads == []


def real_checkpoint():
    f = io.BytesIO()
    torch.save({"w": torch.arange(1000.0), "step": 3}, f)
    return f.getvalue()


@pytest.mark.parametrize("cut", [0.3, 0.6, 0.95, 0.999])
def test_a_truncated_checkpoint_is_refused(cut, reads):
    data = real_checkpoint()
    with pytest.raises(ValueError, match="damaged|not an arraykit|neither"):
        ak.load(io.BytesIO(data[:int(len(data) * cut)]))
    assert reads == []


def test_corrupted_bytes_are_caught_by_the_crc():
    data = bytearray(real_checkpoint())
    data[bytes(data).index(np.arange(1000.0, dtype=np.float32)[500:502].tobytes())] ^= 0xFF
    with pytest.raises(ValueError, match="damaged"):
        ak.load(io.BytesIO(bytes(data)))


def test_damaged_pickles_and_deep_nesting_are_refused(reads):
    with pytest.raises(ValueError, match="damaged"):
        ak.load(checkpoint(pickled=b"\x80\x02}q\x00(X\x01"))
    deep = b"\x80\x02" + b"]" * 5000 + b"a" * 4999 + b"."
    with pytest.raises(ValueError, match="nested more than"):
        ak.load(checkpoint(pickled=deep))


def test_dtypes_arraykit_lacks_are_refused_by_name(reads):
    f = io.BytesIO()
    torch.save({"x": torch.ones(2, dtype=torch.float8_e4m3fn)}, f)
    with pytest.raises(ValueError, match="float8_e4m3fn"):
        ak.load(io.BytesIO(f.getvalue()))
