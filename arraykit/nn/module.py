"""``arraykit.nn.Module``: PyTorch's module container of parameters, buffers and submodules.

Assigning a :class:`~arraykit.nn.Parameter` or a ``Module`` to an attribute registers
it; ``state_dict`` keys are PyTorch's (``"0.weight"``, ``"encoder.bias"``).

Every module class is a JAX pytree node: its children are its own parameters and
buffers (in registration order) and then its submodules, so the leaves come in
``state_dict`` order; the auxiliary data is the module's class, the names and its
other attributes. ``jax.grad``, ``jax.tree.map`` and optax therefore take a model
as they take a dict of arrays; the modules they rebuild hold plain tensors.
"""

from __future__ import annotations

import collections
import contextvars
import itertools

import jax

from ..autograd.mode import no_grad
from ..core import dtypes as D
from ..core import storage as S
from ..tensors.tensor_type import Tensor
from .parameter import Parameter, set_data

__all__ = ["Module"]

_EXTRA_STATE = "_extra_state"  # PyTorch's state_dict key suffix of get_extra_state()
_PENDING = contextvars.ContextVar("arraykit_pending_state_dict_writes", default=None)


def _defer(write):
    """Run ``write`` now, or at the end of the running ``load_state_dict`` when it checks
    every entry before writing any."""
    pending = _PENDING.get()
    if pending is None:
        write()
    else:
        pending.append(write)


def _write(module, name, target, value, assign):
    """``module``'s parameter or buffer ``name`` (``target``) takes ``value``: copied in
    place, or with ``assign`` the checkpoint's tensor itself (a parameter stays one)."""
    def write():
        with no_grad():
            if not assign:
                target.copy_(value)
            elif name in module._parameters:
                module._parameters[name] = Parameter(
                    value if isinstance(value, Tensor) else _as_tensor(value),
                    requires_grad=target.requires_grad)
            else:
                module._buffers[name] = value if isinstance(value, Tensor) else _as_tensor(value)

    _defer(write)


def _as_tensor(value):
    from ..api.creation import asarray

    return asarray(value)


class _IncompatibleKeys(collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict(strict=False)`` did not match."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()


class Module:
    """Base class of every layer and model: subclasses call ``super().__init__()``,
    assign parameters, buffers and submodules as attributes and define ``forward``."""

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", {})

    @property
    def training(self):
        """Whether the module is in training mode (see :meth:`train`); an
        ``arraykit.jit`` program that read it is only reused in the same mode."""
        training = self.__dict__["_training"]
        trace = S._trace
        if trace is not None:
            trace.guard(self, training)
        return training

    @training.setter
    def training(self, mode):
        self.__dict__["_training"] = bool(mode)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        jax.tree_util.register_pytree_with_keys(cls, _flatten_with_keys, _unflatten, _flatten)

    # ------------------------------------------------------------------ registration

    def _registries(self, name):
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__() call (call super().__init__() first)"
            )
        return self._parameters, self._buffers, self._modules

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__ and not isinstance(value, (Module, Tensor)):
            object.__setattr__(self, name, value)
            return
        params, buffers, modules = self._registries(name)
        if isinstance(value, Parameter):
            self._forget(name)
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            self._forget(name)
            modules[name] = value
        elif name in params or name in modules:
            if value is not None:
                what = "parameter" if name in params else "child module"
                raise TypeError(
                    f"cannot assign {type(value).__name__} as {what} {name!r} "
                    f"(arraykit.nn.{'Parameter' if name in params else 'Module'} or None expected)"
                )
            (params if name in params else modules)[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign {type(value).__name__} as buffer {name!r} (Tensor or None expected)"
                )
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name):
        self.__dict__.pop(name, None)
        for registry in (self._parameters, self._buffers, self._modules):
            registry.pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def _check_name(self, name, what):
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string, got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f'{what} name can\'t be empty or contain ".", got: {name!r}')
        if hasattr(self, name) and name not in self._parameters and name not in self._buffers \
                and name not in self._modules:
            raise KeyError(f"attribute {name!r} already exists")

    def register_parameter(self, name, param):
        """Register ``param`` (a Parameter, or None) under ``name``."""
        self._registries(name)
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign {type(param).__name__} object to parameter {name!r} "
                "(arraykit.nn.Parameter or None required)"
            )
        self._forget(name)
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Register ``tensor`` (or None) as a buffer: state saved in ``state_dict``
        (unless ``persistent`` is false) and moved by ``to()``, but not a parameter."""
        self._registries(name)
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign {type(tensor).__name__} object to buffer {name!r} (Tensor or None required)")
        self._forget(name)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent_buffers.add(name)

    def add_module(self, name, module):
        """Register ``module`` (or None) as the submodule ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._registries(name)
        self._check_name(name, "module")
        self._forget(name)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        """The submodule at the dotted path ``target`` (``""`` is the module itself)."""
        module = self
        for part in target.split(".") if target else ():
            if part not in module._modules or module._modules[part] is None:
                raise AttributeError(f"{type(module).__name__} has no submodule {part!r} (in {target!r})")
            module = module._modules[part]
        return module

    # ------------------------------------------------------------------ iteration

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """``(dotted name, module)`` for this module and every submodule, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self):
        """This module and every submodule (each once)."""
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        """``(name, module)`` of the direct submodules (each once)."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        """The direct submodules."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry, prefix, recurse, remove_duplicate):
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        seen = set()
        for module_prefix, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, parameter)`` of every parameter (shared ones once)."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        """Every parameter (shared ones once), in ``state_dict`` order."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, buffer)`` of every buffer."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        """Every buffer."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ------------------------------------------------------------------ state

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """An ordered dict of every parameter and persistent buffer under PyTorch's dotted
        names (detached tensors sharing the values' storages, unless ``keep_vars``).

        Each module adds its own entries with ``_save_to_state_dict``, then its
        submodules', so a subclass that overrides that hook changes what is saved,
        as in PyTorch."""
        if destination is None:
            destination = collections.OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Put this module's own parameters, persistent buffers and extra state (not its
        submodules') into ``destination`` under ``prefix`` (PyTorch's hook)."""
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def get_extra_state(self):
        """The state to save beside the tensors (a subclass returns it; saved under
        ``"_extra_state"`` when it overrides this method, as in PyTorch)."""
        raise RuntimeError(
            f"{self._get_name()}.get_extra_state() was called but the module does not define "
            "it; override get_extra_state() and set_extra_state() to save extra state"
        )

    def set_extra_state(self, state):
        """Restore what :meth:`get_extra_state` returned (a subclass defines it)."""
        raise RuntimeError(
            f"{self._get_name()}.set_extra_state() was called but the module does not define "
            "it; override get_extra_state() and set_extra_state() to load extra state"
        )

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy the values of ``state_dict`` (tensors or arrays, e.g. from PyTorch) into
        this module's parameters and persistent buffers, in place (``assign=True``: the
        checkpoint's tensors become them, as in PyTorch).

        Each module reads its own entries with ``_load_from_state_dict`` (PyTorch's
        hook, which a subclass may override to rename or convert keys), then its
        submodules'. Shapes must match. With ``strict`` (the default), missing and
        unexpected keys raise RuntimeError; otherwise they are returned as
        ``(missing_keys, unexpected_keys)``. Nothing is written unless every entry
        fits: the hooks record their copies and they are made at the end.
        """
        missing, unexpected, errors = [], [], []
        state_dict = collections.OrderedDict(state_dict)
        pending = []
        token = _PENDING.set(pending)
        try:
            self._load_tree(state_dict, "", assign, missing, unexpected, errors)
        finally:
            _PENDING.reset(token)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {self._get_name()}:\n\t" + "\n\t".join(errors)
            )
        for write in pending:
            write()
        return _IncompatibleKeys(missing, unexpected)

    def _load_tree(self, state_dict, prefix, assign, missing, unexpected, errors):
        metadata = {"assign_to_params_buffers": True} if assign else {}
        self._load_from_state_dict(state_dict, prefix, metadata, True, missing, unexpected, errors)
        for name, child in self._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                own = {k: v for k, v in state_dict.items() if k.startswith(child_prefix)}
                child._load_tree(own, child_prefix, assign, missing, unexpected, errors)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Load this module's own parameters, persistent buffers and extra state from
        ``state_dict`` (keys under ``prefix``), PyTorch's hook and signature: missing
        keys, unexpected keys and errors are appended to the given lists. Under
        :meth:`load_state_dict` the writes wait until every module has been checked."""
        assign = local_metadata.get("assign_to_params_buffers", False)
        own = {name: t for name, t in itertools.chain(
            self._parameters.items(),
            ((n, b) for n, b in self._buffers.items() if n not in self._non_persistent_buffers),
        ) if t is not None}
        for name, target in own.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not hasattr(value, "shape"):
                error_msgs.append(f'While copying the parameter named "{key}", expected a tensor '
                                  f"or array from checkpoint but received {type(value)}")
                continue
            shape = tuple(value.shape)
            if shape != target.shape:
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {shape} from "
                    f"checkpoint, the shape in current model is {target.shape}."
                )
                continue
            _write(self, name, target, value, assign)
        extra = prefix + _EXTRA_STATE
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra in state_dict:
                _defer(lambda: self.set_extra_state(state_dict[extra]))
            elif strict:
                missing_keys.append(extra)
        elif strict and extra in state_dict:
            unexpected_keys.append(extra)
        if strict:
            for key in state_dict:
                if not key.startswith(prefix) or key == extra:
                    continue
                head = key[len(prefix):].split(".", 1)
                known = self._modules if len(head) > 1 else own
                if head[0] not in known:
                    unexpected_keys.append(key)

    # ------------------------------------------------------------------ modes and conversion

    def train(self, mode=True):
        """Set training mode (``mode``) on this module and every submodule; returns self."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {mode!r}")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self):
        """Set evaluation mode (``train(False)``); returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Make every parameter require grad (or not); returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset every parameter's gradient: to None (default) or to zeros in place."""
        for p in self.parameters():
            _zero_grad(p, set_to_none)

    def _apply(self, fn, recurse=True):
        """Replace every parameter's and buffer's values by ``fn(values)``: the
        submodules' through their own ``_apply`` (so an override sees the call, as in
        PyTorch), then this module's; parameters stay the same objects (their gradients
        are dropped)."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        with no_grad():
            for p in self._parameters.values():
                if p is not None:
                    new = fn(p)
                    if new is not p:
                        set_data(p, new)
            for name, b in self._buffers.items():
                if b is not None:
                    self._buffers[name] = fn(b)
        return self

    def to(self, *args, device=None, dtype=None, non_blocking=False):
        """``to(device)``, ``to(dtype)``, ``to(tensor)`` (its device and dtype) or
        ``to(device, dtype)``: converts parameters and buffers in place (a dtype applies
        to the floating-point ones only); returns self. A JAX sharding is a device too:
        ``model.to(NamedSharding(mesh, PartitionSpec()))`` replicates the model over a
        mesh for data parallelism (a single-device model meeting a sharded batch raises
        instead of being replicated implicitly: see docs/pytorch.md)."""
        for arg in args:
            if isinstance(arg, Tensor):
                device, dtype = arg.device, arg.dtype
            elif isinstance(arg, D.DType):
                dtype = arg
            elif not isinstance(arg, bool):  # PyTorch's positional non_blocking
                device = arg
        if dtype is not None and D.as_dtype(dtype).kind != "float":
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")
        return self._apply(
            lambda t: t.to(device=device, dtype=dtype if t.dtype.kind == "float" else None)
        )

    def cpu(self):
        """Move parameters and buffers to the CPU; returns self."""
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        """Move parameters and buffers to a GPU; returns self."""
        return self._apply(lambda t: t.cuda(device))

    def float(self):
        """Cast floating-point parameters and buffers to float32; returns self."""
        return self._apply(lambda t: t.float() if t.dtype.kind == "float" else t)

    def double(self):
        """Cast floating-point parameters and buffers to float64; returns self."""
        return self._apply(lambda t: t.double() if t.dtype.kind == "float" else t)

    def half(self):
        """Cast floating-point parameters and buffers to float16; returns self."""
        return self._apply(lambda t: t.half() if t.dtype.kind == "float" else t)

    def apply(self, fn):
        """Call ``fn`` on every submodule (children first) and then on self; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ calling and printing

    def forward(self, *args, **kwargs):
        """The computation; subclasses define it."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def extra_repr(self):
        """The text between the parentheses of this module's ``repr`` line."""
        return ""

    def _get_name(self):
        """The name ``repr`` prints for this module: its class's (PyTorch's hook)."""
        return type(self).__name__

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, module in self._modules.items():
            body = repr(module).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __dir__(self):
        return sorted(set(itertools.chain(
            super().__dir__(), self._parameters, self._buffers, self._modules)))


def _zero_grad(p, set_to_none):
    if p.grad is None:
        return
    if set_to_none:
        p.grad = None
    else:
        with no_grad():
            p.grad.zero_()


# ---------------------------------------------------------------------- pytree


class _Structure:
    """A module's pytree auxiliary data: class, registry names, other attributes."""

    __slots__ = ("cls", "names", "attributes")

    def __init__(self, cls, names, attributes):
        self.cls = cls
        self.names = names
        self.attributes = attributes

    def __eq__(self, other):
        if not isinstance(other, _Structure) or self.cls is not other.cls or self.names != other.names:
            return False
        if self.attributes.keys() != other.attributes.keys():
            return False
        for key, value in self.attributes.items():
            theirs = other.attributes[key]
            if value is theirs:
                continue
            try:
                if not bool(value == theirs):
                    return False
            except Exception:  # noqa: BLE001 (values without a plain boolean equality)
                return False
        return True

    def __hash__(self):
        return hash((self.cls, self.names))


_REGISTRIES = ("_parameters", "_buffers", "_modules")


def _structure(module):
    d = module.__dict__
    attributes = {k: v for k, v in d.items() if k not in _REGISTRIES}
    names = tuple(tuple(d[r]) for r in _REGISTRIES)
    children = [v for r in _REGISTRIES for v in d[r].values()]
    return children, _Structure(type(module), names, attributes)


def _flatten(module):
    children, aux = _structure(module)
    return children, aux


def _flatten_with_keys(module):
    children, aux = _structure(module)
    names = [n for group in aux.names for n in group]
    return [(jax.tree_util.GetAttrKey(n), c) for n, c in zip(names, children)], aux


def _unflatten(aux, children):
    module = object.__new__(aux.cls)
    module.__dict__.update(aux.attributes)
    module.__dict__["_non_persistent_buffers"] = set(aux.attributes.get("_non_persistent_buffers", ()))
    children = iter(children)
    for registry, names in zip(_REGISTRIES, aux.names):
        module.__dict__[registry] = {n: next(children) for n in names}
    return module
