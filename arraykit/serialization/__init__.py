"""Checkpoints: :func:`save` and :func:`load` for tensors in nested Python structures.

Three formats, told apart by their content when loading:

* arraykit's own (the default of :func:`save`, :mod:`.native`): a zip of a JSON
  object tree and raw storage bytes; also spread over several processes;
* PyTorch's zip checkpoints (``torch.save``'s ``.pt``/``.pth``): read by a
  restricted unpickler that builds only what ``torch.load(weights_only=True)``
  builds and never imports torch (:mod:`.torch_reader`), written by
  ``save(..., format="torch")`` (:mod:`.torch_writer`);
* safetensors, through the ``safetensors`` package (the ``safetensors`` extra,
  :mod:`.safetensors_format`).

:func:`load` also reads NumPy's ``.npy`` and ``.npz`` files. Nothing in a file is
ever executed: pickles other than PyTorch's restricted ones are refused.
"""

from __future__ import annotations

import os
import struct
import zipfile

from . import native, safetensors_format, torch_reader, torch_writer

__all__ = ["save", "load"]

FORMATS = ("arraykit", "torch", "safetensors")


def save(obj, f, format="arraykit"):  # noqa: A002 (PyTorch's and NumPy's name)
    """Save tensors in nested dicts/lists/tuples with Python scalars to ``f``.

    ``f`` is a path (written exactly as given, no suffix added) or a binary file
    object. ``format`` chooses the file's layout:

    * ``"arraykit"`` (default): arraykit's own format (see :mod:`arraykit.serialization.native`),
      which :func:`load` reads back with every storage shared as saved, also for
      tensors spread over several processes. Raises TypeError naming the type and
      where it sits in ``obj`` for anything it cannot hold.
    * ``"torch"``: PyTorch's zip checkpoint, which ``torch.load(f, weights_only=True)``
      reads: views of one storage are written as views of one storage (tensors
      with negative strides, which PyTorch lacks, are written as copies of their
      values). Dicts, lists, tuples, sets, ``OrderedDict``, numbers, strings, bytes,
      None, dtypes and tensors.
    * ``"safetensors"``: a flat ``{name: tensor}`` dict as a ``.safetensors`` file, by
      the ``safetensors`` package (``pip install arraykit[safetensors]``); each tensor
      is written as its own values (the format has no views).
    """
    if format == "arraykit":
        return native.save(obj, f)
    if format == "torch":
        return torch_writer.save(obj, f)
    if format == "safetensors":
        return safetensors_format.save(obj, f)
    raise ValueError(f"save(): unknown format {format!r}; expected one of {', '.join(map(repr, FORMATS))}")


def load(f, map_location=None, *, weights_only=True, mmap=False):
    """Load what :func:`save` wrote, a PyTorch checkpoint, a ``.safetensors`` file, or a
    ``.npy`` (a tensor) or ``.npz`` (a dict of tensors) file; the format is read from
    the file's content, whatever its name.

    ``f`` is a path or a binary file object. Nothing in the file is executed. The
    arguments are in ``torch.load``'s order: ``map_location`` second, ``weights_only``
    and ``mmap`` keyword-only.

    ``map_location`` places the tensors. For every format: a device, a device string
    (``'cpu'``, ``'cuda:0'``) or, for arraykit's format, a JAX sharding such as
    ``NamedSharding(mesh, P())`` (every tensor replicated over a mesh, also one
    spanning processes). For PyTorch's checkpoints also as ``torch.load`` spells it:
    a dict from saved locations to new ones (``{'cuda:0': 'cpu'}``) or a function
    ``f(tensor, location)`` returning the tensor to use (``lambda t, loc: t`` keeps
    the CPU). By default each tensor goes back to the device it was saved from
    (ValueError naming it when this machine lacks it: pass ``map_location``);
    ``.npy``, ``.npz`` and safetensors files load onto the default device.

    ``mmap=True`` (paths only; None, ``torch.load``'s default, is False) maps the
    tensors' bytes from the file instead of reading them: on the CPU, JAX then uses
    the mapped pages as the buffer (no copy; pages are read from disk when first
    touched), and the storage is marked shared, so an in-place write copies it first
    and the file is never written. Where JAX cannot alias the mapping (another
    device, unaligned data) the bytes are copied to the device as usual. The CRC of
    mapped members is not checked.

    PyTorch's checkpoints are read as ``torch.load(weights_only=True)`` reads them,
    without importing torch (see :mod:`arraykit.serialization.torch_reader`); any
    other object in their pickle is refused with ValueError naming its class.
    ``weights_only`` is accepted for ``torch.load``'s spelling and must stay True (or
    None, which means True in ``torch.load`` too).
    """
    if weights_only is not True and weights_only is not None:
        raise ValueError(
            "load(): weights_only must be True: arraykit never runs code from a file "
            f"(got weights_only={weights_only!r})"
        )
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("load(mmap=True) needs a path, not a file object")
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        with open(path, "rb") as file:
            return _load(file, path, mmap, map_location)
    return _load(f, None, False, map_location)


def _load(file, origin, mmap, map_location):
    """The object in ``file`` (opened from ``origin`` when that is a path)."""
    start = file.tell()
    head = file.read(16)
    file.seek(start)
    mapped = origin if mmap else None
    if head[:6] == b"\x93NUMPY":
        return native.from_npy(file, mapped, native.location(map_location))
    if head[:4] == b"PK\x03\x04":
        return _load_zip(file, origin, mapped, map_location)
    if safetensors_format.looks_like(head):
        return safetensors_format.load(file, origin, mmap, map_location)
    if head[:1] == b"\x80":
        raise ValueError(
            "load(): a bare pickle, not an arraykit checkpoint (PyTorch's legacy format "
            "from before 1.6, or pickle.dump): arraykit reads PyTorch's zip checkpoints only; "
            "save it again with a recent torch.save"
        )
    raise ValueError(
        "load(): not an arraykit checkpoint, PyTorch zip checkpoint, safetensors, .npy or .npz file"
    )


def _load_zip(file, origin, mapped, map_location):
    try:
        zf = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError, struct.error, ValueError) as error:
        raise ValueError(f"load(): a damaged zip file ({error})") from None
    with zf:
        if torch_reader.is_torch_checkpoint(zf):
            return torch_reader.load(zf, file, mapped, map_location)
        if native.is_readable_zip(zf):
            return native.from_zip(zf, file, mapped, native.location(map_location), origin)
    raise ValueError("load(): a zip file that is neither an arraykit checkpoint, a PyTorch checkpoint nor .npz")
