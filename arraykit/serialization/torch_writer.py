"""Writing PyTorch's zip checkpoints: ``save(obj, f, format="torch")``.

The archive is laid out as ``torch.save`` (2.13) lays it out: ``archive/data.pkl``
(the pickle, :mod:`.torch_pickler`), ``archive/.format_version``,
``archive/.storage_alignment``, ``archive/byteorder``, each storage's bytes as
``archive/data/<key>`` (stored uncompressed, starting at a multiple of 64 bytes, so
``torch.load(mmap=True)`` can map them), ``archive/version`` and
``archive/.data/serialization_id``.
"""

from __future__ import annotations

import os
import secrets
import sys
import zipfile

import numpy as np

from ..core.devices import one_cpu, require_addressable
from . import torch_pickler
from .zip_members import write_aligned_member

ALIGN = 64
_PAD_ID = 0x4246  # "FB", the extra-field record torch pads members with
_PREFIX = "archive/"


def _little(values):
    return values.byteswap() if sys.byteorder != "little" else values


def _storage_bytes(storage):
    """The whole buffer of an arraykit storage (or a host array of values) as
    little-endian bytes."""
    if isinstance(storage, np.ndarray):
        return _little(storage.reshape(-1)).view(np.uint8)
    require_addressable(storage.device, "save(format='torch')", storage._buffer)
    with storage.lock:
        if one_cpu(storage.device):
            values = np.array(storage.host_view())
        else:
            values = np.asarray(storage.buffer).reshape(-1)
    return _little(values.reshape(-1)).view(np.uint8)


def save(obj, f):
    """Write ``obj`` to ``f`` (a path or a binary file object) as a PyTorch checkpoint."""
    pickled, storages = torch_pickler.dumps(obj)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as file:
            _write(file, pickled, storages)
    else:
        _write(f, pickled, storages)


def _write(file, pickled, storages):
    members = [("data.pkl", pickled), (".format_version", b"1"), (".storage_alignment", b"64"),
               ("byteorder", b"little")]
    with zipfile.ZipFile(file, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members:
            write_aligned_member(zf, _PREFIX + name, data, ALIGN, _PAD_ID, b"Z")
        for key, storage, _, _ in storages.entries:
            write_aligned_member(zf, f"{_PREFIX}data/{key}", _storage_bytes(storage), ALIGN, _PAD_ID, b"Z")
        write_aligned_member(zf, _PREFIX + "version", b"3\n", ALIGN, _PAD_ID, b"Z")
        serialization_id = "".join(str(secrets.randbelow(10)) for _ in range(40)).encode()
        write_aligned_member(zf, _PREFIX + ".data/serialization_id", serialization_id, ALIGN, _PAD_ID, b"Z")
