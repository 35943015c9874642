"""Counting and searching: nonzero, unique, bincount, histograms, bucketize/searchsorted.

Their results are indices and counts (or depend on the data's values only through
comparisons): none has a derivative. Where torch still records a node for a floating input
that requires grad (unique's values, histograms, weighted bincount), ember records the same
node, and backward through it raises torch's error; the others record nothing, as torch's.
"""
from __future__ import annotations

import math

__all__ = ['argwhere', 'bincount', 'bucketize', 'histc', 'histogram', 'histogramdd', 'nonzero',
           'searchsorted', 'unique', 'unique_consecutive']

import numpy as np

from .. import _dtype as D
from .._backend import get_xp
from .._state import vmap_hook
from .._tensor import Tensor, _wrap, _wrap_dim
from .pointwise import derivative_not_implemented, no_derivative
from .reduction import return_type
from .registry import NONE, op

_histogram = return_type("histogram", ("hist", "bin_edges"))
_histogramdd = return_type("histogramdd", ("hist", "bin_edges"))


def _long(a):
    return _wrap(a.astype(np.int64))


def nonzero(input, *, out=None, as_tuple=False):  # noqa: A002 - torch's name
    """The indices of the non-zero elements: an (n, ndim) int64 tensor, or one 1-D tensor per
    dimension with ``as_tuple=True``."""
    D.refuse_limited(input.dtype, "nonzero_count_cpu")
    vm = vmap_hook[0]
    if vm is not None:  # (torch's refusal under vmap: each example's count differs)
        vm.refuse_dynamic_shape("aten::nonzero", input, fallback=not as_tuple)
    data = input._data
    xp = get_xp(data)
    if as_tuple:
        if data.ndim == 0:
            return (_long(xp.nonzero(data.reshape(1))[0]),)
        return tuple(_long(i) for i in xp.nonzero(data))
    if data.ndim == 0:
        return _long(xp.zeros((1 if data.item() else 0, 0)))
    return _long(xp.argwhere(data))


def argwhere(input):  # noqa: A002
    vm = vmap_hook[0]
    if vm is not None:  # (torch has no rule for it: its fallback, not nonzero's refusal)
        out = vm.per_example_call("aten::argwhere", argwhere, input, composite=True)
        if out is not None:
            return out
    return nonzero(input)


def _check_dim(dim, ndim):
    return _wrap_dim(dim, max(ndim, 1))


def _unique_flat(data):
    # NOTE: NaNs are all distinct, as in torch
    values, inverse, counts = get_xp(data).unique(data.reshape(-1), return_inverse=True,
                                                  return_counts=True, equal_nan=False)
    return values, inverse.reshape(data.shape).astype(np.int64), counts.astype(np.int64)


def _unique_slices(data, d):
    xp = get_xp(data)
    moved = xp.moveaxis(data, d, 0)
    flat = moved.reshape(moved.shape[0], -1)
    values, inverse, counts = xp.unique(flat, axis=0, return_inverse=True, return_counts=True)
    values = xp.moveaxis(values.reshape((-1,) + moved.shape[1:]), 0, d)
    return (xp.ascontiguousarray(values), inverse.reshape(-1).astype(np.int64),
            counts.astype(np.int64))


def _consecutive(data, d):
    xp = get_xp(data)
    if d is None:
        flat = data.reshape(-1)
        rows = flat.reshape(-1, 1)
    else:
        moved = xp.moveaxis(data, d, 0)
        rows = moved.reshape(moved.shape[0], -1)
    if rows.shape[0] == 0:
        starts = xp.zeros(0, dtype=bool)
    else:
        change = xp.any(rows[1:] != rows[:-1], axis=1)
        starts = xp.concatenate([xp.ones(1, dtype=bool), change])
    first = xp.nonzero(starts)[0]
    inverse = (xp.cumsum(starts) - 1).astype(np.int64)
    counts = xp.diff(xp.concatenate([first, xp.asarray([rows.shape[0]])])).astype(np.int64)
    if d is None:
        return flat[first], inverse.reshape(data.shape), counts
    values = xp.moveaxis(rows[first].reshape((-1,) + moved.shape[1:]), 0, d)
    return xp.ascontiguousarray(values), inverse, counts


_INDICES = (True, False, False)  # the values are (formally) differentiable, indices are not


@op("_unique2", promote=NONE, outputs=3, diff_outputs=_INDICES, node="Unique2Backward0")
def _unique2(self):
    return _unique_flat(self)


@op("unique_dim", promote=NONE, outputs=3, diff_outputs=_INDICES, node="UniqueDimBackward0")
def _unique_dim(self, dim):
    return _unique_slices(self, dim)


@op("unique_consecutive", promote=NONE, outputs=3, diff_outputs=_INDICES,
    node="UniqueConsecutiveBackward0")
def _unique_consecutive(self, dim):
    return _consecutive(self, dim)


_unique2.grad("self")(derivative_not_implemented("_unique2"))
_unique_dim.grad("self")(derivative_not_implemented("unique_dim"))
_unique_consecutive.grad("self")(derivative_not_implemented("unique_consecutive"))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values (or slices along ``dim``) in ascending order, with optional inverse
    indices and counts."""
    if dim is None:
        values, inverse, counts = _unique2(input)
    else:
        values, inverse, counts = _unique_dim(input, _check_dim(dim, input.ndim))
    return _results(values, inverse, counts, return_inverse, return_counts)


def _results(values, inverse, counts, return_inverse, return_counts):
    out = (values,)
    if return_inverse:
        out += (inverse,)
    if return_counts:
        out += (counts,)
    return out[0] if len(out) == 1 else out


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """Collapse each run of equal consecutive values (or slices along ``dim``) to one."""
    d = None if dim is None else _check_dim(dim, input.ndim)
    values, inverse, counts = _unique_consecutive(input, d)
    return _results(values, inverse, counts, return_inverse, return_counts)


def bincount(input, weights=None, minlength=0):  # noqa: A002
    """How often each non-negative integer occurs in 1-D ``input`` (or the sum of its
    ``weights``)."""
    data = input._data
    xp = get_xp(data)
    if data.ndim != 1 or data.dtype.kind not in "iub" or (data.size and data.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is None:
        return _long(xp.bincount(data, minlength=minlength))
    if tuple(weights.shape) != data.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    return _weighted_bincount(input, weights, minlength)


@op("bincount", tensors=2, promote=NONE, node="NotImplemented")
def _weighted_bincount(self, weights, minlength):
    counts = get_xp(self).bincount(self, weights=weights.astype(np.float64), minlength=minlength)
    return counts.astype(np.float32 if weights.dtype == np.float32 else np.float64)


_weighted_bincount.grad("weights")(no_derivative("bincount"))


def _c_number(v, reduced):
    """``v`` as C++'s ``<<`` writes a double; a NaN that torch's min/max reduction made is the
    CPU's default NaN, which has its sign bit set ("-nan")."""
    if math.isnan(v):
        return "-nan" if reduced or math.copysign(1.0, v) < 0 else "nan"
    return f"{v:g}"


def histc(input, bins=100, min=0, max=0, *, out=None):  # noqa: A002
    """A histogram of ``bins`` equal bins over [min, max] (the data's range when both are 0);
    values outside are ignored."""
    return _histc_op(input, bins, min, max)


# (an op, so that vmap runs it once per example, as torch's batched fallback does: the range
# and the checks read each example's values)
@op("histc", promote=NONE, differentiable=False, writes=2)
def _histc_op(data, bins, min, max):  # noqa: A002
    xp = get_xp(data)
    if data.dtype.kind != "f":
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{D._BY_NP[data.dtype].scalar_name}'")
    if bins <= 0:
        raise RuntimeError(f"ember.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    from_data = lo == hi and data.size
    if from_data:
        lo, hi = float(data.min()), float(data.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"ember.histc: range of [{_c_number(lo, from_data)}, "
                           f"{_c_number(hi, from_data)}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("ember.histc: max must be larger than min")
    counts, _ = xp.histogram(data.astype(np.float64), bins=bins, range=(lo, hi))
    return counts.astype(data.dtype)


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """``(hist, bin_edges)``: a histogram with ``bins`` equal bins (or the given edges)."""
    data = input._data
    if isinstance(bins, Tensor):
        bins = bins._data.astype(np.float64)
    if range is None and not hasattr(bins, "shape") and data.size:
        range = (float(data.min()), float(data.max()))  # noqa: A001
    return _histogram(*_histogram_op(input, weight, bins, range, density))


@op("histogram", tensors=2, promote=NONE, outputs=2, node="NotImplemented")
def _histogram_op(self, weight, bins, range, density):  # noqa: A002
    hist, edges = get_xp(self).histogram(self.astype(np.float64), bins=bins, range=range,
                                         weights=weight, density=density)
    return hist.astype(self.dtype), edges.astype(self.dtype)


_histogram_op.grad("self", "weight")(no_derivative("histogram"))


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):  # noqa: A002
    """A histogram of the points in the rows of ``input`` (N, D): ``(hist, bin_edges)``."""
    if isinstance(bins, Tensor):
        bins = bins._data.tolist()
    elif isinstance(bins, (list, tuple)):
        bins = [b._data if isinstance(b, Tensor) else b for b in bins]
    if range is not None:  # torch's flat [lo0, hi0, lo1, hi1, ...]
        range = tuple(zip(range[0::2], range[1::2]))  # noqa: A001
    edges = _histogramdd_bin_edges(input, weight, bins, range, density)
    hist = _histogramdd_op(input, weight, tuple(e._data for e in edges), density)
    return _histogramdd(hist, tuple(edges))


@op("_histogramdd_bin_edges", tensors=2, promote=NONE, outputs=-1, node="NotImplemented")
def _histogramdd_bin_edges(self, weight, bins, range, density):  # noqa: A002
    """Every dimension's bin edges."""
    _, edges = get_xp(self).histogramdd(self.reshape(-1, self.shape[-1]).astype(np.float64),
                                        bins=bins, range=range)
    return tuple(e.astype(self.dtype) for e in edges)


@op("_histogramdd_from_bin_cts", tensors=2, promote=NONE, node="NotImplemented")
def _histogramdd_op(self, weight, edges, density):
    """The counts in the bins of the given edges."""
    hist, _ = get_xp(self).histogramdd(self.reshape(-1, self.shape[-1]).astype(np.float64),
                                       bins=edges, weights=weight, density=density)
    return hist.astype(self.dtype)


_histogramdd_bin_edges.grad("self", "weight")(no_derivative("_histogramdd_bin_edges"))
_histogramdd_op.grad("self", "weight")(no_derivative("_histogramdd_from_bin_cts"))


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,  # noqa: A002
                 out=None, sorter=None):
    """For each value of ``input``, the index at which it would be inserted in the innermost
    dimension of ``sorted_sequence`` to keep it sorted."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    seq = sorted_sequence._data
    values = input._data if isinstance(input, Tensor) else np.asarray(input)
    xp = get_xp(seq)
    if sorter is not None:
        seq = xp.take_along_axis(seq, sorter._data, axis=-1)
    how = "right" if right else "left"
    if seq.ndim == 1:
        idx = xp.searchsorted(seq, values, side=how)
    else:
        if seq.shape[:-1] != values.shape[:-1]:
            raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or "
                               "the first N-1 dimensions of boundaries tensor and input value "
                               "tensor must match, but we got boundaries tensor "
                               f"{list(seq.shape)} and input value tensor {list(values.shape)}")
        flat_s = seq.reshape(-1, seq.shape[-1])
        flat_v = values.reshape(-1, values.shape[-1])
        idx = xp.stack([xp.searchsorted(s, v, side=how) for s, v in zip(flat_s, flat_v)])
        idx = idx.reshape(values.shape)
    return _wrap(xp.asarray(idx).astype(np.int32 if out_int32 else np.int64))


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):  # noqa: A002
    """The bucket of each value of ``input`` among the 1-D sorted ``boundaries``."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


Tensor.nonzero = nonzero
Tensor.argwhere = argwhere
Tensor.unique = unique
Tensor.unique_consecutive = unique_consecutive
Tensor.bincount = bincount
Tensor.histc = histc
Tensor.histogram = histogram
