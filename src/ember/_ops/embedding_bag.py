"""Embedding bags: the sum, mean or max of the embeddings of each bag of indices.

Bag ``b`` holds the indices ``input[offsets[b]:offsets[b + 1]]``; the last bag runs to the end of
``input`` (with ``include_last_offset`` the last offset only ends the bag count, as in torch);
indices equal to ``padding_idx`` are left out. The op gives torch's four results (the output, each index's bag, the bag sizes and, for
``max``, the row each maximum came from); the derivatives scatter the output's gradient back to
the rows (and, for ``per_sample_weights``, take its dot product with them). Those derivatives
have no derivatives of their own in torch, and backward through them raises as torch's does.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as D
from .._backend import get_xp, scatter_add, scatter_reduce, to_numpy
from .._tensor import Tensor, checked_values
from .pointwise import derivative_not_implemented, no_derivative, refuse_forward_ad
from .registry import NONE, op

__all__: list = []  # torch.embedding_bag (weight first) is _torch_embedding_bag
FUNCTIONAL = ["embedding_bag"]

_MODES = {"sum": 0, "mean": 1, "max": 2}


def _bags(indices, offsets, include_last_offset):
    """(number of bags, each index's bag)."""
    xp = get_xp(indices)
    starts = offsets[:-1] if include_last_offset else offsets
    n_bags = starts.shape[0]
    positions = xp.arange(indices.shape[0])
    return n_bags, (xp.searchsorted(starts, positions, side="right") - 1).astype(np.int64)


def _kept(indices, offset2bag, padding_idx):
    """Which indices count: those that are not ``padding_idx`` (every index is in a bag: the
    last bag runs to the end, ``include_last_offset`` or not)."""
    return (indices != padding_idx) & (offset2bag >= 0)


@op("_embedding_bag", tensors=4, promote=NONE, outputs=4,
    diff_outputs=(True, False, False, False), node="EmbeddingBagBackward0")
def _embedding_bag(weight, indices, offsets, per_sample_weights, mode, include_last_offset,
                   padding_idx, scale_grad_by_freq, sparse=False):
    xp = get_xp(weight)
    indices, offsets = indices.astype(np.int64), offsets.astype(np.int64)
    n_bags, offset2bag = _bags(indices, offsets, include_last_offset)
    keep = _kept(indices, offset2bag, padding_idx)
    bag, rows = offset2bag[keep], weight[indices[keep]]
    sizes = xp.bincount(bag, minlength=n_bags).astype(np.int64)
    if mode == 2:
        out, max_indices = _bag_max(xp, rows, bag, indices[keep], sizes)
        return out, offset2bag, sizes, max_indices
    if per_sample_weights is not None:
        rows = rows * per_sample_weights[keep][:, None]
    out = xp.zeros((n_bags, weight.shape[1]), weight.dtype)
    scatter_add(out, bag, rows)
    if mode == 1:
        out /= xp.maximum(sizes, 1)[:, None].astype(weight.dtype)
        return out, offset2bag, sizes, sizes.copy()
    zeros = xp.zeros(offsets.shape[0], np.int64)  # (one per offset, as torch's)
    return out, offset2bag, zeros, zeros.copy()


def _bag_max(xp, rows, bag, row_ids, sizes):
    """Each bag's columnwise maximum and the row it came from, the first such (as torch's
    strict ``>``); 0 and 0 for an empty bag."""
    shape = (sizes.shape[0], rows.shape[1])
    out = xp.full(shape, -np.inf, rows.dtype)
    scatter_reduce("maximum", out, bag, rows)
    empty = sizes == 0
    out[empty] = 0
    n = rows.shape[0]
    at = xp.where(rows == out[bag], xp.arange(n)[:, None], n)
    first = xp.full(shape, n, np.int64)
    scatter_reduce("minimum", first, bag, at)
    max_indices = xp.concatenate([row_ids, xp.zeros(1, np.int64)])[first]
    return out, xp.where(empty[:, None], 0, max_indices).astype(np.int64)


@_embedding_bag.grad("weight")
def _(grads, indices, per_sample_weights, weight_shape, result1, result2, result3, mode,
      padding_idx, scale_grad_by_freq, sparse):
    if sparse:
        return _embedding_bag_sparse_backward(grads[0], per_sample_weights, indices, result1,
                                              result2, weight_shape[0], mode, padding_idx,
                                              scale_grad_by_freq)
    return _embedding_bag_backward(grads[0], per_sample_weights, indices, result1, result2,
                                   result3, weight_shape[0], mode, padding_idx,
                                   scale_grad_by_freq)


@_embedding_bag.grad("per_sample_weights")
def _(grads, weight, indices, result1, padding_idx):
    return _per_sample_weights_backward(grads[0], weight, indices, result1, padding_idx)


@op("_embedding_bag_backward", tensors=6, promote=NONE, node="EmbeddingBagBackwardBackward0")
def _embedding_bag_backward(grad, per_sample_weights, indices, offset2bag, bag_size,
                            max_indices, num_weights, mode, padding_idx, scale_grad_by_freq,
                            per_index=False):
    """The weight's gradient; with ``per_index``, each index's share of it (one row per index,
    unscattered: what the sparse gradient holds)."""
    xp = get_xp(grad)
    indices = indices.astype(np.int64)
    if per_index:
        rows = grad[offset2bag]
        if mode == 1:
            rows = rows / xp.maximum(bag_size[offset2bag], 1)[:, None].astype(grad.dtype)
        if per_sample_weights is not None:
            rows = rows * per_sample_weights[:, None]
        return rows
    out = xp.zeros((num_weights, grad.shape[1]), grad.dtype)
    if mode == 2:
        filled = bag_size > 0
        dim = grad.shape[1]
        flat = (max_indices * dim + xp.arange(dim))[filled]
        scatter_add(out.reshape(-1), flat.reshape(-1), grad[filled].reshape(-1))
        return out
    keep = _kept(indices, offset2bag, padding_idx)
    bag, ids = offset2bag[keep], indices[keep]
    rows = grad[bag]
    if mode == 1:
        rows = rows / bag_size[bag][:, None].astype(grad.dtype)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights[keep][:, None]
    if scale_grad_by_freq:
        rows = rows / _frequency_divisors(xp, indices, num_weights)[ids][:, None].astype(
            grad.dtype)
    scatter_add(out, ids, rows)
    return out


def _embedding_bag_sparse_backward(grad, per_sample_weights, indices, offset2bag, bag_size,
                                   num_weights, mode, padding_idx, scale_grad_by_freq):
    """torch's _embedding_bag_sparse_backward: each index's share of its bag's gradient, handed
    to embedding's sparse backward: a COO gradient with one entry per index, ``padding_idx``'s
    left out."""
    from .nn_ops import _embedding_sparse_backward
    rows = _embedding_bag_backward(grad, per_sample_weights, indices, offset2bag, bag_size, None,
                                   num_weights, mode, padding_idx, scale_grad_by_freq, True)
    return _embedding_sparse_backward(rows, indices, num_weights, padding_idx,
                                      scale_grad_by_freq)


def _frequency_divisors(xp, indices, num_weights):
    """What each row's gradient is divided by under ``scale_grad_by_freq``.

    NOTE: torch's CPU kernel looks the count up at the k-th *sorted index* for the k-th
    distinct index (``counts[indices_sorted[k]]``), not at that distinct index itself, so
    only for indices that all occur equally often is this the index's own frequency. ember
    gives torch's values.
    """
    counts = xp.bincount(indices, minlength=num_weights)
    ordered = xp.sort(indices)
    distinct = xp.unique(ordered)
    divisors = xp.ones(num_weights, counts.dtype)
    divisors[distinct] = counts[ordered[:distinct.shape[0]]]
    return divisors


_embedding_bag_backward.grad("grad", "per_sample_weights")(
    derivative_not_implemented("_embedding_bag_backward"))


@op("_embedding_bag_per_sample_weights_backward", tensors=4, promote=NONE,
    node="NotImplemented")
def _per_sample_weights_backward(grad, weight, indices, offset2bag, padding_idx):
    xp = get_xp(grad)
    indices = indices.astype(np.int64)
    keep = _kept(indices, offset2bag, padding_idx)
    out = xp.zeros(indices.shape[0], grad.dtype)
    out[keep] = (grad[offset2bag[keep]] * weight[indices[keep]]).sum(-1)
    return out


_per_sample_weights_backward.grad("grad", "weight")(
    no_derivative("_embedding_bag_per_sample_weights_backward"))


# -- argument checks --------------------------------------------------------------------------------
def _check_index_dtype(t):
    if t.dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got "
                           f"{t.type()} instead (while checking arguments for "
                           "embedding_bag)")


def _check_bags(ids, offs, num_weights, offsets_type):
    if offs.size and offs[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {int(offs[0])}\n"
                           f"[ {offsets_type}{{}} ]")
    if offs.size and offs[-1] > ids.size:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {ids.size} but "
                           f"got offsets[-1] of {int(offs[-1])}")
    if offs.size and (np.diff(offs) < 0).any():
        raise RuntimeError("Expected i < index_size to be true, but got false.  (Could this "
                           "error message be improved?  If so, please report an enhancement "
                           "request to PyTorch.)")
    if ids.size and (ids.min() < 0 or ids.max() >= num_weights):
        j = int(np.argmax((ids < 0) | (ids >= num_weights)))
        raise RuntimeError(f"Index {j} of input takes value {int(ids[j])} which is not in the "
                           f"valid range [0, {num_weights})")


def _refuse_forward_ad(*tensors):
    """torch has no forward-mode derivative for embedding bags: its error for a dual input."""
    refuse_forward_ad("_embedding_bag", *tensors)


def _padding_index(padding_idx, num_weights):
    if padding_idx is None:
        return -1
    if not -num_weights <= padding_idx < num_weights:
        raise RuntimeError("padding_idx must be within the number of embeddings, "
                           f"-{num_weights} through {num_weights - 1}, but got {padding_idx}")
    return padding_idx % num_weights


def _embedding_bag_call(weight, indices, offsets, scale_grad_by_freq, mode, per_sample_weights,
                        include_last_offset, padding_idx, sparse=False):
    """torch.embedding_bag's four results, after torch's checks."""
    _check_index_dtype(indices)
    _check_index_dtype(offsets)
    _refuse_forward_ad(weight, per_sample_weights)
    _check_bags(to_numpy(checked_values(indices)), to_numpy(checked_values(offsets)),
                weight.shape[0], offsets.type())
    pad = _padding_index(padding_idx, weight.shape[0])
    return _embedding_bag(weight, indices, offsets, per_sample_weights, mode,
                          include_last_offset, pad, scale_grad_by_freq, bool(sparse))


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """The sum, mean or max of the embeddings (rows of ``weight``) of each bag of indices:
    the rows of a 2-D ``input``, or the slices of a 1-D ``input`` that ``offsets`` start."""
    if weight.dtype == D.int64 and input.dtype.is_floating_point:
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    input, offsets, include_last_offset, per_sample_weights = _flat_bags(
        input, offsets, include_last_offset, per_sample_weights)
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        from .nn_ops import _embedding_renorm
        _embedding_renorm(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    return _embedding_bag_call(weight, input, offsets, scale_grad_by_freq, _MODES[mode],
                               per_sample_weights, include_last_offset, padding_idx, sparse)[0]


def _type_name(x):
    """``str(type(x))`` as torch prints it (the public class for a tensor)."""
    return "<class 'ember.Tensor'>" if isinstance(x, Tensor) else str(type(x))


def _flat_bags(input, offsets, include_last_offset, per_sample_weights):
    """A 2-D input's rows as bags of a 1-D input (torch's rewrite), checked."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {_type_name(offsets)}")
        from .._creation import arange
        offsets = arange(0, input.numel(), input.shape[1], dtype=input.dtype,
                         device=input.device)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        return input.reshape(-1), offsets, False, per_sample_weights
    if input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        return input, offsets, include_last_offset, per_sample_weights
    raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")

