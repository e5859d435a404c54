"""An opt-in, persistent cache of arraykit's compiled programs, kept across processes.

Compiling is a user-visible cost: a training step's program takes seconds on a GPU,
and a model's first eager step compiles dozens of kernels. With a cache directory
set, every program arraykit compiles is stored there: ``arraykit.jit`` programs and
eager kernels (:mod:`.launch`'s kernels, size-bucket programs, autograd's
forward-with-VJP and VJP programs), each compiled ahead of time (:mod:`.ahead`) and
serialized by ``jax.experimental.serialize_executable``. A later process that lowers
the same program for the same device, with the same compiler options, JAX and jaxlib
loads it instead of compiling it again. For ``arraykit.jit`` programs, size-bucket
programs and kernels without a stable name, tracing and lowering still run (they are
what identifies the program); only XLA's compilation is skipped. Named eager kernels
(below) skip the tracing and the lowering too.

Opt in with :func:`set_compilation_cache_dir` or the environment variable
``ARRAYKIT_COMPILATION_CACHE`` (read when arraykit is imported). The cache is
arraykit's own: JAX's configuration (``jax_compilation_cache_dir`` and the rest) is
neither read nor changed, so other JAX code in the process is unaffected.

A program's key is a SHA-256 of its lowered text, the arguments it keeps (the text
omits unused ones, and which were dropped matters), the donated inputs, the compiler
options (small eager kernels' fast-compile options), the platform, device kind and
platform version, and the JAX and jaxlib versions. An entry that cannot be loaded
(written by another version, truncated) is compiled and written again; a program
that cannot be serialized (one with hoisted constants) is compiled and not stored.
Eager kernels are also found by name, without tracing or lowering them: a program
given a name (:mod:`.kernel_names`: the launcher's key of its kernel, written the
same way in every process; autograd's programs add the differentiated arguments, and
a VJP program the signature of the forward it belongs to) is stored a second way,
under a SHA-256 of that name, the structure and types of its arguments, the donated
inputs, its one device, the versions of JAX, jaxlib, NumPy and Python, JAX's
configuration, arraykit's precision settings and default dtype, and a digest of
arraykit's source files as the process imported them (none once they changed
under it). Beside the executable it keeps what a later process would otherwise
trace for: the result structure, the kernel's result layouts and compiler options,
a forward's analysis of what its VJP needs. A later process that builds the kernel
loads it before tracing it; JAX's kernel libraries that a lowering would initialize
are initialized first (:func:`arraykit.core.jax_compat.runtime_ready`).

Files are written whole (a temporary file renamed into place), so processes sharing
a directory never read a partial entry; a directory that cannot be written leaves
programs unstored, never failing the computation. Nothing is ever deleted: remove
the directory to clear the cache.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import sys
import tempfile
import threading

import jax
import jaxlib
import numpy as np
from jax.experimental import serialize_executable

from ..core import precision
from ..core.jax_compat import jax_config_context, runtime_ready, weak_type

ENVIRONMENT_VARIABLE = "ARRAYKIT_COMPILATION_CACHE"

_directory = os.path.expanduser(os.environ.get(ENVIRONMENT_VARIABLE) or "") or None
_STATS = {"hits": 0, "misses": 0, "writes": 0, "errors": 0}
_LOCK = threading.Lock()
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_SOURCE_DIGEST = []


def set_compilation_cache_dir(path):
    """Keep compiled programs (``arraykit.jit`` programs and eager kernels) in the
    directory ``path`` (created if needed) and reuse them across processes; ``None``
    switches the cache off. Autograd's programs go through the cache when it was on
    as the kernel they differentiate was first recorded."""
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


def compile(lowered, donated, devices, options=None, persistent=True):  # noqa: A001 (the verb)
    """``lowered.compile()``, through the persistent cache when one is set (counted as a
    miss and not stored by its text when not ``persistent``: the caller stores it by name).

    ``donated``: the donated input positions (the lowered text does not show them in
    every JAX version); ``devices``: the devices the program runs on; ``options``: the
    compiler options it was lowered with (``jax.jit(compiler_options=...)``: the
    lowered text does not show them either). All are part of the key.
    """
    directory = _directory
    if directory is None:
        return lowered.compile()
    if not persistent:
        _count("misses")
        return lowered.compile()
    devices = tuple(devices)
    if len(devices) > 1 and len(devices) != len(devices[0].client.devices()):
        return lowered.compile()  # some of several devices: a loaded program runs on all
    path = os.path.join(directory, _key(lowered, donated, devices, options) + ".executable")
    loaded = _load(path, lowered, devices)
    if loaded is not None:
        _count("hits")
        return loaded
    _count("misses")
    compiled = lowered.compile()
    _store(path, compiled)
    return compiled


def named_path(name, args, donated, devices):
    """The file of the program ``name`` (a :func:`.kernel_names.stable_text`) compiled
    for ``args`` (a pytree) with the inputs at ``donated`` donated, on ``devices``; None
    when the cache is off, the program has no name, or its arguments are not all on
    the one device it runs on."""
    directory = _directory
    if directory is None or name is None or len(devices) != 1:
        return None
    leaves, tree = jax.tree.flatten(args)
    if any(isinstance(leaf, jax.Array) and leaf.sharding.device_set != {devices[0]}
           for leaf in leaves):
        return None  # other devices or several: found by its lowered text, which shows them
    context = jax_config_context()
    source = _source_digest()
    if type(context) is object or not runtime_ready() or source is None:
        return None  # a JAX this cannot serve, or source files changed under this process
    parts = [
        name,
        _ADDRESS.sub("", str(tree)),
        ";".join(map(_leaf_text, leaves)),
        repr(tuple(donated)),
        repr([(d.platform, getattr(d, "device_kind", ""), d.id) for d in devices]),
        devices[0].client.platform_version,
        _ADDRESS.sub("", repr(context)),
        repr(precision.mode()),  # precision, autocast and default dtype a trace could read
        jax.__version__, jaxlib.__version__, np.__version__, sys.version, source,
    ]
    return os.path.join(directory, hashlib.sha256("\0".join(parts).encode()).hexdigest() + ".named")


def load_named(path, args, out_tree_of, devices):
    """``(compiled, meta)`` stored at ``path`` (see :func:`named_path`) for ``args``, or
    None when there is none or it cannot be loaded. ``out_tree_of()`` gives the result
    structure where the entry could not store it (one that holds functions)."""
    try:
        with open(path, "rb") as file:
            meta, payload = pickle.load(file)
        out_tree = meta.get("out_tree") or out_tree_of()
        in_tree = jax.tree.structure((tuple(args), {}))
        compiled = _deserialize(payload, in_tree, out_tree, devices)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 (any unreadable entry is compiled again)
        _count("errors")
        return None
    _count("hits")
    return compiled, meta


def store_named(path, compiled, meta):
    """Store ``compiled`` and the picklable dict ``meta`` at ``path`` (see
    :func:`named_path`), with its result structure where that can be pickled."""
    try:
        data, _, out_tree = serialize_executable.serialize(compiled)
    except (ValueError, NotImplementedError):  # not serializable (hoisted constants)
        return
    try:
        pickle.dumps(out_tree)
    except Exception:  # noqa: BLE001 (a structure holding functions: the loader traces)
        out_tree = None
    try:
        entry = pickle.dumps(({**meta, "out_tree": out_tree}, data))
    except Exception:  # noqa: BLE001 (the program runs, unstored)
        return
    _write(path, entry)


def _leaf_text(leaf):
    """What a program's compilation reads of an argument leaf: shape, dtype, weak
    type and sharding of an array; the type of anything else (traced as a weakly
    typed scalar)."""
    if isinstance(leaf, (jax.Array, np.ndarray, np.generic)):
        weak = weak_type(leaf)
        sharding = _ADDRESS.sub("", repr(getattr(leaf, "sharding", None)))  # one device's
        return f"{type(leaf).__name__}{np.shape(leaf)}{np.dtype(leaf.dtype).name}{weak:d}{sharding}"
    return type(leaf).__name__


def _source_files():
    """arraykit's Python source files, in a fixed order, with their sizes and
    modification times."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                stat = os.stat(path)
                found.append((path, os.path.relpath(path, root), stat.st_size, stat.st_mtime_ns))
    return found


_SOURCE_AT_IMPORT = _source_files()  # what this process runs (a few milliseconds)


def _source_digest():
    """A SHA-256 of arraykit's Python source (computed once): kernels named alike by
    two versions of arraykit are not the same program. None (no named entries) when
    the files changed since this process imported arraykit: what it runs is not what
    they say."""
    if not _SOURCE_DIGEST:
        digest = hashlib.sha256()
        for path, relative, _, _ in _SOURCE_AT_IMPORT:
            digest.update(relative.encode() + b"\0")
            try:
                with open(path, "rb") as file:
                    digest.update(file.read())
            except OSError:
                break
        unchanged = _source_files() == _SOURCE_AT_IMPORT
        _SOURCE_DIGEST.append(digest.hexdigest() if unchanged else None)
    return _SOURCE_DIGEST[0]


def devices_of(args):
    """The devices a program called with ``args`` (a pytree) runs on: those of its
    first JAX array argument committed to its devices (JAX moves the others there),
    else of its first JAX array argument, else JAX's default device."""
    arrays = [leaf for leaf in jax.tree.leaves(args)
              if isinstance(leaf, jax.Array) and not isinstance(leaf, jax.core.Tracer)]
    for leaf in sorted(arrays, key=lambda a: not getattr(a, "_committed", True)):
        return tuple(leaf.sharding.device_set)
    return (jax.devices()[0],)


def _key(lowered, donated, devices, options):
    devices = sorted(devices, key=lambda d: d.id)
    parts = [
        lowered.as_text(),
        repr(_kept_arguments(lowered)),
        repr(tuple(donated)),
        repr(sorted((options or {}).items())),
        repr([(d.platform, getattr(d, "device_kind", ""), d.id) for d in devices]),
        devices[0].client.platform_version,
        jax.__version__,
        jaxlib.__version__,
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _kept_arguments(lowered):
    """The positions of the arguments the program reads (JAX drops unused ones unless
    ``keep_unused``; arraykit's eager kernels keep all): None where JAX does not say."""
    compile_args = getattr(getattr(lowered, "_lowering", None), "compile_args", None) or {}
    kept = compile_args.get("kept_var_idx")
    return None if kept is None else sorted(kept)


def _load(path, lowered, devices):
    try:
        with open(path, "rb") as file:
            payload = file.read()
        # the argument and result structures are this process's (the same program's):
        # what a trace returns (autograd's VJPs) may hold functions, which are not stored
        return _deserialize(payload, lowered.in_tree, lowered.out_tree, devices)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 (any unreadable entry is compiled again)
        _count("errors")
        return None


def _deserialize(payload, in_tree, out_tree, devices):
    """The executable ``payload`` loaded for ``devices`` on their backend (not JAX's
    default one): a one-device program on its device, not on every device of a
    process that has several."""
    devices = list(devices)
    return serialize_executable.deserialize_and_load(
        payload, in_tree, out_tree, devices[0].client,
        execution_devices=devices if len(devices) == 1 else None)


def _store(path, compiled):
    try:
        data, _, _ = serialize_executable.serialize(compiled)
    except (ValueError, NotImplementedError):  # not serializable (hoisted constants)
        return
    _write(path, data)


def _write(path, data):
    """Write ``data`` to ``path`` whole (a temporary file renamed into place); a
    directory that cannot be written leaves it unstored."""
    directory = os.path.dirname(path)
    temporary = None
    try:
        os.makedirs(directory, exist_ok=True)  # the environment variable's, on first use
        handle, temporary = tempfile.mkstemp(dir=directory, suffix=".partial")
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except OSError:  # a directory that cannot be written: the program runs, unstored
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        return
    _count("writes")


def _count(name):
    with _LOCK:
        _STATS[name] += 1
