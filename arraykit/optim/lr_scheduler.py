"""Learning-rate schedulers with PyTorch's recurrences: each ``step()`` rewrites the
optimizer groups' ``'lr'``, which the optimizer copies into its hyperparameter
tensor at its next step (a value change, not a new program)."""

from __future__ import annotations

import math

from .optimizer import Optimizer

__all__ = ["LRScheduler", "StepLR", "CosineAnnealingLR"]


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
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self):
        """The learning rates of the groups after the current ``last_epoch``."""
        raise NotImplementedError

    def step(self):
        """Advance one epoch and write the new learning rates into the optimizer's groups."""
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
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
