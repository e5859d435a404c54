"""``arraykit.optim``: PyTorch's optimizers (:class:`SGD`, :class:`Adam`, :class:`AdamW`,
:class:`RMSprop`, :class:`Adagrad`, :class:`Adadelta`, :class:`Adamax`, :class:`NAdam`,
:class:`RAdam`, :class:`ASGD`, :class:`LBFGS`) and learning-rate schedulers
(:mod:`arraykit.optim.lr_scheduler`)."""

from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
    "ASGD", "LBFGS", "lr_scheduler",
]
