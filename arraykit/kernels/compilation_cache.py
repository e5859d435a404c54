"""An opt-in, persistent cache of arraykit's compiled programs, kept across processes.

Compiling is a user-visible cost: a training step's program takes seconds on a GPU,
and a model's first eager step compiles dozens of kernels. With a cache directory
set, every program arraykit compiles is stored there: ``arraykit.jit`` programs and
eager kernels (:mod:`.launch`'s kernels, size-bucket programs, autograd's
forward-with-VJP and VJP programs), each compiled ahead of time (:mod:`.ahead`) and
serialized by ``jax.experimental.serialize_executable``. A later process that lowers
the same program for the same device, with the same compiler options, JAX and jaxlib
loads it instead of compiling it again. Tracing and lowering still run (they are what
identifies the program, and they give the structures of its arguments and results,
which are not stored: a VJP's holds functions); only XLA's compilation is skipped.

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
Files are written whole (a temporary file renamed into place), so processes sharing
a directory never read a partial entry; a directory that cannot be written leaves
programs unstored, never failing the computation. Nothing is ever deleted: remove
the directory to clear the cache.
"""

from __future__ import annotations

import hashlib
import os
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


def compile(lowered, donated, devices, options=None):  # noqa: A001 (the verb)
    """``lowered.compile()``, through the persistent cache when one is set.

    ``donated``: the donated input positions (the lowered text does not show them in
    every JAX version); ``devices``: the devices the program runs on; ``options``: the
    compiler options it was lowered with (``jax.jit(compiler_options=...)``: the
    lowered text does not show them either). All are part of the key.
    """
    directory = _directory
    if directory is None:
        return lowered.compile()
    path = os.path.join(directory, _key(lowered, donated, devices, options) + ".executable")
    loaded = _load(path, lowered, devices)
    if loaded is not None:
        _count("hits")
        return loaded
    _count("misses")
    compiled = lowered.compile()
    _store(path, compiled)
    return compiled


def devices_of(args):
    """The devices a program called with ``args`` (a pytree) runs on: those of its
    first JAX array argument, else JAX's default device."""
    for leaf in jax.tree.leaves(args):
        if isinstance(leaf, jax.Array) and not isinstance(leaf, jax.core.Tracer):
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
        backend = next(iter(devices)).client  # the program's backend, not JAX's default one
        # the argument and result structures are this process's (the same program's):
        # what a trace returns (autograd's VJPs) may hold functions, which are not stored
        return serialize_executable.deserialize_and_load(payload, lowered.in_tree,
                                                         lowered.out_tree, backend)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 (any unreadable entry is compiled again)
        _count("errors")
        return None


def _store(path, compiled):
    try:
        data, _, _ = serialize_executable.serialize(compiled)
    except (ValueError, NotImplementedError):  # not serializable (hoisted constants)
        return
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
