"""``arraykit.nn.Parameter``: a leaf tensor that a :class:`~arraykit.nn.Module` registers.

As in PyTorch (whose ``Parameter`` check is ``_is_param``), a parameter is an
ordinary :class:`~arraykit.Tensor` marked as one: ``Parameter(data)`` returns a
tensor of type ``Tensor`` and ``isinstance(p, Parameter)`` tests the mark. A real
subclass would be a different JAX pytree node type, so a pytree of parameters and
the pytree of their gradients (plain tensors) would not have the same structure,
which optax's ``apply_updates(params, updates)`` requires.
"""

from __future__ import annotations

import weakref

from ..autograd.mode import no_grad
from ..tensors.tensor_type import register_mark, require_tensor

# id -> weak reference of every live parameter (a WeakSet would compare tensors with
# ``==``, which is elementwise).
_PARAMETERS = {}


def _forget(key):
    return lambda ref: _PARAMETERS.pop(key, None)


class _ParameterMeta(type):
    def __instancecheck__(cls, instance):
        ref = _PARAMETERS.get(id(instance))
        return ref is not None and ref() is instance


class Parameter(metaclass=_ParameterMeta):
    """``Parameter(data, requires_grad=True)``: ``data`` as a leaf tensor marked as a
    parameter, sharing ``data``'s storage (a copy when ``data`` has autograd history)."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from ..api.creation import empty

            data = empty((0,))
        p = require_tensor(data, "Parameter").detach()
        if p._storage.node is not None:
            with no_grad():
                p = p.clone()
        p._detached = False
        p.requires_grad_(requires_grad)
        _PARAMETERS[id(p)] = weakref.ref(p, _forget(id(p)))
        return p


register_mark(
    "parameter", lambda t: isinstance(t, Parameter),
    lambda t: Parameter(t, requires_grad=t.requires_grad),
)


def set_data(p, new):
    """Make tensor ``p`` (same object) refer to ``new``'s values, keeping ``requires_grad``
    (PyTorch's ``p.data = new``); its gradient is dropped."""
    requires_grad = p.requires_grad
    if requires_grad:
        p.requires_grad_(False)
    new = new.detach()
    if new._storage.node is not None:
        with no_grad():
            new = new.clone()
    p._storage, p._layout, p._dtype = new._storage, new._layout, new._dtype
    p._detached = False
    if requires_grad:
        p.requires_grad_(True)
    return p
