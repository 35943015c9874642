"""The order torch's CPU kernels leave equal elements in.

torch sorts and selects with libstdc++'s algorithms (``std::sort``: introsort with a
median-of-three Hoare partition and a final insertion sort; ``std::partial_sort``: a heap;
``std::nth_element``: introselect) and, for ``kthvalue``, its own quickselect. None of them is
stable: which of several equal elements comes first (the index ``sort``, ``topk``,
``kthvalue`` and ``mode`` return, and so where their gradient goes) follows from the
algorithm's steps. ember replays those steps on the rows where equal elements make the order
matter; elsewhere any correct order is torch's, and NumPy's stable sort gives it.

The comparisons are torch's: ``asc`` puts NaN above everything (``KeyValueCompAsc``),
``desc`` below (``KeyValueCompDesc``), and ``lt`` is a plain ``<`` (NaN compares false both
ways; ``mode`` sorts with it).
"""
from __future__ import annotations

import numpy as np

THRESHOLD = 16  # libstdc++'s _S_threshold: shorter ranges are insertion-sorted
_VECTOR = 256  # partitions of longer ranges run as NumPy array operations


# -- comparisons --------------------------------------------------------------------------------
def _less_scalar(kind):
    # (x != x: x is NaN, the cheapest test in these inner loops)
    if kind == "asc":
        return lambda a, b: (a == a and b != b) or a < b  # noqa: PLR0124
    if kind == "desc":
        return lambda a, b: (a != a and b == b) or a > b  # noqa: PLR0124
    return lambda a, b: a < b


def _less_array(kind, a, b):
    """Elementwise ``comp(a, b)`` (one side an array, the other a scalar)."""
    if kind == "asc":
        return (a == a) & (b != b) | (a < b)  # noqa: PLR0124
    if kind == "desc":
        return (a != a) & (b == b) | (a > b)  # noqa: PLR0124
    return a < b


# -- libstdc++'s algorithms on Python lists -----------------------------------------------------
def _swap(v, ix, a, b):
    v[a], v[b] = v[b], v[a]
    ix[a], ix[b] = ix[b], ix[a]


def _insertion_sort(v, ix, first, last, less):
    for i in range(first + 1, last):
        val, iv = v[i], ix[i]
        if less(val, v[first]):
            v[first + 1:i + 1] = v[first:i]
            ix[first + 1:i + 1] = ix[first:i]
            v[first], ix[first] = val, iv
        else:
            j = i
            while less(val, v[j - 1]):
                v[j], ix[j] = v[j - 1], ix[j - 1]
                j -= 1
            v[j], ix[j] = val, iv


def _move_median_to_first(v, ix, result, a, b, c, less):
    if less(v[a], v[b]):
        if less(v[b], v[c]):
            _swap(v, ix, result, b)
        elif less(v[a], v[c]):
            _swap(v, ix, result, c)
        else:
            _swap(v, ix, result, a)
    elif less(v[a], v[c]):
        _swap(v, ix, result, a)
    elif less(v[b], v[c]):
        _swap(v, ix, result, c)
    else:
        _swap(v, ix, result, b)


def _partition(v, ix, first, last, less):
    """__unguarded_partition_pivot: the median of three moved to ``first``, then Hoare's
    partition of the rest around it; returns the cut."""
    mid = first + (last - first) // 2
    _move_median_to_first(v, ix, first, first + 1, mid, last - 1, less)
    pivot = v[first]
    lo, hi = first + 1, last
    while True:
        while less(v[lo], pivot):
            lo += 1
        hi -= 1
        while less(pivot, v[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        _swap(v, ix, lo, hi)
        lo += 1


def _adjust_heap(v, ix, first, hole, length, val, iv, less):
    top = second = hole
    while second < (length - 1) // 2:
        second = 2 * (second + 1)
        if less(v[first + second], v[first + second - 1]):
            second -= 1
        v[first + hole], ix[first + hole] = v[first + second], ix[first + second]
        hole = second
    if length % 2 == 0 and second == (length - 2) // 2:
        second = 2 * (second + 1)
        v[first + hole], ix[first + hole] = v[first + second - 1], ix[first + second - 1]
        hole = second - 1
    parent = (hole - 1) // 2
    while hole > top and less(v[first + parent], val):
        v[first + hole], ix[first + hole] = v[first + parent], ix[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    v[first + hole], ix[first + hole] = val, iv


def _pop_heap(v, ix, first, last, result, less):
    val, iv = v[result], ix[result]
    v[result], ix[result] = v[first], ix[first]
    _adjust_heap(v, ix, first, 0, last - first, val, iv, less)


def _heap_select(v, ix, first, middle, last, less):
    length = middle - first
    if length > 1:
        for parent in range((length - 2) // 2, -1, -1):
            _adjust_heap(v, ix, first, parent, length, v[first + parent], ix[first + parent],
                         less)
    for i in range(middle, last):
        if less(v[i], v[first]):
            _pop_heap(v, ix, first, middle, i, less)


def _partial_sort(v, ix, first, middle, last, less):
    _heap_select(v, ix, first, middle, last, less)
    while middle - first > 1:
        middle -= 1
        _pop_heap(v, ix, first, middle, middle, less)


def _log2(n):
    return n.bit_length() - 1


# -- the same on NumPy arrays, for long ranges --------------------------------------------------
class _Row:
    """One row being sorted: values and original indices, as arrays, with the work on short
    ranges done on Python lists (cheaper there than NumPy's per-call cost)."""

    def __init__(self, values, kind):
        self.v = values.copy()
        self.ix = np.arange(values.shape[0], dtype=np.int64)
        self.kind = kind
        self.less = _less_scalar(kind)

    def run_on_lists(self, first, last, algorithm, *args):
        v, ix = self.v[first:last].tolist(), self.ix[first:last].tolist()
        algorithm(v, ix, 0, last - first, *args)
        self.v[first:last] = v
        self.ix[first:last] = ix

    def partition(self, first, last):
        """_partition on arrays: the k first left and right stoppers swap pairwise."""
        v, ix, less = self.v, self.ix, self.less
        mid = first + (last - first) // 2
        trio = [first + 1, mid, last - 1]
        tv, ti = v[trio].tolist(), ix[trio].tolist()
        head_v, head_i = [v[first].item()] + tv, [int(ix[first])] + ti
        _move_median_to_first(head_v, head_i, 0, 1, 2, 3, less)
        v[[first] + trio] = head_v
        ix[[first] + trio] = head_i
        pivot = head_v[0]
        seg = v[first + 1:last]
        lefts = np.flatnonzero(~_less_array(self.kind, seg, pivot)) + (first + 1)
        rights = (np.flatnonzero(~_less_array(self.kind, pivot, seg)) + (first + 1))[::-1]
        m = min(lefts.shape[0], rights.shape[0])
        crossed = lefts[:m] >= rights[:m]
        k = int(np.argmax(crossed)) if crossed.any() else m
        if k:
            a, b = lefts[:k], rights[:k]
            v[a], v[b] = v[b], v[a].copy()
            ix[a], ix[b] = ix[b], ix[a].copy()
        cut = int(lefts[k]) if k < lefts.shape[0] else last
        return min(cut, int(rights[k - 1])) if k else cut

    def introsort_loop(self, first, last):
        stack = [(first, last, 2 * _log2(last - first))]
        while stack:
            f, l, depth = stack.pop()
            if l - f <= _VECTOR:
                self.run_on_lists(f, l, _introsort_loop, depth, self.less)
                continue
            if depth == 0:
                self.run_on_lists(f, l, _partial_sort_all, self.less)
                continue
            cut = self.partition(f, l)
            stack.append((cut, l, depth - 1))
            stack.append((f, cut, depth - 1))

    def finish(self, first, last):
        """std::sort's final insertion sort: stable over what the loop left, so (for a strict
        weak order) NumPy's stable sort of those values by comp."""
        seg = self.v[first:last]
        if self.kind == "lt" and seg.dtype.kind in "fc" and np.isnan(seg).any():
            # (a plain < with NaN is no strict weak order: the insertion sort itself)
            self.run_on_lists(first, last, _insertion_sort, self.less)
            return
        order = _stable_order(seg, self.kind)
        self.v[first:last] = self.v[first:last][order]
        self.ix[first:last] = self.ix[first:last][order]


def _introsort_loop(v, ix, first, last, depth, less):
    stack = [(first, last, depth)]
    while stack:
        f, l, depth = stack.pop()
        while l - f > THRESHOLD:
            if depth == 0:
                _partial_sort(v, ix, f, l, l, less)
                break
            depth -= 1
            cut = _partition(v, ix, f, l, less)
            stack.append((cut, l, depth))
            l = cut


def _partial_sort_all(v, ix, first, last, less):
    _partial_sort(v, ix, first, last, last, less)


def _stable_order(values, kind):
    """Stable sorting indices of ``values`` under comparison ``kind``."""
    if kind != "desc":
        return np.argsort(values, kind="stable")  # (NaN last, as "asc")
    if values.dtype.kind in "fc":
        return np.lexsort((-values, ~np.isnan(values)))
    if values.dtype.kind == "b":
        values = values.astype(np.int8)
    return np.argsort(~values, kind="stable")


# -- what the ops call --------------------------------------------------------------------------
def std_sort(values, kind):
    """The indices std::sort leaves a row's (value, index) pairs in (``values`` 1-D)."""
    row = _Row(values, kind)
    n = values.shape[0]
    if n > THRESHOLD:
        row.introsort_loop(0, n)
    row.finish(0, n)
    return row.ix


def std_topk(values, k, largest, sorted=True):
    """The indices of torch's topk of one row: std::partial_sort when k * 64 <= n, else
    std::nth_element and std::sort of the k - 1 first."""
    n = values.shape[0]
    kind = "desc" if largest else "asc"
    row = _Row(values, kind)
    if k == 0:
        return row.ix[:0]
    if k * 64 <= n:
        v, ix = row.v.tolist(), row.ix.tolist()
        _partial_sort(v, ix, 0, k, n, row.less)
        return np.asarray(ix[:k], dtype=np.int64)
    _nth_element(row, k - 1)
    if sorted and k - 1 > 1:
        if k - 1 > THRESHOLD:
            row.introsort_loop(0, k - 1)
        row.finish(0, k - 1)
    return row.ix[:k]


def _nth_element(row, nth):
    first, last = 0, row.v.shape[0]
    depth = 2 * _log2(last - first)
    while last - first > 3:
        if last - first <= _VECTOR:
            row.run_on_lists(first, last, _introselect, nth - first, depth, row.less)
            return
        if depth == 0:
            row.run_on_lists(first, last, _heap_select_nth, nth - first, row.less)
            return
        depth -= 1
        cut = row.partition(first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    row.run_on_lists(first, last, _insertion_sort, row.less)


def _introselect(v, ix, first, last, nth, depth, less):
    while last - first > 3:
        if depth == 0:
            _heap_select_nth(v, ix, first, last, nth, less)
            return
        depth -= 1
        cut = _partition(v, ix, first, last, less)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(v, ix, first, last, less)


def _heap_select_nth(v, ix, first, last, nth, less):
    _heap_select(v, ix, first, nth + 1, last, less)
    _swap(v, ix, first, nth)


def quick_select(values, k):
    """The index torch's kthvalue picks: its quick_select_template (NaN largest)."""
    v, ix = values.tolist(), list(range(values.shape[0]))
    gt = _less_scalar("desc")
    lo, hi = 0, len(v) - 1
    while hi > lo:
        if hi == lo + 1:
            if gt(v[lo], v[hi]):
                _swap(v, ix, lo, hi)
            break
        p = lo + (hi - lo) // 2
        _swap(v, ix, p, lo + 1)
        if gt(v[lo + 1], v[hi]):
            _swap(v, ix, lo + 1, hi)
        if gt(v[lo], v[hi]):
            _swap(v, ix, lo, hi)
        if gt(v[lo + 1], v[lo]):
            _swap(v, ix, lo + 1, lo)
        i, j, pivot = lo + 1, hi, v[lo]
        while True:
            i += 1
            while gt(pivot, v[i]):
                i += 1
            j -= 1
            while gt(v[j], pivot):
                j -= 1
            if j < i:
                break
            _swap(v, ix, i, j)
        _swap(v, ix, lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    return ix[k]
