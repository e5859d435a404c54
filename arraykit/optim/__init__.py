"""``arraykit.optim``: PyTorch's optimizers (:class:`SGD`, :class:`Adam`, :class:`AdamW`)
and learning-rate schedulers (:mod:`arraykit.optim.lr_scheduler`)."""

from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
