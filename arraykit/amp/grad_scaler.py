"""``GradScaler``: dynamic loss scaling for float16 training, as ``torch.amp.GradScaler``.

The loss is multiplied by a scale before ``backward()`` so that small float16
gradients do not flush to zero; :meth:`GradScaler.unscale_` divides the gradients
by it again and records whether any is infinite or NaN; :meth:`GradScaler.step`
skips the optimizer's step when one was; :meth:`GradScaler.update` halves the
scale after such a step (``backoff_factor``) and doubles it (``growth_factor``)
after ``growth_interval`` steps in a row without one.

The scale, the count of good steps and the three factors live in tensors written
in place (the factors in one float64 tensor rewritten when a setter changes them),
so a step under ``arraykit.jit`` reads and updates them without recompiling. Eagerly
``step`` reads the found-inf flag on the host and skips ``optimizer.step()`` as
PyTorch does; under ``arraykit.jit`` (the flag is a traced value) the step runs and
every parameter and optimizer state tensor it changed is then set back to its old
value where the flag is on (state the skipped step created is set to zeros, the
value of fresh state), so the program needs no host read.
"""

from __future__ import annotations

import collections
import enum
import warnings

import jax.numpy as jnp
import numpy as np

from ..api.creation import asarray, full, zeros_like
from ..api.dtype_functions import astype
from ..api.searching import where
from ..autograd.mode import no_grad
from ..core import dtypes as D
from ..core.devices import all_devices
from ..core.storage import made_as_inputs
from ..kernels.launch import apply_inplace
from ..tensors.tensor_type import Tensor, is_traced

__all__ = ["GradScaler", "OptState"]

# The hyperparameter tensor: (growth_factor, backoff_factor, growth_interval), float64.


class OptState(enum.Enum):
    """Where an optimizer is in the iteration: nothing yet, gradients unscaled, stepped."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _nonfinite(found, grad):
    """``found`` raised to 1 when ``grad`` holds an infinity or a NaN."""
    bad = jnp.logical_not(jnp.isfinite(grad)).any()
    return jnp.maximum(found, bad.astype(found.dtype))


def _unscale(grad, scale):
    """``grad`` times the reciprocal of ``scale`` (taken in float64, then float32)."""
    inv = (1.0 / scale.astype(jnp.float64)).astype(jnp.float32)
    compute = jnp.promote_types(grad.dtype, jnp.float32)
    return (grad.astype(compute) * inv.astype(compute)).astype(grad.dtype)


def _new_scale(scale, tracker, found, hyper):
    """The scale after a step: backed off on an inf, grown after ``growth_interval`` good steps."""
    wide = scale.astype(jnp.float64)
    backed_off = (wide * hyper[1]).astype(scale.dtype)
    grown = (wide * hyper[0]).astype(scale.dtype)
    grow = (tracker + 1).astype(jnp.float64) == hyper[2]
    grown = jnp.where(jnp.isfinite(grown), grown, scale)
    return jnp.where(found > 0, backed_off, jnp.where(grow, grown, scale))


def _new_tracker(tracker, found, hyper):
    """The count of good steps in a row, back to 0 on an inf or when the scale grew."""
    successful = tracker + 1
    reset = (found > 0) | (successful.astype(jnp.float64) == hyper[2])
    return jnp.where(reset, jnp.zeros_like(tracker), successful)


class GradScaler:
    """``GradScaler(device="cuda", init_scale=2.0**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True)``: dynamic loss scaling
    (see the module docstring). As in PyTorch, a scaler for ``"cuda"`` on a machine
    without a GPU warns and disables itself; when disabled every method passes
    through (``scale`` returns its input, ``step`` calls ``optimizer.step()``)."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = bool(enabled)
        if self._enabled and device == "cuda" and not any(d.platform == "gpu" for d in all_devices()):
            warnings.warn(
                "arraykit.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                stacklevel=2,
            )
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError(f"The growth factor must be > 1.0, got {growth_factor}")
            if backoff_factor >= 1.0:
                raise ValueError(f"The backoff factor must be < 1.0, got {backoff_factor}")
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._scale = None
        self._growth_tracker = None
        self._hyper = None
        self._per_optimizer_states = collections.defaultdict(_fresh_state)

    # ------------------------------------------------------------------ state tensors

    def _lazy_init(self, device):
        with made_as_inputs():  # under arraykit.jit: inputs of the program, as later
            self._scale = full((), self._init_scale, dtype=D.float32, device=device)
            self._growth_tracker = full((), self._init_growth_tracker, dtype=D.int32, device=device)
            self._hyper = asarray(self._hyper_values(), device=device)

    def _hyper_values(self):
        return np.array([self._growth_factor, self._backoff_factor, self._growth_interval],
                        dtype=np.float64)

    def _refresh_hyper(self):
        if self._hyper is not None:
            with no_grad():
                self._hyper.copy_(self._hyper_values())

    def _check_scale(self, name):
        if self._scale is None:
            raise RuntimeError(
                f"Attempted {name} but _scale is None.  This may indicate your script did not "
                "use scaler.scale(loss or outputs) earlier in the iteration."
            )
        return self._scale

    # ------------------------------------------------------------------ the iteration

    def scale(self, outputs):
        """``outputs`` (a tensor or an iterable of tensors) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init(outputs.device)
            scale = self._scale.to_device(outputs.device)
            if outputs.ndim > 0 and outputs.dtype.kind == "float":
                scale = astype(scale, outputs.dtype)  # a 0-d scale keeps a tensor's dtype (PyTorch)
            return outputs * scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(x) for x in outputs)
        if hasattr(outputs, "__iter__"):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale in place and record whether one
        is infinite or NaN (at most once per optimizer between :meth:`update` calls)."""
        if not self._enabled:
            return
        scale = self._check_scale("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        found = {}
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    if grad.dtype is D.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    device = grad.device
                    if device not in found:
                        found[device] = full((), 0.0, dtype=D.float32, device=device)
                    apply_inplace(_nonfinite, found[device], (grad,))
                    apply_inplace(_unscale, grad, (scale.to_device(device),))
        state["found_inf_per_device"] = found
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` unless the unscaled gradients hold an
        infinity or a NaN (unscales first if :meth:`unscale_` was not called)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        found = list(state["found_inf_per_device"].values())
        if not found:
            raise RuntimeError("No inf checks were recorded for this optimizer.")
        state["stage"] = OptState.STEPPED
        if is_traced(*found):
            return _step_selected(optimizer, _combined(found, found[0].device), args, kwargs)
        if sum(float(f.item()) for f in found):
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Update the scale for the next iteration: ``new_scale`` (a float or a 1-element
        float32 tensor) if given, else backed off or grown from the steps' inf checks."""
        if not self._enabled:
            return
        scale = self._check_scale("update")
        with no_grad():
            if new_scale is not None:
                if isinstance(new_scale, Tensor):
                    if new_scale.numel() != 1 or new_scale.dtype is not D.float32 or new_scale.requires_grad:
                        raise ValueError(
                            "new_scale should be a float or a 1-element float32 tensor with "
                            "requires_grad=False"
                        )
                    scale.copy_(new_scale.reshape(()).to_device(scale.device))
                else:
                    scale.fill_(float(new_scale))
            else:
                found = [f for s in self._per_optimizer_states.values()
                         for f in s["found_inf_per_device"].values()]
                if not found:
                    raise RuntimeError("No inf checks were recorded prior to update.")
                combined = _combined(found, scale.device)
                apply_inplace(_new_scale, scale, (self._growth_tracker, combined, self._hyper))
                apply_inplace(_new_tracker, self._growth_tracker, (combined, self._hyper))
        self._per_optimizer_states = collections.defaultdict(_fresh_state)

    # ------------------------------------------------------------------ options and state

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self):
        """The factor the scale grows by after ``growth_interval`` good steps."""
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        """Set the growth factor."""
        self._growth_factor = float(new_factor)
        self._refresh_hyper()

    def get_backoff_factor(self):
        """The factor the scale shrinks by after a step with an infinity or a NaN."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        """Set the backoff factor."""
        self._backoff_factor = float(new_factor)
        self._refresh_hyper()

    def get_growth_interval(self):
        """How many good steps in a row grow the scale."""
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        """Set the growth interval."""
        self._growth_interval = int(new_interval)
        self._refresh_hyper()

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(self._growth_tracker.item())

    def is_enabled(self):
        """Whether the scaler scales (False when made disabled or disabled itself)."""
        return self._enabled

    def state_dict(self):
        """``{'scale', 'growth_factor', 'backoff_factor', 'growth_interval', '_growth_tracker'}``
        (PyTorch's keys); empty when disabled."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict):
        """Restore what :meth:`state_dict` saved (this library's or PyTorch's)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled "
                "instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._scale is not None:
            with no_grad():
                self._scale.fill_(self._init_scale)
                self._growth_tracker.fill_(self._init_growth_tracker)
        self._refresh_hyper()


def _combined(found, device):
    """The sum of the found-inf flags of every device, on ``device``."""
    total = found[0].to_device(device)
    for f in found[1:]:
        total = total + f.to_device(device)
    return total


def _state_tensors(optimizer, p):
    state = optimizer.state.get(p)
    if not state:
        return []
    return [t for t in state.values() if isinstance(t, Tensor)]


def _step_selected(optimizer, found, args, kwargs):
    """The step under a trace: taken, then undone where ``found`` is on (see the module
    docstring)."""
    params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    with no_grad():
        before = {}
        for p in params:
            for t in [p] + _state_tensors(optimizer, p):
                # copied with a leading axis: a 0-d view (Adam's ``step``) is read as a tensor
                before[id(t)] = t[None].clone()
    retval = optimizer.step(*args, **kwargs)
    skip = found > 0
    with no_grad():
        for p in params:
            for t in [p] + _state_tensors(optimizer, p):
                old = before.get(id(t))
                t.copy_(where(skip, zeros_like(t) if old is None else old[0], t))
    return retval
