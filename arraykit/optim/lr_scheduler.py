"""Learning-rate schedulers with PyTorch's recurrences: each ``step()`` rewrites the
optimizer groups' ``'lr'``, which the optimizer copies into its hyperparameter
tensor at once (a value change, not a new program).

A scheduler is Python state, so ``scheduler.step()`` runs between calls of an
``arraykit.jit`` training step, as with ``torch.compile``: the compiled step reads
the new rate from the hyperparameter tensor and is not recompiled. Called inside a
trace it would run once, at trace time, and freeze the rate; it raises instead.
"""

from __future__ import annotations

import bisect
import math
import types
import warnings

from ..core import storage as S
from .optimizer import Optimizer

__all__ = [
    "LRScheduler", "LambdaLR", "StepLR", "LinearLR", "CosineAnnealingLR", "SequentialLR",
]

_EPOCH_DEPRECATION = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
    "where possible. Please use `scheduler.step()` to step the scheduler."
)


def _check_not_traced(scheduler):
    if S.tracing_here():
        raise RuntimeError(
            f"{type(scheduler).__name__}.step() called inside an arraykit.jit trace: it would "
            "run once, when the step is traced, and every call would keep that learning rate. "
            "Call scheduler.step() after each call of the jitted step instead; the new rate "
            "reaches the compiled step as a value, without recompiling it."
        )


class LRScheduler:
    """Base class: sets each group's ``'initial_lr'`` (from ``'lr'``) and takes the
    initial step; subclasses define :meth:`get_lr`."""

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "scheduler with last_epoch >= 0"
                    )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        """Reset the step count and take the initial step."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self):
        """The learning rates of the groups after the current ``last_epoch``."""
        raise NotImplementedError

    def step(self, epoch=None):
        """Advance one epoch (or, deprecated, jump to ``epoch`` using the closed form
        where there is one) and write the new rates into the optimizer's groups."""
        _check_not_traced(self)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed_form = getattr(self, "_get_closed_form_lr", None)
            values = closed_form() if closed_form is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self):
        """The learning rates the last :meth:`step` set."""
        return self._last_lr

    def state_dict(self):
        """Every attribute but the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        """Restore the attributes saved by :meth:`state_dict`."""
        self.__dict__.update(state_dict)

    def _state_saving_apart(self, name, save):
        """:meth:`state_dict` with the items of the list attribute ``name`` saved as
        ``save(item)`` (for subclasses holding functions or schedulers)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", name)}
        state[name] = [save(item) for item in getattr(self, name)]
        return state

    def _load_state_apart(self, state_dict, name, load):
        """:meth:`load_state_dict` of a state from :meth:`_state_saving_apart`: each item
        of ``name`` restored by ``load(item, saved)``."""
        state = dict(state_dict)
        saved = state.pop(name)
        self.__dict__.update(state)
        for item, values in zip(getattr(self, name), saved):
            load(item, values)


def _callable_state(fn):
    """What :class:`LambdaLR` saves of ``fn``: a callable object's ``__dict__``; None for a
    plain function or lambda (not saved, as PyTorch)."""
    return None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()


def _restore_callable_state(fn, values):
    """Give ``fn`` back the ``__dict__`` that :func:`_callable_state` saved (if any)."""
    if values is not None:
        fn.__dict__.update(values)


class LambdaLR(LRScheduler):
    """Set each group's rate to its initial rate times ``lr_lambda(epoch)`` (one
    function for all groups, or a list with one per group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """``base_lr * lr_lambda(last_epoch)`` per group."""
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self):
        """The attributes but the optimizer; of the functions, only the ``__dict__`` of
        callable objects (plain functions and lambdas are not saved), as PyTorch."""
        return self._state_saving_apart("lr_lambdas", _callable_state)

    def load_state_dict(self, state_dict):
        """Restore the attributes (and the callable objects' ``__dict__``)."""
        self._load_state_apart(state_dict, "lr_lambdas", _restore_callable_state)


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """The groups' rates, times ``gamma`` at every non-zero multiple of ``step_size``."""
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the rate by a factor going linearly from ``start_factor`` to ``end_factor``
    over ``total_iters`` epochs (a linear warm-up with ``start_factor < end_factor``)."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """PyTorch's recurrence from the groups' current rates."""
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        change = self.end_factor - self.start_factor
        factor = 1.0 + change / (self.total_iters * self.start_factor + (self.last_epoch - 1) * change)
        return [group["lr"] * factor for group in groups]

    def _get_closed_form_lr(self):
        progress = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * progress)
                for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Anneal the learning rate from its base value to ``eta_min`` along a half cosine
    over ``T_max`` epochs (PyTorch's recurrence, which keeps following the cosine
    after ``T_max``)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        """PyTorch's recurrence from the groups' current rates."""
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and self.last_epoch > 0:
            return [
                self.eta_min + (base - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                for base in self.base_lrs
            ]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [
                group["lr"] + (base - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                for base, group in zip(self.base_lrs, groups)
            ]
        return [
            (1 + math.cos(math.pi * self.last_epoch / self.T_max))
            / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
            * (group["lr"] - self.eta_min)
            + self.eta_min
            for group in groups
        ]

    def _get_closed_form_lr(self):
        return [
            self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
            for base in self.base_lrs
        ]


class SequentialLR(LRScheduler):
    """Run ``schedulers`` one after the other, switching at the epochs in ``milestones``
    (e.g. ``LinearLR`` warm-up, then ``CosineAnnealingLR``); PyTorch's semantics."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler, but got no scheduler.")
        for i, scheduler in enumerate(schedulers):
            if getattr(scheduler, "optimizer", None) is not optimizer:
                raise ValueError(
                    f"{type(self).__name__} expects all schedulers to belong to the same optimizer, "
                    f"but the scheduler at index {i} ({type(scheduler).__name__}) has another one"
                )
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than the "
                f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                f"number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        _undo_initial_steps(self)
        first = self._schedulers[bisect.bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self):
        """Step the scheduler in charge of the next epoch (restarting it, from its
        closed form, at its milestone)."""
        _check_not_traced(self)
        self.last_epoch += 1
        index = bisect.bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self):
        """The attributes but the optimizer, with each scheduler's own state."""
        return self._state_saving_apart("_schedulers", lambda scheduler: scheduler.state_dict())

    def load_state_dict(self, state_dict):
        """Restore the attributes and each scheduler's state."""
        self._load_state_apart(
            state_dict, "_schedulers", lambda scheduler, values: scheduler.load_state_dict(values)
        )


def _undo_initial_steps(scheduler):
    """Take back the initial step of every scheduler nested in ``scheduler``."""
    for inner in scheduler._schedulers:
        if hasattr(inner, "_schedulers"):
            _undo_initial_steps(inner)
        else:
            inner.last_epoch -= 1
