"""The autograd side of :class:`~arraykit.Tensor`: ``requires_grad``, ``grad``,
``backward``, ``retain_grad``, ``register_hook``, ``detach``, ``is_leaf``, ``grad_fn``.

Whether a tensor requires grad is a property of its storage's current version
(``storage.node``): every view of a storage whose values depend on a tensor that
requires grad requires grad too, and an in-place write of such values into a
storage makes all its views require grad, as in PyTorch. A detached tensor
(``detach()``) shares its storage but its reads carry no gradient.
"""

from __future__ import annotations

import weakref

import jax
import jax.numpy as jnp
import numpy as np

from ..core import dtypes as D
from ..core import layout as L
from ..core import x64
from ..core.devices import Placement
from ..core.gradient_writers import replaced
from ..core.storage import Storage, gradient_made
from ..kernels.export import dense_values
from . import graph as G
from .mode import enable_grad, no_grad


def _version(t):
    """The autograd version ``t`` reads, or None (no grad, or detached)."""
    if getattr(t, "_detached", False):
        return None
    return t._storage.node


def tensor_maker(tensor_type, device):
    """A function turning a jax buffer into a contiguous tensor on ``device``."""

    def make(buf):
        dtype = D.from_numpy(buf.dtype)
        return tensor_type._make(Storage(buf, dtype, device), L.contiguous(buf.shape), dtype)

    return make


class GradFn:
    """The node that produced a tensor (``tensor.grad_fn``): ``name()`` as in PyTorch."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def name(self):
        """The node's name, e.g. ``MultiplyBackward0``."""
        return self._name

    def __repr__(self):
        return f"<{self._name}>"


def install(tensor_type):
    """Attach the autograd methods and properties to ``tensor_type``."""

    def requires_grad(self):
        """Whether gradients flow to this tensor (its storage's values depend on a leaf)."""
        return _version(self) is not None

    def set_requires_grad(self, flag):
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
        """Make this tensor a leaf that requires grad (or stop a leaf requiring it); returns self."""
        st = self._storage
        version = _version(self)
        if requires_grad:
            if not G.differentiable(self._dtype):
                raise RuntimeError(
                    "only Tensors of floating point and complex dtype can require gradients, "
                    f"got {self._dtype}"
                )
            if version is None:
                if st.node is not None:
                    raise RuntimeError(
                        "requires_grad_() on a detached tensor whose storage has autograd "
                        "history would replace that history (a storage has one autograd "
                        "version); use .detach().clone().requires_grad_()"
                    )
                self._detached = False
                st.node = G.Leaf(self._layout, st._buffer.shape, self._dtype)
            return self
        if version is not None and not isinstance(version, G.Leaf):
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()"
            )
        if isinstance(version, G.Leaf):
            replaced(version)  # its .grad is no longer reachable: programs writing it stop
        st.node = None
        return self

    def is_leaf(self):
        """True for tensors that do not require grad and for the tensors that were made to."""
        version = _version(self)
        return version is None or (isinstance(version, G.Leaf) and version.layout == self._layout)

    def grad_fn(self):
        """The node that produced this tensor (None for leaves)."""
        version = _version(self)
        if version is None or is_leaf(self):
            return None
        if isinstance(version, G.Leaf):
            return GradFn("AsStridedBackward0")
        return GradFn(version.kernel.name)

    def grad(self):
        """The gradient accumulated by ``backward`` (leaves, and tensors that ``retain_grad``)."""
        version = _version(self)
        if isinstance(version, G.Leaf) and version.layout == self._layout:
            return version.grad
        return getattr(self, "_grad", None)

    def set_grad(self, value):
        if value is not None:
            if not isinstance(value, tensor_type):
                raise TypeError(f"assigned grad must be a Tensor or None, got {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"assigned grad has shape {value.shape}, which does not match the "
                    f"tensor's shape {self.shape}"
                )
        version = _version(self)
        if isinstance(version, G.Leaf) and version.layout == self._layout:
            if value is not version.grad:
                replaced(version)
                if value is not None:
                    gradient_made(version, value._storage)
            version.grad = value
        else:
            self._grad = value

    def retain_grad(self):
        """Keep this non-leaf tensor's gradient in ``.grad`` during ``backward``."""
        version = _version(self)
        if version is None:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if isinstance(version, G.Leaf) and version.layout == self._layout:
            return
        self._retains_grad = True
        _watch(version, self, None)

    def retains_grad(self):
        """Whether ``retain_grad()`` was called on this non-leaf tensor."""
        return getattr(self, "_retains_grad", False)

    def register_hook(self, hook):
        """Call ``hook(grad)`` with this tensor's gradient during backward; a tensor it
        returns replaces the gradient. Returns a handle whose ``remove()`` unregisters it."""
        version = _version(self)
        if version is None:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if isinstance(version, G.Leaf) and version.layout == self._layout:
            version.hooks.append(hook)
            return _Handle(version.hooks, hook)
        return _Handle(_watch(version, self, hook), hook)

    def detach(self):
        """A tensor over the same storage and layout whose reads carry no gradient."""
        out = tensor_type._make(self._storage, self._layout, self._dtype)
        out._detached = True
        return out

    def detach_(self):
        """Detach this tensor in place (its reads carry no gradient from now on)."""
        self._detached = True
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into the ``.grad`` of every leaf it depends on.

        With ``create_graph=True`` the backward pass is itself recorded, so the
        gradients can be differentiated again (``retain_graph`` then defaults to True).
        """
        if retain_graph is None:
            retain_graph = create_graph
        if inputs is not None:
            if isinstance(inputs, tensor_type):
                inputs = [inputs]
            grads = grad_of([self], inputs, [gradient], retain_graph, create_graph, True)
            with enable_grad() if create_graph else no_grad():
                for leaf, g in zip(inputs, grads):
                    if g is not None:
                        leaf.grad = g if leaf.grad is None else leaf.grad + g
            return
        backward_all([self], [gradient], retain_graph, create_graph)

    tensor_type.requires_grad = property(requires_grad, set_requires_grad)
    tensor_type.requires_grad_ = requires_grad_
    tensor_type.is_leaf = property(is_leaf)
    tensor_type.grad_fn = property(grad_fn)
    tensor_type.grad = property(grad, set_grad)
    tensor_type.retain_grad = retain_grad
    tensor_type.retains_grad = property(retains_grad)
    tensor_type.register_hook = register_hook
    tensor_type.detach = detach
    tensor_type.detach_ = detach_
    tensor_type.backward = backward


class _Handle:
    """Removes a registered hook."""

    __slots__ = ("hooks", "hook")

    def __init__(self, hooks, hook):
        self.hooks = hooks
        self.hook = hook

    def remove(self):
        """Unregister the hook."""
        if self.hook in self.hooks:
            self.hooks.remove(self.hook)


def _watch(version, tensor, hook):
    """Register ``tensor`` (and ``hook``) on ``version``; returns the hook list."""
    if version.watchers is None:
        version.watchers = []
    for ref, layout, hooks in version.watchers:
        if ref() is tensor:
            if hook is not None:
                hooks.append(hook)
            return hooks
    hooks = [] if hook is None else [hook]
    version.watchers.append((weakref.ref(tensor), tensor._layout, hooks))
    return hooks


def _check_differentiable_output(t, i):
    if _version(t) is None:
        raise RuntimeError(
            f"element {i} of tensors does not require grad and does not have a grad_fn"
        )


@x64.scoped
def _roots(outputs, gradients, ops=None):
    """(version, storage cotangent) per output; with ``ops`` (create_graph) the
    cotangents are tensors, ``gradients`` given as tensors included (they may require grad)."""
    roots = []
    for i, (t, g) in enumerate(zip(outputs, gradients)):
        _check_differentiable_output(t, i)
        if g is None:
            if t.numel() != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (output {i} has "
                    f"shape {t.shape}); pass gradient= with that shape"
                )
            device = _device_of(t)
            if device is None:  # in a trace, or spread over several devices
                values = jnp.ones(t.shape, t._dtype.np, device=device)
            else:  # one element, moved from the host: nothing to compile
                values = jax.device_put(np.ones(t.shape, t._dtype.np), device)
            if ops is not None:
                values = ops.make(values)
        else:
            if tuple(g.shape) != t.shape:
                raise RuntimeError(
                    f"mismatch in shape: grad_output[{i}] has a shape of {tuple(g.shape)} and "
                    f"output[{i}] has a shape of {t.shape}"
                )
            if isinstance(g, type(t)):
                _check_gradient_device(g, t, i)
            else:
                g = jnp.asarray(g, device=_device_of(t))
            if ops is None:
                values = dense_values(g) if isinstance(g, type(t)) else g
            else:
                values = g if isinstance(g, type(t)) else ops.make(g)
        version = _version(t)
        spread = G.spread if ops is None else ops.spread
        roots.append((version, spread(values, version.shape, version.dtype, t._layout)))
    return roots


def _check_gradient_device(g, t, i):
    """PyTorch's error for a gradient on another device than its output."""
    if not isinstance(g.device, Placement) and not isinstance(t.device, Placement) and g.device != t.device:
        raise RuntimeError(f"invalid gradient at index {i} - expected device {t.device} but got {g.device}")


def _device_of(t):
    """Where ``t``'s gradient is made: ``t``'s device, which need not be the default
    device; None (JAX's choice) inside a trace or for a tensor spread over several."""
    if isinstance(t._storage._buffer, jax.core.Tracer) or isinstance(t.device, Placement):
        return None
    return t.device


def _ops(make, create_graph):
    return G.Tensors(make) if create_graph else G.Arrays(make)


def backward_all(outputs, gradients, retain_graph, create_graph):
    """Backward from ``outputs``; with ``create_graph`` the pass is recorded (grad mode on)."""
    tensor_type = type(outputs[0])
    make = tensor_maker(tensor_type, outputs[0].device)
    ops = _ops(make, create_graph)
    with enable_grad() if create_graph else no_grad():
        roots = _roots(outputs, gradients, ops if create_graph else None)
        G.run_backward(roots, bool(retain_graph), ops, tensor_type=tensor_type)


@x64.scoped
def grad_of(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused):
    """``arraykit.autograd.grad``: gradients of ``outputs`` with respect to ``inputs``
    (with ``create_graph``, recorded so that they can be differentiated again)."""
    tensor_type = type(outputs[0])
    make = tensor_maker(tensor_type, outputs[0].device)
    ops = _ops(make, create_graph)
    wanted = []
    for i, t in enumerate(inputs):
        version = _version(t)
        if version is None:
            raise RuntimeError(f"element {i} of the inputs does not require grad")
        wanted.append(version)
    with enable_grad() if create_graph else no_grad():
        roots = _roots(outputs, grad_outputs, ops if create_graph else None)
        cts = G.run_backward(roots, bool(retain_graph), ops, wanted, tensor_type)
    grads = []
    hooked = {}  # id(leaf) -> the leaf tensor's gradient after its hooks (run once)
    for i, (t, version, ct) in enumerate(zip(inputs, wanted, cts)):
        if ct is None:
            if not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {i}, shape {t.shape}) appears to "
                    "not have been used in the graph. Set allow_unused=True if this is the "
                    "desired behavior"
                )
            grads.append(None)
            continue
        with enable_grad() if create_graph else no_grad():
            grad = ops.gather(ct, version.shape, t._layout)
            if t.is_leaf and version.hooks:  # the leaf's own hooks see it, as in PyTorch
                if id(version) not in hooked:
                    hooked[id(version)] = G.leaf_hooked(version, grad, ops)
                grad = hooked[id(version)]
        grads.append(grad if create_graph else make(grad))
    return tuple(grads)
