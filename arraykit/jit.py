"""``arraykit.jit``: a whole function over tensors, views and in-place writes
included, compiled to one XLA program.

A program over tensors is a program over storage buffers. ``jit`` traces the
function with the buffers of every storage it touches swapped for JAX tracers:

* argument storages, de-duplicated by identity (two views of one storage enter
  as one buffer and stay aliases);
* storages the function reaches without getting them as arguments (tensors it
  closes over: a model, an optimizer's state, a generator's key). Their buffers
  enter the trace as constants, which the compiled program then takes as
  inputs: read at call time, never baked in;
* storages created during the trace that are still reachable afterwards (the
  ``.grad`` tensors ``backward()`` makes, new optimizer state): outputs.

JAX and NumPy arrays among the arguments are inputs too (read at each call, as
``jax.jit`` reads them).

Every storage the call writes, or creates and keeps, gets its new buffer after
the call (the old one donated unless an export holds it), so parameters updated
in place cost no copy. Tensors returned that alias a written or kept storage are
views of it; other returned tensors are new. During tracing the live Storage
objects hold tracers (each is restored before ``jit`` returns); the function
must not be traced from two threads at once with shared tensors.

One compilation per signature: the pytree structure of the arguments, their
tensors' shapes, dtypes, layouts and devices, which arguments share storages,
the static arguments, and the compute modes (float32 matmul precision and
autocast state, :func:`arraykit.core.precision.mode`); a signature is traced again when a storage it closed
over or kept is gone.
As with ``jax.jit``, Python side effects run only while tracing: a function must
leave the same Python-side structure (the same tensors in the same places) on
every call. A first call that creates tensors which outlive it (an optimizer's
state made on its first ``step()``, ``.grad``) is traced once more on the second call,
since later calls read those tensors instead of creating them; that trace gives the
program of the first one (the new state's initial values are read from it, not baked
in), so a training step compiles once. ``compile_count`` counts XLA compilations,
``trace_count`` traces; ``last_compile_reason`` and ``max_compiles`` make compilations
observable and bounded.

The one piece of Python state a program checks is the training flag of the
modules it ran (``model.train()``/``model.eval()``, as ``torch.compile`` guards
it): a program traced in training mode is not reused in evaluation mode; each
mode gets its own program, kept for when the mode switches back.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import functools
import gc
import hashlib
import math
import operator
import re
import threading
import weakref

import jax
import numpy as np
from jax.extend.core import Literal as _Literal

from .core import buffer_pool
from .core import gradient_writers
from .core import packing
from .core import precision
from .core import storage as S
from .core import x64
from .core.devices import put
from .core.jax_compat import concrete_arrays, eval_jaxpr, fast_call, jax_config_context
from .core.jaxpr_equality import same_jaxpr
from .core.storage import Storage
from . import jit_gradients
from .kernels import compilation_cache
from .kernels import launch
from .tensors.tensor_type import Tensor

_TRACE_LOCK = threading.Lock()
_ONE_LEAF = jax.tree_util.tree_structure(0)


class _Trace:
    """What one trace did to storages: swapped, closed over, created (see storage.set_trace)."""

    def __init__(self):
        self.thread = threading.get_ident()
        self.saved = {}
        self.closed = {}
        self.made = []
        self.making = []  # storages made inside storage.made_as_inputs(), until it ends
        self.numpy_memory = {}  # id(storage) -> its NumPy memory, swapped for a JAX stand-in
        self.guards = {}  # id(module) -> (weak reference, its training flag when read)
        self.gradients = {}  # id(storage) -> the leaf whose .grad autograd made over it

    def guard(self, module, training):
        """The function read ``module.training``: the program holds for that value only."""
        if threading.get_ident() == self.thread and id(module) not in self.guards:
            self.guards[id(module)] = (weakref.ref(module), training)

    def save(self, st):
        """Remember ``st``'s state, restored when the trace ends."""
        if id(st) not in self.saved:
            self.saved[id(st)] = (st, st._buffer, st.version, st.node, st.shared, st.exported)

    def read(self, operands):
        """Kernel operands: concrete buffers of storages from outside are closed over."""
        if threading.get_ident() != self.thread:
            return
        for x in operands:
            if isinstance(x, Tensor):
                self._closed_over(x._storage)

    def _closed_over(self, st):
        buf = st._buffer
        if id(st) in self.saved or isinstance(buf, jax.core.Tracer):
            return
        if type(buf) is np.ndarray:
            # NumPy memory (arraykit.core.host_memory): JAX would wrap it as a new constant
            # object, so a JAX copy stands in for it, recognisable by identity.
            self.numpy_memory[id(st)] = buf
            with jax.ensure_compile_time_eval():  # a concrete array, not a traced value
                buf = st._buffer = put(buf.copy(), st.device)
        self.save(st)
        self.closed[id(buf)] = st

    def adopt(self, st, old):
        """A write leaves a tracer in ``st`` (concrete buffer ``old``): allowed, restored later."""
        if threading.get_ident() != self.thread:
            return False
        self._closed_over(st)
        return True

    def created(self, st):
        """A storage made during the trace. One made with a concrete buffer inside
        ``storage.made_as_inputs()`` (an optimizer's new state) is read by the program
        as if it had existed before the trace, like a storage closed over."""
        if threading.get_ident() == self.thread:
            if S.making_inputs():
                self.making.append(st)
            else:
                self.made.append(weakref.ref(st))

    def inputs_made(self):
        """The ``made_as_inputs()`` block ended: its storages, initialized, are closed over."""
        making, self.making = self.making, []
        for st in making:
            if isinstance(st._buffer, jax.core.Tracer):
                self.made.append(weakref.ref(st))
            else:  # read while it was initialized: closed over as it is now
                earlier = self.saved.pop(id(st), None)
                if earlier is not None:
                    self.closed.pop(id(earlier[1]), None)
                self._closed_over(st)

    def restore(self):
        """Put every swapped or written storage back as it was."""
        for key, (st, buf, version, node, shared, exported) in self.saved.items():
            st._buffer = self.numpy_memory.get(key, buf)
            st._host = None
            st.version = version
            st.node = node
            st.shared = shared
            st.exported = exported


def _leaf_key(leaf, index_of):
    if isinstance(leaf, Tensor):
        st = leaf._storage
        return ("T", index_of(st), leaf._layout, leaf._dtype, st.device, st._buffer.shape)
    if isinstance(leaf, (jax.Array, np.ndarray)):
        return ("A", leaf.shape, str(leaf.dtype))
    if isinstance(leaf, (bool, int, float, complex, str, type(None))):
        return ("P", type(leaf), leaf)
    return ("O", id(leaf))


def _is_array(leaf):
    return isinstance(leaf, (jax.Array, np.ndarray))


def _signature(args, static):
    """(key, argument storages in first-seen order, array leaves in order)."""
    leaves, treedef = jax.tree_util.tree_flatten(args, is_leaf=lambda x: isinstance(x, Tensor))
    storages = []
    positions = {}

    def index_of(st):
        if id(st) not in positions:
            positions[id(st)] = len(storages)
            storages.append(st)
        return positions[id(st)]

    key = (treedef, tuple(_leaf_key(leaf, index_of) for leaf in leaves), static, precision.mode())
    return key, storages, [leaf for leaf in leaves if _is_array(leaf)]


def _with_arrays(args, arrays):
    """``args`` with its JAX and NumPy array leaves replaced by ``arrays``, in order."""
    if not arrays:
        return args
    leaves, treedef = jax.tree_util.tree_flatten(args, is_leaf=lambda x: isinstance(x, Tensor))
    given = iter(arrays)
    return jax.tree_util.tree_unflatten(
        treedef, [next(given) if _is_array(leaf) else leaf for leaf in leaves])


def _flat_signature(args):
    """The key of positional tensor arguments only (the common case, without a pytree
    flatten), or (None, None) when some argument is something else."""
    storages = []
    keys = []
    for x in args:
        if type(x) is not Tensor:
            return None, None
        st = x._storage
        for index, seen in enumerate(storages):
            if seen is st:
                break
        else:
            index = len(storages)
            storages.append(st)
        keys.append((index, x._layout, x._dtype, st.device, st._buffer.shape))
    return ("flat", tuple(keys), precision.mode()), storages


def _short(leaf_key):
    if leaf_key[0] == "T":
        _, index, layout, dtype, device, _ = leaf_key
        return (f"tensor of shape {layout.shape}, strides {layout.strides}, offset "
                f"{layout.offset}, {dtype} on {device}, storage #{index}")
    return repr(leaf_key[1:])


def _as_full(key):
    """A flat-tensor key in the general key's form (for describing changes)."""
    if key[0] != "flat":
        return key
    return ("positional tensors", tuple(("T",) + k[:1] + k[1:] for k in key[1]), (), key[2])


def _modes(mode):
    """``precision.mode()`` in words: precision, autocast regions, default float dtype."""
    precision_, autocast, default_float = mode
    return f"precision {precision_!r}, autocast {autocast}, default float {default_float}"


def _describe_change(old, new):
    """Which part of the signature changed since the previous compilation."""
    if old is None:
        return "first call"
    if old == new:
        return "a storage the function closed over or kept is gone"
    if old[-1] != new[-1]:
        return ("the matmul precision, autocast state or default float dtype changed "
                f"({_modes(old[-1])} -> {_modes(new[-1])})")
    if old[0] == "flat" or new[0] == "flat":
        old, new = _as_full(old), _as_full(new)
    if old[0] != new[0]:
        return f"the arguments' structure changed ({old[0]} -> {new[0]})"
    for i, (a, b) in enumerate(zip(old[1], new[1])):
        if a != b:
            return f"flat argument {i} changed ({_short(a)} -> {_short(b)})"
    return f"static arguments changed ({old[2]} -> {new[2]})"


_WARM_UP = (
    "the first call created tensors that stay (optimizer state, .grad): traced once more "
    "so that later calls read them"
)


class _Entry:
    """One compiled signature: where its inputs come from and where its outputs go.

    ``provisional``: the first trace of a signature created tensors that outlive
    the call (an optimizer's lazily made state, ``.grad``). Later calls may read
    them instead of making them again (Python ran only once), so the second call
    traces again, once.
    """

    def __init__(self):
        self.provisional = False
        self.consts = []
        self.written = []
        self.kept = []
        self.held = []  # storages made and kept whose values the trace knows: not outputs
        self.watched = []  # the tensors over packed gradients (jit_gradients): abandoned as one dies
        self.strong = None  # live() taken while the trace held everything, for the first call
        self.returned = []
        self.treedef = None
        self.program = None
        self.jaxpr = None  # the traced program (after _hold_constants and the output order)
        self.n_constvars = 0
        self.by_donation = {}
        self.large = []  # (output position, shape, dtype) of large written or kept buffers
        self.refs = []
        self.written_sorted = ()
        self.unordered = set()  # written inputs XLA would copy if donated (_unordered_reads)
        self.recent = None  # the Jitted's _RecentPrograms
        self.single = False  # the function returns one leaf
        self.guards = ()  # (weak reference to a module, its training flag at trace time)

    def guards_hold(self):
        """Whether every module read while tracing is still in the same training mode."""
        for ref, training in self.guards:
            module = ref()
            if module is None or module.__dict__["_training"] is not training:
                return False
        return True

    def abandon(self):
        """Never run again (:mod:`arraykit.core.gradient_writers`): the next call traces.
        One assignment, so that a :meth:`live` running meanwhile sees the entry either
        whole or gone."""
        self.refs_in_order = [_gone]

    def first_live(self):
        """:meth:`live` for the call that traced the entry: what the trace read is still
        held by it, even storages the function let go of (``opt.step(); opt.zero_grad()``
        reads the gradients it then drops); later calls then trace again."""
        alive, self.strong = self.strong, None
        return alive if alive is not None else self.live()

    def live(self):
        """``(constant inputs, kept storages)`` of a call: the storages closed over (a
        :class:`_Value` for each constant that is not a storage's buffer) and those
        made and kept; None when one of them (or one held) is gone, or the entry was
        abandoned."""
        alive = list(map(_call, self.refs_in_order))
        if None in alive:
            return None
        n = self.n_inputs
        return alive[:n], alive[n:self.n_live]

    def finish(self):
        """Precompute what every call needs (after tracing filled the fields)."""
        input_refs = [ref if kind == "storage" else _Value(ref).ref for kind, ref in self.consts]
        self.refs_in_order = input_refs + self.kept + self.held
        self.n_inputs = len(input_refs)
        self.n_live = len(input_refs) + len(self.kept)
        self.written_sorted = tuple(sorted(set(self.written)))
        self.single = self.treedef == _ONE_LEAF and len(self.returned) == 1
        self.locks = None

    def compiled(self, donate, bufs, required=()):
        """The :class:`_Program` of this entry for the donated input positions ``donate``
        (``required``: those the caller gave up with ``donate_argnums``)."""
        program = self.by_donation.get(donate)
        if program is None:
            program = self.by_donation[donate] = _Program(self, donate, bufs, required)
        return program


class _Value:
    """A constant input of a program that is no storage's buffer, shaped like a
    storage for the call path (``_buffer``)."""

    __slots__ = ("_buffer",)

    def __init__(self, value):
        self._buffer = value

    def ref(self):
        """Itself, as a weak reference to a live storage would return it."""
        return self


class _RecentPrograms:
    """The executables a :class:`Jitted` compiled most recently, by lowered program,
    and the count of its XLA compilations.

    A signature traced again often gives the very program it gave before: the second
    call of a training step, traced once more because its first call created the
    gradients and optimizer state (see :class:`_Entry`), lowers to the same text.
    That program is then not compiled again. It is not even lowered again when its
    jaxpr equals one compiled before for the same inputs (:meth:`reuse`, by
    :func:`arraykit.core.jaxpr_equality.same_jaxpr`). At most ``LIMIT`` are kept.
    """

    LIMIT = 8

    def __init__(self, name, max_compiles):
        self._programs = collections.OrderedDict()
        self._by_jaxpr = collections.deque(maxlen=self.LIMIT)  # (jaxpr, inputs, executable)
        self.name = name
        self.max_compiles = max_compiles
        self.count = 0
        self.reason = None  # why the latest trace happened
        self.last_reason = None  # why the latest compilation happened

    def reuse(self, jaxpr, inputs):
        """An executable compiled before from a jaxpr equal to ``jaxpr`` for the same
        ``inputs`` (what the program's arguments, donation and configuration are), or
        None."""
        for seen, seen_inputs, compiled in self._by_jaxpr:
            if seen_inputs == inputs and same_jaxpr(seen, jaxpr):
                return compiled
        return None

    def remember(self, jaxpr, inputs, compiled):
        """Keep ``compiled`` as the executable of ``jaxpr`` for ``inputs`` (see :meth:`reuse`)."""
        self._by_jaxpr.append((jaxpr, inputs, compiled))

    def get(self, lowered, donated, devices):
        """The executable of ``lowered`` with inputs ``donated`` on ``devices``, compiled
        (through :mod:`arraykit.kernels.compilation_cache`) unless one was kept."""
        text = lowered.as_text()
        key = (hashlib.sha256(text.encode()).digest(), donated,
               tuple(sorted(d.id for d in devices)))
        compiled = self._programs.get(key)
        if compiled is None:
            if self.max_compiles is not None and self.count >= self.max_compiles:
                raise RuntimeError(
                    f"jit({self.name}) would compile a {self.count + 1}th time, above "
                    f"max_compiles={self.max_compiles}: {self.reason}"
                )
            compiled = self._programs[key] = compilation_cache.compile(lowered, donated, devices)
            self.count += 1
            self.last_reason = self.reason
            while len(self._programs) > self.LIMIT:
                self._programs.popitem(last=False)
        else:
            self._programs.move_to_end(key)
        return compiled


class _Program:
    """An entry's program compiled once, for one set of donated inputs.

    On the CPU it donates the inputs at ``donate`` except those XLA would copy first:
    XLA writes a donated input's new value into its buffer only when every other read
    of the old value is ordered before the write by data dependencies; otherwise it
    copies the old value at the start of the program (a weight read by both the
    forward and the input-gradient matmul and updated by the optimizer: a full copy
    per step). Not donating those inputs costs the same memory (old and new buffer
    coexist either way) and saves the copy. The entry's jaxpr shows which inputs those
    are (:func:`_unordered_reads`). Small ones (:mod:`arraykit.core.packing`) are
    donated all the same: their copy costs less than a new buffer and the old one's
    release. The ``required`` ones (``donate_argnums``: the
    caller gave them up) are donated whatever it costs. Should XLA still copy some
    donated input, the copy stays: a second compilation would cost more than it saves
    in the first steps of a training loop, which is where it would be paid.

    On other devices every input at ``donate`` is donated, as ``jax.jit`` users donate
    their state: there the copy runs on the device, while a new output buffer and the
    release of the old one cost the host, which bounds small steps on a GPU
    (``benchmarks/profile_step.py --only small40-jit`` shows it).

    On the CPU the large written or kept outputs that no donated input aliases
    (``needs``) are written into buffers the program takes as extra donated inputs and
    ignores: pooled buffers of dead storages (:mod:`arraykit.core.buffer_pool`), so XLA
    writes into memory that is already mapped instead of fresh pages, or new ones when
    the pool has none (the first calls). Other devices' allocators reuse memory
    themselves.
    """

    def __init__(self, entry, donate, bufs, required):
        devices = next((b.sharding.device_set for b in bufs if isinstance(b, jax.Array)),
                       (jax.devices()[0],))
        on_cpu = all(d.platform == "cpu" for d in devices)
        if on_cpu:
            donate = tuple(i for i in donate if i not in entry.unordered or i in required
                           or _nbytes(bufs[i]) <= packing.max_bytes("cpu"))
        pooled = len(devices) == 1 and on_cpu
        aliased = {k for k, i in enumerate(entry.written) if i in donate}
        self.needs = [item for item in entry.large if item[0] not in aliased] if pooled else []
        self.donate = donate
        self.device = next(iter(devices))
        program = entry.program
        n = len(bufs)
        if self.needs:

            def program(*args, run=entry.program):
                return run(*args[:n])

        extra = tuple(range(n, n + len(self.needs)))
        # keep_unused: the HLO's parameter numbers stay the input positions (see
        # _copied_parameters), and the output buffers, which the program never reads, stay
        sharding = jax.sharding.SingleDeviceSharding(self.device)
        recycled = [jax.ShapeDtypeStruct(shape, dtype, sharding=sharding)
                    for _, shape, dtype in self.needs]
        inputs = (entry.n_constvars, tuple(map(_input_type, bufs)), tuple(self.needs),
                  donate + extra, tuple(sorted(d.id for d in devices)), jax_config_context())
        compiled = entry.recent.reuse(entry.jaxpr, inputs)
        if compiled is None:
            jitted = jax.jit(program, donate_argnums=donate + extra, keep_unused=True)
            lowered = jitted.lower(*bufs, *recycled)
            compiled = entry.recent.get(lowered, donate + extra, devices)
            entry.recent.remember(entry.jaxpr, inputs, compiled)
        self.executable = self.call = compiled

    def run(self, bufs):
        """Run on the input buffers ``bufs`` (with output buffers for ``needs``)."""
        if self.needs:
            outs = self.call(*bufs, *self.output_buffers())
        else:
            outs = self.call(*bufs)
        if self.call is self.executable:  # called once: JAX made its C++ call path
            self.call = fast_call(self.executable)
        return outs

    def output_buffers(self):
        """One buffer per output in ``needs``: from the pool, else new."""
        device = self.device
        buffers = []
        for _, shape, dtype in self.needs:
            buf = buffer_pool.take(shape, dtype, device)
            buffers.append(_new_buffer(shape, dtype, device) if buf is None else buf)
        return buffers


def _input_type(buf):
    """What a program's lowering reads of an input buffer: its type, shape, dtype,
    weak type and sharding."""
    aval = getattr(buf, "aval", None)
    return (type(buf), buf.shape, buf.dtype, getattr(aval, "weak_type", False),
            getattr(buf, "sharding", None))


def _new_buffer(shape, dtype, device):
    """A new buffer of ``shape`` and ``dtype`` on ``device``, made without compiling
    anything (its values are never read)."""
    return jax.device_put(np.empty(shape, dtype), device, may_alias=False)


def _unordered_reads(jaxpr, written):
    """Positions among ``written`` (program input positions, in the order constvars
    then invars; input ``written[k]`` is updated into output ``k``) whose old value
    some operation reads that the update does not depend on.

    XLA writes a donated input's new value into its buffer only when every read of
    the old value is ordered before the write by data dependencies; otherwise it
    copies the input first. This finds those inputs from the jaxpr's data flow
    before anything is compiled, with nested ``jit`` calls inlined (as XLA inlines
    them: one backward kernel computing a weight's gradient and its input's gradient
    does not order the latter before the weight's update) and a value renamed by
    a reshape, transpose, slice or broadcast counted as the value itself (XLA folds
    those into the operation that reads them)."""
    nodes, inputs, outputs = _data_flow(jaxpr)
    producer = {}
    readers = {}
    for index, (reads, writes) in enumerate(nodes):
        for value in reads:
            readers.setdefault(value, []).append(index)
        for value in writes:
            producer[value] = index
    unordered = set()
    for k, position in enumerate(written):
        old, new = inputs[position], outputs[k]
        if old == new:
            continue
        if old in outputs:  # the old value leaves the program too
            unordered.add(position)
            continue
        ancestors = _ancestors(nodes, producer, new)
        if any(r not in ancestors for r in readers.get(old, ())):
            unordered.add(position)
    return unordered


# Primitives whose result XLA reads from the operand's buffer (folded into the reader):
# the strided reads of arraykit's kernels (arraykit.kernels.strided) are made of them.
_RENAMING = frozenset(("reshape", "transpose", "squeeze", "expand_dims", "broadcast_in_dim",
                       "slice", "dynamic_slice", "rev", "copy", "copy_p"))
_INLINED = frozenset(("jit", "pjit", "closed_call"))


def _data_flow(jaxpr):
    """``(nodes, inputs, outputs)``: the operations of ``jaxpr`` with nested calls
    inlined, each ``(values read, values written)``, where a value is a number and a
    renamed value keeps its operand's number; the numbers of the inputs (constvars,
    then invars) and of the outputs (None for a literal)."""
    nodes = []
    counter = [0]

    def fresh():
        counter[0] += 1
        return counter[0]

    def walk(jaxpr, env):
        def value(var):
            return None if isinstance(var, _Literal) else env[var]

        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            reads = [value(v) for v in eqn.invars]
            if name in _RENAMING or (name == "convert_element_type"
                                     and eqn.invars[0].aval.dtype == eqn.outvars[0].aval.dtype):
                env[eqn.outvars[0]] = reads[0] if reads[0] is not None else fresh()
                nodes.append(([r for r in reads[1:] if r is not None], []))
            elif name in _INLINED and "jaxpr" in eqn.params:
                inner = eqn.params["jaxpr"]
                consts = getattr(inner, "consts", ())
                inner = getattr(inner, "jaxpr", inner)
                inner_env = {var: fresh() for var in inner.constvars[:len(consts)]}
                for var, outer in zip(inner.invars, reads):
                    inner_env[var] = outer if outer is not None else fresh()
                for var, out in zip(eqn.outvars, walk(inner, inner_env)):
                    env[var] = out if out is not None else fresh()
            else:
                writes = [fresh() for _ in eqn.outvars]
                env.update(zip(eqn.outvars, writes))
                nodes.append(([r for r in reads if r is not None], writes))
        return [value(v) for v in jaxpr.outvars]

    env = {var: fresh() for var in list(jaxpr.constvars) + list(jaxpr.invars)}
    inputs = [env[var] for var in list(jaxpr.constvars) + list(jaxpr.invars)]
    outputs = walk(jaxpr, env)
    return nodes, inputs, outputs


def _ancestors(nodes, producer, value):
    """Indices of the nodes ``value`` depends on, its producer included."""
    seen = set()
    stack = [producer[value]] if value in producer else []
    while stack:
        index = stack.pop()
        if index in seen:
            continue
        seen.add(index)
        stack.extend(producer[v] for v in nodes[index][0] if v in producer)
    return seen


def _nbytes(buf):
    return math.prod(buf.shape) * np.dtype(buf.dtype).itemsize


_PARAMETER = re.compile(r"^\s*(%[\w.\-]+) = .* parameter\((\d+)\)", re.M)
_COPY = re.compile(r" copy\((%[\w.\-]+)\)")


def _copied_parameters(hlo_text):
    """Entry parameters that a compiled HLO module copies, by parameter number."""
    entry = hlo_text[hlo_text.find("\nENTRY"):]
    numbers = {name: int(number) for name, number in _PARAMETER.findall(entry)}
    return {numbers[name] for name in _COPY.findall(entry) if name in numbers}


class Jitted:
    """A function compiled by :func:`jit`; call it like the function.

    ``compile_count`` counts XLA compilations, ``trace_count`` traces,
    ``last_compile_reason`` says why the latest compilation happened, ``max_compiles``
    (None: no cap) bounds compilations.
    """

    def __init__(self, fn, static_argnums, static_argnames, donate_argnums, max_compiles):
        self.fn = fn
        self.donate_argnums = tuple(donate_argnums)
        self.static_argnums = tuple(sorted(static_argnums))
        self.static_argnames = tuple(static_argnames)
        self.trace_count = 0
        self._entries = {}
        self._variants = {}  # key -> entries traced in other training modes
        self._last_key = None
        self._recent = _RecentPrograms(getattr(fn, "__name__", repr(fn)), max_compiles)
        self._special = bool(self.static_argnums or self.static_argnames or self.donate_argnums)
        functools.update_wrapper(self, fn)

    @property
    def compile_count(self):
        """The number of XLA compilations of this function's programs."""
        return self._recent.count

    @property
    def last_compile_reason(self):
        """Why the latest compilation happened (None before the first)."""
        return self._recent.last_reason

    @property
    def max_compiles(self):
        """The bound on :attr:`compile_count` (None: no bound); a call that would
        compile beyond it raises ``RuntimeError``."""
        return self._recent.max_compiles

    def _split(self, args, kwargs):
        static = tuple(args[i] for i in self.static_argnums if i < len(args))
        static += tuple((k, kwargs[k]) for k in self.static_argnames if k in kwargs)
        dynamic = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
        named = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return static, dynamic, named

    def _call_fn(self, static, dynamic, named):
        args = list(dynamic)
        for n, i in enumerate(self.static_argnums):
            args.insert(i, static[n])
        names = dict(static[len(self.static_argnums):])
        return self.fn(*args, **named, **names)

    def __call__(self, *args, **kwargs):
        token = _x64_on(True)  # x64.scoped, inlined
        try:
            # positional tensors, a cached entry, no arraykit.jit trace in progress
            if not kwargs and not self._special and S._trace is None:
                key, arg_storages = _flat_signature(args)
                entry = self._entries.get(key)
                if (entry is not None and not entry.provisional
                        and (not entry.guards or entry.guards_hold())):
                    live = entry.live()
                    if live is not None:
                        return _run(entry, live, arg_storages)
            return self._call(args, kwargs)
        finally:
            _x64_restore(token)

    def _call(self, args, kwargs):
        if self.static_argnums or self.static_argnames:
            static, dynamic, named = self._split(args, kwargs)
            try:
                hash(static)
            except TypeError:
                raise TypeError(f"jit: static arguments must be hashable, got {static!r}") from None
        else:
            static, dynamic, named = (), args, kwargs
        if S.tracing_here():  # called by a function this thread traces: part of its program
            return self._call_fn(static, dynamic, named)
        key, arg_storages = (None, None) if named or static else _flat_signature(dynamic)
        arrays = ()
        if key is None:
            key, arg_storages, arrays = _signature((dynamic, named), static)
        entry = self._entries.get(key)
        reason = None
        if entry is not None and entry.guards and not entry.guards_hold():
            entry = self._variant(key)
            reason = "a module's training mode changed (train()/eval())"
        live = None if entry is None or entry.provisional else entry.live()
        if live is None:
            warm_up = entry is not None and entry.provisional and entry.live() is not None
            entry = self._trace(key, static, dynamic, named, arg_storages, arrays,
                                _WARM_UP if warm_up else reason)
            entry.provisional = not warm_up and bool(entry.kept or entry.held)
            live = entry.first_live()
        donated = self._donated(args, arg_storages) if self.donate_argnums else ()
        return _run(entry, live, arg_storages, donated, arrays)

    def _variant(self, key):
        """The entry of ``key`` traced in the modules' current training modes, if any."""
        for entry in self._variants.get(key, ()):
            if entry.guards_hold() and entry.live() is not None:
                self._entries[key] = entry
                return entry
        return None

    def _donated(self, args, arg_storages):
        """Storages of the ``donate_argnums`` arguments: their buffers go to the call."""
        if not self.donate_argnums:
            return ()
        ids = set()
        for i in self.donate_argnums:
            leaves = jax.tree_util.tree_leaves(args[i], is_leaf=lambda x: isinstance(x, Tensor))
            ids.update(id(x._storage) for x in leaves if isinstance(x, Tensor))
        return tuple(k for k, st in enumerate(arg_storages) if id(st) in ids)

    def _trace(self, key, static, dynamic, named, arg_storages, arrays, reason=None):
        self._recent.reason = reason or _describe_change(self._last_key, key)

        def call(*traced_arrays):
            args, kwargs = _with_arrays((dynamic, named), traced_arrays)
            return self._call_fn(static, args, kwargs)

        with _TRACE_LOCK:
            entry = _trace(call, arg_storages, arrays)
        entry.recent = self._recent
        self.trace_count += 1
        self._last_key = key
        self._entries[key] = entry
        modes = [(ref(), training) for ref, training in entry.guards]
        variants = self._variants.setdefault(key, [])
        variants[:] = [e for e in variants if [(ref(), t) for ref, t in e.guards] != modes]
        variants.append(entry)
        return entry


def _trace(call, arg_storages, arrays=()):
    """Trace ``call(*arrays)`` once over the argument storages and array arguments (the
    program's inputs after the storages' buffers); returns its :class:`_Entry`."""
    entry = _Entry()
    plan = {}
    n_storages = len(arg_storages)

    def traced(*bufs):
        trace = _Trace()
        S.set_trace(trace)
        try:
            entered = {}
            for st, buf in zip(arg_storages, bufs):
                trace.save(st)
                st._buffer = entered[id(st)] = buf
                st._host = None
            result = call(*bufs[n_storages:])
            leaves, tree = jax.tree_util.tree_flatten(result, is_leaf=lambda x: isinstance(x, Tensor))
            del result
            returned = [_describe_returned(x) for x in leaves]
            del leaves
            _forget_graphs(trace)
            saved = {key: st for key, (st, *_) in trace.saved.items()}
            written = [
                st for key, st in saved.items()
                if st._buffer is not entered.get(key, trace.saved[key][1])
            ]
            kept = _still_alive(trace)
            plan["leaves"] = [trace.gradients[id(st)] for st in kept if id(st) in trace.gradients]
            kept, plan["views"] = jit_gradients.pack(
                kept, trace.gradients, {item[1] for item in returned if item[0] == "T"})
            outs = [st._buffer for st in written] + [st._buffer for st in kept]
            plan["stored"] = [(b.shape, b.dtype) for b in outs]
            kept_ids = {id(st): k for k, st in enumerate(kept)}
            extra = []
            spec = []
            for item in returned:
                if item[0] == "T":
                    _, key, buf, layout, dtype, device = item
                    if key in saved:
                        spec.append(("view", saved[key], layout, dtype))
                    elif key in kept_ids:
                        spec.append(("kept", kept_ids[key], layout, dtype))
                    else:
                        nbytes = math.prod(buf.shape) * dtype.itemsize
                        spec.append(("new", len(extra), layout, dtype, device, nbytes))
                        extra.append(buf)
                elif item[0] == "A":
                    spec.append(("array", len(extra)))
                    extra.append(item[1])
                else:
                    spec.append(("static", item[1]))
            plan.update(trace=trace, written=written, kept=kept, spec=spec, tree=tree)
            return outs + extra
        finally:
            S.set_trace(None)
            _forget_graphs(trace)
            trace.restore()

    with _older_objects_frozen():
        traced_call = jax.jit(traced).trace(*[_abstract(st._buffer) for st in arg_storages],
                                            *map(_abstract, arrays))
    closed = traced_call.jaxpr
    # Constants reach the jaxpr two ways: as constvars (closed.consts) and, in JAX's
    # newer scheme, hoisted to leading inputs (traced_call._consts).
    constants = list(closed.consts) + list(traced_call._consts)
    trace = plan["trace"]
    for const in constants:
        st = trace.closed.get(id(const))
        if st is not None and trace.saved[id(st)][1] is const:
            entry.consts.append(("storage", weakref.ref(st)))
        else:
            entry.consts.append(("value", const))
    jaxpr = _hold_constants(closed.jaxpr, entry.consts, plan)
    jaxpr = _written_in_input_order(jaxpr, entry, arg_storages, plan)
    entry.program = _program(jaxpr, len(closed.consts))
    entry.jaxpr, entry.n_constvars = jaxpr, len(closed.consts)
    entry.unordered = _unordered_reads(jaxpr, entry.written)
    entry.kept = [weakref.ref(st) for st in plan["kept"]]
    entry.held = [weakref.ref(st) for st in plan["held"]]
    leaves, views = jit_gradients.written_buckets(plan["written"])
    plan["leaves"] += leaves
    abandon = _abandoning(entry)
    entry.watched = [weakref.ref(t, abandon) for t in plan["views"] + views]
    entry.treedef = plan["tree"]
    entry.guards = tuple(trace.guards.values())
    entry.returned = [_place(item, entry, arg_storages) for item in plan["spec"]]
    entry.large = [
        (k, shape, dtype) for k, (shape, dtype) in enumerate(plan["stored"])
        if math.prod(shape) * dtype.itemsize >= buffer_pool.MIN_BYTES
    ]
    entry.finish()
    entry.strong = entry.live()
    gradient_writers.register(plan["leaves"], entry)
    return entry


def _abandoning(entry):
    """A weak-reference callback that abandons ``entry`` (held weakly): a packed
    gradient's tensor died, as a gradient's own storage would have."""
    entry_ref = weakref.ref(entry)

    def abandon(_):
        alive = entry_ref()
        if alive is not None:
            alive.abandon()

    return abandon


def _program(jaxpr, n_constvars):
    """The traced program as a function of its constants and inputs, in the order
    constvars, then the jaxpr's inputs (hoisted constants, then arguments)."""

    def program(*bufs):
        return eval_jaxpr(jaxpr, bufs[:n_constvars], *bufs[n_constvars:])

    return program


def _describe_returned(x):
    """A returned leaf without a reference to its storage (so temporaries can die)."""
    if isinstance(x, Tensor):
        st = x._storage
        return ("T", id(st), st._buffer, x._layout, x._dtype, st.device)
    if isinstance(x, jax.Array):
        return ("A", x)
    return ("P", x)


def _forget_graphs(trace):
    """Drop the autograd graph built during the trace from the storages it created
    (its nodes hold traced residuals); ``backward`` inside the trace already ran."""
    for ref in trace.made:
        st = ref()
        if st is not None and id(st) not in trace.saved:
            st.node = None


@contextlib.contextmanager
def _older_objects_frozen():
    """Let garbage collections during a trace look only at objects made during it.

    :func:`_still_alive` collects garbage to tell the storages the trace made and
    something still holds from those only a reference cycle keeps. A full collection
    walks every object of the process (hundreds of thousands once JAX is imported:
    a good part of a small step's first call); objects older than the trace cannot
    keep its storages alive, unless they became garbage during it together with
    them, which at worst makes a dead storage look kept (an extra output, and a new
    trace once it is collected). So the older ones are frozen (``gc.freeze``) for the
    trace and thawed afterwards, into the oldest generation. Left alone when
    something else froze objects."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _gone():
    """A weak reference whose object died: an entry given it is never live again."""
    return None


def _still_alive(trace):
    """Storages created during the trace that something outside it still holds."""
    gc.collect()
    alive = {}
    for ref in trace.made:
        st = ref()
        if st is not None and id(st) not in trace.saved:
            alive[id(st)] = st
    return list(alive.values())


_PLACING = frozenset(("device_put", "copy", "copy_p"))


def _constant(jaxpr, consts, var):
    """``(k, value)`` when ``var`` is the constant ``consts[k]`` of the program (as in
    :class:`_Entry`) placed or copied (``device_put``, ``copy``), ``value`` computed
    now; else None."""
    inputs = {v: k for k, v in enumerate(list(jaxpr.constvars) + list(jaxpr.invars))}
    producers = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}
    chain = []
    while not isinstance(var, _Literal) and var not in inputs:
        eqn = producers.get(var)
        if eqn is None or eqn.primitive.name not in _PLACING or len(eqn.invars) != 1:
            return None
        chain.append(eqn)
        var = eqn.invars[0]
    if isinstance(var, _Literal) or consts[inputs[var]][0] != "value":
        return None
    k = inputs[var]
    value = consts[k][1]
    for eqn in reversed(chain):
        (value,) = eqn.primitive.bind(value, **eqn.params)
    return k, value


def _hold_constants(jaxpr, consts, plan):
    """Storages made during the trace and kept whose value is a constant of the
    program (created from host values, never written: an optimizer's hyperparameters)
    become ``plan["held"]``: their buffer is set to that constant, and the program
    leaves out their outputs, which only passed the constant through, and reads the
    constant from the storage. The first
    program of a training step then has the outputs of the one its second call
    traces (see :class:`_Entry`), and the second is not compiled again
    (:class:`_RecentPrograms`). Returns the jaxpr without those outputs."""
    n_written = len(plan["written"])
    returned = {item[1] for item in plan["spec"] if item[0] == "kept"}
    kept, held, dropped, renumber = [], [], set(), {}
    for j, st in enumerate(plan["kept"]):
        found = None if j in returned else _constant(jaxpr, consts, jaxpr.outvars[n_written + j])
        if found is not None:
            k, st._buffer = found
            consts[k] = ("storage", weakref.ref(st))  # read from it, as the next trace does
            held.append(st)
            dropped.add(n_written + j)
        else:
            renumber[j] = len(kept)
            kept.append(st)
    if not dropped:
        plan["held"] = []
        return jaxpr
    plan.update(kept=kept, held=held)
    plan["stored"] = [item for k, item in enumerate(plan["stored"]) if k not in dropped]
    plan["spec"] = [(kind, renumber[index], *rest) if kind == "kept" else (kind, index, *rest)
                    for kind, index, *rest in plan["spec"]]
    return jaxpr.replace(outvars=[v for k, v in enumerate(jaxpr.outvars) if k not in dropped])


def _written_in_input_order(jaxpr, entry, arg_storages, plan):
    """Set ``entry.written`` (input positions of the written storages) with the written
    outputs ordered by input position, so two traces that write the same inputs give
    the same program whatever order they first touched them in (a training step's
    first trace makes the optimizer state that its second reads)."""
    positions = [_position(st, entry, arg_storages) for st in plan["written"]]
    order = sorted(range(len(positions)), key=positions.__getitem__)
    entry.written = [positions[k] for k in order]
    if order == list(range(len(order))):
        return jaxpr
    n = len(order)
    plan["written"] = [plan["written"][k] for k in order]
    plan["stored"] = [plan["stored"][k] for k in order] + plan["stored"][n:]
    outvars = list(jaxpr.outvars)
    return jaxpr.replace(outvars=[outvars[k] for k in order] + outvars[n:])


def _position(st, entry, arg_storages):
    """Index of ``st`` among the program's inputs (constants first, then arguments)."""
    for k, (kind, ref) in enumerate(entry.consts):
        if kind == "storage" and ref() is st:
            return k
    for k, s in enumerate(arg_storages):
        if s is st:
            return len(entry.consts) + k
    raise AssertionError("a written storage is neither an argument nor closed over")


def _place(item, entry, arg_storages):
    if item[0] != "view":
        return item
    _, st, layout, dtype = item
    return ("input", _position(st, entry, arg_storages), layout, dtype)


def _run(entry, live, arg_storages, donated=(), arrays=()):
    """Call the compiled program on the current buffers and write its results back.

    ``live``: ``entry.live()``. ``donated`` are positions among the argument storages
    whose buffers the caller gave up (``donate_argnums``): XLA may reuse them, and the
    tensors over them are not readable afterwards unless the call wrote them.
    """
    inputs, kept = live
    inputs += arg_storages
    locks = _locks(entry, inputs, kept, arg_storages)
    for lock in locks:
        lock.acquire()
    try:
        donation = _donation(entry, inputs, arg_storages, donated)  # before bufs holds them
        bufs = list(map(_BUFFER, inputs))
        bufs += arrays
        targets = list(map(inputs.__getitem__, entry.written)) + kept
        if not concrete_arrays(bufs):
            outs = _run_special(entry, bufs, donation, donated)
            _refuse_leaks(targets, outs)
        else:
            required = tuple(len(entry.consts) + k for k in donated)
            outs = entry.compiled(donation, bufs, required).run(bufs)
        del bufs
        released = _install_all(entry, targets, outs)
        for k in donated:  # handed over: its values are gone, as if overwritten
            arg_storages[k].version += 1
    finally:
        for lock in reversed(locks):
            lock.release()
    _recycle_released(released)
    n_outs = len(targets)
    results = []
    for item in entry.returned:
        kind = item[0]
        if kind == "new":
            _, k, layout, dtype, device, nbytes = item
            storage = Storage(outs[n_outs + k], dtype, device, False, nbytes)
            results.append(Tensor._make(storage, layout, dtype))
        elif kind == "input":
            _, k, layout, dtype = item
            results.append(Tensor._make(inputs[k], layout, dtype))
        elif kind == "kept":
            _, k, layout, dtype = item
            results.append(Tensor._make(kept[k], layout, dtype))
        elif kind == "array":
            results.append(outs[n_outs + item[1]])
        else:
            results.append(item[1])
    return results[0] if entry.single else jax.tree_util.tree_unflatten(entry.treedef, results)


_call = operator.call
_BUFFER = operator.attrgetter("_buffer")
_x64_on = x64._swap
_x64_restore = x64._restore
def _run_special(entry, bufs, donation, donated):
    """Run with NumPy memory among the buffers (it enters as a private copy: the program
    may run after the call returns, while NumPy writes the memory) or inside an outer
    trace (the program is inlined)."""
    traced = False
    for k, b in enumerate(bufs):
        if type(b) is np.ndarray:
            bufs[k] = b.copy()
        elif isinstance(b, jax.core.Tracer):
            traced = True
    if traced:
        return jax.jit(entry.program)(*bufs)
    required = tuple(len(entry.consts) + k for k in donated)
    return entry.compiled(donation, bufs, required).run(bufs)


def _refuse_leaks(targets, outs):
    """Raise, before anything is written, when the call runs inside a JAX trace
    (``jax.jit``, ``jax.grad``) and would leave a traced value in a storage created
    outside it (a tensor the function closes over, a kept ``.grad``), as an eager
    in-place write there does."""
    for st, out in zip(targets, outs):
        if isinstance(out, jax.core.Tracer) and not isinstance(st._buffer, jax.core.Tracer):
            raise S._leak_error(st)


def _locks(entry, inputs, kept, arg_storages):
    """The locks of the call's storages, in the global order of ``launch.Locks`` (by the
    storages' ids). Those of the storages the entry reads or keeps are sorted once."""
    fixed = entry.locks
    if fixed is None:
        storages = sorted({id(st): st for st in inputs[:len(entry.consts)] + kept
                           if type(st) is Storage}.values(), key=id)
        fixed = entry.locks = ([id(st) for st in storages], [st.lock for st in storages])
    ids, locks = fixed
    if not arg_storages:
        return locks
    ids, locks = list(ids), list(locks)
    for st in arg_storages:
        at = bisect.bisect(ids, id(st))
        ids.insert(at, id(st))
        locks.insert(at, st.lock)
    return locks


def _donation(entry, inputs, arg_storages, donated):
    """Input positions whose buffers the call may reuse: the storages it writes and the
    ``donate_argnums`` ones, unless something else holds their buffer (an export still
    alive, memory arraykit does not own: see ``Storage.donatable``). Called before
    the caller holds references to the buffers."""
    if not donated:
        for i in entry.written:
            st = inputs[i]
            if (st.shared or st.exported) and not st.donatable():
                break
        else:
            return entry.written_sorted
    donate = {i for i in entry.written if inputs[i].donatable()}
    offset = len(entry.consts)
    donate.update(offset + k for k in donated if arg_storages[k].donatable())
    return tuple(sorted(donate))


def _install_all(entry, targets, outs):
    """Make ``outs`` the buffers of ``targets`` (the written, then the kept storages);
    returns ``(old buffer, device, bytes)`` of the replaced large private buffers, for
    the buffer pool."""
    released = []
    for k, _, _ in entry.large:
        st = targets[k]
        pooled = getattr(st.device, "platform", None) == "cpu"  # the pool serves CPU buffers
        if pooled and not st.shared and type(st._buffer) is not np.ndarray:
            nbytes = st._counted
            if nbytes is None:  # a storage made during the trace (kept): counted by no one
                nbytes = math.prod(st._buffer.shape) * st.dtype.itemsize
            released.append((st._buffer, st.device, nbytes))
    for st, buf in zip(targets, outs):
        old = st._buffer
        if type(old) is np.ndarray:  # NumPy memory (arraykit.core.host_memory) stays in place
            st.version += 1
            old[...] = np.asarray(buf).reshape(old.shape)
            continue
        st._buffer = buf
        st._host = None
        st.version += 1
        st.shared = st.exported = False
    return released


def _recycle_released(released):
    """Offer the large replaced buffers to the pool (donated ones are deleted and skipped)."""
    while released:
        item = released.pop()
        if item is not None:
            buf, device, nbytes = item
            del item
            buffer_pool.recycle(buf, device, nbytes)


def _abstract(buf):
    return jax.ShapeDtypeStruct(buf.shape, buf.dtype, sharding=getattr(buf, "sharding", None))


def jit(fn=None, *, static_argnums=(), static_argnames=(), donate_argnums=(), max_compiles=None):
    """Compile ``fn`` (a function of tensors, pytrees of tensors, modules, optimizers)
    into one XLA program per signature; see the module docstring. Usable as
    ``@jit`` or ``@jit(static_argnums=...)``. Storages the call writes are always
    donated; ``donate_argnums`` also hands over the buffers of arguments it only
    reads (they are not readable afterwards, as with ``jax.jit``)."""
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    if isinstance(donate_argnums, int):
        donate_argnums = (donate_argnums,)

    def wrap(f):
        return Jitted(f, static_argnums, static_argnames, donate_argnums, max_compiles)

    return wrap if fn is None else wrap(fn)
