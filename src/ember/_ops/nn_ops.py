"""Neural-network primitives with fused kernels and their own derivative formulas."""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype as D
from .._backend import asarray_like, get_xp
from .._backend.layout import iterator_layout
from .._compile.hooks import replayed
from .._state import state
from .._tensor import Tensor, _c_type_name, _wrap, checked_values
from ..autograd._grad_versions import note_writes
from .pointwise import no_forward_ad
from .registry import NONE, op

__all__ = ['alpha_dropout', 'bilinear', 'binary_cross_entropy_with_logits', 'cosine_similarity',
           'dropout', 'embedding_renorm_', 'feature_alpha_dropout', 'pairwise_distance', 'pdist']

# nn.functional names (ember.nn.functional collects FUNCTIONAL of every nn family).
FUNCTIONAL = ["alpha_dropout", "bilinear", "binary_cross_entropy_with_logits", "cosine_similarity",
              "dropout", "dropout1d", "dropout2d", "dropout3d", "embedding",
              "feature_alpha_dropout", "linear", "mse_loss", "normalize", "one_hot",
              "pairwise_distance", "pdist"]

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
        return (np.mean(loss, dtype=loss.dtype) if loss.size
                else get_xp(loss).full((), np.nan, loss.dtype))
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


@op("binary_cross_entropy_with_logits", tensors=4, promote=NONE, quiet=True)
def bce_with_logits(self, target, weight, pos_weight, reduction):
    sp = _log_sigmoid_neg(self)
    if pos_weight is None:
        loss = (1 - target) * self + sp
    else:
        loss = (1 - target) * self + (1 + (pos_weight - 1) * target) * sp
    if weight is not None:
        loss = loss * weight
    # (torch's composite computes in place in (1 - target): the target's dtype)
    return _reduce(loss.astype(target.dtype, copy=False), reduction)


# NOTE: both formulas follow torch's binary_cross_entropy_with_logits_backward /
# _target_backward step by step, so that create_graph records torch's nodes (the mean divides
# last, by a number: DivBackward1).
@bce_with_logits.grad("self")
def _bce_with_logits_backward(grad, self, target, weight, pos_weight, reduction):
    from .composite import _infer_size
    # (torch's backward writes the target-shaped gradient into one of the input's shape: an
    # input that broadcast in the forward fails here, as torch's; its tangent does not)
    _in_place_shape(tuple(self.shape), _infer_size(tuple(self.shape), tuple(target.shape)))
    return _bce_with_logits_grad_self(grad, self, target, weight, pos_weight, reduction)


def _bce_with_logits_grad_self(grad, self, target, weight, pos_weight, reduction):
    from .pointwise import sigmoid
    if pos_weight is None:
        d = sigmoid(self) - target
    else:
        t = pos_weight * target
        d = (t + 1 - target) * sigmoid(self) - t
    out = _weighted_mean(d * grad, weight, reduction, _numel(self))
    # torch writes its result in place (sub_ or three for pos_weight, mul_ by grad and by
    # weight) only outside grad mode; the mean's div_ always
    first_order = not isinstance(self, Tensor)
    writes = first_order * (2 + 2 * (pos_weight is not None) + (weight is not None))
    return _written(out, writes + (reduction == "mean"))


@bce_with_logits.grad("target")
def _bce_with_logits_grad_target(grad, self, target, weight, pos_weight, reduction):
    from .activation import logsigmoid
    if pos_weight is None:
        d = -self * grad
    else:
        d = (logsigmoid(-self) - logsigmoid(self) * pos_weight) * grad
    out = _weighted_mean(d, weight, reduction, _numel(target))
    # torch's in-place writes: sub_ and mul_ for pos_weight, mul_ by weight, div_ for mean
    return _written(out, 2 * (pos_weight is not None) + (weight is not None)
                    + (reduction == "mean"))


# torch's tangent: each input's backward formula, unreduced, with the tangent for the
# gradient, then reduced. Its dtype is the formulas' (a float64 input's tangent of a float32
# loss is float64, as torch's: see tangent_keeps_dtype).
@bce_with_logits.jvp("self")
def _(self_t, self, target, weight, pos_weight, reduction):
    return _reduced(_bce_with_logits_grad_self(self_t, self, target, weight, pos_weight, "none"),
                    reduction)


@bce_with_logits.jvp("target")
def _(target_t, self, target, weight, pos_weight, reduction):
    return _reduced(_bce_with_logits_grad_target(target_t, self, target, weight, pos_weight,
                                                 "none"), reduction)


bce_with_logits.tangent_keeps_dtype = True


def _reduced(loss, reduction):
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def _weighted_mean(d, weight, reduction, n):
    from .pointwise import div_scalar
    if weight is not None:
        d = d * weight
    return div_scalar(d, n) if reduction == "mean" else d


def _written(d, count):
    """Gradient ``d`` with ``count`` in-place writes of torch's formula noted (its version)."""
    if count:
        note_writes(d, count)
    return d


def _numel(x):
    return x.numel() if isinstance(x, Tensor) else x.size


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """Sigmoid and binary cross entropy in one numerically stable step."""
    reduction = reduction_enum(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape!r}) must be the same as input size "
                         f"({input.shape!r})")
    return checked_bce_with_logits(input, target, weight, pos_weight, reduction)


def checked_bce_with_logits(input, target, weight, pos_weight, reduction):  # noqa: A002
    """The aten operator (``torch.binary_cross_entropy_with_logits``): torch's refusals, then
    the op; the input and target broadcast as far as torch's in-place steps allow."""
    for name, t in (("weight", weight), ("pos_weight", pos_weight)):
        if t is not None and t.requires_grad and state.grad_enabled:  # (no formula: torch's)
            raise RuntimeError(f"The function 'binary_cross_entropy_with_logits' is not "
                               f"differentiable with respect to argument '{name}'. This input "
                               "cannot have requires_grad True.")
    _check_bce_with_logits(input, target, weight, pos_weight)
    return bce_with_logits(input, target, weight, pos_weight, reduction)


def _check_bce_with_logits(input, target, weight, pos_weight):
    """torch's errors, in its order, from its composite's steps: log_sigmoid(input),
    (pos_weight - 1) * target multiplied into it in place, then (1 - target) multiplied by
    the input, and by the weight, in place (so in the target's dtype)."""
    from .composite import _infer_size
    if input.dtype.category < D.FLOATING:
        raise NotImplementedError(f'"log_sigmoid_cpu" not implemented for '
                                  f"'{input.dtype.scalar_name}'")
    shape = tuple(input.shape)
    if pos_weight is not None:  # (written into log_sigmoid(input): the input's shape)
        _in_place_shape(shape, _infer_size(shape, _infer_size(tuple(pos_weight.shape),
                                                               tuple(target.shape))))
    shape = tuple(target.shape)  # (the loss is written into 1 - target: the target's shape)
    _in_place_shape(shape, _infer_size(shape, tuple(input.shape)))
    if target.dtype is D.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    _in_place_dtype(D.promote_types(target.dtype, input.dtype), target.dtype)
    if weight is not None:
        _in_place_shape(shape, _infer_size(shape, tuple(weight.shape)))
        _in_place_dtype(D.promote_types(target.dtype, weight.dtype), target.dtype)


def _in_place_shape(shape, broadcast):
    if broadcast != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                           f"{list(broadcast)}")


def _in_place_dtype(result, out):
    if not D.can_cast(result, out):
        raise RuntimeError(f"result type {result.scalar_name} can't be cast to the desired "
                           f"output type {out.scalar_name}")


# -- mean squared error -------------------------------------------------------------------------
@op("mse_loss", tensors=2, quiet=True,
    writes=lambda self, target, reduction: int(reduction != "none") * 2)
def mse(self, target, reduction):
    d = self - target
    if reduction == "none":  # (torch's loss is an elementwise result: its inputs' layout)
        return iterator_layout(d * d, (self, target))
    return _reduce(d * d, reduction)


@mse.grad("self", "target")
def _(grad, self, target, reduction):
    # two calls, the second with its inputs swapped, as torch: create_graph records its
    # MseLossBackwardBackward0 for each
    return (mse_loss_backward(grad, self, target, reduction),
            mse_loss_backward(grad, target, self, reduction))


@mse.jvp("self", "target", joint=True)
def _(tangents, self, target, reduction):
    # torch's tangent: each input's unreduced gradient with its tangent for grad, summed, then
    # reduced (the mean of an empty input's: NaN, where the derived tangent was 0)
    self_t, target_t = tangents
    total = None
    for t, a, b in ((self_t, self, target), (target_t, target, self)):
        if t is not None:
            term = mse_loss_backward(t, a, b, "none")
            total = term if total is None else total + term
    return _reduced(total, reduction)


def _mse_norm(x, reduction):
    """2 / numel (2 for a sum), with ``x`` of the broadcast shape (inf when it is empty)."""
    n = _numel(x)
    return 2.0 if reduction != "mean" else 2.0 / n if n else math.inf


# mse_loss's gradient is an op of its own, as in torch, so that a second derivative is recorded
# as MseLossBackwardBackward0. (No batching rule: under vmap it runs per example, where numel
# is the example's.)
@op("mse_loss_backward", tensors=3, node="MseLossBackwardBackward0")
def mse_loss_backward(grad_output, self, target, reduction):
    d = self - target
    return _mse_norm(d, reduction) * d * grad_output


@mse_loss_backward.grad("grad_output")
def _(grad, self, target, reduction):
    return mse_loss_backward(grad, self, target, reduction)  # (summed to grad_output's shape)


@mse_loss_backward.grad("self", "target")
def _(grad, grad_output, reduction):
    g = _mse_norm(grad, reduction) * (grad * grad_output)  # grad: of the broadcast shape
    return g, -g


def _check_target_size(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape!r}) that is different to the input "
                      f"size ({input.shape!r}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=3)


def broadcast_pair(input, target):
    """``input`` and ``target`` expanded to one shape, as torch's pointwise losses do before
    their kernel (a target of another shape then feeds the loss's node via ExpandBackward0)."""
    if tuple(target.shape) == tuple(input.shape):
        return input, target
    from .composite import broadcast_tensors
    return broadcast_tensors(input, target)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error between ``input`` and ``target`` (each term times ``weight``, the
    mean then divided by the weights' sum, as torch)."""
    _check_target_size(input, target)
    reduction = reduction_enum(reduction, size_average, reduce)
    input, target = broadcast_pair(input, target)
    if weight is not None:
        return weighted_loss(lambda: (input - target) ** 2, input, weight, reduction, by_weight=True)
    refuse_integral("mse_cpu", input, target)
    return mse(input, target, reduction)


def refuse_integral(kernel, input, target):
    """torch's refusal of a pointwise loss kernel for integer (or bool) operands."""
    dt = D.promote_types(input.dtype, target.dtype)
    if dt.category < D.FLOATING:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{dt.scalar_name}\'')


def refuse_uncastable_result(input, target):
    """torch's refusal of a loss kernel that writes the input's dtype when the operands
    promote to a dtype that cannot be cast back to it (an integer input, a float target)."""
    dt = D.promote_types(input.dtype, target.dtype)
    if not D.can_cast(dt, input.dtype):
        raise RuntimeError(f"result type {dt.scalar_name} can't be cast to the desired output "
                           f"type {input.dtype.scalar_name}")


def weighted_loss(errors, input, weight, reduction, by_weight):
    """torch's weighted pointwise losses (l1, mse, huber): the errors (``errors()``, computed
    after the weight's size is checked) times ``weight`` (of the input's size), reduced; a
    mean ``by_weight`` divides by the weights' sum."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    weighted = errors() * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    return weighted.sum() / weight.sum() if by_weight else weighted.mean()


# -- linear -------------------------------------------------------------------------------------
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``, as one addmm for 2-D inputs (torch's AddmmBackward0)."""
    from .linalg import addmm, matmul
    from .shape import t
    if input.ndim == 2 and bias is not None:
        return addmm(bias, input, t(weight))
    if bias is not None and input.ndim >= 1 and input.is_contiguous() and _fusable(bias):
        # NOTE: torch's _flatten_nd_linear: a contiguous input is viewed as 2-D for one addmm
        # and the result viewed back (ViewBackward0 <- AddmmBackward0 <- ViewBackward0).
        rows = math.prod(input.shape[:-1])  # (not -1: an input with no elements has any)
        out = addmm(bias, input.view(rows, input.shape[-1]), t(weight))
        return out.view(tuple(input.shape[:-1]) + (out.shape[-1],))
    out = matmul(input, t(weight))
    return out if bias is None else out.add_(bias)


def _fusable(bias):
    """torch's ``is_bias_likely_fusable``: a contiguous bias with one dimension, or one of
    more than one element. Any other (expanded, strided, 0-dim) is added after a matmul, in
    place (AddBackward0)."""
    return (bias.ndim == 1 or sum(n != 1 for n in bias.shape) == 1) and bias.is_contiguous()


def bilinear(input1, input2, weight, bias=None):
    """``x1^T A x2 + b`` for every output feature (weight: out x in1 x in2): torch's
    ``_trilinear`` of the inputs with their batch dimensions folded into one, viewed back
    (ViewBackward0 over TrilinearBackward0), plus the bias (AddBackward0)."""
    if not input1.dtype == input2.dtype == weight.dtype:
        raise RuntimeError(f"All tensors must have the same dtype, got input1: "
                           f"{_c_type_name(input1.dtype)}, input2: {_c_type_name(input2.dtype)}, "
                           f"weight: {_c_type_name(weight.dtype)}")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None and bias.ndim and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[0]} but expected {weight.shape[0]}")
    batch = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    x1, weight, x2 = _as_bmm_takes_them(x1, weight, x2)
    out = trilinear(x1, weight, x2, (1, 3), (0,), (1, 2), (2, 3))
    out = out.reshape(batch + (weight.shape[0],))
    return out if bias is None else out + bias


def _as_bmm_takes_them(*tensors):
    """The inputs as torch's _trilinear multiplies them: its kernel calls bmm through the
    dispatcher, so under CPU autocast the products run in the lower dtype (ember's _trilinear
    is one op, not on autocast's lists: the cast bmm would make is made here)."""
    from ..amp import autocast_mode
    st = autocast_mode._state
    if st.inside or not st.enabled:
        return tensors
    return autocast_mode._cast_arguments("bmm", tensors, {})[0]


@op("_trilinear", tensors=3, promote=NONE, node="TrilinearBackward0")
def trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """torch's ``_trilinear``: the three inputs, each unsqueezed at its ``expand`` dimensions
    to one rank, multiplied and summed over ``sumdim`` (those dimensions dropped)."""
    rank = i1.ndim + len(expand1)
    letters = "abcdefghijklmnopqrstuvwxyz"[:rank]
    subscripts = ["".join(letters[d] for d in range(rank) if d not in expand)
                  for expand in (expand1, expand2, expand3)]
    present = set("".join(subscripts))
    kept = [d for d in range(rank) if d not in sumdim]
    out_letters = "".join(letters[d] for d in kept if letters[d] in present)
    # (2-byte floats are multiplied and summed in float32, rounded once at the end, as
    # torch's products accumulate them: NumPy's einsum would round every partial sum)
    wide = i1.dtype.itemsize == 2 and i1.dtype.kind in "fV"  # (float16, bfloat16)
    operands = [a.astype("float32") for a in (i1, i2, i3)] if wide else (i1, i2, i3)
    out = get_xp(i1).einsum(f"{','.join(subscripts)}->{out_letters}", *operands,
                            optimize=True)
    if wide:
        out = out.astype(i1.dtype)
    # (a kept dimension that every input expands is of size one)
    shape = tuple(out.shape[out_letters.index(letters[d])] if letters[d] in present else 1
                  for d in kept)
    return get_xp(out).ascontiguousarray(out.reshape(shape))


# torch's _trilinear_backward: each gradient is a _trilinear of the incoming gradient (read
# at the summed dimensions) and the other two inputs, summed over the input's own expansions
@trilinear.grad("i1")
def _(grad, i2, i3, expand1, expand2, expand3, sumdim):
    return trilinear(grad, i2, i3, sumdim, expand2, expand3, expand1)


@trilinear.grad("i2")
def _(grad, i1, i3, expand1, expand2, expand3, sumdim):
    return trilinear(i1, grad, i3, expand1, sumdim, expand3, expand2)


@trilinear.grad("i3")
def _(grad, i1, i2, expand1, expand2, expand3, sumdim):
    return trilinear(i1, i2, grad, expand1, expand2, sumdim, expand3)


# -- dropout ------------------------------------------------------------------------------------
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


@replayed
def _noise(input, shape, p, alpha):
    """The multiplicative noise (and the additive part for alpha dropout) of a dropout call:
    torch's ``bernoulli_(1 - p)`` mask, scaled with tensor ops in the input's dtype."""
    from .._random import fill
    from .._random.generator import draw_for
    from .._tensor import _wrap
    data = input._data
    # the mask is laid out like the input (torch's empty_like), or (N, C, 1, ...) for features
    if type(data) is not np.ndarray:  # (describes a draw made on the GPU, in C order)
        like = np.empty(shape, data.dtype)
    elif shape == data.shape:
        like = np.empty_like(data, order="K")
    else:
        like = np.empty(shape, data.dtype)
    mask = fill.bernoulli_scalar(like, 1 - p, draw_for(None, input.device))
    noise = _wrap(asarray_like(mask, data))
    if not alpha:
        return noise.div_(1 - p), None
    alpha_ = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha_ * alpha_ * p + 1) * (1 - p))
    b = noise.add(-1).mul_(alpha_ * a).add_(alpha_ * a * p)
    return noise.mul_(a), b


def _dropout_impl(input, p, training, inplace, alpha=False, feature=False):
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        zero = input.new_zeros(()) if hasattr(input, "new_zeros") else input * 0
        return input.mul_(zero) if inplace else input * zero
    shape = tuple(input.shape)
    if feature:
        shape = shape[:2] + (1,) * (len(shape) - 2)
    noise, b = _noise(input, shape, p, alpha)
    out = input.mul_(noise) if inplace else input * noise
    return out if b is None else (out.add_(b) if inplace else out + b)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero elements with probability ``p`` (training only) and scale the rest by 1/(1-p)."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps the mean and variance of SELU activations."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, alpha=True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, alpha=True, feature=True)


def _feature_dropout(input, p, training, inplace, batched_dim, name):
    _check_p(p)
    # (torch's: any other number of dimensions than the batched one's is taken as unbatched,
    # dropout3d's 2-D or 3-D inputs too, whose channels are then their first dimension)
    unbatched = input.ndim != batched_dim
    if unbatched:
        input = input.unsqueeze(0)
    out = _dropout_impl(input, p, training, inplace, feature=True)
    return out.squeeze(0) if unbatched else out


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) inputs."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout "
                           "on inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, 3, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) or (C, H, W) inputs."""
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).", UserWarning, stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-"
                      "wise 1D dropout behavior is desired - input is interpreted as shape "
                      "(N, C, L), where C is the channel dim. This behavior will change in a "
                      "future release to interpret the input as one without a batch dimension, "
                      "i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
                      "please switch to using dropout1d instead.", UserWarning, stacklevel=2)
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, feature=True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 4D or 5D inputs).", UserWarning, stacklevel=2)
    return _feature_dropout(input, p, training, inplace, 5, "dropout3d")


# -- embedding ----------------------------------------------------------------------------------
def _embedding_grad_weight(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    """Rows of ``grad`` summed into a (num_weights, dim) table (padding_idx's row stays 0)."""
    from .._backend import scatter_add
    xp = get_xp(grad)
    idx = indices.reshape(-1)
    g = grad.reshape(idx.shape[0], -1)
    if scale_grad_by_freq:
        counts = xp.bincount(idx, minlength=num_weights)
        g = g / counts[idx][:, None].astype(g.dtype)
    if padding_idx is not None and padding_idx >= 0:
        g = g * (idx != padding_idx)[:, None]
    out = xp.zeros((num_weights, g.shape[1]), dtype=grad.dtype)
    scatter_add(out, idx, g)
    return out


@op("embedding", node="EmbeddingBackward0", tensors=2, promote=NONE)
def _embedding(weight, indices, padding_idx=None, scale_grad_by_freq=False, sparse=False):
    # NOTE: checked in the kernel, so that a compiled function's replay (kernels only) checks
    # each call's indices as eager mode does (NumPy would wrap a negative one around).
    _check_indices(indices, weight.shape[0])
    return weight[indices]


def _check_indices(indices, n):
    """torch's IndexError for an embedding index outside [0, n) (no negative indices)."""
    data = checked_values(indices) if isinstance(indices, Tensor) else indices
    if data.size and (data.min() < 0 or data.max() >= n):
        raise IndexError("index out of range in self")


@_embedding.grad("weight")
def _(grad, indices, weight_shape, padding_idx, scale_grad_by_freq, sparse):
    if sparse:
        return _embedding_sparse_backward(grad, indices, weight_shape[0], padding_idx,
                                          scale_grad_by_freq)
    return _embedding_backward(grad, indices, weight_shape[0], padding_idx, scale_grad_by_freq)


@_embedding.jvp("weight")
def _(weight_t, indices, padding_idx, scale_grad_by_freq, sparse):
    # torch's (auto_linear): the lookup of the tangent's rows, padding_idx's row too (only the
    # gradient leaves it out, and only the gradient scales by frequency)
    return _embedding(weight_t, indices, padding_idx, scale_grad_by_freq, sparse)


def _embedding_sparse_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    """torch's embedding_sparse_backward: a sparse COO (num_weights, dim) gradient with one
    entry per looked-up index (repeats kept, uncoalesced), padding_idx's entries left out. Its
    values are ``grad``'s rows, so under create_graph they keep their graph (the result's node
    is the sparse constructor's, as torch's)."""
    from .._backend import is_array
    from .sparse import _make
    if scale_grad_by_freq:
        raise RuntimeError(
            "embedding_backward: scale_grad_by_freq not supported with sparse gradients")
    idx = indices if is_array(indices) else indices._data
    dim = grad.shape[-1]
    idx = idx.reshape(-1)
    rows = grad.reshape(idx.shape[0], dim)
    if padding_idx is not None and padding_idx >= 0:
        kept = idx != padding_idx
        idx = idx[kept]
        rows = rows[kept if is_array(rows) else _wrap(kept)]
    if idx.shape[0] == 0:  # (torch's empty result is made from nothing: it has no graph)
        rows = rows.detach() if isinstance(rows, Tensor) else rows
    return _make(idx.reshape(1, -1).astype(np.int64), rows, (num_weights, dim))


@op("embedding_dense_backward", node="EmbeddingDenseBackwardBackward0", tensors=2,
    promote=NONE)
def _embedding_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq):
    return _embedding_grad_weight(grad_output, indices, num_weights, padding_idx,
                                  scale_grad_by_freq)


@_embedding_backward.grad("grad_output")
def _(grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    # The backward is linear in grad_output: its adjoint gathers rows (masked).
    # NOTE: torch's embedding_dense_double_backward ignores scale_grad_by_freq; so does ember.
    from .._backend import is_array
    idx = indices if is_array(indices) else indices._data
    xp = get_xp(idx)
    scale = xp.ones(idx.shape, dtype=np.float64)
    if padding_idx is not None and padding_idx >= 0:
        scale = scale * (idx != padding_idx)
    rows = _embedding(grad, indices)
    dt = grad.dtype if is_array(grad) else grad._data.dtype
    scale = scale.astype(dt)[..., None]
    return rows * (scale if is_array(grad) else _wrap(scale))


def _embedding_renorm(weight, input, max_norm, norm_type):
    from ..autograd.grad_mode import no_grad
    data = weight._data
    xp = get_xp(data)
    rows = xp.unique(input._data.reshape(-1))
    norms = xp.linalg.norm(data[rows].astype(np.float64), ord=norm_type, axis=1)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    with no_grad():
        data[rows] = (data[rows] * scale[:, None]).astype(data.dtype)
        weight._bump_version()


def embedding_renorm_(input, indices, max_norm, norm_type):  # noqa: A002 - torch's names
    """``torch.embedding_renorm_``: the rows of ``input`` named by ``indices`` rescaled in
    place to norm at most ``max_norm``."""
    _embedding_renorm(input, indices, max_norm, norm_type)
    return input


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Look up rows of ``weight`` by the integer indices in ``input``."""
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.shape[0] + padding_idx
    else:
        padding_idx = -1
    # (torch's order: F.embedding's padding_idx asserts, then aten::embedding's checks)
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    if input.dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got "
                           f"{input.type()} instead (while checking arguments for embedding)")
    if max_norm is not None:
        _check_indices(input, weight.shape[0])  # (before the renorm reads the rows)
        _embedding_renorm(weight, input, max_norm, norm_type)
    return _embedding(weight, input, padding_idx, scale_grad_by_freq, bool(sparse))


def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding of an int64 tensor of class indices."""
    from .._creation import tensor_from_array
    if tensor.dtype != D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    data = tensor._data
    if data.size and data.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        if data.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(data.max()) + 1
    elif data.size and data.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = tensor_from_array((data[..., None] == get_xp(data).arange(num_classes)).astype(
        np.int64))
    if state.inference:  # (made in inference mode: an inference tensor, with no versions)
        out._is_inference = True
    elif data.size:  # torch fills zeros (zero_) and scatters the ones (scatter_): two writes
        out._vc = [2]
    return out


# -- distances ----------------------------------------------------------------------------------
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    return input / denom


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``."""
    from ..autograd.grad_mode import no_grad
    common = D.result_type_of(tuple((x.dtype, D.DIM if x.ndim else D.ZERO_DIM)
                                    for x in (x1, x2)))
    if common.category != D.FLOATING:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{common.scalar_name}")
    # (integers and bools in the common dtype: the norms take floating inputs only)
    x1, x2 = (x.to(common) if x.dtype.category < D.FLOATING else x for x in (x1, x2))
    if tuple(x1.shape) != tuple(x2.shape):  # (torch's expand_outplace: both, or neither)
        from .composite import _infer_size  # (torch's error for shapes that don't broadcast)
        shape = _infer_size(tuple(x1.shape), tuple(x2.shape))
        x1, x2 = x1.expand(shape), x2.expand(shape)
    # NOTE: as torch: the norms cloned, then clamped in place outside autograd, so that the
    # gradient goes through a clamped norm as through the norm (CloneBackward0, no ClampMin)
    n1 = x1.norm(2, dim, keepdim=True).clone()
    n2 = x2.norm(2, dim, keepdim=True).clone()
    with no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """p-norm of ``x1 - x2 + eps`` along the last dimension."""
    from .pointwise import add_scalar
    from .statistics import norm_dim
    dim = max(x1.ndim, x2.ndim) - 1
    dim = max(dim, 0)
    diff = x1 - x2
    if diff.dtype.category < D.FLOATING:  # (+ eps, a float: integers give the default dtype)
        diff = diff.to(D.result_type_of(((diff.dtype, D.DIM), (D.scalar_dtype(eps), D.SCALAR))))
    with np.errstate(all="ignore"):  # (inf - inf: torch gives nan without a word)
        return norm_dim(add_scalar(diff, eps), p, (dim,), keepdim)


def pdist(input, p=2):  # noqa: A002
    """Pairwise p-norm distances between the rows of a 2-D input (upper triangle)."""
    from .statistics import pdist_forward
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input.dtype.itemsize < 4:  # (float16, bfloat16: torch's kernel has no loop for them)
        raise NotImplementedError(f'"pdist" not implemented for \'{input.dtype.scalar_name}\'')
    return pdist_forward(input.contiguous(), float(p))


# -- packed sequences (ember.nn.utils.rnn) -------------------------------------------------------
def _pack_index(xp, batch_sizes):
    """(time, batch) coordinates of every row of a packed sequence, in packed order."""
    sizes = np.asarray(batch_sizes, dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    t = np.repeat(np.arange(len(sizes)), sizes)
    b = np.arange(int(sizes.sum())) - np.repeat(starts, sizes)
    return xp.asarray(t), xp.asarray(b)


@op("_pack_padded_sequence", node="PackPaddedSequenceBackward0", promote=NONE)
def _pack_padded_sequence(input, batch_sizes, batch_first):
    """The rows of a padded (T, B, *) input (B, T, * when batch_first) that hold data, step by
    step; ``batch_sizes`` is a tuple of Python ints."""
    t, b = _pack_index(get_xp(input), batch_sizes)
    return input[b, t] if batch_first else input[t, b]


_pack_padded_sequence.jvp("input")(no_forward_ad("_pack_padded_sequence"))


@_pack_padded_sequence.grad("input")
def _(grad, input_shape, batch_sizes, batch_first):
    return _pack_padded_sequence_backward(grad, input_shape, batch_sizes, batch_first)


@op("_pack_padded_sequence_backward", node="PackPaddedSequenceBackwardBackward0", promote=NONE)
def _pack_padded_sequence_backward(grad, input_size, batch_sizes, batch_first):
    xp = get_xp(grad)
    out = xp.zeros(tuple(input_size), dtype=grad.dtype)
    t, b = _pack_index(xp, batch_sizes)
    if batch_first:
        out[b, t] = grad
    else:
        out[t, b] = grad
    return out


@_pack_padded_sequence_backward.grad("grad")
def _(grad, batch_sizes, batch_first):
    return _pack_padded_sequence(grad, batch_sizes, batch_first)


# -- channel shuffle -------------------------------------------------------------------------------
@op("channel_shuffle", node="ChannelShuffleBackward0", promote=NONE)
def _channel_shuffle(self, groups):
    n, c = self.shape[:2]
    rest = tuple(self.shape[2:])
    return self.reshape((n, groups, c // groups) + rest).swapaxes(1, 2).reshape(self.shape)


@_channel_shuffle.grad("self")
def _(grad, self_shape, groups):
    return _channel_shuffle(grad, self_shape[1] // groups)  # the inverse permutation


def channel_shuffle(input, groups):
    """Divide the channels into ``groups`` groups and interleave them."""
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    return _channel_shuffle(input, groups)


FUNCTIONAL.append("channel_shuffle")
