"""Programs compiled ahead of time for the arguments of their first eager call.

Eager kernels are compiled ahead of time (``jax.jit(...).trace(args).lower()`` then
``compile``) rather than by ``jax.jit``'s dispatch, so that the compilation can go
through the persistent :mod:`.compilation_cache` when it is on: a later process that
lowers the same program loads the executable instead of compiling it again.
"""

from __future__ import annotations

import jax

from ..core.jax_compat import fast_call, trace_state_clean
from . import compilation_cache


def compile_ahead(fn, args, options=None, donate_argnums=(), **jit_options):
    """``fn`` compiled ahead of time for ``args`` with the compiler ``options``
    (``jax.jit``'s other keyword arguments beside), through the persistent
    :mod:`.compilation_cache` when it is on."""
    if isinstance(donate_argnums, int):
        donate_argnums = (donate_argnums,)
    # every argument kept: the lowered text shows no pruned ones, and two programs that
    # differ only in which arguments they drop must not share an entry
    jitted = jax.jit(fn, compiler_options=options, donate_argnums=donate_argnums,
                     keep_unused=True, **{k: v for k, v in jit_options.items() if k != "keep_unused"})
    lowered = jitted.trace(*args).lower()
    return compilation_cache.compile(lowered, donate_argnums, compilation_cache.devices_of(args),
                                     options)


class FirstCall:
    """``jax.jit(fn, compiler_options=options, donate_argnums=donated)`` compiled by
    :func:`compile_ahead` for the arguments of its first eager call, and called
    through that executable from then on.

    Inside an outer JAX trace, which refuses an executable, it calls ``nested``
    (``fn`` under a plain ``jax.jit``). Arguments the executable was not compiled for
    (another shape, another device) make it a ``jax.jit`` wrapper for good, which
    compiles per signature by JAX's dispatch.
    """

    __slots__ = ("fn", "options", "donated", "nested", "run", "general")

    def __init__(self, fn, options, donated, nested):
        self.fn = fn
        self.options = options
        self.donated = donated
        self.nested = nested
        self.run = None
        self.general = False

    def __call__(self, *args):
        run = self.run
        if run is None:
            if not trace_state_clean():
                return self.nested(*args)
            compiled = compile_ahead(self.fn, args, self.options, self.donated)
            result = self._call(compiled, args)
            self.run = fast_call(compiled)  # JAX's C++ path exists after one call
            return result
        return self._call(run, args)

    def _call(self, run, args):
        try:
            return run(*args)
        except (TypeError, ValueError):  # a trace, or arguments it was not compiled for
            if not trace_state_clean():
                return self.nested(*args)
            if self.general:
                raise
            self.general = True
            self.run = jax.jit(self.fn, compiler_options=self.options,
                               donate_argnums=self.donated)
            return self.run(*args)
