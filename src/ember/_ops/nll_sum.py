"""nll_loss's sums in torch's order, so that a reduced loss, and the total weight a mean
divides by, are torch's numbers to the last bit (host arrays: NumPy's own sums are pairwise).

torch's CPU kernel adds the samples one by one, in the input's dtype (no wider accumulator),
into eight partial sums: level 0 takes each kept sample, and after the sample at linear index
``b`` every level ``j`` whose period ``S ** (j + 1)`` divides ``b`` is added into level
``j + 1`` and cleared (``S`` is 16 below 2**40 samples). Ignored samples are skipped, their
flushes too. The result is ``0 + p0 + p1 + ... + p7``, in that order.

Sequential sums come from ``add.accumulate`` (a running sum is sequential by definition);
a group of sums of equal length is one accumulate over a reshaped array.
"""
from __future__ import annotations

import functools

import numpy as np

_LEVELS = 8


def _period(n):
    """torch's ``1 << max(4, CeilLog2(n) / 8)`` (CeilLog2 of 0, 1 and 2 is 1)."""
    ceil_log2 = (n - 1).bit_length() if n > 2 else 1
    return 1 << max(4, ceil_log2 // _LEVELS)


_SMALL = 16  # the period below 2**32 samples
SMALL_BATCH = 1 + _SMALL * _SMALL  # the most samples _small_ordered_sum takes


def _zero(dtype, _zeros={}):
    """``dtype(0)``, made once (a NumPy scalar's constructor costs a few additions)."""
    zero = _zeros.get(dtype)
    if zero is None:
        zero = _zeros[dtype] = dtype(0)
    return zero


def _running_total(values):
    """((v0 + v1) + v2) + ..., in ``values``' dtype (0 for none)."""
    return np.add.accumulate(values)[-1] if values.size else _zero(values.dtype.type)


def _group_totals(values, size):
    """The running total of each consecutive group of ``size`` values."""
    return np.add.accumulate(values.reshape(-1, size), axis=1)[:, -1]


def _finish(dtype, parts, top):
    """0 + p0 + ... + p6 + p7, one addition at a time in ``dtype``."""
    total = _zero(dtype)
    for part in parts:
        total = total + part
    return total + top


def ordered_sum(values, kept=None):
    """torch's nll_loss sum of the 1-D array ``values`` (a NumPy scalar of its dtype);
    ``kept``: a boolean array of the samples that count (None: all of them)."""
    n = values.size
    if kept is None and 1 < n <= SMALL_BATCH:
        return _small_ordered_sum(values)
    dtype = values.dtype.type
    if not n:
        return _zero(dtype)
    if kept is not None:
        return _ordered_sum_skipping(values, kept)
    size = _period(n)
    # (the sample at index 0 flushes through every level at once: it opens the top level)
    items, parts = values[1:], []
    while items.size and len(parts) < _LEVELS - 1:
        whole = items.size - items.size % size
        parts.append(_running_total(items[whole:]))
        items = _group_totals(items[:whole], size) if whole else items[:0]
    top = _running_total(np.concatenate((values[:1], items))) if items.size else values[0]
    return _finish(dtype, parts, top)


def _small_ordered_sum(values):
    """``ordered_sum`` of 2 to 257 values, all kept (the usual batch: two levels, two NumPy
    calls and few Python steps: inside a training step each costs several times what it
    costs timed alone)."""
    return small_ordered_sum_of(values.size, values.dtype.type)(values)


@functools.lru_cache(maxsize=None)  # (at most 256 sizes per dtype)
def small_ordered_sum_of(n, dtype):
    """``_small_ordered_sum`` of ``n`` values of ``dtype``: its slices worked out once (a
    compiled program binds it for its batch)."""
    whole = (n - 1) // _SMALL * _SMALL
    zero = _zero(dtype)
    level0, level1 = slice(whole + 1, None), slice(1, whole + 1)
    groups = (whole // _SMALL, _SMALL)  # (the shape of level 1's groups; none: (0, 16))
    has_level0 = whole + 1 < n

    # ((0 + level 0) + level 1) + the sample at index 0, level 1 the groups' totals added one
    # by one (a running total's last); one closure per case, which then tests nothing
    if not whole:  # (2 to 17 samples: level 0 only)
        def total_of(values):
            return zero + _accumulate(values[level0])[-1] + values[0]
    elif not has_level0:  # (1 + 16k samples)
        def total_of(values):
            return (zero + _accumulate(_accumulate(values[level1].reshape(groups), 1)[_LAST])[-1]
                    + values[0])
    else:
        def total_of(values):
            return (zero + _accumulate(values[level0])[-1]
                    + _accumulate(_accumulate(values[level1].reshape(groups), 1)[_LAST])[-1]
                    + values[0])
    return total_of


_accumulate = np.add.accumulate
_LAST = (slice(None), -1)  # ([:, -1]: each group's running total's last)


def _ordered_sum_skipping(values, kept):
    """``ordered_sum`` when some samples are skipped: a level flushes only at a kept sample, so
    its groups are as long as the skipped samples make them."""
    dtype = values.dtype.type
    size = _period(values.size)
    index = np.flatnonzero(kept)
    items, parts = values[index], []
    for level in range(_LEVELS - 1):
        ends = np.flatnonzero(index % size ** (level + 1) == 0)
        if not ends.size:
            parts.append(_running_total(items))
            items = items[:0]
            break
        parts.append(_running_total(items[ends[-1] + 1:]))
        items, index = _segment_totals(items[:ends[-1] + 1], ends), index[ends]
    return _finish(dtype, parts, _running_total(items))


def _segment_totals(values, ends):
    """The running total of each segment of ``values`` ending (inclusive) at ``ends``."""
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    width = int(lengths.max())
    if lengths.size * width > 4 * values.size + 64:  # (a few long segments: one at a time)
        return np.array([_running_total(values[a:b + 1]) for a, b in zip(starts, ends)],
                        values.dtype)
    # each segment a row, zeros after its end (adding +0.0 keeps a running total's value)
    rows = np.zeros((lengths.size, width), values.dtype)
    row_of = np.repeat(np.arange(lengths.size), lengths)
    rows[row_of, np.arange(values.size) - starts[row_of]] = values
    return np.add.accumulate(rows, axis=1)[:, -1]
