"""Loss functions: fused primitives (nll, cross entropy, bce, smooth L1, huber, soft margin,
multi margin) with their derivative formulas, and torch's composites for the rest."""
from __future__ import annotations

__all__ = ['cosine_embedding_loss', 'hinge_embedding_loss', 'kl_div', 'margin_ranking_loss',
           'poisson_nll_loss', 'triplet_margin_loss']

import math
import warnings

import numpy as np

from .. import _dtype as D
from .._backend import get_xp, is_array
from .._tensor import Tensor, _wrap
from .activation import _log_softmax, _softmax, logsigmoid
from .nn_ops import _check_target_size, _grad_scale, _numel, _reduce, reduction_enum
from .pointwise import abs as abs_
from .pointwise import exp, log, sigmoid, sign, where
from .registry import NONE, op

FUNCTIONAL = ['binary_cross_entropy', 'cosine_embedding_loss', 'cross_entropy',
              'gaussian_nll_loss', 'hinge_embedding_loss', 'huber_loss', 'kl_div', 'l1_loss',
              'margin_ranking_loss', 'multi_margin_loss', 'multilabel_soft_margin_loss',
              'nll_loss', 'poisson_nll_loss', 'smooth_l1_loss', 'soft_margin_loss',
              'triplet_margin_loss']


def _arr(x):
    """The raw array of a saved value (formulas get Tensors under create_graph)."""
    return x._data if isinstance(x, Tensor) else x


def _apply_reduction(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# -- l1, smooth l1, huber ------------------------------------------------------------------------
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error."""
    reduction = reduction_enum(reduction, size_average, reduce)
    _check_target_size(input, target)
    return _apply_reduction((input - target).abs(), reduction)


@op("smooth_l1_loss", node="SmoothL1LossBackward0", tensors=2)
def _smooth_l1(self, target, reduction, beta):
    xp = get_xp(self)
    d = xp.abs(self - target)
    loss = xp.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss.astype(self.dtype, copy=False), reduction)


@_smooth_l1.grad("self", "target")
def _(grad, self, target, reduction, beta):
    d = self - target
    g = where(abs_(d) < beta, d / beta, sign(d)) * _grad_scale(grad, reduction, _numel(d))
    return g, -g


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Squared error below ``beta``, absolute error above it."""
    reduction = reduction_enum(reduction, size_average, reduce)
    _check_target_size(input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return l1_loss(input, target, reduction=reduction)
    return _smooth_l1(input, target, reduction, beta)


@op("huber_loss", node="HuberLossBackward0", tensors=2)
def _huber(self, target, reduction, delta):
    xp = get_xp(self)
    d = xp.abs(self - target)
    loss = xp.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _reduce(loss.astype(self.dtype, copy=False), reduction)


@_huber.grad("self", "target")
def _(grad, self, target, reduction, delta):
    d = self - target
    g = where(abs_(d) < delta, d, sign(d) * delta) * _grad_scale(grad, reduction, _numel(d))
    return g, -g


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Squared error below ``delta``, ``delta``-scaled absolute error above it."""
    reduction = reduction_enum(reduction)
    _check_target_size(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return _huber(input, target, reduction, delta)


# -- binary cross entropy ------------------------------------------------------------------------
@op("binary_cross_entropy", node="BinaryCrossEntropyBackward0", tensors=3, quiet=True)
def _bce(self, target, weight, reduction):
    xp = get_xp(self)
    loss = -(target * xp.maximum(xp.log(self), -100)
             + (1 - target) * xp.maximum(xp.log1p(-self), -100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.astype(self.dtype, copy=False), reduction)


@_bce.grad("self")
def _(grad, self, target, weight, reduction):
    # NOTE: torch divides by max((1 - x) * x, 1e-12) to stay finite at 0 and 1.
    denom = (1 - self) * self
    denom = where(denom > 1e-12, denom, 1e-12)
    d = (self - target) / denom
    if weight is not None:
        d = d * weight
    return d * _grad_scale(grad, reduction, _numel(self))


@_bce.grad("target")
def _(grad, self, weight, reduction):
    d = log(1 - self) - log(self)
    if weight is not None:
        d = d * weight
    return d * _grad_scale(grad, reduction, _numel(self))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """Binary cross entropy between probabilities ``input`` and ``target``."""
    reduction = reduction_enum(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape!r}) that is different to the "
                         f"input size ({input.shape!r}) is deprecated. Please ensure they have "
                         "the same size.")
    data = input._data
    if data.size and not ((data >= 0) & (data <= 1)).all():
        raise RuntimeError("all elements of input should be between 0 and 1")
    if weight is not None:
        weight = weight.expand(np.broadcast_shapes(tuple(target.shape), tuple(weight.shape)))
    return _bce(input, target, weight, reduction)


# -- nll and cross entropy -----------------------------------------------------------------------
def _nll_terms(target, weight, ignore_index, shape):
    """Per-sample weights w[t] (0 where ignored) and the targets made safe for indexing."""
    xp = get_xp(target)
    valid = target != ignore_index
    safe = xp.where(valid, target, 0)
    w = xp.ones(shape[1] if len(shape) > 1 else shape[0], np.float64) if weight is None \
        else weight.astype(np.float64)
    return w[safe] * valid, safe


def _class_axis(ndim):
    return 1 if ndim > 1 else 0


def _pick(x, safe):
    """x[n, t[n], ...] (class dim 1, or 0 for unbatched inputs)."""
    xp = get_xp(x)
    if x.ndim == 1:
        return x[safe]
    return xp.take_along_axis(x, xp.expand_dims(safe, 1), axis=1).squeeze(1)


def _nll_reduce(loss, wt, reduction, dtype):
    xp = get_xp(loss)
    if reduction == "none":
        return loss.astype(dtype)
    total = xp.sum(loss)
    if reduction == "sum":
        return xp.asarray(total, dtype=dtype)
    with np.errstate(all="ignore"):
        return xp.asarray(total / xp.sum(wt), dtype=dtype)


def _nll_coeff(self, target, weight, ignore_index, reduction):
    """d loss / d input (up to the upstream gradient): -w[t] / norm at the target classes."""
    xp = get_xp(_arr(self))
    shape = _arr(self).shape
    wt, safe = _nll_terms(_arr(target), None if weight is None else _arr(weight), ignore_index,
                          shape)
    if reduction == "mean":
        with np.errstate(all="ignore"):
            wt = wt / xp.sum(wt)
    axis = _class_axis(len(shape))
    onehot = xp.expand_dims(safe, axis) == xp.arange(shape[axis]).reshape(
        [-1 if i == axis else 1 for i in range(len(shape))])
    return wt, onehot, axis


def _grad_per_sample(grad, reduction, axis):
    from .shape import unsqueeze
    return unsqueeze(grad, axis) if reduction == "none" else grad


def _as_like(array, like):
    dt = _arr(like).dtype
    a = array.astype(dt)
    return a if is_array(like) else _wrap(a)


def _nll_kernel(self, target, weight, reduction, ignore_index):
    wt, safe = _nll_terms(target, weight, ignore_index, self.shape)
    loss = -_pick(self.astype(np.float64), safe) * wt
    return _nll_reduce(loss, wt, reduction, self.dtype)


def _nll_grad(grad, self, target, weight, reduction, ignore_index):
    wt, onehot, axis = _nll_coeff(self, target, weight, ignore_index, reduction)
    coeff = onehot * -get_xp(wt).expand_dims(wt, axis)
    return _grad_per_sample(grad, reduction, axis) * _as_like(coeff, self)


@op("nll_loss", node="NllLossBackward0", tensors=3, promote=NONE)
def _nll(self, target, weight, reduction, ignore_index):
    return _nll_kernel(self, target, weight, reduction, ignore_index)


_nll.grad("self")(_nll_grad)


@op("nll_loss2d", node="NllLoss2DBackward0", tensors=3, promote=NONE)
def _nll2d(self, target, weight, reduction, ignore_index):
    return _nll_kernel(self, target, weight, reduction, ignore_index)


_nll2d.grad("self")(_nll_grad)


def _ce_kernel(self, target, weight, reduction, ignore_index):
    axis = _class_axis(self.ndim)
    return _nll_kernel(_softmax_kernel_log(self, axis), target, weight, reduction, ignore_index)


def _softmax_kernel_log(x, axis):
    from .activation import _softmax_kernel
    return _softmax_kernel(x, axis, True)


def _ce_grad(grad, self, target, weight, reduction, ignore_index):
    wt, onehot, axis = _nll_coeff(self, target, weight, ignore_index, reduction)
    xp = get_xp(wt)
    w = xp.expand_dims(wt, axis)
    g = _grad_per_sample(grad, reduction, axis)
    return g * (_softmax(self, axis) * _as_like(w, self) - _as_like(onehot * w, self))


@op("cross_entropy_loss", node="NllLossBackward0", tensors=3, promote=NONE, quiet=True)
def _cross_entropy(self, target, weight, reduction, ignore_index):
    return _ce_kernel(self, target, weight, reduction, ignore_index)


_cross_entropy.grad("self")(_ce_grad)


@op("cross_entropy_loss2d", node="NllLoss2DBackward0", tensors=3, promote=NONE, quiet=True)
def _cross_entropy2d(self, target, weight, reduction, ignore_index):
    return _ce_kernel(self, target, weight, reduction, ignore_index)


_cross_entropy2d.grad("self")(_ce_grad)


def _check_nll(input, target, weight):
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if input.ndim != 1 and input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0]}).")
    if target.dtype.category >= D.FLOATING:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.scalar_name}")
    c = input.shape[_class_axis(input.ndim)]
    if weight is not None and (weight.ndim != 1 or weight.numel() != c):
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    if input.ndim > 2 and tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
        raise RuntimeError(f"size mismatch (got input: {_sizes(input)} , target: "
                           f"{_sizes(target)}")
    return c


def _sizes(t):
    return "[" + ", ".join(str(s) for s in t.shape) + "]"


def _check_targets(target, c, ignore_index):
    data = target._data
    bad = (data != ignore_index) & ((data < 0) | (data >= c))
    if bad.any():
        raise IndexError(f"Target {int(data[bad].reshape(-1)[0])} is out of bounds.")


def _nd_call(fused2d, fused, input, target, weight, reduction, ignore_index):
    c = _check_nll(input, target, weight)
    _check_targets(target, c, ignore_index)
    opdef = fused2d if input.ndim >= 3 else fused
    out = opdef(input, target, weight, reduction, ignore_index)
    if reduction == "none" and input.ndim in (3,) + tuple(range(5, input.ndim + 1)):
        # NOTE: torch runs these shapes as 4-D and views the result back (ViewBackward0).
        out = out.view(tuple(out.shape))
    return out


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood of log-probabilities ``input`` at the ``target`` classes."""
    reduction = reduction_enum(reduction, size_average, reduce)
    return _nd_call(_nll2d, _nll, input, target, weight, reduction, ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy between logits ``input`` and class indices or class probabilities."""
    reduction = reduction_enum(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    if input.ndim == 0:
        raise RuntimeError("cross_entropy: input tensor should be 1D or more, but got 0D")
    if target.dtype.category >= D.FLOATING and target.shape == input.shape:
        return _ce_probs(input, target, weight, reduction, label_smoothing)
    if label_smoothing > 0:
        return _ce_smoothed(input, target, weight, reduction, ignore_index, label_smoothing)
    return _nd_call(_cross_entropy2d, _cross_entropy, input, target, weight, reduction,
                    ignore_index)


def _class_view(weight, ndim):
    axis = _class_axis(ndim)
    return weight.reshape([-1 if i == axis else 1 for i in range(ndim)])


def _ce_probs(input, target, weight, reduction, label_smoothing):
    axis = _class_axis(input.ndim)
    n_classes = input.shape[axis]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    terms = _log_softmax(input, axis) * target
    if weight is not None:
        terms = terms * _class_view(weight, input.ndim)
    if reduction == "none":
        return -terms.sum(axis)
    if reduction == "sum":
        return -terms.sum()
    if input.numel() == 0:
        return -terms.sum() * float("nan")
    return -terms.sum() / (input.numel() // n_classes)


def _ce_smoothed(input, target, weight, reduction, ignore_index, eps):
    axis = _class_axis(input.ndim)
    n_classes = input.shape[axis]
    logp = _log_softmax(input, axis)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    ignore = target == ignore_index
    terms = logp if weight is None else logp * _class_view(weight, input.ndim)
    smooth = where(ignore, 0.0, -terms.sum(axis))
    if reduction == "mean":
        if weight is not None:
            safe = where(ignore, 0, target)
            denom = (weight[safe] * (~ignore).to(weight.dtype)).sum()
        else:
            denom = (~ignore).sum()
        ret = smooth.sum() / denom
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    return nll * (1 - eps) + ret * (eps / n_classes)


# -- composites ----------------------------------------------------------------------------------
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence of ``target`` from ``input`` (log-probabilities)."""
    from .binary import xlogy
    if size_average is not None or reduce is not None:
        reduction = reduction_enum(reduction, size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=2)
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        loss = exp(target) * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim != 0 else loss.sum()
    return _apply_reduction(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log likelihood of ``target`` under a Poisson distribution of rate ``input``."""
    if size_average is not None or reduce is not None:
        reduction = reduction_enum(reduction, size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_input:
        loss = exp(input) - target * input
    else:
        loss = input - target * log(input + eps)
    if full:
        stirling = target * log(target) - target + log(target * (2 * math.pi)) * 0.5
        loss = loss + where(target > 1, stirling, 0.0)
    return _apply_reduction(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Negative log likelihood of ``target`` under Gaussians of mean ``input``, variance ``var``."""
    from ..autograd.grad_mode import no_grad
    if isinstance(var, (int, float)):
        from .._creation import full as full_
        var = full_(tuple(input.shape), float(var), dtype=input.dtype)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if (var._data < 0).any():
        raise ValueError("var has negative entry/entries")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    d = input - target
    loss = (log(var) + d * d / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _apply_reduction(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1."""
    from .unary import clamp_min
    reduction = reduction_enum(reduction, size_average, reduce)
    td = target.ndim
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if td == 1 and not (input1.ndim == 2 and input2.ndim == 2):
        raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with "
                           f"sizes {_sizes(input1)} and {_sizes(input2)}.")
    if td == 0 and not (input1.ndim == 1 and input2.ndim == 1):
        raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with "
                           f"sizes {_sizes(input1)} and {_sizes(input2)}.")
    prod_sum = (input1 * input2).sum(td)
    mag1 = (input1 * input1).sum(td) + 1e-12
    mag2 = (input2 * input2).sum(td) + 1e-12
    cos = prod_sum / (mag1 * mag2).sqrt()
    pos = where(target == 1, 1 - cos, 0.0)
    neg = where(target == -1, clamp_min(cos - margin, 0), 0.0)
    return _apply_reduction(pos + neg, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (x1 - x2) + margin)."""
    from .unary import clamp_min
    reduction = reduction_enum(reduction, size_average, reduce)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: {input2.shape}, "
                           f"target: {target.shape} ")
    return _apply_reduction(clamp_min(-target * (input1 - input2) + margin, 0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x for target 1, max(0, margin - x) for target -1."""
    from .unary import clamp_min
    reduction = reduction_enum(reduction, size_average, reduce)
    margin_clamp = where(target != 1, clamp_min(margin - input, 0), 0.0)
    self_part = where(target != -1, input, 0.0)
    return _apply_reduction(margin_clamp + self_part, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with pairwise p-norm distances."""
    from .nn_ops import pairwise_distance
    from .pointwise import minimum
    from .unary import clamp_min
    reduction = reduction_enum(reduction, size_average, reduce)
    a, pd_, n = anchor.ndim, positive.ndim, negative.ndim
    if not (a == pd_ == n):
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {pd_}D, "
                           f"and negative {n}D inputs")
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _apply_reduction(clamp_min(dist_pos - dist_neg + margin, 0), reduction)


@op("soft_margin_loss", node="SoftMarginLossBackward0", tensors=2, quiet=True, promote=NONE)
def _soft_margin(self, target, reduction):
    xp = get_xp(self)
    return _reduce(xp.logaddexp(0, -target * self).astype(self.dtype, copy=False), reduction)


@_soft_margin.grad("self")
def _(grad, self, target, reduction):
    return -target * sigmoid(-target * self) * _grad_scale(grad, reduction, _numel(self))


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)), averaged."""
    reduction = reduction_enum(reduction, size_average, reduce)
    _check_target_size(input, target)
    return _soft_margin(input, target, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Binary logistic loss per class, averaged over the classes."""
    if size_average is not None or reduce is not None:
        reduction = reduction_enum(reduction, size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")


# -- multi margin --------------------------------------------------------------------------------
def _mm_parts(self, target, p, margin, weight):
    """The hinge terms max(0, margin - x[y] + x[j]) (j != y) and the per-sample weights."""
    xp = get_xp(self)
    x = self if self.ndim == 2 else self[None]
    t = target.reshape(-1)
    picked = xp.take_along_axis(x, t[:, None], axis=1)
    z = margin - picked + x
    mask = (z > 0) & (xp.arange(x.shape[1])[None] != t[:, None])
    w = xp.ones(t.shape, x.dtype) if weight is None else weight[t].astype(x.dtype)
    return z, mask, w[:, None], t


@op("multi_margin_loss", node="MultiMarginLossBackward0", tensors=3, promote=NONE)
def _multi_margin(self, target, weight, p, margin, reduction):
    z, mask, w, _ = _mm_parts(self, target, p, margin, weight)
    terms = (z ** p if p == 2 else z) * mask * w
    loss = terms.sum(axis=1) / z.shape[1]
    if self.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss.astype(self.dtype, copy=False), reduction)


@_multi_margin.grad("self")
def _(grad, self, target, weight, p, margin, reduction):
    from .reduction import sum as sum_
    from .shape import unsqueeze
    xr = _arr(self)
    z, mask, w, t = _mm_parts(xr, _arr(target), p, margin,
                              None if weight is None else _arr(weight))
    xp = get_xp(z)
    c = z.shape[1]
    sel, hot = mask * w / c, xp.arange(c)[None] == t[:, None]
    if xr.ndim == 1:
        sel, hot = sel[0], hot[0]
    d = _as_like(sel, self)
    if p == 2:
        # NOTE: the square makes the derivative depend on x: written with ops, so that it
        # stays differentiable.
        hot_t = _as_like(hot, self)
        picked = sum_(self * hot_t, -1, keepdim=True)
        d = (self - picked + margin) * d * 2
    g = d - _as_like(hot, self) * sum_(d, -1, keepdim=True)
    if reduction == "none" and xr.ndim == 2:
        grad = unsqueeze(grad, 1)
    elif reduction == "mean":
        grad = grad / (xr.shape[0] if xr.ndim == 2 else 1)
    return grad * g


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss: sum over j != y of max(0, margin - x[y] + x[j])^p / C."""
    reduction = reduction_enum(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    if input.ndim > 2:
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    _check_targets(target, input.shape[-1], -(10 ** 18))
    return _multi_margin(input, target, weight, p, margin, reduction)
