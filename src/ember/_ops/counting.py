"""Counting and searching: nonzero, unique, bincount, histograms, bucketize/searchsorted.

Their results are indices and counts (or depend on the data's values only through
comparisons), so none of them is differentiable and none records a node: they compute on
the arrays and wrap the results.
"""
from __future__ import annotations

__all__ = ['argwhere', 'bincount', 'bucketize', 'histc', 'histogram', 'histogramdd', 'nonzero',
           'searchsorted', 'unique', 'unique_consecutive']

import numpy as np

from .. import _dtype as D
from .._backend import get_xp
from .._tensor import Tensor, _wrap, _wrap_dim
from .reduction import return_type

_histogram = return_type("histogram", ("hist", "bin_edges"))
_histogramdd = return_type("histogramdd", ("hist", "bin_edges"))


def _long(a):
    return _wrap(a.astype(np.int64))


def nonzero(input, *, out=None, as_tuple=False):  # noqa: A002 - torch's name
    """The indices of the non-zero elements: an (n, ndim) int64 tensor, or one 1-D tensor per
    dimension with ``as_tuple=True``."""
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
    return nonzero(input)


def _check_dim(dim, ndim):
    return _wrap_dim(dim, max(ndim, 1))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values (or slices along ``dim``) in ascending order, with optional inverse
    indices and counts."""
    data = input._data
    xp = get_xp(data)
    if dim is None:
        # NOTE: NaNs are all distinct, as in torch
        values, inverse, counts = xp.unique(data.reshape(-1), return_inverse=True,
                                            return_counts=True, equal_nan=False)
        inverse = inverse.reshape(data.shape)
    else:
        d = _check_dim(dim, data.ndim)
        moved = xp.moveaxis(data, d, 0)
        flat = moved.reshape(moved.shape[0], -1)
        values, inverse, counts = xp.unique(flat, axis=0, return_inverse=True,
                                            return_counts=True)
        values = xp.moveaxis(values.reshape((-1,) + moved.shape[1:]), 0, d)
        inverse = inverse.reshape(-1)
    return _results(_wrap(xp.ascontiguousarray(values)), inverse, counts, return_inverse,
                    return_counts)


def _results(values, inverse, counts, return_inverse, return_counts):
    out = (values,)
    if return_inverse:
        out += (_long(inverse),)
    if return_counts:
        out += (_long(counts),)
    return out[0] if len(out) == 1 else out


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """Collapse each run of equal consecutive values (or slices along ``dim``) to one."""
    data = input._data
    xp = get_xp(data)
    if dim is None:
        flat = data.reshape(-1)
        rows, shape_of = flat.reshape(-1, 1), None
    else:
        d = _check_dim(dim, data.ndim)
        moved = xp.moveaxis(data, d, 0)
        rows, shape_of = moved.reshape(moved.shape[0], -1), (d, moved.shape[1:])
    if rows.shape[0] == 0:
        starts = xp.zeros(0, dtype=bool)
    else:
        change = xp.any(rows[1:] != rows[:-1], axis=1)
        starts = xp.concatenate([xp.ones(1, dtype=bool), change])
    first = xp.nonzero(starts)[0]
    inverse = xp.cumsum(starts) - 1
    counts = xp.diff(xp.concatenate([first, xp.asarray([rows.shape[0]])]))
    if shape_of is None:
        values = flat[first]
        inverse = inverse.reshape(data.shape)
    else:
        d, rest = shape_of
        values = xp.moveaxis(rows[first].reshape((-1,) + rest), 0, d)
    return _results(_wrap(xp.ascontiguousarray(values)), inverse, counts, return_inverse,
                    return_counts)


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
    w = weights._data
    if w.shape != data.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    counts = xp.bincount(data, weights=w.astype(np.float64), minlength=minlength)
    dt = np.float32 if w.dtype == np.float32 else np.float64
    return _wrap(counts.astype(dt))


def histc(input, bins=100, min=0, max=0, *, out=None):  # noqa: A002
    """A histogram of ``bins`` equal bins over [min, max] (the data's range when both are 0);
    values outside are ignored."""
    data = input._data
    xp = get_xp(data)
    if data.dtype.kind != "f":
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{D._BY_NP[data.dtype].scalar_name}'")
    if bins <= 0:
        raise RuntimeError("torch.histc(): bins must be > 0, but got " + str(bins))
    lo, hi = float(min), float(max)
    if lo == hi and data.size:
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc(): max must be larger than min")
    counts, _ = xp.histogram(data.astype(np.float64), bins=bins, range=(lo, hi))
    return _wrap(counts.astype(data.dtype))


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):  # noqa: A002
    """``(hist, bin_edges)``: a histogram with ``bins`` equal bins (or the given edges)."""
    data = input._data
    xp = get_xp(data)
    if isinstance(bins, Tensor):
        bins = bins._data.astype(np.float64)
    w = None if weight is None else weight._data
    if range is None and not hasattr(bins, "shape") and data.size:
        range = (float(data.min()), float(data.max()))  # noqa: A001
    hist, edges = xp.histogram(data.astype(np.float64), bins=bins, range=range, weights=w,
                               density=density)
    return _histogram(_wrap(hist.astype(data.dtype)), _wrap(edges.astype(data.dtype)))


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):  # noqa: A002
    """A histogram of the points in the rows of ``input`` (N, D): ``(hist, bin_edges)``."""
    data = input._data
    xp = get_xp(data)
    if isinstance(bins, Tensor):
        bins = bins._data.tolist()
    elif isinstance(bins, (list, tuple)):
        bins = [b._data if isinstance(b, Tensor) else b for b in bins]
    if range is not None:  # torch's flat [lo0, hi0, lo1, hi1, ...]
        range = list(zip(range[0::2], range[1::2]))  # noqa: A001
    w = None if weight is None else weight._data
    hist, edges = xp.histogramdd(data.reshape(-1, data.shape[-1]).astype(np.float64),
                                 bins=bins, range=range, weights=w, density=density)
    return _histogramdd(_wrap(hist.astype(data.dtype)),
                        tuple(_wrap(e.astype(data.dtype)) for e in edges))


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
