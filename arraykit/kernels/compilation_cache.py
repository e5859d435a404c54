"""An opt-in, persistent cache of arraykit's compiled programs, kept across processes.

Compiling is a user-visible cost on a GPU (a training step's program takes seconds).
With a cache directory set, every ``arraykit.jit`` program arraykit compiles is stored
there (serialized by ``jax.experimental.serialize_executable``), and a later process
that lowers the same program for the same device, JAX and jaxlib loads it instead of
compiling it again. Tracing and lowering still run (they are what identifies the
program); only XLA's compilation is skipped.

Opt in with :func:`set_compilation_cache_dir` or the environment variable
``ARRAYKIT_COMPILATION_CACHE`` (read when arraykit is imported). The cache is
arraykit's own: JAX's configuration (``jax_compilation_cache_dir`` and the rest) is
neither read nor changed, so other JAX code in the process is unaffected. Eager
kernels are not stored (each compiles in milliseconds on first use).

A program's key is a SHA-256 of its lowered text, the donated inputs, the platform,
device kind and platform version, and the JAX and jaxlib versions. An entry that
cannot be loaded (written by another version, truncated) is compiled and written
again. Files are written whole (a temporary file renamed into place), so processes
sharing a directory never read a partial entry. Nothing is ever deleted: remove
the directory to clear the cache.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import threading

import jax
import jaxlib
from jax.experimental import serialize_executable

ENVIRONMENT_VARIABLE = "ARRAYKIT_COMPILATION_CACHE"

_directory = os.path.expanduser(os.environ.get(ENVIRONMENT_VARIABLE) or "") or None
_STATS = {"hits": 0, "misses": 0, "writes": 0, "errors": 0}
_LOCK = threading.Lock()


def set_compilation_cache_dir(path):
    """Keep compiled ``arraykit.jit`` programs in the directory ``path`` (created if
    needed) and reuse them across processes; ``None`` switches the cache off."""
    global _directory
    if path is not None:
        path = os.path.expanduser(os.fspath(path))
        os.makedirs(path, exist_ok=True)
    _directory = path


def get_compilation_cache_dir():
    """The persistent compilation cache directory, or None when the cache is off."""
    return _directory


def compilation_cache_info():
    """Counters of the persistent cache in this process: ``hits`` (programs loaded),
    ``misses`` (compiled and then written), ``writes``, ``errors`` (unreadable entries)."""
    return dict(_STATS)


def compile(lowered, donated, devices):  # noqa: A001 (the verb)
    """``lowered.compile()``, through the persistent cache when one is set.

    ``donated``: the donated input positions (the lowered text does not show them in
    every JAX version); ``devices``: the devices the program runs on. Both are part
    of the key.
    """
    directory = _directory
    if directory is None:
        return lowered.compile()
    path = os.path.join(directory, _key(lowered, donated, devices) + ".executable")
    loaded = _load(path)
    if loaded is not None:
        _count("hits")
        return loaded
    _count("misses")
    compiled = lowered.compile()
    _store(path, compiled)
    return compiled


def _key(lowered, donated, devices):
    devices = sorted(devices, key=lambda d: d.id)
    parts = [
        lowered.as_text(),
        repr(tuple(donated)),
        repr([(d.platform, getattr(d, "device_kind", ""), d.id) for d in devices]),
        devices[0].client.platform_version,
        jax.__version__,
        jaxlib.__version__,
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _load(path):
    try:
        with open(path, "rb") as file:
            payload, in_tree, out_tree = pickle.load(file)
        return serialize_executable.deserialize_and_load(payload, in_tree, out_tree)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 (any unreadable entry is compiled again)
        _count("errors")
        return None


def _store(path, compiled):
    data = pickle.dumps(serialize_executable.serialize(compiled))
    directory = os.path.dirname(path)
    handle, temporary = tempfile.mkstemp(dir=directory, suffix=".partial")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except OSError:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    _count("writes")


def _count(name):
    with _LOCK:
        _STATS[name] += 1
