"""``ember.optim``: optimizers and learning-rate schedulers with torch's API and update rules.

Every optimizer follows torch's single-tensor (for-loop) update formulas operation by operation,
in the parameters' dtype, so float32 trajectories match torch's to float32 precision.
"""
from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["LBFGS", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "NAdam", "Optimizer",
           "RAdam", "RMSprop", "lr_scheduler"]
