"""Zip members whose data start aligned (so a reader can map them), and where a
member's data start in the file."""

from __future__ import annotations

import struct
import zipfile

LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_ZIP64_EXTRA = 20  # the zip64 extra record zipfile adds to a large member's local header


class CorruptMember(ValueError):
    """A member's local header is not where the central directory says."""


def write_aligned_member(zf, name, data, align, pad_id, fill=b"\0"):
    """Write ``data`` (bytes-like) as a stored (uncompressed) member of the zip file
    ``zf`` whose data start at a multiple of ``align`` in the file, padded by an extra
    field record with id ``pad_id`` filled with ``fill``."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    zip64 = len(data) > 0x7FFFFFFF
    start = zf.fp.tell() + LOCAL_HEADER.size + len(name.encode()) + 4 + (_ZIP64_EXTRA if zip64 else 0)
    padding = -start % align
    info.extra = struct.pack("<HH", pad_id, padding) + fill * padding
    with zf.open(info, "w", force_zip64=zip64) as out:
        out.write(data)


def data_offset(file, info):
    """Where the data of the zip member ``info`` start in ``file`` (after its local header)."""
    file.seek(info.header_offset)
    head = LOCAL_HEADER.unpack(file.read(LOCAL_HEADER.size))
    if head[0] != b"PK\x03\x04":
        raise CorruptMember(f"bad local header for {info.filename}")
    return info.header_offset + LOCAL_HEADER.size + head[-2] + head[-1]
