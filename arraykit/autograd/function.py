"""Custom differentiable operations: ``arraykit.autograd.Function``.

Subclass it with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``
and call ``MyFunction.apply(*args)``. Eagerly, ``forward`` runs without
recording and ``backward`` becomes the node's VJP in the autograd graph. Inside
a JAX transform (``arraykit.grad``, ``jax.grad``, ``jax.jit``: the tensors hold
tracers), ``apply`` lowers to ``jax.custom_vjp`` so JAX differentiates through
the user's ``backward``. Under ``arraykit.jit`` with eager autograd inside (a
``loss.backward()`` in a jitted step), the eager node is recorded as usual.
"""

from __future__ import annotations

import jax

from ..core import x64
from ..kernels.export import dense_values
from ..tensors.tensor_type import Tensor, is_traced
from . import graph as G
from .mode import enable_grad, is_grad_enabled, no_grad
from .tensor_grad import tensor_maker


class FunctionCtx:
    """The ``ctx`` of a Function: saved tensors and flags shared by forward and backward."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self._saved = ()
        self._versions = ()
        self.non_differentiable = set()

    def save_for_backward(self, *tensors):
        """Keep tensors for ``backward`` (checked against later in-place changes)."""
        self._saved = tensors
        self._versions = tuple(None if t is None else t._storage.version for t in tensors)

    @property
    def saved_tensors(self):
        """The tensors given to ``save_for_backward``; RuntimeError if one was modified in place."""
        for i, (t, version) in enumerate(zip(self._saved, self._versions)):
            if t is not None and t._storage.version != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: saved tensor {i} (shape {t.shape}) is at version "
                    f"{t._storage.version}; expected version {version} instead"
                )
        return self._saved

    def mark_non_differentiable(self, *outputs):
        """Declare outputs that carry no gradient."""
        self.non_differentiable.update(id(t) for t in outputs)


class CustomBackward:
    """The VJP of a recorded Function call, in the engine's storage terms."""

    __slots__ = ("cls", "ctx", "inputs", "outputs", "make")

    def __init__(self, cls, ctx, inputs, outputs, make):
        self.cls = cls
        self.ctx = ctx
        self.inputs = inputs
        self.outputs = outputs
        self.make = make

    def _user_grads(self, grads, mode):
        """(input, gradient) of the differentiated inputs from the user's backward,
        run with gradient recording set by the context manager ``mode``."""
        with mode():
            result = self.cls.backward(self.ctx, *grads)
        result = result if isinstance(result, tuple) else (result,)
        if len(result) != len(self.inputs):
            raise RuntimeError(
                f"function {self.cls.__name__}.backward returned {len(result)} gradients, "
                f"expected {len(self.inputs)} (one per input of forward)"
            )
        return [(x, g) for x, g in zip(self.inputs, result) if x is not None]

    def __call__(self, cts):
        grads = [
            self.make(G.gather(ct, out._storage._buffer.shape, out._layout))
            for out, ct in zip(self.outputs, cts)
        ]
        in_cts = []
        for x, g in self._user_grads(grads, no_grad):
            version = x._storage.node
            if g is None:
                in_cts.append(jax.numpy.zeros(version.shape, version.dtype.np))
            else:
                in_cts.append(G.spread(dense_values(g), version.shape, version.dtype, x._layout))
        return tuple(in_cts)

    def graph(self, cts, ops):
        """``create_graph``: the same with tensor cotangents (None where an output got
        none), the user's backward running with grad mode on, as in PyTorch."""
        grads = []
        for out, ct in zip(self.outputs, cts):
            if ct is None:
                ct = self.make(jax.numpy.zeros(out._storage._buffer.shape, out.dtype.np))
            grads.append(ops.gather(ct, out._storage._buffer.shape, out._layout))
        in_cts = []
        for x, g in self._user_grads(grads, enable_grad):
            version = x._storage.node
            if g is None:
                in_cts.append(self.make(jax.numpy.zeros(version.shape, version.dtype.np)))
                continue
            if not isinstance(g, Tensor):
                g = self.make(jax.numpy.asarray(dense_values(g)))
            in_cts.append(ops.spread(g, version.shape, version.dtype, x._layout))
        return tuple(in_cts)


class Function:
    """Base class of custom autograd operations (PyTorch's ``torch.autograd.Function``)."""

    @staticmethod
    def forward(ctx, *args):
        """Compute the outputs from the inputs (override)."""
        raise TypeError("subclasses of arraykit.autograd.Function must define forward")

    @staticmethod
    def backward(ctx, *grads):
        """Gradients of the inputs from the gradients of the outputs (override)."""
        raise TypeError("subclasses of arraykit.autograd.Function must define backward")

    @classmethod
    def apply(cls, *args):
        """Run the operation, recording it for backward when an input requires grad."""
        needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        recording = any(needs) and is_grad_enabled()
        tensors = [a for a in args if isinstance(a, Tensor)]
        if not recording and tensors and is_traced(*tensors):
            return _traced_apply(cls, args)
        ctx = FunctionCtx(needs)
        with no_grad():
            out = cls.forward(ctx, *args)
        return _record(cls, ctx, args, needs, out) if recording else out


def _call(backward, cts):
    """The ``pull`` of a Function node: its Python backward on the output cotangents."""
    return backward(cts)


def _record(cls, ctx, args, needs, out):
    outs = out if isinstance(out, tuple) else (out,)
    fresh = []
    for o in outs:
        if any(isinstance(a, Tensor) and a._storage is o._storage for a in args):
            o = o.clone()  # an output must own its storage to carry its own version
        fresh.append(o)
    inputs = [a if need else None for a, need in zip(args, needs)]
    make = tensor_maker(Tensor, fresh[0].device)
    backward = CustomBackward(cls, ctx, inputs, fresh, make)
    parents = [a._storage.node for a in inputs if a is not None]
    node = G.KernelNode(f"{cls.__name__}Backward", backward, _call, tuple(parents), ())
    node.outputs = tuple(
        G.Output(node, i, o._storage._buffer.shape, o.dtype) for i, o in enumerate(fresh)
    )
    for o, version in zip(fresh, node.outputs):
        if G.differentiable(o.dtype) and id(o) not in ctx.non_differentiable:
            o._storage.node = version
    return tuple(fresh) if isinstance(out, tuple) else fresh[0]


@x64.scoped
def _traced_apply(cls, args):
    """``apply`` inside a JAX trace: a ``jax.custom_vjp`` around forward and backward."""
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]

    def with_tensors(leaves):
        full = list(args)
        for i, leaf in zip(positions, leaves):
            full[i] = leaf
        return full

    @jax.custom_vjp
    def op(*leaves):
        ctx = FunctionCtx(tuple(True for _ in leaves))
        return cls.forward(ctx, *with_tensors(leaves))

    static_attrs = {}  # what forward stored on ctx besides tensors (options, dims)

    def op_fwd(*leaves):
        ctx = FunctionCtx(tuple(True for _ in leaves))
        out = cls.forward(ctx, *with_tensors(leaves))
        static_attrs.update(
            (k, v) for k, v in vars(ctx).items()
            if not k.startswith("_") and not isinstance(v, Tensor)
        )
        return out, (ctx._saved, leaves)

    def op_bwd(residual, grads):
        saved, leaves = residual
        ctx = FunctionCtx(tuple(True for _ in leaves))
        vars(ctx).update(static_attrs)
        ctx._saved = saved
        ctx._versions = tuple(None if t is None else t._storage.version for t in saved)
        grads = grads if isinstance(grads, tuple) else (grads,)
        result = cls.backward(ctx, *grads)
        result = result if isinstance(result, tuple) else (result,)
        picked = [result[i] for i in positions]
        return tuple(
            jax.tree.map(lambda leaf: leaf * 0, x) if g is None else g
            for x, g in zip(leaves, picked)
        )

    op.defvjp(op_fwd, op_bwd)
    return op(*(args[i] for i in positions))
