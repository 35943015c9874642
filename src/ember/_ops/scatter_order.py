"""What torch's CPU scatter kernels have written when they meet an index out of bounds.

torch's ``scatter_``, ``scatter_add_`` and ``scatter_(..., reduce=)`` check each index as they
write it: an index out of bounds raises after every element visited before it has been
written. They visit the elements of ``index`` in the order of a TensorIterator over ``index``'s
shape with ``dim`` squashed to 1 (over self, src and index): dimensions sorted by their strides
(self's first), neighbours that are one run of memory in every operand merged; the innermost
merged dimension is the inner loop, and the positions along ``dim`` are looped over just
outside it (just inside it when ``dim`` is self's last dimension). ember writes those same
elements before raising.
"""
from __future__ import annotations

from .._backend import get_xp
from .._backend.layout import insertion_sorted

__all__ = ["visited_before_error"]


def visited_before_error(index, dim, size, operands):
    """None when every element of ``index`` (>= 1-D) is in [0, ``size``); else the message of
    the first one torch visits that is not, and the mask of the elements visited before it.
    ``operands``: the arrays the kernel iterates over (self, src when there is one, index)."""
    bad = (index < 0) | (index >= size)
    if not bad.any():
        return None
    xp = get_xp(index)
    order = _visiting_order(xp, index.shape, dim, [o.strides for o in operands],
                            dim == operands[0].ndim - 1)
    rank = xp.empty(index.size, xp.int64)
    rank[order] = xp.arange(index.size)
    rank = rank.reshape(index.shape)
    first = int(rank[bad].min())
    value = int(index.reshape(-1)[order[first]])
    message = f"index {value} is out of bounds for dimension {dim} with size {size}"
    return message, rank < first


def _visiting_order(xp, shape, dim, strides, dim_innermost):
    """The flat (C order) positions of ``shape``'s elements in the order the kernel visits
    them."""
    groups = _merged(_sorted_dims(shape, dim, strides), shape, strides)
    positions = xp.indices(shape).reshape(len(shape), -1)
    keys = [positions[dim]]  # (np.lexsort: the last key is the most significant)
    for k, group in enumerate(groups):
        linear, step = 0, 1
        for d in group:  # (the group's first dimension moves fastest)
            linear, step = linear + positions[d] * step, step * shape[d]
        if k == 0 and dim_innermost:
            keys.insert(1, linear)  # the positions along dim inside the inner loop
        elif k == 0:
            keys.insert(0, linear)
        else:
            keys.append(linear)
    return xp.lexsort(xp.stack(keys))


def _sorted_dims(shape, dim, strides):
    """The dimensions of more than one element but ``dim``, innermost first, as
    TensorIterator's reorder_dimensions sorts them (an insertion sort on the strides)."""
    return insertion_sorted([d for d in reversed(range(len(shape))) if d != dim and shape[d] > 1],
                            lambda d0, d1: _should_swap(d0, d1, shape, strides))


def _should_swap(d0, d1, shape, strides):
    for st in strides:
        s0, s1 = st[d0], st[d1]
        if s0 == 0 or s1 == 0:
            continue
        if s0 != s1:
            return -1 if s0 < s1 else 1
        if shape[d0] > shape[d1]:
            return 1
    return 0


def _merged(perm, shape, strides):
    """``perm``'s dimensions in runs that are one stretch of memory in every operand."""
    groups = []
    for d in perm:
        if groups:
            inner = groups[-1][-1]
            if all(shape[inner] * st[inner] == st[d] for st in strides):
                groups[-1].append(d)
                continue
        groups.append([d])
    return groups
