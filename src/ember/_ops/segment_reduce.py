"""segment_reduce: reductions (sum, mean, max, min, prod) over consecutive segments of ``data``
along ``axis``, the segments given by their lengths or offsets.

``lengths`` has ``data``'s leading dims before ``axis`` plus one dim of segments. Each element
finds its segment by comparing its position with the segments' ends, and the reduction is one
scatter (add, maximum, minimum or multiply) into (rows, segments, rest): no per-segment loop.
The gradient is torch's: split evenly among an extreme's ties (positive gradients only, as
torch's kernel does), and for products the product of the other elements where a single zero
sits. Like torch, the backward has no derivative.
"""
from __future__ import annotations

import math

import numpy as np

from .._backend import get_xp, scatter_add, scatter_reduce
from .pointwise import no_derivative, no_forward_ad, not_implemented
from .registry import NONE, op

__all__ = ["segment_reduce"]
_UFUNCS = {"max": "maximum", "min": "minimum", "prod": "multiply"}
_IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}


def _layout(data, lengths):
    """(rows, segments, rest) sizes, the segment of each position (rows, D) and which
    positions a segment covers (positions past the lengths' total belong to none)."""
    xp = get_xp(data)
    batch = lengths.shape[:-1]
    rows, segments = math.prod(batch), lengths.shape[-1]
    size = data.shape[len(batch)]
    rest = math.prod(data.shape[len(batch) + 1:])
    ends = xp.cumsum(lengths.reshape(rows, segments), axis=1)
    positions = xp.arange(size)
    segment = (ends[:, :, None] <= positions).sum(axis=1)  # (rows, D)
    covered = segment < segments
    return (rows, segments, size, rest), segment, covered


def _keys(segment, covered, rows, segments, rest):
    """Flat (row, segment, rest) targets of every covered (row, position, rest) element."""
    xp = get_xp(segment)
    base = (xp.arange(rows)[:, None] * segments + xp.where(covered, segment, 0)) * rest
    return (base[:, :, None] + xp.arange(rest)).reshape(-1), xp.repeat(covered.reshape(-1), rest)


def _check(data, lengths, reduce, axis, unsafe=False, initial=None):
    if reduce not in _IDENTITY:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if lengths._data.dtype.kind not in "iu":
        raise not_implemented("_segment_reduce_lengths_cpu_kernel1", lengths._data)
    if axis != lengths.ndim - 1:
        raise RuntimeError("segment_reduce(): Expected axis to be the last dimension of lengths "
                           f"but got {axis}.")
    if (lengths._data < 0).any():
        raise RuntimeError("lengths contains negative value!")
    if not unsafe and (lengths._data.sum(axis=-1) != data.shape[axis]).any():
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                           "data.size(lengths.dim()-1) when !unsafe.")
    if data._data.dtype.kind != "f":
        raise not_implemented("_segment_reduce_cpu", data._data)


@op("segment_reduce", tensors=2, promote=NONE, node="SegmentReduceBackward0", check=_check)
def _segment_reduce(data, lengths, reduce, axis, unsafe=False, initial=None):
    xp = get_xp(data)
    (rows, segments, size, rest), segment, covered = _layout(data, lengths)
    start = _IDENTITY[reduce] if initial is None else initial
    out = xp.full(rows * segments * rest, start, data.dtype)
    keys, keep = _keys(segment, covered, rows, segments, rest)
    values = data.reshape(-1)[keep]
    if reduce in ("sum", "mean"):
        scatter_add(out, keys[keep], values)
    else:
        scatter_reduce(_UFUNCS[reduce], out, keys[keep], values)
    out = out.reshape(rows, segments, rest)
    if reduce == "mean":
        count = lengths.reshape(rows, segments, 1).astype(data.dtype)
        empty = xp.nan if initial is None else initial
        out = xp.where(count > 0, out / xp.where(count > 0, count, 1), empty).astype(data.dtype)
    return out.reshape(*lengths.shape, *data.shape[lengths.ndim:])


_segment_reduce.jvp("data")(no_forward_ad("segment_reduce"))


@_segment_reduce.grad("data")
def _(grad, result, data, lengths, reduce, axis, initial):
    return _segment_reduce_backward(grad, result, data, lengths, reduce, axis, initial)


@op("_segment_reduce_backward", tensors=4, promote=NONE, node="NotImplemented")
def _segment_reduce_backward(grad, output, data, lengths, reduce, axis, initial=None):
    """d data of segment_reduce, torch's way (ties split evenly, single zeros of products)."""
    xp = get_xp(data)
    (rows, segments, size, rest), segment, covered = _layout(data, lengths)
    keys, keep = _keys(segment, covered, rows, segments, rest)
    keys = xp.where(keep, keys, 0)

    def per_element(x):  # a (rows, segments, rest) value at each element of data
        return x.reshape(-1)[keys].reshape(data.shape)

    g = per_element(grad)
    if reduce == "mean":
        count = lengths.reshape(rows, segments, 1).astype(data.dtype)
        g = g / per_element(xp.broadcast_to(xp.maximum(count, 1), (rows, segments, rest)))
    elif reduce in ("max", "min"):
        out = per_element(output)
        hit = ((data == out) | (xp.isnan(data) & xp.isnan(out))).astype(data.dtype)
        ties = xp.zeros(rows * segments * rest, data.dtype)
        scatter_add(ties, keys[keep], hit.reshape(-1)[keep])
        g = g * hit
        # NOTE: torch's kernel divides among ties only the gradients above zero; a negative
        # one reaches every tied element whole. Kept, for torch's values.
        g = xp.where(g > 0, g / per_element(xp.maximum(ties, 1)), g)
    elif reduce == "prod":
        g = g * _prod_others(xp, data, per_element(output), keys, keep, initial,
                             rows * segments * rest, per_element)
    return xp.where(keep.reshape(data.shape), g, 0).astype(data.dtype)


def _prod_others(xp, data, out, keys, keep, initial, n, per_element):
    """The product of the other elements of each element's segment (times initial)."""
    zero = data == 0
    zeros = xp.zeros(n, np.int64)
    scatter_add(zeros, keys[keep], zero.reshape(-1)[keep].astype(np.int64))
    nonzero = xp.full(n, 1.0 if initial is None else initial, data.dtype)
    scatter_reduce("multiply", nonzero, keys[keep], xp.where(zero, 1, data).reshape(-1)[keep])
    single = per_element(zeros) == 1
    return xp.where(zero, xp.where(single, per_element(nonzero), 0),
                    out / xp.where(zero, 1, data))


_segment_reduce_backward.grad("grad", "output", "data", "lengths")(
    no_derivative("_segment_reduce_backward"))


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """Reduce ``data`` over the segments of ``axis`` given by ``lengths`` or ``offsets``."""
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if offsets is not None:  # offsets win over lengths, as in torch
        lengths = offsets[..., 1:] - offsets[..., :-1]
    elif lengths is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if axis < 0:
        axis += data.ndim
    return _segment_reduce(data, lengths, reduce, axis, unsafe,
                           None if initial is None else float(initial))

