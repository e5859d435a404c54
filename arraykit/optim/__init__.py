"""``arraykit.optim``: PyTorch's optimizers (:class:`SGD`, :class:`Adam`, :class:`AdamW`,
:class:`RMSprop`, :class:`Adagrad`, :class:`Adadelta`, :class:`Adamax`, :class:`NAdam`,
:class:`RAdam`, :class:`ASGD`, :class:`LBFGS`, :class:`Rprop`, :class:`SparseAdam`,
:class:`Adafactor`, :class:`Muon`) and learning-rate schedulers
(:mod:`arraykit.optim.lr_scheduler`)."""

from . import lr_scheduler
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
    "ASGD", "LBFGS", "Rprop", "SparseAdam", "Adafactor", "Muon", "lr_scheduler",
]
