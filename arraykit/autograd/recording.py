"""Recording kernels for autograd: the launcher's hook (see ``register_recorder``).

A kernel is recorded when gradient mode is on and one of the storages it reads
carries an autograd version (``storage.node``) through a tensor that is not
detached. The kernel then runs as its forward-with-VJP (one jitted call) and its
results' storages get the new node's versions. An in-place kernel on such a
storage makes the storage's next version; writing in place into a leaf that
requires grad is an error, as in PyTorch.
"""

from __future__ import annotations

from ..core.jax_compat import trace_state_clean

from ..core.storage import Storage
from ..kernels.launch import call_or_nested, output_specs
from . import graph as G
from .mode import is_grad_enabled


def _differentiated(x, layout):
    """Whether operand ``x`` (read through ``layout``; None when passed by value) is differentiated."""
    return layout is not None and x._storage.node is not None and not getattr(x, "_detached", False)


def _collect(x, diff, arg, mask, parents, storages, args):
    """Note kernel operand ``x`` (passed as ``arg``): whether it is differentiated and,
    if it is, the version it has and its storage."""
    mask.append(diff)
    args.append(arg)
    if diff:
        parents.append(x._storage.node)
        storages.append(x._storage)


def _forward(entry, mask, fn):
    forward = entry.forwards.get(mask)
    if forward is None:
        forward = entry.forwards[mask] = G.Forward(entry.kernel, mask, node_name(fn),
                                                   lambda: entry.options,
                                                   inplace=entry.donating is not None,
                                                   cache_name=entry.name)
    return forward


def node_name(fn):
    """PyTorch-style node name of a kernel body: ``multiply`` -> ``MultiplyBackward0``."""
    words = fn.__name__.strip("_").split("_")
    return "".join(w[:1].upper() + w[1:] for w in words) + "Backward0"


class Recorder:
    """The hook :func:`arraykit.kernels.launch.register_recorder` installs."""

    def __init__(self, tensor_type):
        self.tensor = tensor_type

    def recording(self):
        """Whether kernels are recorded now (grad mode on in this thread)."""
        return is_grad_enabled()

    def apply(self, entry, fn, operands, layouts, bufs, offsets, device, multiple):
        """Run and record a reading kernel; None when nothing is differentiated."""
        if not is_grad_enabled():
            return None
        mask = [False]
        parents = []
        storages = []
        args = [offsets]
        for x, layout, buf in zip(operands, layouts, bufs):
            _collect(x, _differentiated(x, layout), buf if layout is None else x._storage,
                     mask, parents, storages, args)
        if not parents:
            return None
        forward = _forward(entry, tuple(mask), fn)
        outs, vjp = call_or_nested(forward.call, forward.nested, offsets, *bufs)
        node = G.make_node(forward, outs, vjp, parents, storages, args)
        made = []
        specs = entry.results or output_specs(entry, outs)
        for buf, (layout, dtype, nbytes), version in zip(outs, specs, node.outputs):
            st = Storage(buf, dtype, device, False, nbytes)
            if G.differentiable(dtype):
                st.node = version
            made.append(self.tensor._make(st, layout, dtype))
        if forward.outputs_read:
            node.save_outputs([t._storage for t in made])
        return made if multiple else made[0]

    def apply_inplace(self, entry, fn, target, operands, aliases, inputs, offsets):
        """Run and record an in-place kernel; False when it is not to be recorded.

        ``inputs`` are the buffers of the operands that do not alias the target
        (``aliases``); the caller holds the storages' locks.
        """
        if not is_grad_enabled() or getattr(target, "_detached", False):
            return False
        tst = target._storage
        version = tst.node
        if isinstance(version, G.Leaf):
            what = "a leaf Variable" if target._layout == version.layout else "a view of a leaf Variable"
            raise RuntimeError(
                f"{what} that requires grad is being used in an in-place operation "
                f"({node_name(fn)[:-len('Backward0')]} on a tensor of shape {target.shape}); "
                "use arraykit.no_grad() for updates that must not be recorded"
            )
        mask = [version is not None, False]
        parents = [version] if version is not None else []
        storages = [None] if version is not None else []  # the target is not a saved input
        args = [G.OVERWRITTEN, offsets]
        private = (x for x, same in zip(operands, aliases) if not same)
        for x in private:
            is_tensor = isinstance(x, self.tensor)
            _collect(x, is_tensor and _differentiated(x, x._layout),
                     x._storage if is_tensor else x, mask, parents, storages, args)
        if not parents:
            return False
        forward = _forward(entry, tuple(mask), fn)
        old = tst._buffer
        if forward.needed is None:
            forward.prepare([old, offsets, *inputs])
        donating = forward.donating
        if 0 in forward.needed:
            # the gradient is a function of the values the write replaces: keep them
            # (PyTorch keeps a copy of the original self) for backward with create_graph
            args[0] = G.Overwritten(old, version, tst.dtype, tst.device)
            donating = forward.call
        pulled = []

        def keeping_vjp(call):
            def run(old, *args):
                (new,), vjp = call(old, *args)
                pulled.append(vjp)
                return new

            return run

        try:
            tst.replace(keeping_vjp(forward.call), keeping_vjp(donating), offsets, *inputs)
        except ValueError:  # inside an outer JAX trace (see launch.call_or_nested)
            if trace_state_clean():
                raise
            tst.replace(keeping_vjp(forward.nested), keeping_vjp(forward.nested), offsets, *inputs)
        node = G.make_node(forward, (tst._buffer,), pulled[0], parents, storages, args)
        if forward.outputs_read:
            node.save_outputs([tst])
        tst.node = node.outputs[0]
        return True
