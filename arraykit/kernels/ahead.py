"""Programs compiled ahead of time for the arguments of their first eager call.

Eager kernels are compiled ahead of time (``jax.jit(...).trace(args).lower()`` then
``compile``) rather than by ``jax.jit``'s dispatch, so that the compilation can go
through the persistent :mod:`.compilation_cache` when it is on: a later process that
lowers the same program loads the executable instead of compiling it again. A
program with a name (:mod:`.kernel_names`) is looked up by that name before it is
traced or lowered (:func:`compile_named`).
"""

from __future__ import annotations

import jax

from ..core.jax_compat import fast_call, trace_state_clean, weak_type
from . import compilation_cache
from .tiers import final_options


def compile_ahead(fn, args, options=None, donate_argnums=(), devices=None, **jit_options):
    """``fn`` compiled ahead of time for ``args`` with the compiler ``options``
    (``jax.jit``'s other keyword arguments beside), through the persistent
    :mod:`.compilation_cache` when it is on; ``devices`` as in :func:`compile_named`."""
    donate_argnums = _positions(donate_argnums)
    lowered = _jitted(fn, options, donate_argnums, jit_options).trace(*args).lower()
    devices = compilation_cache.devices_of(args) if devices is None else tuple(devices)
    return compilation_cache.compile(lowered, donate_argnums, devices, options)


def compile_named(name, fn, args, options, donate_argnums=(), describe=None, adopt=None,
                  stored_only=False, devices=None, **jit_options):
    """:func:`compile_ahead` of ``fn`` for ``args``, first looked up in the persistent
    cache under ``name`` (a :func:`.kernel_names.stable_text`, or None), which skips
    tracing and lowering. ``options()`` gives the compiler options, called only when
    compiling; ``describe()`` a picklable dict stored with a new program, which
    ``adopt(meta)`` gets back when a later process loads it. The name must say what
    ``jit_options`` (``jax.jit``'s other keyword arguments) are. ``stored_only``:
    return None rather than compile. ``devices``: those the program runs on, where
    its arguments do not say (a creation kernel placing its result by
    ``out_shardings``)."""
    donate_argnums = _positions(donate_argnums)
    given = options

    def options():
        return final_options(given())

    devices = compilation_cache.devices_of(args) if devices is None else tuple(devices)
    path = compilation_cache.named_path(name, args, donate_argnums, devices)
    if path is None:
        return None if stored_only else compile_ahead(fn, args, options(), donate_argnums,
                                                      devices, **jit_options)
    found = compilation_cache.load_named(
        path, args,
        lambda: _jitted(fn, None, donate_argnums, jit_options).trace(*args).out_tree, devices)
    if found is not None:
        compiled, meta = found
        if adopt is not None:
            adopt(meta)
        return compiled
    if stored_only:
        return None
    compiled = compilation_cache.compile(
        _jitted(fn, options(), donate_argnums, jit_options).trace(*args).lower(), donate_argnums,
        devices, persistent=False)
    compilation_cache.store_named(path, compiled, describe() if describe is not None else {})
    return compiled


def _positions(donate_argnums):
    return (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)


def _jitted(fn, options, donate_argnums, jit_options):
    # every argument kept: the lowered text shows no pruned ones, and two programs that
    # differ only in which arguments they drop must not share an entry
    return jax.jit(fn, compiler_options=options, donate_argnums=donate_argnums,
                   keep_unused=True, **{k: v for k, v in jit_options.items() if k != "keep_unused"})


def resolved_options(holder):
    """``holder._options``: compiler options, or a function giving them, called once
    (its result kept) when first asked for."""
    options = holder._options
    if callable(options):
        options = holder._options = options()
    return options


class FirstCall:
    """``jax.jit(fn, compiler_options=options, donate_argnums=donated)`` compiled by
    :func:`compile_named` for the arguments of its first eager call, and called
    through that executable from then on. ``options`` may be a function giving them,
    called when first needed; ``name`` is the program's name in the persistent cache
    (see :func:`compile_named`, with ``describe``, ``adopt`` and ``devices``), or None.

    Inside an outer JAX trace, which refuses an executable, it calls ``nested``
    (``fn`` under a plain ``jax.jit``). Arguments the executable was not compiled for
    (another shape, another device) make it a ``jax.jit`` wrapper for good, which
    compiles per signature by JAX's dispatch.
    """

    __slots__ = ("fn", "_options", "donated", "nested", "run", "general", "name", "describe",
                 "adopt", "devices", "jit_options", "compiled")

    def __init__(self, fn, options, donated, nested, name=None, describe=None, adopt=None,
                 devices=None, **jit_options):
        self.fn = fn
        self._options = options
        self.donated = donated
        self.nested = nested
        self.run = None
        self.general = False
        self.name = name
        self.describe = describe
        self.adopt = adopt
        self.devices = devices
        self.jit_options = jit_options
        self.compiled = None

    @property
    def options(self):
        """The compiler options."""
        return resolved_options(self)

    def __call__(self, *args):
        run = self.run
        if run is None:
            if not trace_state_clean():
                return self.nested(*args)
            compiled = self.compiled or self.ready(*args)
            result = self._call(compiled, args)
            if not self.general:  # the executable served these arguments
                self.run = fast_call(compiled)  # JAX's C++ path exists after one call
            return result
        return self._call(run, args)

    def ready(self, *args, stored_only=False):
        """Compile (or load) the executable for ``args`` now, without running it;
        ``stored_only``: only load it from the persistent cache (None if not there)."""
        if self.compiled is None:
            self.compiled = compile_named(self.name, self.fn, args, lambda: self.options,
                                          self.donated, self.describe, self.adopt, stored_only,
                                          self.devices, **self.jit_options)
        return self.compiled

    def _call(self, run, args):
        try:
            return run(*args)
        except (TypeError, ValueError):  # a trace, or arguments it was not compiled for
            if not trace_state_clean():
                return self.nested(*args)
            if self.general:
                if run is not self.run:  # another call put the jax.jit wrapper in place
                    return self.run(*args)
                raise
            self.run = jax.jit(self.fn, compiler_options=final_options(self.options),
                               donate_argnums=self.donated, **self.jit_options)
            self.general = True
            return self.run(*args)


class PerSignature:
    """``jax.jit(fn)``, whose programs go through the persistent cache under ``name``
    (a :func:`.kernel_names.stable_text` naming ``fn``) when it is on: one
    :class:`FirstCall` per signature of the arguments (arrays only). With the cache off,
    or inside a trace, it is ``jax.jit(fn)`` itself."""

    __slots__ = ("fn", "name", "jitted", "calls")

    def __init__(self, fn, name):
        self.fn = fn
        self.name = name
        self.jitted = jax.jit(fn)
        self.calls = {}

    def __call__(self, *args):
        if compilation_cache.get_compilation_cache_dir() is None or not trace_state_clean():
            return self.jitted(*args)
        key = tuple((a.shape, a.dtype, weak_type(a), getattr(a, "sharding", None)) for a in args)
        call = self.calls.get(key)
        if call is None:
            call = self.calls[key] = FirstCall(self.fn, None, (), self.jitted, self.name)
        return call(*args)
