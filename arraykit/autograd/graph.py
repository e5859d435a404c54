"""The autograd graph: versions of storages, the kernels between them, and backward.

A program over tensors is a program over storage buffers (see DESIGN.md,
"Tracing and autograd"). Every storage whose values depend on a tensor that
requires grad carries ``storage.node``, the *version* of its buffer: a
:class:`Leaf` (a tensor created with ``requires_grad``) or an :class:`Output` of
a :class:`KernelNode`. A kernel that reads such storages records one node whose
backward is JAX's VJP of the very kernel that ran (reads through layouts
included), computed by the same jitted call that produced the forward values
(the VJP's residuals are a pytree the jitted forward returns). An in-place write
is a kernel from the old version of its storage (and its operands) to the new
one, so an in-place op through a view rewrites the history of every alias of the
storage, as in PyTorch, with no special case for views.

Cotangents flow per storage version, as arrays of the storage buffer's shape;
a tensor's gradient is its view of that array (its layout), and a tensor's
gradient becomes a storage cotangent by the transpose of the read (overlapping
views sum).
"""

from __future__ import annotations

import functools
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from ..core import dtypes as D
from ..core import gradient_writers
from ..core import layout as L
from ..core import x64
from ..core.jax_compat import eval_jaxpr, trace_state_clean, weak_type
from ..core.storage import Storage, gradient_made
from ..kernels import strided
from ..kernels import compilation_cache
from ..kernels.ahead import FirstCall, PerSignature
from ..kernels.kernel_names import stable_text
from ..kernels.export import dense_values
from ..kernels.launch import Locks, apply, call_or_nested, eager_jit
from ..kernels.tiers import TIERED
from .mode import no_grad
from jax.extend.core import Literal


class Leaf:
    """The version of a storage created by a leaf tensor that requires grad.

    ``grad`` is the accumulated gradient tensor (the leaf's shape) or None;
    ``hooks`` the leaf tensor's own hooks; ``watchers`` as for :class:`Output`
    (views of the leaf that retain their gradient or have hooks).
    """

    __slots__ = ("layout", "shape", "dtype", "grad", "hooks", "watchers", "__weakref__")

    def __init__(self, layout, shape, dtype):
        self.layout = layout
        self.shape = shape
        self.dtype = dtype
        self.grad = None
        self.hooks = []
        self.watchers = None


class Output:
    """Output ``index`` of a kernel node: the storage version that kernel produced.

    ``watchers`` are tensors over this version that want their gradient
    (``retain_grad``, hooks, ``autograd.grad`` inputs): (tensor, hooks) pairs.
    """

    __slots__ = ("kernel", "index", "shape", "dtype", "watchers", "__weakref__")

    def __init__(self, kernel, index, shape, dtype):
        self.kernel = kernel
        self.index = index
        self.shape = shape
        self.dtype = dtype
        self.watchers = None


class KernelNode:
    """One recorded kernel: its VJP (None once freed) and the jitted ``pull`` that runs
    it, input versions and saved tensors.

    ``parents`` are the versions its differentiable inputs had; ``saved`` lists
    (storage, version) of the inputs whose values the VJP keeps, checked at
    backward time like PyTorch's saved-tensor version counter;
    ``saved_outputs`` (output index, weak reference to its storage, version) the
    outputs it reads (see :meth:`save_outputs`). ``forward`` and
    ``inputs`` serve ``create_graph``, which runs the VJP again as a recorded kernel
    of the inputs' values (see :func:`graph_pull`): ``inputs`` has one entry per
    kernel argument, None where the VJP does not need its value, (storage, version)
    for a storage buffer, an :class:`Overwritten` for the old buffer of an in-place
    kernel's target, else the value itself (offsets, scalars passed by value). A
    custom Function node has ``forward`` None and a ``vjp`` with a ``graph`` method.
    """

    __slots__ = ("name", "vjp", "pull", "parents", "saved", "saved_outputs", "outputs",
                 "forward", "inputs")

    def __init__(self, name, vjp, pull, parents, saved, forward=None, inputs=None):
        self.name = name
        self.vjp = vjp
        self.pull = pull
        self.parents = parents
        self.saved = saved
        self.saved_outputs = ()
        self.outputs = ()
        self.forward = forward
        self.inputs = inputs

    def save_outputs(self, storages):
        """Note the storages of the outputs the VJP reads (``forward.outputs_read``, one
        storage per output) at their current versions, held weakly: a storage that
        dies can no longer be written."""
        self.saved_outputs = tuple(
            (j, weakref.ref(storages[j]), storages[j].version) for j in self.forward.outputs_read
        )

    def check_saved(self):
        """Raise PyTorch's error if a saved input or output was written in place."""
        for storage, version in self.saved:
            if storage.version != version:
                raise _version_error(self, storage, version)
        for j, ref, version in self.saved_outputs:
            storage = ref()
            if storage is not None and storage.version != version:
                raise _version_error(self, storage, version, f"output {j}")


OVERWRITTEN = object()  # the old buffer of an in-place kernel's target (gone after the write)


class Overwritten:
    """The old buffer of an in-place kernel's target, kept (not donated) because the
    kernel's gradient is a function of it; ``version`` is the version it was (None
    when no gradient flows into it), for backward with ``create_graph``."""

    __slots__ = ("buffer", "version", "dtype", "device")

    def __init__(self, buffer, version, dtype, device):
        self.buffer = buffer
        self.version = version
        self.dtype = dtype
        self.device = device

    def tensor(self, tensor_type):
        """A tensor of the old values whose gradient flows into ``version``."""
        storage = Storage(self.buffer, self.dtype, self.device)
        t = tensor_type._make(storage, L.contiguous(self.buffer.shape), self.dtype)
        if self.version is None:
            t._detached = True
        else:
            storage.node = self.version
        return t


def differentiable(dtype):
    """Whether tensors of ``dtype`` can require grad (floating and complex dtypes)."""
    return dtype.kind in ("float", "complex")


# ---------------------------------------------------------------------- recording


@jax.tree_util.register_pytree_node_class
class Residuals:
    """What a recorded kernel keeps for its VJP: the leaves of the pytree ``jax.vjp``
    returned except those that are the kernel's arguments as passed
    (``forwarded[k]``: the argument position of leaf ``k``, or None). Returning an
    argument from the jitted forward would make XLA copy it; the node reads it back
    from its storage at backward time instead (:func:`vjp_of`). ``signature``: the
    shapes, dtypes and weak types of the kernel's arguments, which the VJP's
    structure is :meth:`Forward.tree_for`. A pytree whose static part is
    (``signature``, ``forwarded``), so each trace returns its own, and one a result
    structure can be stored with (see :mod:`arraykit.kernels.compilation_cache`)."""

    __slots__ = ("kept", "signature", "forwarded")

    def __init__(self, kept, signature, forwarded):
        self.kept = kept
        self.signature = signature
        self.forwarded = forwarded

    def tree_flatten(self):
        return self.kept, (self.signature, self.forwarded)

    @classmethod
    def tree_unflatten(cls, static, kept):
        return cls(list(kept), *static)


class Forward:
    """The jitted forward-with-VJP of one kernel for one choice of differentiated arguments.

    ``kernel(*args)`` is the kernel as launched; ``mask[i]`` says whether argument
    ``i`` is differentiated; ``options`` are the kernel's compiler options, or a
    function giving them; ``cache_name`` is the kernel's name in the persistent
    compilation cache (:mod:`arraykit.kernels.kernel_names`), or None.

    ``call(*args)`` returns ``(outputs, residuals)``, the VJP's :class:`Residuals`.
    ``donating`` does the same and donates argument 0 (the target buffer of an
    in-place kernel, ``inplace``: never forwarded, it is gone after the write);
    ``nested`` is ``call`` without compiler ``options`` (the kernel's own, see
    :func:`arraykit.kernels.launch.compile_options`), for use inside an outer JAX
    trace; ``pull`` runs the VJP, compiled with the same options. With the persistent
    compilation cache on, ``call`` and ``donating`` are compiled ahead of time through
    it (:class:`arraykit.kernels.ahead.FirstCall`), with this forward's analysis kept
    beside them, and :meth:`pull_for` gives the VJP programs instead of ``pull``.

    ``saved``: the positions, among the differentiated arguments, whose values the
    VJP's residuals depend on; ``outputs_read``: the outputs whose values they are
    computed from (``exp``, ``tanh``, ``sqrt`` ... differentiate through their
    result, as PyTorch's saved outputs), checked unchanged at backward time.
    """

    __slots__ = ("call", "donating", "nested", "pull", "saved", "name", "kernel", "mask",
                 "needed", "outputs_read", "avals", "inplace", "program", "trees", "pulls",
                 "options", "prefix", "__weakref__")

    def __init__(self, kernel, mask, name, options, inplace=False, cache_name=None):
        self.saved = None
        self.needed = None
        self.outputs_read = None
        self.avals = None
        self.program = None  # (jaxpr of outputs and VJP residuals, outputs, VJP tree)
        self.trees = {}  # the VJP's structure per argument signature
        self.inplace = inplace
        self.name = name
        self.kernel = kernel
        self.mask = mask

        def forward(*args):
            if self.saved is None:
                self.analyze(args)
            signature = _signature(args)
            if self._analyzed_for(args):  # replay the analysis' trace: no second linearization
                if self.program is None:  # the analysis came with a stored program
                    self.program = self._linearize(list(self.avals))
                closed, n_out, tree = self.program
                values = eval_jaxpr(closed.jaxpr, closed.consts, *(a for a in args if a is not None))
                outs, leaves = tuple(values[:n_out]), values[n_out:]
            else:  # arguments of other shapes than those analyzed (one kernel, two storages)
                outs, vjp = jax.vjp(*self.on_diff(args))
                leaves, tree = jax.tree.flatten(vjp)
            self.trees.setdefault(signature, tree)
            forwarded = self._forwarded(args, leaves)
            kept = [leaf for leaf, f in zip(leaves, forwarded) if f is None]
            return outs, Residuals(kept, signature, forwarded)

        self.nested = jax.jit(forward)
        if compilation_cache.get_compilation_cache_dir() is None:
            options = options() if callable(options) else options
            self.call = eager_jit(forward, options)
            self.donating = eager_jit(forward, options, donate_argnums=0)
            if options == TIERED:  # its own, tiered as the forward is
                self.pull = eager_jit(_run_vjp, options)
            else:
                self.pull = _pull if options is None else _pull_with(options)
            self.pulls = None
        else:  # compiled ahead of time, through the persistent cache, found by name
            self.prefix = None if cache_name is None else f"{cache_name}|{mask}|"
            self.options = options
            self.call = FirstCall(forward, options, (), self.nested,
                                  _suffixed(self.prefix, "forward"), self.describe, self.adopt)
            self.donating = FirstCall(forward, options, (0,), self.nested,
                                      _suffixed(self.prefix, "donating"), self.describe, self.adopt)
            self.pull = None  # pull_for: one VJP program per argument signature
            self.pulls = {}

    def prepare(self, args):
        """Know what the VJP needs (``needed`` and the rest) before a first call with
        ``args``: from the persistent cache when it holds this forward (loaded, ready to
        run), else by :meth:`analyze`."""
        if self.pulls is not None and trace_state_clean():
            for program in (self.donating, self.call):  # the one a first process compiled
                if self.needed is None:
                    program.ready(*args, stored_only=True)
        if self.needed is None:
            self.analyze(args)

    def describe(self):
        """The analysis the persistent cache keeps beside a compiled forward."""
        return {"analysis": (_signature(self.avals), self.saved, self.needed, self.outputs_read)}

    def adopt(self, meta):
        """Take the analysis :meth:`describe` stored, for a forward loaded untraced (its
        linearization is traced again only when a VJP program must be compiled)."""
        if self.saved is None:
            signature, saved, self.needed, self.outputs_read = meta["analysis"]
            self.avals = tuple(_avals_of(signature))
            self.saved = saved

    def tree_for(self, signature):
        """The structure of the VJP of the kernel called with arguments of ``signature``."""
        tree = self.trees.get(signature)
        if tree is None:
            tree = self.trees.setdefault(signature, self._linearize(_avals_of(signature))[2])
        return tree

    def pull_for(self, signature):
        """With the persistent cache on: the VJP program for arguments of ``signature``,
        called with the residuals' leaves (:func:`residual_leaves`) and the output
        cotangents. Found by name, it runs without this process ever linearizing the
        kernel."""
        pull = self.pulls.get(signature)
        if pull is None:

            def run(leaves, cts):
                return jax.tree.unflatten(self.tree_for(signature), leaves)(cts)

            pull = self.pulls.setdefault(signature, FirstCall(
                run, self.options, (), jax.jit(run), _suffixed(self.prefix, f"pull|{signature!r}")))
        return pull

    def _analyzed_for(self, args):
        """Whether ``args`` have the shapes and dtypes :meth:`analyze` traced for."""
        for a, aval in zip(args, self.avals):
            if (a is None) is not (aval is None) or (
                    aval is not None and (np.shape(a) != aval.shape or a.dtype != aval.dtype
                                          or weak_type(a) != aval.weak_type)):
                return False
        return len(args) == len(self.avals)

    def _forwarded(self, args, leaves):
        """Per residual leaf, the position of the argument it is (as passed), or None."""
        positions = {
            id(a): i for i, a in enumerate(args)
            if a is not None and not (self.inplace and i == 0)
        }
        return tuple(positions.get(id(leaf)) for leaf in leaves)

    def on_diff(self, args):
        """``(fn, *diff)``: the kernel as a function of its differentiated arguments only
        (the others fixed to ``args``), and those arguments' values."""
        mask = self.mask
        kernel = self.kernel

        def fn(*d):
            values = iter(d)
            out = kernel(*(next(values) if m else a for a, m in zip(args, mask)))
            return out if isinstance(out, tuple) else (out,)

        return (fn, *(a for a, m in zip(args, mask) if m))

    def _linearize(self, avals):
        """``(jaxpr of the outputs then the VJP's leaves, number of outputs, VJP
        structure)`` for arguments of ``avals`` (None where an argument is None)."""
        present = [i for i, a in enumerate(avals) if a is not None]
        trees = []

        def outputs_and_residuals(*values):
            full = [None] * len(avals)
            for i, v in zip(present, values):
                full[i] = v
            outs, vjp = jax.vjp(*self.on_diff(full))
            leaves, tree = jax.tree.flatten(vjp)
            trees.append(tree)
            return list(outs), leaves

        closed, shapes = jax.make_jaxpr(outputs_and_residuals, return_shape=True)(
            *(avals[i] for i in present))
        return closed, len(shapes[0]), trees[0]

    def analyze(self, args):
        """Which arguments and outputs the VJP's residuals depend on (jaxpr data flow):
        ``needed`` (positions among all arguments), ``saved`` (among the differentiated
        ones) and ``outputs_read``."""
        avals = _avals_of(_signature(args))
        self.program = self._linearize(avals)
        closed, n_out, _ = self.program
        present = [i for i, a in enumerate(avals) if a is not None]
        marks = {j: {_OutputMark(j)} for j in range(n_out)}
        written = _written_values(closed.jaxpr) if self.inplace else None
        flows = _dependencies(closed.jaxpr, [{i} for i in present], marks, written)[n_out:]
        deps = set().union(*flows)
        diff = [i for i, m in enumerate(self.mask) if m]
        self.avals = tuple(avals)
        self.needed = frozenset(d for d in deps if not isinstance(d, _OutputMark))
        self.outputs_read = tuple(sorted(d.index for d in deps if isinstance(d, _OutputMark)))
        self.saved = tuple(k for k, i in enumerate(diff) if i in deps)  # last: the flag


def _signature(args):
    """Shape, dtype and weak type of each argument (None for None): what a trace of a
    kernel reads of its arguments, written so that it can be stored."""
    return tuple(None if a is None else (tuple(np.shape(a)), np.dtype(a.dtype).name, weak_type(a))
                 for a in args)


def _avals_of(signature):
    return [None if s is None else jax.ShapeDtypeStruct(s[0], np.dtype(s[1]), weak_type=s[2])
            for s in signature]


def _suffixed(prefix, suffix):
    return None if prefix is None else prefix + suffix


class _OutputMark:
    """In a dependency set: computed from output ``index`` of the kernel."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def __eq__(self, other):
        return isinstance(other, _OutputMark) and other.index == self.index

    def __hash__(self):
        return hash((_OutputMark, self.index))


# Primitives that call their ``jaxpr``/``call_jaxpr`` once on their own operands: their
# outputs' dependencies are traced through the callee, not all assumed (a nested jit
# returning zeros next to a selection does not keep the selection's input).
_CALLS = {"jit", "pjit", "closed_call", "core_call", "checkpoint", "remat", "custom_jvp_call"}


# Primitives that only move values, with the operands whose values they carry (None:
# all but a leading condition): the path from an in-place kernel's computed values
# into its target buffer (see :func:`arraykit.kernels.strided.write`).
_MOVES = {
    "reshape": (0,), "transpose": (0,), "rev": (0,), "convert_element_type": (0,),
    "copy": (0,), "copy_p": (0,), "squeeze": (0,), "expand_dims": (0,),
    "broadcast_in_dim": (0,), "pad": (0,), "slice": (0,), "dynamic_slice": (0,),
    "dynamic_update_slice": (1,), "scatter": (2,), "select_n": None,
}


def _carried(eqn):
    """The operands whose values ``eqn`` moves into its result, or None if it computes."""
    name = eqn.primitive.name
    if name in ("jit", "pjit") and eqn.params.get("name") == "_where":
        return eqn.invars[1:]
    if name not in _MOVES:
        return None
    positions = _MOVES[name]
    return eqn.invars[1:] if positions is None else [eqn.invars[i] for i in positions]


def _written_values(jaxpr):
    """An in-place kernel's jaxpr: the variables computed by the operations whose values
    are moved into its output 0 (the new target buffer), each marked as that output, so
    that a VJP rule reading them (``exp``, ``tanh``, ``relu``... saving their result as
    PyTorch does) reads the written storage, checked for later in-place writes."""
    producers = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}
    found = {}
    seen = set()
    stack = [jaxpr.outvars[0]]
    while stack:
        v = stack.pop()
        if isinstance(v, Literal) or v in seen or v not in producers:
            continue
        seen.add(v)
        carried = _carried(producers[v])
        if carried is None:
            found[v] = {_OutputMark(0)}
        else:
            stack.extend(carried)
    return found


def _dependencies(jaxpr, in_deps, marks=None, computed_marks=None):
    """For each output of ``jaxpr``, the input positions it depends on, given ``in_deps``
    (a set of positions per input variable). ``marks`` (output position -> set) are
    added where that output is computed, so whatever is computed from it carries them;
    ``computed_marks`` (variable -> set) likewise where those variables are computed."""
    deps = dict(zip(jaxpr.invars, in_deps))
    marked = {}
    for k, extra in (marks or {}).items():
        v = jaxpr.outvars[k]
        if not isinstance(v, Literal) and v not in deps:  # not an input passed through
            marked.setdefault(v, set()).update(extra)
    for v, extra in (computed_marks or {}).items():
        marked.setdefault(v, set()).update(extra)

    def of(v):
        return set() if isinstance(v, Literal) else deps.get(v, set())

    for eqn in jaxpr.eqns:
        ins = [of(v) for v in eqn.invars]
        inner = eqn.params.get("jaxpr", eqn.params.get("call_jaxpr"))
        inner = getattr(inner, "jaxpr", inner)  # a ClosedJaxpr's Jaxpr
        if eqn.primitive.name in _CALLS and inner is not None and len(inner.invars) == len(ins):
            inner_marks = {k: marked[v] for k, v in enumerate(eqn.outvars) if v in marked}
            outs = _dependencies(inner, ins, inner_marks)
        else:
            outs = [set().union(*ins)] * len(eqn.outvars)
        outs = [out | marked[v] if v in marked else out for out, v in zip(outs, eqn.outvars)]
        deps.update(zip(eqn.outvars, outs))
    return [of(v) for v in jaxpr.outvars]


def vjp_of(node):
    """The VJP of a recorded kernel node (see :func:`residual_leaves`)."""
    residuals = node.vjp
    if not isinstance(residuals, Residuals):  # a custom Function's VJP
        return residuals
    return jax.tree.unflatten(node.forward.tree_for(residuals.signature), residual_leaves(node))


def residual_leaves(node):
    """The leaves of a recorded kernel node's VJP: its kept residuals, with the
    arguments it forwarded (see :class:`Forward`) read back from their storages, which
    must still be at the versions they had."""
    residuals = node.vjp
    kept = iter(residuals.kept)
    leaves = []
    for f in residuals.forwarded:
        if f is None:
            leaves.append(next(kept))
            continue
        value = node.inputs[f]
        if isinstance(value, tuple):  # (storage, version)
            storage, version = value
            if storage.version != version:
                raise _version_error(node, storage, version)
            value = storage._buffer
        leaves.append(value)
    return leaves


def _read_back(node):
    """The storages whose buffers :func:`vjp_of` reads for ``node``."""
    residuals = node.vjp
    if not isinstance(residuals, Residuals):
        return []
    return [
        node.inputs[f][0] for f in residuals.forwarded
        if f is not None and isinstance(node.inputs[f], tuple)
    ]


def _pull_node(node, filled):
    """Run a recorded node's VJP on the output cotangents ``filled``. The storages it
    reads back stay locked until the pull is dispatched, so a write on another thread
    cannot donate a buffer between the version check and its use."""
    with Locks(_read_back(node)):
        forward = node.forward
        if forward is not None and forward.pulls is not None:  # the persistent cache is on
            return forward.pull_for(node.vjp.signature)(residual_leaves(node), filled)
        vjp = vjp_of(node)
        if node.pull is not _pull:  # options refused inside an outer trace: plain jit
            return call_or_nested(node.pull, _pull, vjp, filled)
        return node.pull(vjp, filled)


def make_node(forward, outs, vjp, parents, diff_storages, args):
    """The :class:`KernelNode` of a recorded call of ``forward``, made right after it.

    ``parents``: the versions the differentiated arguments had; ``diff_storages``
    their storages, checked at backward time like saved tensors (None for an
    in-place kernel's target: what the VJP needs of its old values is in its
    residuals, and for ``create_graph`` in an :class:`Overwritten`). ``args``: per kernel
    argument, its Storage, :data:`OVERWRITTEN` or its value (see ``KernelNode.inputs``).
    Each output gets an :class:`Output` version; callers install it on
    differentiable outputs' storages.
    """
    saved = []
    for i in forward.saved:
        st = diff_storages[i]
        if st is not None:
            saved.append((st, st.version))
    needed = forward.needed
    inputs = tuple(
        None if i not in needed else (a, a.version) if isinstance(a, Storage) else a
        for i, a in enumerate(args)
    )
    node = KernelNode(forward.name, vjp, forward.pull, tuple(parents), tuple(saved), forward, inputs)
    node.outputs = tuple(Output(node, i, o.shape, D.from_numpy(o.dtype)) for i, o in enumerate(outs))
    return node


# ---------------------------------------------------------------------- backward


def _run_vjp(vjp, cts):
    return vjp(cts)


_pull = jax.jit(_run_vjp)
_PULLS = {}


def _pull_with(options):
    """The VJP runner compiled with the compiler ``options`` of the kernel it
    differentiates (one per set of options, built on first use)."""
    key = tuple(sorted(options.items()))
    pull = _PULLS.get(key)
    if pull is None:
        pull = _PULLS.setdefault(key, jax.jit(_run_vjp, compiler_options=options))
    return pull


def _sum(a, b):
    return a + b


_add = PerSignature(_sum, stable_text(_sum))


_SPREAD = {}
_GATHER = {}


def _is_whole(shape, layout):
    return layout.shape == shape and layout == L.contiguous(shape)


def spread(g, shape, dtype, layout):
    """A tensor's gradient ``g`` (its shape) as a cotangent of a storage buffer of
    ``shape`` and ``dtype``: the transpose of reading ``layout`` (overlaps sum)."""
    if _is_whole(shape, layout):
        return g.astype(dtype.np)
    key = (shape, dtype, layout)
    fn = _SPREAD.get(key)
    if fn is None:

        def transposed_read(values, shape=shape, np_dtype=dtype.np, layout=layout):
            zeros = jnp.zeros(shape, np_dtype)
            pull = jax.vjp(lambda b: strided.read(b, layout), zeros)[1]
            return pull(values.astype(np_dtype))[0]

        fn = _SPREAD[key] = PerSignature(transposed_read, stable_text((spread, key)))
    return fn(g)


def gather(ct, shape, layout):
    """The view ``layout`` of the storage cotangent ``ct`` (a tensor's gradient)."""
    if _is_whole(shape, layout):
        return ct
    fn = _GATHER.get(layout)
    if fn is None:
        fn = _GATHER[layout] = PerSignature(lambda c, layout=layout: strided.read(c, layout),
                                            stable_text((gather, layout)))
    return fn(ct)


_ZEROS = {}


def _zeros(out):
    """The cotangent of an output nothing flowed into: zeros (of no type for an
    output that is not differentiable)."""
    if not differentiable(out.dtype):
        return np.zeros(out.shape, jax.dtypes.float0)
    key = (out.shape, out.dtype.np)
    if compilation_cache.get_compilation_cache_dir() is None:
        return jnp.zeros(*key)
    make = _ZEROS.get(key)
    if make is None:
        zeros = functools.partial(jnp.zeros, *key)
        make = _ZEROS[key] = FirstCall(zeros, None, (), jax.jit(zeros), stable_text((_zeros, key)))
    return make()


def _order(roots):
    """Kernel nodes reachable from the version nodes ``roots``, consumers first."""
    seen = set()
    post = []
    stack = [(v.kernel, False) for v in roots if isinstance(v, Output)]
    while stack:
        node, done = stack.pop()
        if done:
            post.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for parent in node.parents:
            if isinstance(parent, Output) and id(parent.kernel) not in seen:
                stack.append((parent.kernel, False))
    post.reverse()
    return post


def _version_error(node, storage, saved_version, what="an input"):
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: {what} of {node.name} (a storage of {storage.size()} "
        f"{storage.dtype} elements) is at version {storage.version}; expected version "
        f"{saved_version} instead. Clone the tensor before modifying it in place"
    )


def _freed_error(node):
    return RuntimeError(
        f"Trying to backward through the graph a second time (through {node.name}), or to "
        "access saved tensors after they have already been freed. Specify "
        "retain_graph=True if you need to backward through the graph a second time"
    )


class Arrays:
    """Backward on buffers (the usual pass): cotangents are JAX arrays, nothing is recorded."""

    graph = False

    def __init__(self, make_tensor):
        self.tensor = make_tensor

    add = staticmethod(_add)
    spread = staticmethod(spread)
    gather = staticmethod(gather)

    def values(self, replaced, grad):
        return dense_values(replaced)


class Tensors:
    """Backward with ``create_graph``: cotangents are tensors and every step of the
    backward pass (VJPs, sums, reads through layouts) is a recorded arraykit kernel,
    so the gradients it returns can be differentiated again."""

    graph = True

    def __init__(self, make_tensor):
        self.make = make_tensor

    def tensor(self, grad):
        return grad

    @staticmethod
    def add(a, b):
        return a + b

    @staticmethod
    def spread(g, shape, dtype, layout):
        if _is_whole(shape, layout) and g.dtype == dtype:
            return g
        return apply(_spread_body, [g], static=(shape, dtype.np, layout))

    @staticmethod
    def gather(ct, shape, layout):
        if _is_whole(shape, layout):
            return ct
        return apply(_gather_body, [ct], static=(layout,))

    def values(self, replaced, grad):
        if isinstance(replaced, type(grad)):
            return replaced
        return self.make(jnp.asarray(dense_values(replaced)))


def _spread_body(g, shape, np_dtype, layout):
    zeros = jnp.zeros(shape, np_dtype)
    return jax.vjp(lambda b: strided.read(b, layout), zeros)[1](g.astype(np_dtype))[0]


def _gather_body(ct, layout):
    return strided.read(ct, layout)


def _graph_vjp(*values):
    """The body of a ``create_graph`` VJP kernel: ``values`` are the values of the
    arguments the VJP needs and the present output cotangents, then ``forward``, the
    ``signature`` of the recorded call's arguments and ``pattern`` (static): per
    output, ``(kind, shape, dtype)`` with kind ``ct`` (given), ``zeros`` or ``float0``
    (a non-differentiable output)."""
    *values, forward, signature, pattern = values
    it = iter(values)
    args = []
    for i, aval in enumerate(_avals_of(signature)):
        if aval is None:
            args.append(None)
        elif i in forward.needed:
            args.append(next(it))
        else:  # the VJP does not depend on its value
            args.append(jnp.zeros(aval.shape, aval.dtype))
    cts = []
    for kind, shape, np_dtype in pattern:
        if kind == "ct":
            cts.append(next(it))
        elif kind == "zeros":
            cts.append(jnp.zeros(shape, np_dtype))
        else:
            cts.append(np.zeros(shape, jax.dtypes.float0))
    pull = jax.vjp(*forward.on_diff(args))[1]
    return tuple(pull(tuple(cts)))


def graph_pull(node, out_cts, tensor_type):
    """``create_graph``: the input cotangents of kernel ``node`` as tensors, computed by
    one recorded kernel of the node's input values (checked unchanged, as saved
    tensors) and the output cotangents ``out_cts`` (tensors or None)."""
    operands = []
    for i, held in enumerate(node.inputs):
        if held is None:
            continue
        if isinstance(held, Overwritten):
            operands.append(held.tensor(tensor_type))
            continue
        if isinstance(held, tuple):
            storage, version = held
            if storage.version != version:
                raise _version_error(node, storage, version)
            t = tensor_type._make(storage, L.contiguous(storage._buffer.shape), storage.dtype)
            if not node.forward.mask[i]:
                t._detached = True  # read by value, not differentiated, in the forward
            operands.append(t)
        else:
            operands.append(held)
    pattern = []
    for out, ct in zip(node.outputs, out_cts):
        if not differentiable(out.dtype):
            pattern.append(("float0", out.shape, None))
        elif ct is None:
            pattern.append(("zeros", out.shape, out.dtype.np))
        else:
            pattern.append(("ct", None, None))
            operands.append(ct)
    return apply(_graph_vjp, operands, static=(node.forward, node.vjp.signature, tuple(pattern)),
                 multiple=True)


def _accumulate(cts, version, ct, ops):
    key = id(version)
    held = cts.get(key)
    cts[key] = (version, ct if held is None else ops.add(held[1], ct))


def _notify(version, ct, ops):
    """Run the tensor hooks and ``retain_grad`` of the tensors watching ``version``.

    A hook sees the tensor's gradient and may return a replacement, which changes
    the storage cotangent that flows on. Returns the (possibly changed) cotangent.
    """
    for tensor_ref, layout, hooks in version.watchers or ():
        grad = ops.gather(ct, version.shape, layout)
        for hook in hooks:
            replaced = hook(ops.tensor(grad))
            if replaced is not None:
                new = ops.values(replaced, grad)
                ct = ops.add(ct, ops.spread(new - grad, version.shape, version.dtype, layout))
                grad = new
        tensor = tensor_ref()
        if tensor is not None and tensor.retains_grad:  # accumulates, as in PyTorch
            held = getattr(tensor, "_grad", None)
            grad = ops.tensor(grad)
            tensor._grad = grad if held is None else held + grad
    return ct


@x64.scoped
def run_backward(roots, retain_graph, ops, wanted=None, tensor_type=None):
    """Backpropagate ``roots``, (version node, cotangent of its buffer) pairs.

    Without ``wanted``, leaf gradients accumulate into ``Leaf.grad``
    (``Tensor.backward``). With ``wanted``, a list of version nodes, returns their
    cotangents (None where unreached) and leaves ``.grad`` alone
    (``autograd.grad``). ``ops`` is :class:`Arrays` (cotangents are buffers) or,
    for ``create_graph``, :class:`Tensors` (cotangents are tensors of
    ``tensor_type`` and the pass is recorded; the caller enables grad mode).
    """
    cts = {}
    for version, ct in roots:
        _accumulate(cts, version, ct, ops)
    want = set() if wanted is None else {id(v) for v in wanted}
    found = {}
    for node in _order([v for v, _ in roots]):
        out_cts = []
        for out in node.outputs:
            held = cts.pop(id(out), None)
            ct = None
            if held is not None:
                ct = _notify(out, held[1], ops)
                if id(out) in want:
                    found[id(out)] = ct
            out_cts.append(ct)
        if all(ct is None for ct in out_cts):
            continue
        if node.vjp is None:
            raise _freed_error(node)
        node.check_saved()
        if not ops.graph:
            filled = tuple(_zeros(out) if ct is None else ct for out, ct in zip(node.outputs, out_cts))
            in_cts = _pull_node(node, filled)
        elif node.forward is None:  # a custom Function: its backward, recorded
            in_cts = node.vjp.graph(out_cts, ops)
        else:
            in_cts = graph_pull(node, out_cts, tensor_type)
        if not retain_graph:
            node.vjp = None
        for parent, ct in zip(node.parents, in_cts):
            if parent is not None:
                _accumulate(cts, parent, ct, ops)
    for version, ct in cts.values():
        ct = _notify(version, ct, ops)
        if id(version) in want:
            found[id(version)] = ct
        elif wanted is None and isinstance(version, Leaf):
            _deposit(version, ct, ops)
    if wanted is not None:
        return [found.get(id(v)) for v in wanted]
    return None


def leaf_hooked(leaf, grad, ops):
    """``grad``, the leaf tensor's gradient, after the leaf's own hooks (each may
    return a replacement)."""
    for hook in leaf.hooks:
        replaced = hook(ops.tensor(grad))
        if replaced is not None:
            grad = ops.values(replaced, grad)
    return grad


def _deposit(leaf, ct, ops):
    """Add a storage cotangent into a leaf's ``.grad`` (after the leaf's hooks)."""
    grad = leaf_hooked(leaf, ops.gather(ct, leaf.shape, leaf.layout), ops)
    if leaf.grad is None:
        gradient_writers.replaced(leaf)
        leaf.grad = ops.tensor(grad)
        gradient_made(leaf, leaf.grad._storage)
    elif not ops.graph and not L.overlaps_self(leaf.grad._layout):
        # In place, as PyTorch's AccumulateGrad: the tensor that ``.grad`` is stays
        # the same (a jitted step that accumulates keeps the same storage too).
        with no_grad():
            leaf.grad.add_(ops.tensor(grad))
    else:
        gradient_writers.replaced(leaf)
        leaf.grad = leaf.grad + ops.tensor(grad)
