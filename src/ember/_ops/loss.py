"""Loss functions: fused primitives (nll, bce, smooth L1, huber, soft margin, multi margin,
multilabel margin, CTC) with their derivative formulas, and torch's composites for the rest
(cross entropy is torch's log_softmax + nll_loss graph).

NOTE: longer than the usual family file: CTC's alpha/beta recursions and the multilabel margin
kernels live here beside the other losses' so that ``F`` gets every loss from one family.
"""
from __future__ import annotations

__all__ = ['cosine_embedding_loss', 'hinge_embedding_loss', 'kl_div', 'margin_ranking_loss',
           'poisson_nll_loss', 'triplet_margin_loss']

import functools
import math
import warnings

import numpy as np

from .. import _dtype as D
from .._backend import (constant_like, get_xp, has_data, is_array, launch_bound, reduce_max,
                        reduce_sum, scatter_add)
from .._state import state
from .._tensor import Tensor, _wrap, checked_values
from .activation import _log_softmax, logsigmoid
from .nll_sum import SMALL_BATCH as _SMALL_BATCH
from .nll_sum import _small_ordered_sum, ordered_sum, small_ordered_sum_of
from .nn_ops import (_REDUCTIONS, _check_target_size, _grad_scale, _numel, _reduce,
                     broadcast_pair, reduction_enum, refuse_integral, refuse_uncastable_result,
                     weighted_loss)
from .pointwise import abs as abs_
from .pointwise import (add_scalar, div_scalar, exp, log, mul_scalar, neg, no_forward_ad,
                        sigmoid, where)
from .registry import NONE, op
from .replay import replay_form

FUNCTIONAL = ['binary_cross_entropy', 'cosine_embedding_loss', 'cross_entropy', 'ctc_loss',
              'gaussian_nll_loss', 'hinge_embedding_loss', 'huber_loss', 'kl_div', 'l1_loss',
              'margin_ranking_loss', 'multi_margin_loss', 'multilabel_margin_loss',
              'multilabel_soft_margin_loss', 'nll_loss', 'poisson_nll_loss', 'smooth_l1_loss',
              'soft_margin_loss', 'triplet_margin_loss', 'triplet_margin_with_distance_loss']


def _arr(x):
    """The raw array of a saved value (formulas get Tensors under create_graph)."""
    return x._data if isinstance(x, Tensor) else x


def refuse_grad_of(function, argument, tensor):
    """torch's refusal of an argument its loss has no derivative for, when it requires grad."""
    if tensor.requires_grad and state.grad_enabled:
        raise RuntimeError(f"The function '{function}' is not differentiable with respect to "
                           f"argument '{argument}'. This input cannot have requires_grad True.")


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
    input, target = broadcast_pair(input, target)
    if weight is not None:
        return weighted_loss(lambda: (input - target).abs(), input, weight, reduction, by_weight=True)
    return _apply_reduction((input - target).abs(), reduction)


@op("smooth_l1_loss", node="SmoothL1LossBackward0", tensors=2, quiet=True,
    writes=lambda self, target, reduction, beta: int(reduction != "none") * 2)
def _smooth_l1(self, target, reduction, beta):
    xp = get_xp(self)
    d = xp.abs(self - target)
    # (a beta of 0, which aten's operator takes: no quadratic part)
    loss = xp.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta) if beta else d
    return _reduce(loss.astype(self.dtype, copy=False), reduction)


# smooth_l1_loss's and huber_loss's gradients are ops of their own, as in torch, so that
# create_graph records SmoothL1LossBackwardBackward0 / HuberLossBackwardBackward0; the
# target's gradient is the same op with the two inputs swapped, as torch's.
@_smooth_l1.grad("self")
def _(grad, self, target, reduction, beta):
    return smooth_l1_loss_backward(grad, self, target, reduction, beta)


@_smooth_l1.grad("target")
def _(grad, self, target, reduction, beta):
    return smooth_l1_loss_backward(grad, target, self, reduction, beta)


def _robust_backward(grad_output, self, target, reduction, width, slope, outer=None):
    """The gradient of a loss quadratic within ``width`` of the target (slope ``slope`` per
    unit of difference there) and linear beyond it (slope ``outer``, by default ``width *
    slope``)."""
    xp = get_xp(self)
    d = self - target
    outer = width * slope if outer is None else outer
    g = xp.where(d <= -width, -outer, xp.where(d >= width, outer, d * slope)) * grad_output
    return (g / g.size if reduction == "mean" and g.size else g).astype(self.dtype, copy=False)


def _require_dtype_of(first, *others):
    """torch's TensorIterator check that every operand has ``first``'s dtype."""
    for other in others:
        if other.dtype != first.dtype:
            raise RuntimeError(f"Found dtype {D.from_numpy_dtype(other.dtype).scalar_name} but "
                               f"expected {D.from_numpy_dtype(first.dtype).scalar_name}")


def _robust_double_backward(grad, grad_output, self, target, reduction, width, slope):
    """d/d self of <grad, _robust_backward>: the quadratic part's slope within ``width``,
    zero beyond (target's is its negative)."""
    d = self - target
    g = grad * grad_output * (abs_(d) < width)
    g = g * slope if slope != 1 else g
    return _grad_scale(g, reduction, _numel(g))


@op("smooth_l1_loss_backward", tensors=3, node="SmoothL1LossBackwardBackward0")
def smooth_l1_loss_backward(grad_output, self, target, reduction, beta):
    return _robust_backward(grad_output, self, target, reduction, beta, _inverse(beta), 1.0)


def _inverse(beta):
    """smooth_l1's slope within ``beta``: none for a beta of 0 (no quadratic part)."""
    return 1.0 / beta if beta else 0.0


@smooth_l1_loss_backward.grad("grad_output")
def _(grad, self, target, reduction, beta):
    return smooth_l1_loss_backward(grad, self, target, reduction, beta)  # (summed to shape)


@smooth_l1_loss_backward.grad("self", "target")
def _(grad, grad_output, self, target, reduction, beta):
    g = _robust_double_backward(grad, grad_output, self, target, reduction, beta, _inverse(beta))
    return g, -g


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Squared error below ``beta``, absolute error above it."""
    reduction = reduction_enum(reduction, size_average, reduce)
    _check_target_size(input, target)
    return smooth_l1_of(input, target, reduction, beta, l1_at_zero=True)


def smooth_l1_of(input, target, reduction, beta, l1_at_zero):  # noqa: A002
    """aten's smooth_l1_loss (its checks, then the op); ``l1_at_zero``: a ``beta`` of 0 is
    l1_loss, as F computes it (aten's operator runs its own kernel)."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    input, target = broadcast_pair(input, target)
    if beta == 0.0 and l1_at_zero:
        return l1_loss(input, target, reduction=reduction)
    refuse_integral("smooth_l1_cpu", input, target)
    return _smooth_l1(input, target, reduction, beta)


# (promote=NONE: torch's huber kernel writes the input's dtype whatever the target's)
@op("huber_loss", node="HuberLossBackward0", tensors=2, promote=NONE, quiet=True)
def _huber(self, target, reduction, delta):
    xp = get_xp(self)
    d = xp.abs(self - target)
    loss = xp.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
    return _reduce(loss.astype(self.dtype, copy=False), reduction)


@_huber.grad("self")
def _(grad, self, target, reduction, delta):
    return huber_loss_backward(grad, self, target, reduction, delta)


@_huber.grad("target")
def _(grad, self, target, reduction, delta):
    return huber_loss_backward(grad, target, self, reduction, delta)


@_huber.jvp("self")
def _(self_t, self, target, reduction, delta):
    # NOTE: torch's tangent formula computes target's term first, whichever tangent is given:
    # with mixed dtypes its check, in target's dtype, is the one that fails.
    if self.dtype is not target.dtype:
        raise RuntimeError(f"Found dtype {self.dtype.scalar_name} but expected "
                           f"{target.dtype.scalar_name}")
    return _apply_reduction(huber_loss_backward(self_t, self, target, "none", delta), reduction)


@_huber.jvp("target")
def _(target_t, self, target, reduction, delta):
    return _apply_reduction(huber_loss_backward(target_t, target, self, "none", delta),
                            reduction)


# (promote=NONE: torch's kernel takes its operands in the input's dtype only, so a gradient
# through a target of another dtype raises, as torch's backward does)
@op("huber_loss_backward", tensors=3, promote=NONE, node="HuberLossBackwardBackward0")
def huber_loss_backward(grad_output, self, target, reduction, delta):
    _require_dtype_of(self, target, grad_output)
    return _robust_backward(grad_output, self, target, reduction, delta, 1.0)


huber_loss_backward.jvp("grad_output", "self", "target")(
    no_forward_ad("huber_loss_backward"))


@huber_loss_backward.grad("grad_output")
def _(grad, self, target, reduction, delta):
    return huber_loss_backward(grad, self, target, reduction, delta)  # (summed to shape)


@huber_loss_backward.grad("self", "target")
def _(grad, grad_output, self, target, reduction, delta):
    g = _robust_double_backward(grad, grad_output, self, target, reduction, delta, 1.0)
    return g, -g


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Squared error below ``delta``, ``delta``-scaled absolute error above it."""
    reduction = reduction_enum(reduction)
    _check_target_size(input, target)
    input, target = broadcast_pair(input, target)
    if weight is not None:
        return weighted_loss(lambda: huber_loss(input, target, "none", delta), input, weight, reduction,
                             by_weight=False)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    refuse_uncastable_result(input, target)
    refuse_integral("huber_cpu", input, target)
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
    return binary_cross_entropy_backward(grad, self, target, weight, reduction)


# binary_cross_entropy's gradient is an op of its own, as in torch, so that create_graph
# records its BinaryCrossEntropyBackwardBackward0; its derivatives are torch's formulas (with
# their own 1e-12 guards: finite at an input of exactly 0 or 1).
@op("binary_cross_entropy_backward", tensors=4, node="BinaryCrossEntropyBackwardBackward0",
    quiet=True)
def binary_cross_entropy_backward(grad_output, self, target, weight, reduction):
    xp = get_xp(self)
    # NOTE: torch divides by max((1 - x) * x, 1e-12) to stay finite at 0 and 1.
    d = grad_output * (self - target) / xp.maximum((1 - self) * self, 1e-12)
    if weight is not None:
        d = d * weight
    return (d / d.size if reduction == "mean" and d.size else d).astype(self.dtype, copy=False)


_BCE_EPS = 1e-12


@binary_cross_entropy_backward.grad("grad_output")
def _(grad, self, target, weight, reduction):
    g = (self - target) / ((self + _BCE_EPS) * (1 - self + _BCE_EPS))
    if weight is not None:
        g = g * weight
    g = g * grad
    if reduction == "none":
        return g
    return _grad_scale(g.sum(), reduction, _numel(self))


@binary_cross_entropy_backward.grad("self")
def _(grad, grad_output, self, target, weight, reduction):
    g = (self * self - 2 * self * target + target) / (
        (self + _BCE_EPS) ** 2 * (1 - self + _BCE_EPS) ** 2) * (grad * grad_output)
    if weight is not None:
        g = g * weight
    return _grad_scale(g, reduction, _numel(self))


@binary_cross_entropy_backward.grad("target")
def _(grad, grad_output, self, weight, reduction):
    g = -grad * grad_output
    if weight is not None:
        g = g * weight
    denom = (1 - self) * self
    g = g / where(denom > _BCE_EPS, denom, _BCE_EPS)
    return _grad_scale(g, reduction, _numel(self))


@_bce.grad("target")
def _(grad, self, weight, reduction):
    # torch's binary_cross_entropy_target_backward, step by step (the mean divides last)
    from .unary import logit
    d = -logit(self) * grad
    if weight is not None:
        d = d * weight
    return div_scalar(d, _numel(self)) if reduction == "mean" else d


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """Binary cross entropy between probabilities ``input`` and ``target``."""
    reduction = reduction_enum(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape!r}) that is different to the "
                         f"input size ({input.shape!r}) is deprecated. Please ensure they have "
                         "the same size.")
    if weight is not None:
        weight = _bce_weight(weight, target)
        refuse_grad_of("binary_cross_entropy", "weight", weight)
    if target.dtype is not input.dtype:  # (torch's kernel computes in the input's dtype)
        raise RuntimeError(f"Found dtype {target.dtype.scalar_name} but expected "
                           f"{input.dtype.scalar_name}")
    if input.dtype.category < D.FLOATING:
        raise NotImplementedError(f'"binary_cross_entropy" not implemented for '
                                  f"'{input.dtype.scalar_name}'")
    data = input._data
    if data.size and not ((data >= 0) & (data <= 1)).all():
        raise RuntimeError("all elements of input should be between 0 and 1")
    if weight is not None and weight.dtype is not input.dtype:  # (read in the input's dtype)
        weight = weight.to(input.dtype)
    return _bce(input, target, weight, reduction)


def _bce_weight(weight, target):
    """``weight`` expanded to the target's shape, with torch's errors for one that does not
    broadcast to it."""
    shape, wshape = tuple(target.shape), tuple(weight.shape)
    for k in range(1, min(len(shape), len(wshape)) + 1):
        if wshape[-k] != shape[-k] and wshape[-k] != 1 and shape[-k] != 1:
            raise RuntimeError(f"Attempting to broadcast a dimension of length {wshape[-k]} at "
                               f"-{k}! Mismatching argument at index 1 had {weight.shape!r}; "
                               f"but expected shape should be broadcastable to {list(shape)}")
    full = np.broadcast_shapes(shape, wshape)
    if full != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                           f"{list(full)}")
    return weight.expand(full)


# -- nll and cross entropy -----------------------------------------------------------------------
def _nll_terms(target, weight, ignore_index, shape, all_valid=False):
    """Per-sample weights w[t] (0 where ignored) and the targets made safe for indexing.

    The weights are the number 1.0 when every sample counts once (no class weights, nothing
    ignored): the usual batch then needs no weight arithmetic at all. ``all_valid``: the
    caller knows no sample is ignored. On a GPU, where asking whether any sample is ignored
    waits for the device, the mask is applied whatever it holds (without class weights the
    weights are the mask itself)."""
    xp = get_xp(target)
    valid = None if all_valid else target != ignore_index
    read_free = not all_valid and launch_bound(target)
    if all_valid or (not read_free and valid.all()):  # nothing ignored, no masking to do
        if weight is None:
            return 1.0, target
        return weight.astype(np.float64)[target], target
    safe = xp.where(valid, target, 0)
    if read_free and weight is None:
        return valid, safe
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
    if x.ndim == 2:
        return x[_row_numbers(x), safe]
    return xp.take_along_axis(x, xp.expand_dims(safe, 1), axis=1).squeeze(1)


def _row_numbers(x):
    """0, 1, ..., len(x) - 1 (made once per length, read-only)."""
    n = x.shape[0]
    if type(x) is np.ndarray:
        return _host_row_numbers(n)
    return constant_like(x, ("arange", n), lambda: np.arange(n))


@functools.lru_cache(maxsize=64)
def _host_row_numbers(n):
    rows = np.arange(n)
    rows.flags.writeable = False
    return rows


def _mean_of(total, count):
    """total / count, NaN when every sample is ignored (count 0), as torch gives."""
    return total / count if count else total * math.nan


def _total_weight(wt, safe):
    return float(safe.size) if type(wt) is float else wt.sum(dtype=np.float64)


def _nll_reduce(loss, wt, safe, reduction, dtype, total=None):
    """The reduced loss; ``total``: the losses' sum, when the caller has it."""
    xp = get_xp(loss)
    if reduction == "none":
        return loss.astype(dtype)
    if total is None:
        total = loss.sum()
    if reduction == "sum":
        return xp.asarray(total, dtype=dtype)
    return xp.asarray(_mean_of(total, _total_weight(wt, safe)), dtype=dtype)


def _as_like(array, like):
    dt = _arr(like).dtype
    a = array.astype(dt, copy=False)
    return a if is_array(like) else _wrap(a)


def _checked_terms(self, target, weight, ignore_index):
    """``_nll_terms`` after torch's check of the targets (the kernels' own, forward and
    backward, as torch's: so a compiled function's replay, which runs kernels only, checks
    each call's targets as eager mode does)."""
    c = self.shape[_class_axis(self.ndim)]
    _check_kernel_dtypes(self, target, weight)
    in_range = _check_targets(target, c, ignore_index)
    # (targets all in range and an ignore_index out of it: no sample is ignored)
    return _nll_terms(target, weight, ignore_index, self.shape,
                      all_valid=in_range and not 0 <= ignore_index < c)


def _nll_kernel(self, target, weight, reduction, ignore_index):
    target = _arr(target)
    weight = None if weight is None else _arr(weight)  # (no class weights: no call)
    if type(self) is np.ndarray:
        if _usual_batch(self, target, weight, reduction, ignore_index):
            total = 0.0 - _small_ordered_sum(self[_host_row_numbers(len(self)), target])
            return np.asarray(total / len(self) if reduction == "mean" else total)
        return _nll_on_host(self, target, weight, reduction, ignore_index)
    wt, safe = _checked_terms(self, target, weight, ignore_index)
    picked = _pick(self, safe).astype(np.float64)
    if type(wt) is float:
        if reduction != "none":  # (the sum negated once, not each value: the same number)
            return _nll_reduce(picked, wt, safe, reduction, self.dtype,
                               0.0 - reduce_sum(picked))
        loss = -picked
    else:  # torch skips ignored samples: +0.0 there (not -0.0)
        loss = get_xp(picked).where(target != ignore_index, -(picked * wt), 0.0)
    return _nll_reduce(loss, wt, safe, reduction, self.dtype)


def _usual_batch(self, target, weight, reduction, ignore_index):
    """Whether an nll_loss kernel may take the usual batch's short path: a NumPy matrix of
    2 to 257 rows, no class weights, a reduced loss, class indices (int64) all in range and
    ignore_index out of it, so that every sample counts once.

    NOTE: the short path is the general one with its steps written out: inside a training
    step each Python call costs several times what it costs timed alone (W2's nll_loss
    kernel there: 26 -> 22 µs, its gradient's 11 -> 8 µs)."""
    if not _usual_batch_shape(self, target, weight, reduction, ignore_index):
        return False
    # (seen as unsigned, a negative target is larger than any class count)
    return int(_max_reduce(target.view(np.uint64))) < self.shape[1]


def _usual_batch_shape(self, target, weight, reduction, ignore_index):
    """_usual_batch's tests but the targets' range: of the arguments' shapes, dtypes and
    values other than the targets'."""
    return not (weight is not None or reduction == "none" or self.ndim != 2
                or not 1 < len(self) <= _SMALL_BATCH or target.dtype.type is not np.int64
                or 0 <= ignore_index < self.shape[1])


_max_reduce = np.maximum.reduce


def _usual_gradient(grad_output, self, target, weight, reduction, ignore_index):
    """Whether nll_loss_backward's host kernel may write the usual batch's gradient straight
    into its zeros: a reduced loss of a matrix, no class weights, int64 class indices, and an
    ignore_index that indexing refuses (outside [-c, c)), so that a sample carrying it stops
    the write with an IndexError (the general path then skips it).

    NOTE: the targets are not checked again (a reduction fewer per step): this op is reached
    through nll_loss's graph only, whose forward kernel checked these very targets (the
    node's saved target is version-checked), as the GPU path relies on; a target at or above
    c stops the write all the same."""
    c = self.shape[-1]
    return (weight is None and reduction != "none" and self.ndim == 2 and len(self)
            and target.dtype.type is np.int64 and grad_output.dtype == self.dtype
            and not -c <= ignore_index < c)


def _kept_samples(self, target, weight, ignore_index):
    """torch's checks of the dtypes and the targets; then None when every sample counts (the usual batch:
    targets in range and ignore_index outside it), else the mask of the samples that do."""
    c = self.shape[1 if self.ndim > 1 else 0]
    _check_kernel_dtypes(self, target, weight)
    if _check_targets(target, c, ignore_index) and not 0 <= ignore_index < c:
        return None
    kept = target != ignore_index
    return None if kept.all() else kept


def _nll_on_host(self, target, weight, reduction, ignore_index):
    """torch's CPU kernel, value for value: the picked values (times their class weights) in
    the input's dtype, summed in torch's order (see nll_sum), the mean divided once."""
    kept = _kept_samples(self, target, weight, ignore_index)
    safe = target if kept is None else np.where(kept, target, 0)
    losses = self[_host_row_numbers(len(self)), safe] if self.ndim == 2 else _pick(self, safe)
    if weight is not None:
        weights = weight.astype(self.dtype, copy=False)[safe]
        losses = losses * weights
    if reduction == "none":  # (torch writes +0.0 for an ignored sample)
        return -losses if kept is None else np.where(kept, -losses, 0)
    # (0.0 - the sum: torch's total starts from +0.0, so it is never -0.0)
    total = 0.0 - ordered_sum(losses.reshape(-1), None if kept is None else kept.ravel())
    if reduction == "sum":
        return np.asarray(total)
    if not safe.size:  # (torch fills a quiet NaN: 0 / 0 would set its sign bit)
        return np.asarray(math.nan, self.dtype)
    return np.asarray(total / _kept_weight(None if weight is None else weights, kept,
                                           safe.size))


def _nll_backward_kernel(grad_output, self, target, weight, reduction, ignore_index):
    """torch's nll_loss_backward: zeros, and at each sample's target class ``-w[t]`` times the
    sample's upstream gradient (for a mean: the upstream gradient over the total weight),
    computed in the input's dtype and written there alone: other classes and ignored samples
    stay +0.0 whatever the upstream gradient holds (NaN and inf included)."""
    dt = self.dtype
    target = _arr(target)
    weight = None if weight is None else _arr(weight)  # (no class weights: no call)
    if type(self) is np.ndarray or get_xp(self) is np:
        if _usual_gradient(grad_output, self, target, weight, reduction, ignore_index):
            out = _usual_nll_gradient(grad_output, target, self.shape, dt, reduction == "mean")
            if out is not None:
                return out
        return _nll_backward_on_host(grad_output, self, target, weight, reduction, ignore_index)
    xp = get_xp(self)
    # NOTE: on a GPU the forward kernel's check of these targets stands (the node's saved
    # target is version-checked; this op is reached through nll_loss's graph only): checking
    # again would read the device, waiting for its queue, once more per step.
    wt, safe = (_nll_terms(target, weight, ignore_index, self.shape) if launch_bound(self)
                else _checked_terms(self, target, weight, ignore_index))
    w = None if weight is None else weight[safe].astype(dt, copy=False)
    grad = grad_output.astype(dt, copy=False)
    if reduction == "none" and target.ndim:  # (times -w: a NaN keeps its sign, as torch's)
        values = (dt.type(-1) if w is None else -w) * grad
    else:
        if reduction == "mean":  # (a device array's total stays there: no read)
            total = _total_weight(wt, safe)
            grad = grad / (dt.type(total) if type(total) is float else total.astype(dt))
        values = -grad if w is None else w * -grad
    out = xp.zeros(self.shape, dt)
    if type(wt) is not float:  # some samples ignored: nothing is written for them
        kept = wt if wt.dtype == np.bool_ else target != ignore_index  # (the mask as weights)
        values = xp.where(kept, values, dt.type(0))
    if self.ndim == 1:
        out[safe] = values
    elif self.ndim == 2:
        out[_row_numbers(self), safe] = values
    else:
        axis = _class_axis(self.ndim)
        values = xp.broadcast_to(values, safe.shape)
        xp.put_along_axis(out, xp.expand_dims(safe, axis), xp.expand_dims(values, axis), axis)
    return out


def _usual_nll_gradient(grad_output, target, shape, dtype, mean):
    """The usual batch's gradient (see _usual_gradient), or None when a sample carries
    ignore_index (the general path then skips it)."""
    grad = grad_output[()]  # (a scalar's arithmetic, not a 0-d array's)
    out = np.zeros(shape, dtype)
    try:
        out[_host_row_numbers(shape[0]), target] = -(grad / shape[0]) if mean else -grad
    except IndexError:
        return None
    return out


def _nll_backward_on_host(grad_output, self, target, weight, reduction, ignore_index):
    """``_nll_backward_kernel`` on NumPy arrays: the one value of a reduced loss computed as
    a scalar, the mean's total weight torch's (the forward's sum, see nll_sum)."""
    dt = self.dtype
    kept = _kept_samples(self, target, weight, ignore_index)
    safe = target if kept is None else np.where(kept, target, 0)
    weights = None if weight is None else weight.astype(dt, copy=False)[safe]
    grad = grad_output.astype(dt, copy=False)
    if reduction == "none" and target.ndim:  # (times -w: a NaN keeps its sign, as torch's)
        values = (dt.type(-1) if weights is None else -weights) * grad
    else:  # (one value: a NumPy scalar's arithmetic, not a 0-d array's)
        grad = grad[()]
        if reduction == "mean":  # (an empty batch writes nothing: its 0 / 0 is never read)
            grad = grad / _kept_weight(weights, kept, safe.size)
        values = -grad if weights is None else weights * -grad
    if kept is not None:  # (nothing is written for an ignored sample)
        values = np.where(kept, values, dt.type(0))
    out = np.zeros(self.shape, dt)
    if self.ndim == 1:
        out[safe] = values
    elif self.ndim == 2:
        out[_row_numbers(self), safe] = values
    else:
        values = np.broadcast_to(values, safe.shape)
        np.put_along_axis(out, np.expand_dims(safe, 1), np.expand_dims(values, 1), 1)
    return out


def _kept_weight(weights, kept, size):
    """torch's total weight of the kept samples (their number when no class is weighted: a
    Python int, which NumPy rounds to the dtype it divides, as torch casts it)."""
    if weights is not None:
        return ordered_sum(weights.reshape(-1), None if kept is None else kept.ravel())
    return size if kept is None else int(np.count_nonzero(kept))


def _nll_grad_output_grad(nll):
    """d nll_loss_backward / d grad_output applied to ``grad``: nll_loss of ``grad`` itself
    (the gradient is linear in grad_output)."""
    def formula(grad, target, weight, reduction, ignore_index):
        return nll(grad, target, weight, reduction, ignore_index)
    return formula


def _nll_self_grad(grad):
    # the gradient does not depend on the input's values: zeros (an edge all the same, as torch)
    xp = get_xp(_arr(grad))
    zeros = xp.zeros_like(_arr(grad))
    return zeros if is_array(grad) else _wrap(zeros)


# NOTE: target and weight are not differentiable (torch's nll_loss has one edge, to ``self``), so
# they travel as plain arguments: the kernel and the formula unwrap them with _arr.
@op("nll_loss", node="NllLossBackward0", promote=NONE, checked=("target", "weight"), quiet=True)
def _nll(self, target, weight, reduction, ignore_index):
    return _nll_kernel(self, target, weight, reduction, ignore_index)


@op("nll_loss2d", node="NllLoss2DBackward0", promote=NONE, checked=("target", "weight"),
    quiet=True)
def _nll2d(self, target, weight, reduction, ignore_index):
    return _nll_kernel(self, target, weight, reduction, ignore_index)


# nll_loss's gradient is an op of its own, as in torch, so that create_graph records its
# NllLossBackwardBackward0 (the gradient requires grad through its edge to the input).
@op("nll_loss_backward", tensors=2, promote=NONE, node="NllLossBackwardBackward0",
    checked=("target", "weight"), quiet=True)
def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index=-100):
    return _nll_backward_kernel(grad_output, self, target, weight, reduction, ignore_index)


@op("nll_loss2d_backward", tensors=2, promote=NONE, node="NllLoss2DBackwardBackward0",
    checked=("target", "weight"), quiet=True)
def nll_loss2d_backward(grad_output, self, target, weight, reduction, ignore_index=-100):
    return _nll_backward_kernel(grad_output, self, target, weight, reduction, ignore_index)


@replay_form(_nll)
def _(self, target, weight, reduction, ignore_index):
    # (the usual batch's path, but for the targets' range: checked at each call)
    if not (type(self) is np.ndarray and type(target) is np.ndarray and self.ndim == 2
            and _usual_batch_shape(self, target, weight, reduction, ignore_index)):
        return None
    return _usual_nll_of(len(self), self.shape[1], self.dtype.type, reduction,
                         ignore_index), (0, 1)


def _usual_nll_of(n, c, dtype, reduction, ignore_index):
    """nll_loss's kernel on ``n`` rows of ``c`` classes of ``dtype`` (a NumPy matrix) with
    int64 class indices, no weights, reduced (``_nll_kernel``'s usual batch, what it reads of
    the arguments' shapes and dtypes worked out once)."""
    rows, total_of = _host_row_numbers(n), small_ordered_sum_of(n, dtype)
    mean = reduction == "mean"

    def nll(self, target):
        # (as _usual_batch; a NumPy uint64 against a Python int: compared exactly)
        if _max_reduce(target.view(_UINT64)) < c:
            total = 0.0 - total_of(self[rows, target])
            return _as_array(total / n if mean else total)
        return _nll_on_host(self, target, None, reduction, ignore_index)
    return nll


_UINT64, _as_array = np.uint64, np.asarray  # (read by nll above at each call)


@replay_form(nll_loss_backward)
def _(grad_output, self, target, weight, reduction, ignore_index=-100):
    if not (type(self) is np.ndarray and type(target) is np.ndarray and _usual_gradient(
            grad_output, self, target, weight, reduction, ignore_index)):
        return None
    shape, dtype, n, rows = self.shape, self.dtype, len(self), _host_row_numbers(len(self))
    mean = reduction == "mean"

    def gradient(grad_output, self, target):
        # (_usual_nll_gradient's steps, its row numbers bound)
        grad = grad_output[()]
        out = np.zeros(shape, dtype)
        try:
            out[rows, target] = -(grad / n) if mean else -grad
        except IndexError:  # (an ignored sample: the general path skips it)
            return _nll_backward_on_host(grad_output, self, target, None, reduction,
                                         ignore_index)
        return out
    return gradient, (0, 1, 2)


@_nll.grad("self")
def _(grad, self, target, weight, reduction, ignore_index):
    return nll_loss_backward(grad, self, target, weight, reduction, ignore_index)


@_nll2d.grad("self")
def _(grad, self, target, weight, reduction, ignore_index):
    return nll_loss2d_backward(grad, self, target, weight, reduction, ignore_index)


for _fwd, _bwd in ((_nll, nll_loss_backward), (_nll2d, nll_loss2d_backward)):
    _bwd.grad("grad_output")(_nll_grad_output_grad(_fwd))
    _bwd.grad("self")(_nll_self_grad)


def _check_nll(input, target, weight):
    """torch's checks of nll_loss_nd's arguments, in its order: the ranks and batch sizes and
    a 3-D or 5-D target's size (nll_loss_nd's own), the weight's requires_grad (autograd's,
    before the kernel's), then the kernel's: the target's rank and dtype, the weight's size,
    and nll_loss2d's (4-D and the ranks viewed as 4-D) target size. The kernels check the
    rest (see _check_kernel_dtypes): the weight's dtype, nll_loss2d's Long-only targets, then
    the targets' range."""
    if weight is None and type(input) is Tensor and type(target) is Tensor:
        # the usual batch: every check below passes when the batch sizes agree (read from
        # the arrays: each Tensor property, each Size, is a Python call)
        a, t = input._data, target._data
        if a.ndim == 2 and t.ndim == 1 and t.dtype == np.int64 and len(a) == len(t):
            return a.shape[1]
    shape, ndim = input.shape, input.ndim
    if ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {ndim})")
    if ndim != 1 and shape[0] != (target.shape[0] if target.ndim else 0):
        raise ValueError(f"Expected input batch_size ({shape[0]}) to match target "
                         f"batch_size ({target.shape[0] if target.ndim else 0}).")
    spatial = ndim > 2
    if spatial and ndim != 4 and tuple(target.shape[1:]) != tuple(shape[2:]):
        expected = (shape[0],) + tuple(shape[2:])
        raise RuntimeError(f"Expected target size {_sizes_of(expected)}, got {_sizes(target)}")
    if weight is not None:
        refuse_grad_of("nll_loss2d_forward" if spatial else "nll_loss_forward", "weight", weight)
    _check_target_rank(target, ndim)
    if target.dtype is not D.int64:
        _check_target_dtype(target.dtype)
    c = shape[_class_axis(ndim)]
    if not spatial:
        if ndim == 1 and target.ndim == 1 and target.shape[0] != 1:
            raise ValueError("For 1D input, 1D target must have size 1, but got target size: "
                             f"{target.shape[0]}")
        if weight is not None and (weight.ndim != 1 or weight.numel() != c):
            raise RuntimeError(f"weight tensor should be defined either for all {c} classes or "
                               f"no classes but got weight tensor of shape: {list(weight.shape)}")
        return c
    if weight is not None and weight.numel() != c:
        raise RuntimeError("weight tensor should be defined either for all or no classes")
    if ndim == 4 and tuple(target.shape) != (shape[0],) + tuple(shape[2:]):
        raise RuntimeError(f"size mismatch (got input: {_sizes(input)} , target: "
                           f"{_sizes(target)}")
    return c


def _check_target_rank(target, ndim):
    """The target's rank: at most 1 for nll_loss, 3 for nll_loss2d (a 3-D or 5-D input's
    target is viewed as 3-D, its size checked before)."""
    if ndim <= 2 and target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if ndim == 4 and target.ndim != 3:
        raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                           f"targets of dimension: {target.ndim}")


def _check_target_dtype(dtype):
    """torch's class indices: int64 or uint8 (an ember dtype)."""
    if dtype is not D.int64 and dtype is not D.uint8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{dtype.scalar_name}")


def _check_kernel_dtypes(self, target, weight):
    """The kernel's checks of its arrays' dtypes, before the targets' range (a compiled
    function's replay runs kernels only): class indices, then class weights of the input's
    dtype (torch does not promote them); nll_loss2d's kernel (4-D inputs) then reads its
    targets as int64 alone."""
    if target.dtype != np.int64:
        _check_target_dtype(D.from_numpy_dtype(target.dtype))
    if weight is not None and weight.dtype != self.dtype:
        _refuse_dtype(self.dtype, weight.dtype)
    if self.ndim == 4 and target.dtype != np.int64:
        _refuse_dtype(np.dtype(np.int64), target.dtype)


def _refuse_dtype(expected, found):
    """torch's error for an array of another dtype than its kernel's (NumPy dtypes)."""
    raise RuntimeError(f"expected scalar type {D.from_numpy_dtype(expected).scalar_name} but "
                       f"found {D.from_numpy_dtype(found).scalar_name}")


def _sizes_of(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _sizes(t):
    return _sizes_of(t.shape)


def _check_targets(target, c, ignore_index):
    """torch's IndexError for a target that is neither a class index below ``c`` nor
    ``ignore_index``; whether every target is a class index (``target`` a Tensor or, inside a
    kernel, its array)."""
    data = checked_values(target) if isinstance(target, Tensor) else target
    if not data.size or _below(data, c):  # the usual case
        return True
    bad = (data != ignore_index) & ((data < 0) | (data >= c))
    if bad.any():
        raise IndexError(f"Target {int(data[bad].reshape(-1)[0])} is out of bounds.")
    return False


def _below(data, c):
    """Whether every integer in ``data`` lies in [0, c): one reduction where the integers are
    signed (seen as unsigned, a negative one is larger than any class count)."""
    unsigned = _UNSIGNED.get(data.dtype)
    if unsigned is not None and 0 <= c <= 1 << (8 * data.dtype.itemsize - 1):
        # (compared on the host: the read is needed anyway, and a GPU launches one kernel less)
        return int(reduce_max(data.view(unsigned))) < c
    return bool(data.min() >= 0 and data.max() < c)


_UNSIGNED = {np.dtype(f"i{n}"): np.dtype(f"u{n}") for n in (1, 2, 4, 8)}


def _nll_nd(input, target, weight, reduction, ignore_index):
    """torch's nll_loss_nd: 1-D/2-D inputs to nll_loss, 4-D to nll_loss2d, and the other ranks
    viewed as (N, C, 1, -1) for nll_loss2d (the 'none' result viewed back)."""
    c = _check_nll(input, target, weight)
    if input.ndim <= 2:  # (the kernel checks the targets)
        return _nll(input, target, weight, reduction, ignore_index)
    if weight is not None and weight.ndim != 1:  # (nll_loss2d reads any weight of c values)
        weight = weight.reshape(-1)
    if input.ndim == 4:
        return _nll2d(input, target, weight, reduction, ignore_index)
    n = input.shape[0]
    out_size = (n,) + tuple(input.shape[2:])
    input, target = input.contiguous(), target.contiguous()
    input = input.view(n, c, 1, -1) if input.numel() > 0 else input.view(n, c, 0, 0)
    target = target.view(n, 1, -1) if target.numel() > 0 else target.view(n, 0, 0)
    out = _nll2d(input, target, weight, reduction, ignore_index)
    return out.view(out_size) if reduction == "none" else out


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood of log-probabilities ``input`` at the ``target`` classes."""
    if size_average is not None or reduce is not None or reduction not in _REDUCTIONS:
        reduction = reduction_enum(reduction, size_average, reduce)
    return _nll_nd(input, target, weight, reduction, ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy between logits ``input`` and class indices or class probabilities."""
    if size_average is not None or reduce is not None or reduction not in _REDUCTIONS:
        reduction = reduction_enum(reduction, size_average, reduce)
    ndim = input.ndim
    # (torch: equal shapes mean class probabilities; the ranks first, one comparison in the
    # usual case)
    if target.ndim == ndim and target.shape == input.shape:
        _check_probs(input, target, weight, ignore_index, label_smoothing)
        return _ce_probs(input, target, weight, reduction, label_smoothing)
    if label_smoothing > 0:
        _check_smoothing(label_smoothing)
    if ndim == 0:  # (torch's log_softmax along dim 1)
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if label_smoothing > 0:
        return _ce_smoothed(input, target, weight, reduction, ignore_index, label_smoothing)
    # NOTE: torch's graph, not a fused node: NllLossBackward0 -> LogSoftmaxBackward0. The
    # gradient costs one extra (N, C) pass over a fused node, measured as small. (Every
    # argument passed: a call of fewer goes through the op's argument binding.)
    logp = _log_softmax(input, 0 if ndim == 1 else 1, False)
    if ndim > 2:
        return _nll_nd(logp, target, weight, reduction, ignore_index)
    _check_nll(logp, target, weight)  # (_nll_nd's first step, written out: a call fewer)
    return _nll(logp, target, weight, reduction, ignore_index)


def _check_probs(input, target, weight, ignore_index, label_smoothing):
    """torch's checks of class-probability targets, in its order."""
    if not target.dtype.is_floating_point:
        raise RuntimeError("Expected floating point type for target with class probabilities, "
                           f"got {target.dtype.scalar_name}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    if input.ndim == 0:
        raise IndexError("Dimension specified as 1 but tensor has no dimensions")
    c = input.shape[_class_axis(input.ndim)]
    if weight is not None and (weight.ndim != 1 or weight.numel() != c):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {c} "
                           f"classes or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")
    if label_smoothing > 0:
        _check_smoothing(label_smoothing)


def _check_smoothing(label_smoothing):
    """A positive label_smoothing is at most 1 (torch checks no other value: a negative or
    NaN one is taken as none); printed as C++ prints a double."""
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing:g}")


def _class_view(weight, ndim):
    axis = _class_axis(ndim)
    return weight.reshape([-1 if i == axis else 1 for i in range(ndim)])


def _ce_probs(input, target, weight, reduction, label_smoothing):
    axis = _class_axis(input.ndim)
    n_classes = input.shape[axis]
    if label_smoothing > 0:  # (no classes: torch's double division gives inf, added to none)
        target = add_scalar(mul_scalar(target, 1 - label_smoothing),
                            label_smoothing / n_classes if n_classes else float("inf"))
    terms = _log_softmax(input, axis, False) * target
    if weight is not None:
        terms = terms * _class_view(weight, input.ndim)
    if reduction == "none":
        return -terms.sum(axis)
    if reduction == "sum":
        return -terms.sum()
    if input.numel() == 0:  # (torch's -(sum.fill_(NAN)))
        return -(terms.sum().fill_(float("nan")))
    return div_scalar(-terms.sum(), input.numel() // n_classes)


def _ce_smoothed(input, target, weight, reduction, ignore_index, eps):
    from .pointwise import masked_fill
    axis = _class_axis(input.ndim)
    n_classes = input.shape[axis]
    logp = _log_softmax(input, axis, False)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    ignore = target == ignore_index
    terms = logp if weight is None else logp * _class_view(weight, input.ndim)
    smooth = masked_fill(-terms.sum(axis), ignore, 0.0)  # (torch's masked_fill_)
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
    return mul_scalar(nll, 1 - eps) + mul_scalar(ret, eps / n_classes)


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
    if input.dtype.category < D.FLOATING or target.dtype.category < D.FLOATING:
        raise RuntimeError("kl_div: Integral inputs not supported.")
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
    from .pointwise import add_scalar
    if size_average is not None or reduce is not None:
        reduction = reduction_enum(reduction, size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_input:
        loss = exp(input) - target * input
    else:
        # (torch's C++ input + eps takes a Scalar: AddBackward1)
        loss = input - target * log(add_scalar(input, eps))
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
    loss = 0.5 * (log(var) + (input - target) ** 2 / var)  # (torch's F: PowBackward0)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _apply_reduction(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1."""
    from .pointwise import add_scalar, scalar_first, sub_scalar
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
    # (torch's C++ composite: tensor + double and tensor - double take a Scalar, AddBackward1
    # and SubBackward1; 1 - tensor is a filled tensor's sub_, SubBackward0)
    prod_sum = (input1 * input2).sum(td)
    mag1 = add_scalar((input1 * input1).sum(td), 1e-12)
    mag2 = add_scalar((input2 * input2).sum(td), 1e-12)
    cos = prod_sum / (mag1 * mag2).sqrt()
    pos = where(target == 1, scalar_first(1, cos, "sub"), 0.0)
    neg = where(target == -1, clamp_min(sub_scalar(cos, margin), 0), 0.0)
    return _apply_reduction(pos + neg, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (x1 - x2) + margin)."""
    reduction = reduction_enum(reduction, size_average, reduce)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: {input2.shape}, "
                           f"target: {target.shape} ")
    return margin_ranking(input1, input2, target, margin, reduction)


def margin_ranking(input1, input2, target, margin, reduction):
    """The aten operator (``torch.margin_ranking_loss``): its inputs broadcast."""
    from .unary import clamp_min
    difference = input1 - input2  # (before the target's negation, as torch's order of checks)
    # (torch adds the margin as a number: add.Scalar, AddBackward1)
    return _apply_reduction(clamp_min(add_scalar(-target * difference, margin), 0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x for target 1, max(0, margin - x) for target -1."""
    from .._creation import full_like, zeros_like
    from .unary import clamp_min
    reduction = reduction_enum(reduction, size_average, reduce)
    # (torch fills the margin in the input's dtype and subtracts the input in place: an integer
    # input stays integral, and its mean raises; a bool input's subtraction raises)
    zeros = zeros_like(input)
    margin_clamp = where(target != 1, clamp_min(full_like(input, margin) - input, 0), zeros)
    self_part = where(target != -1, input, zeros)
    return _apply_reduction(margin_clamp + self_part, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with pairwise p-norm distances."""
    reduction = reduction_enum(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return triplet_margin(anchor, positive, negative, margin, p, eps, swap, reduction)


def triplet_margin(anchor, positive, negative, margin, p, eps, swap, reduction):
    """The aten operator (``torch.triplet_margin_loss``): any margin, the dimensions checked."""
    from .nn_ops import pairwise_distance
    from .pointwise import minimum
    from .unary import clamp_min
    a, pd_, n = anchor.ndim, positive.ndim, negative.ndim
    if not (a == pd_ == n):
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {pd_}D, "
                           f"and negative {n}D inputs")
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    # torch's margin + dist_pos - dist_neg: the margin added as a number first (AddBackward1)
    return _apply_reduction(clamp_min(add_scalar(dist_pos, margin) - dist_neg, 0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """Triplet margin loss under a custom distance (pairwise distance by default)."""
    from .nn_ops import pairwise_distance
    from .unary import clamp_min
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a_dim}D, positive "
                           f"{p_dim}D, and negative {n_dim}D inputs")
    if distance_function is None:
        distance_function = pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        from .pointwise import minimum
        dist_neg = minimum(dist_neg, distance_function(positive, negative))
    loss = clamp_min(margin + dist_pos - dist_neg, 0)
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean()
    return loss


@op("soft_margin_loss", node="SoftMarginLossBackward0", tensors=2, quiet=True, promote=NONE)
def _soft_margin(self, target, reduction):
    xp = get_xp(self)
    # torch's steps, each in the input's dtype: -x, times y, exp, log1p (so a large -x * y
    # overflows to inf as torch's does; a bool target is taken here, its negation in the
    # backward raises)
    z = xp.exp((-self * target).astype(self.dtype, copy=False))
    return _reduce(xp.log1p(z), reduction)


def _refuse_bool_negation():
    raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                       "are trying to invert a mask, use the `~` or `logical_not()` operator "
                       "instead.")


# The gradient is an op of its own, as torch's, so that create_graph records
# SoftMarginLossBackwardBackward0 with torch's second derivatives.
@_soft_margin.grad("self")
def _(grad, self, target, reduction):
    return soft_margin_loss_backward(grad, self, target, reduction)


@op("soft_margin_loss_backward", tensors=3, quiet=True, promote=NONE,
    node="SoftMarginLossBackwardBackward0")
def soft_margin_loss_backward(grad_output, self, target, reduction):
    # torch's -y * z / (1 + z) with z = exp(-y * x): nan where z overflows, as torch's
    if target.dtype == bool:  # (torch negates the target first)
        _refuse_bool_negation()
    z = get_xp(self).exp((-target * self).astype(self.dtype, copy=False))
    g = (target * z * -1.0) / (z + 1.0) * _grad_scale(grad_output, reduction, self.size)
    return g.astype(self.dtype, copy=False)


@soft_margin_loss_backward.grad("grad_output")
def _(grad, grad_output, self, target, reduction):
    # (torch's sum of backward(1) * grad where the loss was reduced: the same values)
    return soft_margin_loss_backward(grad, self, target, reduction)  # (summed to shape)


@soft_margin_loss_backward.grad("self")
def _(grad, grad_output, self, target, reduction):
    # torch's soft_margin_loss_double_backward: y^2 z / (1 + z)^2, times grad * grad_output
    z = exp(neg(target) * self)
    g = target * target * z / add_scalar(z, 1.0) / add_scalar(z, 1.0)
    return g * _grad_scale(grad * grad_output, reduction, _numel(self))


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)), averaged (a target of another shape broadcasts without
    a warning, as torch's)."""
    reduction = reduction_enum(reduction, size_average, reduce)
    refuse_grad_of("soft_margin_loss", "target", target)
    if input.dtype.category < D.FLOATING:  # (torch's exp_ in place in -input)
        if input.dtype is D.bool:
            _refuse_bool_negation()
        refuse_uncastable_result(input, target)
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{input.dtype.scalar_name}")
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
    x = self if self.ndim == 2 else self.reshape(1, -1)
    t = target.reshape(-1)
    picked = xp.take_along_axis(x, t[:, None], axis=1)
    z = margin - picked + x
    mask = (z > 0) & (xp.arange(x.shape[1])[None] != t[:, None])
    w = xp.ones(t.shape, x.dtype) if weight is None else weight[t].astype(x.dtype)
    return z, mask, w[:, None], t


@op("multi_margin_loss", node="MultiMarginLossBackward0", tensors=3, promote=NONE)
def _multi_margin(self, target, weight, p, margin, reduction):
    # (checked in the kernel: a compiled function's replay checks each call's targets too)
    # (torch's kernel returns before its dtype checks when the input is empty)
    if self.size and target.dtype != np.int64:
        _refuse_dtype(np.dtype(np.int64), target.dtype)
    if self.size and weight is not None and weight.dtype != self.dtype:
        _refuse_dtype(self.dtype, weight.dtype)
    data = checked_values(target) if isinstance(target, Tensor) else target
    if data.size and has_data(data) and not _below(data, self.shape[-1] if self.ndim else 1):
        raise RuntimeError("target out of range")
    z, mask, w, _ = _mm_parts(self, target, p, margin, weight)
    terms = (z ** p if p == 2 else z) * mask * w
    loss = terms.sum(axis=1) / z.shape[1]
    if self.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss.astype(self.dtype, copy=False), reduction)


_multi_margin.jvp("self")(no_forward_ad("multi_margin_loss"))


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
    if xr.ndim < 2:
        sel, hot = sel.reshape(xr.shape), hot.reshape(xr.shape)
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
    if weight is not None:
        refuse_grad_of("multi_margin_loss", "weight", weight)
    _check_multi_margin_shapes(input, target, weight)
    if input.numel():  # (torch's kernel returns before its dispatch when the input is empty)
        _refuse_reduced_float("multi_margin_loss_cpu_kernel", input.dtype)
    return _multi_margin(input, target, weight, p, margin, reduction)


def _refuse_reduced_float(kernel, dtype):
    """torch's refusal of a CPU kernel written for float32 and float64 alone (Half,
    BFloat16, integers)."""
    if dtype is not D.float32 and dtype is not D.float64:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{dtype.scalar_name}\'')


def _check_multi_margin_shapes(input, target, weight):
    """torch's shape checks of multi_margin_loss (before its kernel's checks of dtypes and
    of the targets' range)."""
    ndim, shape = input.ndim, input.shape
    if not ((ndim == 2 and shape[1] != 0) or (ndim == 1 and shape[0] != 0) or ndim == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(shape)}")
    frames = shape[0] if ndim == 2 else 1
    if target.ndim > 1 or target.numel() != frames:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to "
                           "the number of input samples (batch size). Expected target size "
                           f"[{frames}], but got {list(target.shape)}. Input has shape "
                           f"{list(shape)}.")
    classes = shape[-1] if ndim else 1
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(f"inconsistent weight size, expected {classes} but got "
                           f"{list(weight.shape)}")


# -- multilabel margin ---------------------------------------------------------------------------
def _mlm_parts(x, target):
    """Per pair (target j, class d): the hinge 1 - x[y_j] + x[d], and where it counts (j before
    the first -1, d not a target); float64 throughout (torch accumulates in double)."""
    xp = get_xp(x)
    x = x.astype(np.float64).reshape(-1, x.shape[-1] if x.ndim else 1)
    t = target.reshape(x.shape)
    valid = xp.cumprod(t >= 0, axis=1).astype(bool)  # before the first -1
    safe = xp.where(valid, t, 0)
    is_target = xp.zeros(x.shape, bool)
    n, j = xp.nonzero(valid)
    is_target[n, t[n, j]] = True
    picked = xp.take_along_axis(x, safe, axis=1)
    z = 1.0 - picked[:, :, None] + x[:, None, :]
    mask = valid[:, :, None] & ~is_target[:, None, :] & (z > 0)
    return z, mask, safe


@op("multilabel_margin_loss", node="MultilabelMarginLossBackward0", promote=NONE)
def _multilabel_margin(self, target, reduction):
    z, mask, _ = _mlm_parts(self, _arr(target))
    loss = (z * mask).sum(axis=(1, 2)) / (self.shape[-1] if self.ndim else 1)
    if self.ndim <= 1:
        loss = loss.reshape(())
    if reduction == "mean":
        return get_xp(self).asarray(loss.mean() if loss.size else np.nan, dtype=self.dtype)
    if reduction == "sum":
        return get_xp(self).asarray(loss.sum(), dtype=self.dtype)
    return loss.astype(self.dtype)


_multilabel_margin.jvp("self")(no_forward_ad("multilabel_margin_loss_forward"))


@_multilabel_margin.grad("self")
def _(grad, self, target, reduction):
    return _multilabel_margin_backward(grad, self, target, reduction)


@op("multilabel_margin_loss_backward", node="NotImplemented", tensors=2,
    promote=NONE)
def _multilabel_margin_backward(grad, self, target, reduction):
    xp = get_xp(self)
    _, mask, safe = _mlm_parts(self, _arr(target))
    dim = self.shape[-1] if self.ndim else 1
    coeff = mask.sum(axis=1).astype(np.float64)  # + once per (j, d) pair at d
    rows = xp.broadcast_to(xp.arange(coeff.shape[0])[:, None], safe.shape)
    minus = -mask.sum(axis=2).astype(np.float64)  # - once per pair at y_j
    flat = (rows * coeff.shape[1] + safe).reshape(-1)
    scatter_add(coeff.reshape(-1), flat, minus.reshape(-1))
    coeff = coeff / dim
    if reduction == "mean":
        coeff = coeff / coeff.shape[0]
    g = grad[:, None] if reduction == "none" and self.ndim == 2 else grad
    return (g * coeff.reshape(self.shape)).astype(self.dtype)


@_multilabel_margin_backward.grad("grad", "self")
def _(grad):
    # NOTE: torch has no double backward for this loss; this is its error.
    raise RuntimeError("derivative for aten::multilabel_margin_loss_backward is not implemented")


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-class multi-label hinge loss; ``target`` lists each sample's classes, ended by the
    first -1."""
    reduction = reduction_enum(reduction, size_average, reduce)
    nd = input.ndim
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    dim = 1 if nd == 0 else input.shape[-1]
    if nd <= 1:
        ok = target.ndim <= 1 and target.numel() == dim
    else:
        ok = target.ndim == 2 and tuple(target.shape) == tuple(input.shape)
    if not ok:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    _refuse_reduced_float("multilabel_margin_loss_forward_out_frame", input.dtype)
    if target.dtype != D.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.scalar_name}")
    t = target._data
    if ((t < -1) | (t >= dim)).any():
        raise RuntimeError("argument #2 'target' is out of range")
    return _multilabel_margin(input, target, reduction)


# -- connectionist temporal classification -------------------------------------------------------
def _lse3(a, b, c):
    """log(exp(a) + exp(b) + exp(c)) as torch's CTC kernels write it (max shift, -inf safe)."""
    xp = get_xp(a)
    m = xp.maximum(xp.maximum(a, b), c)
    m = xp.where(m == -np.inf, 0.0, m)
    with np.errstate(all="ignore"):
        return xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m)) + m


def _shift(a, k, right):
    """``a`` moved ``k`` places along the last axis, filled with -inf."""
    xp = get_xp(a)
    out = xp.full(a.shape, -np.inf)
    if k < a.shape[-1]:
        if right:
            out[..., k:] = a[..., :a.shape[-1] - k]
        else:
            out[..., :a.shape[-1] - k] = a[..., k:]
    return out


def _ctc_labels(xp, targets, target_lengths, blank):
    """The extended label sequences l' (blank, l1, blank, l2, ..., blank), one row per sample,
    and where the skip transition s-2 -> s is allowed."""
    lengths = np.asarray(target_lengths, dtype=np.int64)
    n, smax = len(lengths), int(lengths.max()) if len(lengths) else 0
    if targets.ndim == 1:  # concatenated targets
        starts = np.cumsum(lengths) - lengths
        cols = np.minimum(np.arange(smax)[None, :], np.maximum(lengths[:, None] - 1, 0))
        idx = xp.asarray(starts[:, None] + cols)
        tg = targets[idx] if targets.size else xp.zeros((n, smax), np.int64)
    else:
        tg = targets[:, :smax]
    # NOTE: entries past a sample's target length are padding (any value): never read.
    tg = xp.where(xp.asarray(np.arange(smax)[None, :] < lengths[:, None]), tg, blank)
    lab = xp.full((n, 2 * smax + 1), blank, dtype=np.int64)
    lab[:, 1::2] = tg
    skip = xp.zeros(lab.shape, bool)
    skip[:, 2:] = lab[:, 2:] != lab[:, :-2]
    return lab, skip, xp.asarray(lengths)


def _ctc_emissions(lp, lab):
    """log_probs[t, n, l'(s)] for every t, n, s: (T, N, L)."""
    xp = get_xp(lp)
    return xp.take_along_axis(lp, xp.broadcast_to(lab[None], (lp.shape[0],) + lab.shape), axis=2)


def _ctc_alpha(lp, lab, skip, in_len, tg_len):
    xp = get_xp(lp)
    steps, n = lp.shape[:2]
    size = lab.shape[1]
    emit = _ctc_emissions(lp, lab)
    s_ok = xp.arange(size)[None, :] <= 2 * tg_len[:, None]
    alpha = xp.full((steps, n, size), -np.inf)
    if steps:
        first = xp.full((n, size), -np.inf)
        first[:, 0] = emit[0, :, 0]
        if size > 1:
            first[:, 1] = xp.where(tg_len > 0, emit[0, :, 1], -np.inf)
        alpha[0] = first
    for t in range(1, steps):
        prev = alpha[t - 1]
        a3 = xp.where(skip, _shift(prev, 2, True), -np.inf)
        alpha[t] = xp.where(s_ok, _lse3(prev, _shift(prev, 1, True), a3) + emit[t], -np.inf)
    rows = xp.arange(n)
    last = xp.maximum(in_len - 1, 0)
    end = alpha[last, rows]  # (N, L): alpha at each sample's last step
    l1 = xp.take_along_axis(end, (2 * tg_len)[:, None], axis=1)[:, 0]
    l2 = xp.where(tg_len > 0, xp.take_along_axis(end, xp.maximum(2 * tg_len - 1, 0)[:, None],
                                                  axis=1)[:, 0], -np.inf)
    ll = _lse3(l1, l2, xp.full(l1.shape, -np.inf))
    empty = xp.where(tg_len == 0, 0.0, -np.inf)
    nll = -xp.where(in_len > 0, ll, empty)
    return nll, alpha


def _ctc_grad(grad_out, lp, lab, skip, in_len, tg_len, nll, alpha, zero_infinity):
    """torch's CTC gradient (Graves et al. eq. 16), including its exp(log_probs) term."""
    xp = get_xp(lp)
    steps, n, classes = lp.shape
    size = lab.shape[1]
    emit = _ctc_emissions(lp, lab)
    s_ok = xp.arange(size)[None, :] <= 2 * tg_len[:, None]
    s_last = xp.arange(size)[None, :] >= 2 * tg_len[:, None] - 1
    skip_up = xp.zeros(skip.shape, bool)
    skip_up[:, :-2] = skip[:, 2:]  # s -> s+2 allowed
    beta = xp.full((steps, n, size), -np.inf)
    nxt = xp.full((n, size), -np.inf)
    for t in range(steps - 1, -1, -1):
        b3 = xp.where(skip_up, _shift(nxt, 2, False), -np.inf)
        rec = _lse3(nxt, _shift(nxt, 1, False), b3) + emit[t]
        init = xp.where(s_last & s_ok, emit[t], -np.inf)
        cur = xp.where((t == in_len - 1)[:, None], init,
                       xp.where((t < in_len - 1)[:, None], rec, -np.inf))
        cur = xp.where(s_ok, cur, -np.inf)
        beta[t] = nxt = cur
    ab = alpha + beta  # (T, N, L)
    m = ab.max(axis=2, keepdims=True) if size else xp.zeros((steps, n, 1))
    m = xp.where(m == -np.inf, 0.0, m)
    onehot = (lab[:, :, None] == xp.arange(classes)[None, None, :]).astype(np.float64)
    with np.errstate(all="ignore"):
        lcab = xp.log(xp.einsum("tns,nsc->tnc", xp.exp(ab - m), onehot)) + m
        _last_label_blank_quirk(lcab, ab, lab, in_len, tg_len)
        grad = (xp.exp(lp) - xp.exp(lcab + nll[None, :, None] - lp)) * grad_out[None, :, None]
    keep = xp.arange(steps)[:, None] < in_len[None, :]
    if zero_infinity:
        keep = keep & (nll != np.inf)[None, :]
    return xp.where(keep[:, :, None], grad, 0.0)


def _last_label_blank_quirk(lcab, ab, lab, in_len, tg_len):
    """torch's kernel at a sample's last step sets the blank's term from the final blank
    (s = 2L), then the last label's term (s = 2L - 1) without adding, assuming that label is
    no blank: a target ending in the blank class keeps the last label's term alone there (its
    gradient then does not sum to zero). In place."""
    blank = lab[:, 0]
    n = np.arange(len(tg_len))
    last = 2 * tg_len - 1
    hit = (tg_len > 0) & (in_len > 0)
    hit = hit & (lab[n, np.maximum(last, 0)] == blank)
    for k in np.nonzero(hit)[0]:
        lcab[in_len[k] - 1, k, blank[k]] = ab[in_len[k] - 1, k, last[k]]


@op("_ctc_loss", node="CtcLossBackward0", promote=NONE, outputs=2, diff_outputs=(True, False))
def _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    xp = get_xp(log_probs)
    lab, skip, tg_len = _ctc_labels(xp, _arr(targets), target_lengths, blank)
    # torch's kernel reads a target outside [0, C) from memory beside the row; NumPy would
    # wrap a negative one around silently: refused, as nll_loss refuses it
    _check_targets(lab, log_probs.shape[2], blank)
    in_len = xp.asarray(np.asarray(input_lengths, dtype=np.int64))
    nll, alpha = _ctc_alpha(log_probs.astype(np.float64), lab, skip, in_len, tg_len)
    return nll.astype(log_probs.dtype), alpha.transpose(1, 0, 2).astype(log_probs.dtype)


_ctc_loss.jvp("log_probs")(no_forward_ad("_ctc_loss"))


@_ctc_loss.grad("log_probs")
def _(grads, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity, result0,
      result1):
    return _ctc_loss_backward(grads[0], log_probs, targets, input_lengths, target_lengths,
                              result0, result1, blank, zero_infinity)


@op("_ctc_loss_backward", node="NotImplemented", tensors=2, promote=NONE)
def _ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, neg_log_likelihood,
                       log_alpha, blank, zero_infinity):
    xp = get_xp(log_probs)
    lab, skip, tg_len = _ctc_labels(xp, _arr(targets), target_lengths, blank)
    in_len = xp.asarray(np.asarray(input_lengths, dtype=np.int64))
    nll = _arr(neg_log_likelihood).astype(np.float64)
    alpha = _arr(log_alpha).astype(np.float64).transpose(1, 0, 2)
    out = _ctc_grad(grad.astype(np.float64), log_probs.astype(np.float64), lab, skip, in_len,
                    tg_len, nll, alpha, zero_infinity)
    return out.astype(log_probs.dtype)


@_ctc_loss_backward.grad("grad", "log_probs")
def _(grad):
    # NOTE: torch has no double backward for CTC either; this is its error.
    raise RuntimeError("derivative for aten::_ctc_loss_backward is not implemented")


def _ctc_lengths(lengths, name):
    if isinstance(lengths, Tensor):
        if lengths.dtype.category != D.INTEGRAL:
            raise RuntimeError(f"{name} must be integral")
        return tuple(int(v) for v in lengths.reshape(-1).tolist())
    if isinstance(lengths, int):
        return (lengths,)
    return tuple(int(v) for v in lengths)


def _ctc_check(log_probs, targets, in_len, tg_len, blank):
    where = " (while checking arguments for ctc_loss_allocate_outputs)"
    if log_probs.numel() == 0:  # (before any other check, as torch's)
        raise RuntimeError("log_probs tensor must not be empty")
    if log_probs.ndim != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.ndim}-dimensional "
                           f"tensor for argument #1 'log_probs'{where}")
    if not 1 <= targets.ndim <= 2:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.ndim}-dimensional "
                           f"tensor for argument #2 'targets'{where}")
    n, classes = log_probs.shape[1], log_probs.shape[2]
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    if len(in_len) != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tg_len) != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    for v in tg_len:
        if v < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value "
                               f"{v}{where}")
    if targets.ndim == 1:
        if targets.shape[0] != sum(tg_len):
            raise RuntimeError(f"Expected tensor to have size {sum(tg_len)} at dimension 0, but "
                               f"got size {targets.shape[0]} for argument #2 'targets'{where}")
    else:
        if targets.shape[0] != n:
            raise RuntimeError(f"Expected tensor to have size {n} at dimension 0, but got size "
                               f"{targets.shape[0]} for argument #2 'targets'{where}")
        longest = max(tg_len, default=0)
        if targets.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, "
                               f"but got size {targets.shape[1]} for argument #2 "
                               f"'targets'{where}")
    for v in in_len:
        if v < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value "
                               f"{v}{where}")
        if v > log_probs.shape[0]:
            raise RuntimeError(f"Expected input_lengths to have value at most "
                               f"{log_probs.shape[0]}, but got value {v}{where}")


def _parse_ctc_arguments(*args):
    """F.ctc_loss hands its arguments to ``torch.ctc_loss`` in order (the reduction as aten's
    int): torch's parser refuses there what neither of its signatures takes (lengths as one
    int, a float or bool blank, an int zero_infinity)."""
    from .._arg_parser import parser_error
    from .._parser_signatures import FUNCTIONS
    error = parser_error("ctc_loss", FUNCTIONS["ctc_loss"][0], args, {})
    if error is not None:
        raise error


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The Connectionist Temporal Classification loss of ``log_probs`` (T, N, C) against
    ``targets``."""
    reduction = reduction_enum(reduction)
    _parse_ctc_arguments(log_probs, targets, input_lengths, target_lengths, blank,
                         _REDUCTIONS[reduction], zero_infinity)
    in_len = _ctc_lengths(input_lengths, "input_lengths")
    tg_len = _ctc_lengths(target_lengths, "target_lengths")
    batched = log_probs.ndim == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    _refuse_reduced_float("ctc_loss_cpu", lp.dtype)
    _ctc_check(lp, targets, in_len, tg_len, blank)
    targets = targets.to(D.int64)
    res = _ctc_loss(lp, targets, in_len, tg_len, blank, zero_infinity)[0]
    if zero_infinity:
        from .._creation import zeros
        res = where(res == float("inf"), zeros((), dtype=res.dtype, device=res.device), res)
    if reduction == "mean":
        from .._creation import tensor as tensor_
        lengths = tensor_(list(tg_len), dtype=res.dtype, device=res.device).clamp_min(1)
        return (res / lengths).mean()
    if reduction == "sum":
        return res.sum()
    return res if batched else res.squeeze(0)
