"""``arraykit.compile``: PyTorch's ``torch.compile`` for a module or a function.

``model = arraykit.compile(model)`` returns an ``OptimizedModule`` whose forward
is one XLA program per input signature, and whose call is one node of the eager
autograd graph: ``loss_fn(model(x), y).backward()`` outside works, and the node's
backward is a compiled program too. ``arraykit.jit`` remains the way to compile a
whole training step (forward, backward and optimizer update in one program).

How a call runs:

* The forward is traced by :func:`arraykit.jit` with the module (so its parameters
  and buffers) and the arguments as inputs: every call reads the tensors' current
  values (an optimizer step in between is seen, nothing is baked in), buffers the
  forward writes (batch-norm statistics) are written back, a change of
  ``train()``/``eval()`` selects its own program, and a new signature (shapes,
  dtypes, structure) compiles once.
* When gradient mode is on and some input requires grad (a parameter, an argument,
  or a tensor the function closes over, found while tracing), the program is JAX's
  VJP of the forward over the buffers of those tensors' storages: it returns the
  outputs and the residuals, which the recorded node keeps; its backward runs one
  compiled program of the VJP on the outputs' gradients. Otherwise the program is
  the plain forward.
* Called while ``arraykit.jit`` or a JAX transform traces (a compiled model inside a
  jitted step), the function runs as it is: the enclosing trace compiles it.

``torch.compile``'s options are accepted: ``mode``, ``options``, ``dynamic``,
``fullgraph``, ``name`` and the built-in ``backend`` names choose among PyTorch's
code generators, and arraykit has one (XLA; the whole call is always one program,
one per shape, as ``fullgraph=True``); ``disable=True`` returns the model itself;
``recompile_limit`` bounds the compilations (RuntimeError past it).
"""

from __future__ import annotations

import builtins
import functools

import jax
import numpy as np

from .autograd.function import Function
from .autograd.mode import is_grad_enabled, no_grad
from .autograd.tensor_grad import tensor_maker
from .core import layout as L
from .core import storage as S
from .core import x64
from .core.storage import Storage
from .jit import jit
from .kernels.export import dense_values
from .nn.module import Module
from .tensors.tensor_type import Tensor, is_traced

__all__ = ["compile", "OptimizedModule"]

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_BACKENDS = (None, "inductor", "eager", "aot_eager", "aot_eager_decomp_partition",
             "cudagraphs", "openxla", "tvm")


def _is_tensor(x):
    return isinstance(x, Tensor)


def _tensor_leaves(tree):
    return [x for x in jax.tree_util.tree_leaves(tree, is_leaf=_is_tensor) if isinstance(x, Tensor)]


def _whole(st):
    """The contiguous tensor over all of storage ``st``'s buffer."""
    return Tensor._make(st, L.contiguous(st._buffer.shape), st.dtype)


class _ClosedOver(Exception):
    """Raised out of a trace that read tensors with autograd history it was not given."""

    def __init__(self, tensors):
        super().__init__("the compiled function closes over tensors that require grad")
        self.tensors = tensors


class _NoGradOutputs(Exception):
    """Raised out of the node's forward when no output is floating: nothing to record."""

    def __init__(self, out):
        super().__init__("no floating output")
        self.out = out


def _inexact(t):
    return jax.dtypes.issubdtype(t.dtype.np, np.inexact)


class _Watch:
    """The ``arraykit.jit`` trace, watched while the forward runs under ``jax.vjp``:
    kernel operands with autograd history that are not among the differentiated
    storages are tensors the function closes over (see :class:`_ClosedOver`)."""

    def __init__(self, outer, known):
        self.outer = outer
        self.known = known
        self.found = {}

    def read(self, operands):
        """Note closed-over tensors with history, then let the outer trace read them."""
        for x in operands:
            if isinstance(x, Tensor) and x._storage.node is not None and id(x._storage) not in self.known:
                self.found.setdefault(id(x._storage), x)
        self.outer.read(operands)

    def __getattr__(self, name):
        return getattr(self.outer, name)


class _Swap:
    """Storages whose buffers stand in for others during one run of the forward;
    restored as they were, with what the run wrote collected."""

    def __init__(self, storages):
        self.storages = storages
        self.saved = [(st._buffer, st.version, st.node, st.extremes, st._host) for st in storages]
        self.entered = [st._buffer for st in storages]

    def enter(self, buffers):
        """Install ``buffers`` (one per storage, None keeps the current one)."""
        for k, (st, buf) in enumerate(zip(self.storages, buffers)):
            if buf is not None:
                st._buffer = self.entered[k] = buf
            st.node = None  # no eager recording: JAX differentiates the run
            st.extremes = None
            st._host = None

    def written(self):
        """``{position: new buffer}`` of the storages the run wrote."""
        return {k: st._buffer for k, st in enumerate(self.storages) if st._buffer is not self.entered[k]}

    def restore(self):
        """Put every storage back as it was."""
        for st, (buf, version, node, extremes, host) in zip(self.storages, self.saved):
            st._buffer, st.version, st.node, st.extremes, st._host = buf, version, node, extremes, host


def _pull(kinds, vjp_fn, cts):
    """The cotangents of the VJP's inputs from those of its float outputs (``kinds``:
    per output, its shape for an output without gradient, else None)."""
    given = iter(cts)
    full = [np.zeros(kind, jax.dtypes.float0) if kind is not None else next(given) for kind in kinds]
    return vjp_fn(full)


_pull_compiled = jax.jit(_pull, static_argnums=0)


class _CompiledCall(Function):
    """The autograd node of one compiled call: forward runs the VJP program, backward
    the compiled pull-back of its residuals."""

    @staticmethod
    def forward(ctx, call, *inputs):
        """Run the forward program; keep its residuals for backward."""
        out, vjp_fn = call.run_vjp()
        ctx.vjp_fn = vjp_fn
        ctx.save_for_backward(*inputs)
        leaves = _tensor_leaves(out)
        ctx.kinds = tuple(None if _inexact(t) else t.shape for t in leaves)
        floating = tuple(t for t in leaves if _inexact(t))
        if not floating:
            raise _NoGradOutputs(out)
        ctx.outputs = [(t.shape, t.dtype) for t in floating]
        call.last_output = out
        return floating  # integer and boolean outputs carry no gradient: not recorded

    @staticmethod
    @x64.scoped
    def backward(ctx, *grads):
        """The inputs' gradients from the VJP program."""
        inputs = ctx.saved_tensors  # raises when an input was modified in place since
        cts = [jax.numpy.zeros(shape, dtype.np) if g is None else dense_values(g).astype(dtype.np)
               for g, (shape, dtype) in zip(grads, ctx.outputs)]
        pulled = _pull_compiled(ctx.kinds, ctx.vjp_fn, tuple(cts))
        return (None,) + tuple(tensor_maker(Tensor, x.device)(g) for x, g in zip(inputs, pulled))


class _Call:
    """One call of a compiled function: its arguments, the differentiated storages."""

    def __init__(self, compiled, args, kwargs, diff):
        self.compiled = compiled
        self.args = args
        self.kwargs = kwargs
        self.diff = diff
        self.last_output = None

    def run_vjp(self):
        c = self.compiled
        return c.vjp_program(self.diff, c.module, tuple(c.closed), self.args, self.kwargs)


class CompiledFunction:
    """A function or module compiled by :func:`compile`; call it as the original.

    ``compile_count`` counts the programs traced so far (forward and VJP programs).
    """

    def __init__(self, fn, module, max_compiles):
        self.fn = fn
        self.module = module
        self.closed = []  # tensors with history the function closes over (found by tracing)
        self.plain_program = jit(self._plain, max_compiles=max_compiles)
        self.vjp_program = jit(self._vjp, static_argnums=0, max_compiles=max_compiles)
        if module is None:
            functools.update_wrapper(self, fn)

    @property
    def compile_count(self):
        """How many programs were traced (one per signature and kind, as ``arraykit.jit``'s)."""
        return self.plain_program.compile_count + self.vjp_program.compile_count

    def _target(self, module):
        return self.fn if module is None else module

    def _plain(self, module, closed, args, kwargs):
        return self._target(module)(*args, **kwargs)

    def _vjp(self, diff, module, closed, args, kwargs):
        """Outputs and the VJP over the buffers of the storages of leaves ``diff``."""
        leaves = _tensor_leaves((module, closed, args, kwargs))
        storages = []
        for x in leaves:
            if all(x._storage is not st for st in storages):
                storages.append(x._storage)
        diff_storages = [leaves[i]._storage for i in diff]
        swap = _Swap(storages)
        positions = {id(st): k for k, st in enumerate(storages)}
        diff_positions = [positions[id(st)] for st in diff_storages]
        structure = {}
        target = self._target(module)

        def run(*bufs):
            buffers = [None] * len(storages)
            for k, buf in zip(diff_positions, bufs):
                buffers[k] = buf
            outer = S._trace
            watch = _Watch(outer, positions)
            swap.enter(buffers)
            S.set_trace(watch)
            try:
                out = target(*args, **kwargs)
                out_leaves, structure["tree"] = jax.tree_util.tree_flatten(out, is_leaf=_is_tensor)
                del out
                structure["leaves"] = [
                    (x.dtype, x.device) if isinstance(x, Tensor) else (None, x) for x in out_leaves
                ]
                values = [dense_values(x) for x in out_leaves if isinstance(x, Tensor)]
                written = swap.written()
            finally:
                S.set_trace(outer)
                swap.restore()
            if watch.found:
                raise _ClosedOver(list(watch.found.values()))
            return values, written

        values, vjp_fn, written = jax.vjp(run, *[st._buffer for st in diff_storages], has_aux=True)
        with no_grad():
            for k, buf in written.items():
                st = storages[k]
                _whole(st).copy_(Tensor._make(Storage(buf, st.dtype, st.device), L.contiguous(buf.shape), st.dtype))
        given = iter(values)
        out_leaves = []
        for dtype, device in structure["leaves"]:
            if dtype is None:
                out_leaves.append(device)  # a leaf that is not a tensor, as returned
            else:
                out_leaves.append(tensor_maker(Tensor, device)(next(given)))
        return jax.tree_util.tree_unflatten(structure["tree"], out_leaves), vjp_fn

    def _differentiated(self, args, kwargs):
        """Positions among the tensor leaves of the first leaf of each storage with
        autograd history, when gradients are recorded."""
        if not is_grad_enabled():
            return ()
        leaves = _tensor_leaves((self.module, tuple(self.closed), args, kwargs))
        seen = set()
        diff = []
        for i, x in enumerate(leaves):
            st = x._storage
            if id(st) not in seen and x.requires_grad:
                seen.add(id(st))
                diff.append(i)
        return tuple(diff)

    def __call__(self, *args, **kwargs):
        if S._trace is not None or is_traced(*_tensor_leaves((self.module, args, kwargs))):
            return self._target(self.module)(*args, **kwargs)  # the enclosing trace compiles it
        while True:
            diff = self._differentiated(args, kwargs)
            if not diff:
                return self.plain_program(self.module, tuple(self.closed), args, kwargs)
            leaves = _tensor_leaves((self.module, tuple(self.closed), args, kwargs))
            inputs = [_whole(leaves[i]._storage) for i in diff]
            call = _Call(self, args, kwargs, diff)
            try:
                outputs = _CompiledCall.apply(call, *inputs)
            except _ClosedOver as found:
                self.closed.extend(found.tensors)
                continue
            except _NoGradOutputs as nothing:
                return nothing.out
            outputs = outputs if isinstance(outputs, tuple) else (outputs,)
            return _with_tensors(call.last_output, outputs)


def _with_tensors(tree, tensors):
    """``tree`` with its floating tensor leaves replaced by ``tensors``, in order."""
    leaves, treedef = jax.tree_util.tree_flatten(tree, is_leaf=_is_tensor)
    given = iter(tensors)
    return jax.tree_util.tree_unflatten(
        treedef, [next(given) if isinstance(x, Tensor) and _inexact(x) else x for x in leaves])


class OptimizedModule(Module):
    """The module :func:`compile` returns: the original as the submodule ``_orig_mod``
    (so ``state_dict`` keys start with ``_orig_mod.``, as in PyTorch), its forward
    compiled; other attributes are read from the original."""

    def __init__(self, mod, compiled):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)

    def forward(self, *args, **kwargs):
        """The original module's forward, compiled."""
        return self.__dict__["_compiled"](*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            modules = self.__dict__.get("_modules")
            if modules is None or "_orig_mod" not in modules:
                raise
            return getattr(modules["_orig_mod"], name)


def _check_options(mode, options, backend):
    if mode not in _MODES:
        raise RuntimeError(
            f"Unrecognized mode={mode!r}, should be one of: "
            f"{', '.join(m for m in _MODES if m is not None)}"
        )
    if mode is not None and options is not None:
        raise RuntimeError(
            "Either mode or options can be specified, but both can't be specified at the same time."
        )
    if backend not in _BACKENDS:
        raise ValueError(
            f"arraykit.compile compiles with XLA; backend must be one of PyTorch's built-in "
            f"names ({', '.join(b for b in _BACKENDS if b is not None)}), got {backend!r}"
        )


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
            options=None, name=None, disable=False, recompile_limit=None):
    """Compile a module or a function (``torch.compile``'s signature; see the module
    docstring): a module gives an ``OptimizedModule``, a function a callable;
    without ``model``, a decorator."""
    _check_options(mode, options, backend)

    def wrap(target):
        if disable:
            return target
        if isinstance(target, Module):
            return OptimizedModule(target, CompiledFunction(target, target, recompile_limit))
        if not builtins.callable(target):
            raise TypeError(f"compile() expects a module or a callable, got {type(target).__name__}")
        return CompiledFunction(target, None, recompile_limit)

    return wrap if model is None else wrap(model)
