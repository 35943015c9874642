"""``ember.optim``: optimizers and learning-rate schedulers with torch's API and update rules.

Every optimizer follows torch's single-tensor (for-loop) update formulas operation by operation,
in the parameters' dtype, so float32 trajectories match torch's to float32 precision.
"""
from . import lr_scheduler, swa_utils
from ._adafactor import Adafactor
from ._muon import Muon
from ._stateless import swap_in_optimizer_params_and_state
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
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["ASGD", "LBFGS", "SGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax",
           "Muon", "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "SparseAdam",
           "lr_scheduler", "swa_utils", "swap_in_optimizer_params_and_state"]
