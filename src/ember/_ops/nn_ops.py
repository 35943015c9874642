"""Neural-network primitives with fused kernels and their own derivative formulas."""
from __future__ import annotations

import warnings

import numpy as np

from .._tensor import Tensor
from .registry import NONE, op

# nn.functional names (ember.nn.functional collects FUNCTIONAL of every nn family).
FUNCTIONAL = ["binary_cross_entropy_with_logits", "linear", "mse_loss"]

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def reduction_enum(reduction, size_average=None, reduce=None):
    """torch's legacy size_average/reduce flags folded into a reduction name."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", UserWarning, stacklevel=3)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return np.mean(loss, dtype=loss.dtype) if loss.size else np.full((), np.nan, loss.dtype)
    if reduction == "sum":
        return np.sum(loss, dtype=loss.dtype)
    return loss


def _grad_scale(grad, reduction, n):
    """The incoming gradient of a reduced loss, per element."""
    return grad / n if reduction == "mean" else grad


# -- binary cross entropy with logits -----------------------------------------------------------
def _log_sigmoid_neg(x):
    """log(1 + exp(-x)) computed without overflow."""
    return np.logaddexp(0, -x)


@op("binary_cross_entropy_with_logits", tensors=4, promote=NONE)
def bce_with_logits(self, target, weight, pos_weight, reduction):
    sp = _log_sigmoid_neg(self)
    if pos_weight is None:
        loss = (1 - target) * self + sp
    else:
        loss = (1 - target) * self + (1 + (pos_weight - 1) * target) * sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@bce_with_logits.grad("self")
def _(grad, self, target, weight, pos_weight, reduction):
    from .pointwise import sigmoid
    s = sigmoid(self)
    if pos_weight is None:
        d = s - target
    else:
        d = (pos_weight * target + 1 - target) * s - pos_weight * target
    if weight is not None:
        d = d * weight
    return d * _grad_scale(grad, reduction, _numel(self))


@bce_with_logits.grad("target")
def _(grad, self, target, weight, pos_weight, reduction):
    from .pointwise import log, sigmoid
    if pos_weight is None:
        d = -self
    else:
        d = -self - (pos_weight - 1) * log(sigmoid(self))
    if weight is not None:
        d = d * weight
    return d * _grad_scale(grad, reduction, _numel(self))


def _numel(x):
    return x.numel() if isinstance(x, Tensor) else x.size


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """Sigmoid and binary cross entropy in one numerically stable step."""
    reduction = reduction_enum(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape!r}) must be the same as input size "
                         f"({input.shape!r})")
    return bce_with_logits(input, target, weight, pos_weight, reduction)


# -- mean squared error -------------------------------------------------------------------------
@op("mse_loss", tensors=2)
def mse(self, target, reduction):
    d = self - target
    return _reduce(d * d, reduction)


@mse.grad("self", "target")
def _(grad, self, target, reduction):
    d = (self - target) * 2
    g = d * _grad_scale(grad, reduction, _numel(d))
    return g, -g


def _check_target_size(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape!r}) that is different to the input "
                      f"size ({input.shape!r}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=3)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error between ``input`` and ``target``."""
    reduction = reduction_enum(reduction, size_average, reduce)
    _check_target_size(input, target)
    return mse(input, target, reduction)


# -- linear -------------------------------------------------------------------------------------
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``, as one addmm for 2-D inputs (torch's AddmmBackward0)."""
    from .linalg import addmm, matmul
    from .shape import t
    if input.ndim == 2 and bias is not None:
        return addmm(bias, input, t(weight))
    out = matmul(input, t(weight))
    return out if bias is None else out + bias
