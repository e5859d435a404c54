"""The :class:`Optimizer` base: parameter groups, per-parameter state, PyTorch's
``state_dict`` format.

All state that changes lives in tensors written in place (DESIGN.md, "State that
changes is a storage"): the per-parameter state of a parameter is one storage whose
views are the ``state`` entries (``step`` a 0-d view, the moments views of the
parameter's shape), so one kernel updates all of it; the hyperparameters an update
uses are one small float64 tensor per parameter group (and device), rewritten only
when a group's values change. Parameters are written in place under ``no_grad``.
An ``arraykit.jit`` of a step thus sees only mutated storages. A parameter group is
a dict that rewrites its hyperparameter tensors as soon as an option is assigned
(``group['lr'] = 0.01``, as schedulers do), so a change made between jitted calls
reaches the compiled step without recompiling it.
"""

from __future__ import annotations

import collections
import itertools
import threading

import jax
import jax.numpy as jnp
import numpy as np

from ..api.creation import asarray
from ..autograd.mode import enable_grad, no_grad
from ..core import dtypes as D
from ..core import layout as L
from ..core.devices import fitted
from ..core.storage import made_as_inputs, tracing_here
from ..kernels.foreach import apply_inplace_many
from ..kernels.launch import apply_inplace
from ..tensors.tensor_type import Tensor

__all__ = ["Optimizer"]


_QUEUES = threading.local()  # .current: (optimizer, the list its _update's writes go to)


def _run_batched(writes):
    """Run the queued writes of a group's parameters (one list per parameter, in the
    order its update made them): the k-th writes of all parameters together, one
    program per kernel, when no storage one parameter's writes write is read or
    written by another parameter's writes; else each parameter's in turn."""
    if not _independent(writes):
        for queue in writes:
            for fn, target, operands, static in queue:
                apply_inplace(fn, target, operands, static)
        return
    for stage in itertools.zip_longest(*writes):
        batches = {}
        for write in stage:
            if write is not None:
                fn, target, operands, static = write
                targets, operand_lists = batches.setdefault((fn, static), ([], []))
                targets.append(target)
                operand_lists.append(operands)
        for (fn, static), (targets, operand_lists) in batches.items():
            apply_inplace_many(fn, targets, operand_lists, static)


def _independent(writes):
    """Whether no parameter's queued writes write a storage that another parameter's
    writes read or write."""
    owner = {}
    for i, queue in enumerate(writes):
        for _, target, _, _ in queue:
            if owner.setdefault(id(target._storage), i) != i:
                return False
    for i, queue in enumerate(writes):
        for _, _, operands, _ in queue:
            for x in operands:
                if isinstance(x, Tensor) and owner.get(id(x._storage), i) != i:
                    return False
    return True


def state_dtype(p):
    """The dtype of a parameter's optimizer state: the parameter's (float32 for
    16-bit parameters, which would lose a step count above 2048)."""
    return D.promote(p.dtype, D.float32)


def whole(t):
    """The flat 1-D tensor over all of ``t``'s storage."""
    st = t._storage
    return Tensor._make(st, L.Layout((st.size(),), (1,), 0), st.dtype)


def check_hyperparameter(value, label, valid=None):
    """Raise PyTorch's ``ValueError("Invalid <label>: <value>")`` unless ``valid`` (by
    default: ``value >= 0``)."""
    if not (value >= 0.0 if valid is None else valid):
        raise ValueError(f"Invalid {label}: {value}")


def check_adam_hyperparameters(lr, betas, eps, weight_decay):
    """PyTorch's checks of the Adam family's common options, in its order."""
    check_hyperparameter(lr, "learning rate")
    check_hyperparameter(eps, "epsilon value")
    for i, beta in enumerate(betas):
        check_hyperparameter(beta, f"beta parameter at index {i}", 0.0 <= beta < 1.0)
    check_hyperparameter(weight_decay, "weight_decay value")


def adam_hyper_values(group):
    """The Adam family's hyperparameter floats: ``(lr, beta1, beta2, eps, weight_decay)``."""
    beta1, beta2 = group["betas"]
    return tuple(map(float, (group["lr"], beta1, beta2, group["eps"], group["weight_decay"])))


def refuse_unsupported(optimizer, **flags):
    """Raise ``NotImplementedError`` naming all of ``flags`` when any of them is set."""
    if any(flags.values()):
        *head, last = flags
        raise NotImplementedError(f"{optimizer}: {', '.join(head)} and {last} are not supported")


def gradient_term(grad, p, weight_decay, maximize):
    """The direction an update follows: ``grad`` (negated when ``maximize``) plus
    ``weight_decay · p`` when ``p`` is given (L2 weight decay); a kernel helper."""
    g = -grad if maximize else grad
    if p is not None:
        g = g + weight_decay.astype(g.dtype) * p
    return g


def adam_direction_and_average(grad, p, flat, start, n, h, maximize):
    """The Adam family's update direction ``g`` (L2 weight decay ``h[4]`` when the
    parameter ``p`` is given) and ``exp_avg`` (``flat[start:start + n]``) moved toward it
    by ``1 - beta1`` (``h[1]``); a kernel helper."""
    g = gradient_term(grad, p, h[4], maximize).reshape(-1).astype(flat.dtype)
    return g, lerp(flat[start:start + n], g, (1 - h[1]).astype(flat.dtype))


def lerp(start, end, weight):
    """PyTorch's ``lerp`` (its two-sided formula); a kernel helper."""
    return jnp.where(weight < 0.5, start + weight * (end - start), end - (end - start) * (1 - weight))


def segments(flat, sizes):
    """The consecutive pieces of the 1-D ``flat`` with the given ``sizes``."""
    pieces, start = [], 0
    for size in sizes:
        pieces.append(flat[start:start + size])
        start += size
    return pieces


def slot_sizes(slots, n):
    """The sizes of a state's entries laid out flat: 1 for a scalar, ``n`` otherwise."""
    return tuple(1 if scalar else n for _, scalar in slots)


def _rewrite(t, values):
    """Write the floats ``values`` into the hyperparameter tensor ``t`` (all of its
    storage). Outside a trace its buffer is replaced by one made from the host: no
    kernel to compile when a scheduler first changes a learning rate, no wait."""
    st = t._storage
    if tracing_here() or type(st._buffer) is np.ndarray or isinstance(st._buffer, jax.core.Tracer):
        t.copy_(np.array(values))
        return
    new = asarray(np.array(values), device=t.device)._storage._buffer
    if new.sharding != st._buffer.sharding:  # placed over devices otherwise than t
        t.copy_(np.array(values))
        return
    st.overwrite(new)


class ParamGroup(dict):
    """A parameter group: a dict whose option assignments reach the optimizer's
    hyperparameter tensors at once (see the module docstring)."""

    def __init__(self, values, on_change):
        super().__init__(values)
        self._on_change = on_change

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        if key != "params":
            self._on_change(self)


class Optimizer:
    """Base class of the optimizers: ``Optimizer(params, defaults)``, where ``params``
    is an iterable of tensors or of dicts (parameter groups with their own options)."""

    _real_floating_only = False  # whether complex parameters are refused

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = collections.defaultdict(dict)
        self.param_groups = []
        self._hyper = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                f"but got a {type(params).__name__}"
            )
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        """Add a group (a dict with ``'params'`` and optional options; missing options
        take the optimizer's defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group, params=params)
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(ParamGroup(group, self._refresh))
        self._hyper.append([None, {}])

        if self._real_floating_only:
            for p in params:
                if p.dtype.kind != "float":
                    self.param_groups.pop()
                    self._hyper.pop()
                    raise TypeError(f"{type(self).__name__} supports real floating-point parameters, got {p.dtype}")

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of every parameter: to None (default) or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    with no_grad():
                        p.grad.zero_()

    # ------------------------------------------------------------------ state

    def _slots(self, group):
        """``(name, is_scalar)`` of a parameter's state entries under ``group``'s options."""
        raise NotImplementedError

    def _new_state(self, p, group):
        """Zeroed state for ``p``: one storage; ``state`` entries are views of it."""
        slots = self._slots(group)
        if not slots:
            return {}
        sizes = slot_sizes(slots, p.numel())
        # a parameter split over devices keeps a state its split cannot lay out
        # (Adam's odd length, a 0-d step) replicated on the same devices
        # made from host zeros: a transfer, not a kernel compiled for each state size
        flat = asarray(np.zeros(sum(sizes), state_dtype(p).np),
                       device=fitted(p.device, (sum(sizes),)))
        state = {}
        for (name, scalar), view in zip(slots, segments(flat, sizes)):
            state[name] = view.reshape(()) if scalar else view.view(p.shape)
        self._initialize(state, group)
        return state

    def _initialize(self, state, group):
        """Give a new, zeroed state its initial values (in place); zeros by default."""

    def _loaded_state(self, p, group, saved, index):
        """The state of ``p`` restored from the saved entries ``saved`` of parameter ``index``."""
        state = self._new_state(p, group)
        unknown = set(saved) - set(state)
        if unknown:
            raise KeyError(
                f"state of parameter {index} has entries {sorted(unknown)} that "
                f"{type(self).__name__} with these options does not use"
            )
        for name, value in saved.items():
            state[name].copy_(np.asarray(value).astype(state[name].dtype.np))
        return state

    def _refresh(self, group):
        """Rewrite ``group``'s hyperparameter tensors when its options changed."""
        for index, candidate in enumerate(self.param_groups):
            if candidate is group:
                self._hyperparameters(index, group, None)

    def _hyperparameters(self, index, group, device):
        """The group's hyperparameter tensor on ``device`` (rewritten in place when the
        group's values changed since the last step)."""
        cache = self._hyper[index]
        values = self._hyper_values(group)
        tensors = cache[1]
        if values != cache[0]:
            cache[0] = values
            with no_grad():
                for t in tensors.values():
                    _rewrite(t, values)
        if device is None:
            return None
        t = tensors.get(device)
        if t is None:
            with made_as_inputs():  # under arraykit.jit: an input of the program
                t = asarray(np.array(values), device=fitted(device, (len(values),)))
            tensors[device] = t
        return t

    def _hyper_values(self, group):
        """The floats of ``group``'s options that the update reads, in the tensor's order."""
        raise NotImplementedError

    def _update(self, p, grad, state, hyper, group, fresh):
        """Update ``p`` and its ``state`` (just zeroed when ``fresh``) in place from ``grad``;
        subclasses define it."""
        raise NotImplementedError

    def step(self, closure=None):
        """One optimization step over every parameter with a gradient; ``closure``
        (re-evaluating the loss, with gradients on) is called first and its value returned."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for index, group in enumerate(self.param_groups):
                writes = []  # per parameter, the writes its _update queued (see _write)
                batched = self._batched and group.get("foreach") is not False
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    hyper = self._hyperparameters(index, group, p.device)
                    state = self.state.get(p)
                    fresh = state is None
                    if fresh:
                        with made_as_inputs():  # under arraykit.jit: inputs of the program
                            state = self._new_state(p, group)
                        if state:
                            self.state[p] = state
                    if not batched:
                        self._update(p, grad, state, hyper, group, fresh)
                        continue
                    queue = []
                    outer = getattr(_QUEUES, "current", None)
                    _QUEUES.current = (self, queue)
                    try:
                        self._update(p, grad, state, hyper, group, fresh)
                    finally:
                        _QUEUES.current = outer
                    writes.append(queue)
                _run_batched(writes)
        return loss

    _batched = False  # set by subclasses whose _update only writes through _write and
    # reads nothing else (a value computed at once would be read before the queued writes
    # of other parameters ran); a group's ``foreach=False`` asks for one write at a time

    def _write(self, fn, target, operands, static=()):
        """An in-place write of :meth:`_update`: queued during :meth:`step` when the
        class is ``_batched`` and the group's ``foreach`` is not False (the same write
        of every parameter of the group then runs as one program,
        :func:`arraykit.kernels.foreach.apply_inplace_many`), else run now."""
        current = getattr(_QUEUES, "current", None)
        if current is None or current[0] is not self:
            apply_inplace(fn, target, operands, static)
        else:
            current[1].append((fn, target, tuple(operands), static))

    def state_dict(self):
        """``{'state': {index: {name: tensor}}, 'param_groups': [{options, 'params': [index]}]}``
        (PyTorch's format; parameters are numbered across groups in order)."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if s and id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restore options and state saved by :meth:`state_dict` (this library's or
        PyTorch's); values are copied into new state storages."""
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"loaded state dict has a different number of parameter groups "
                f"({len(saved_groups)} against {len(self.param_groups)})"
            )
        for saved, group in zip(saved_groups, self.param_groups):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size of "
                    f"optimizer's group ({len(saved['params'])} against {len(group['params'])})"
                )
        new_groups = []
        by_index = {}
        for saved, group in zip(saved_groups, self.param_groups):
            new = ParamGroup(dict(saved, params=group["params"]), self._refresh)
            new_groups.append(new)
            for i, p in zip(saved["params"], group["params"]):
                by_index[i] = (p, new)
        self.param_groups = new_groups
        for group in new_groups:
            self._refresh(group)
        self.state = collections.defaultdict(dict)
        with no_grad():
            for i, saved in state_dict["state"].items():
                p, group = by_index[int(i)]
                self.state[p] = self._loaded_state(p, group, saved, i)

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)
