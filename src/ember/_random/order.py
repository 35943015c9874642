"""The order in which torch's kernels fill a tensor: its memory order.

torch's TensorIterator walks the output's dimensions sorted by stride, so a transposed or
channels-last tensor receives its random values in memory order, not in index order. These
helpers find that order for a NumPy array and lay a stream of values out in it.
"""
from __future__ import annotations

import numpy as np


def memory_axes(array):
    """The axes of ``array`` from outermost to innermost in memory (stable for ties)."""
    strides = array.strides
    return sorted(range(array.ndim), key=lambda d: -abs(strides[d]))


def lay_out(values, array):
    """``values`` (1-D, in ``array``'s memory order) as an array of ``array``'s shape."""
    if array.flags.c_contiguous:
        return values.reshape(array.shape)
    axes = memory_axes(array)
    if axes == list(range(array.ndim)):
        return values.reshape(array.shape)
    out = np.empty(array.shape, values.dtype)
    out.transpose(axes)[...] = values.reshape([array.shape[a] for a in axes])
    return out


def in_memory_order(array):
    """The elements of ``array`` as a 1-D array in its memory order."""
    return array.transpose(memory_axes(array)).ravel()
