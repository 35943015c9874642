"""Memory layouts of copies: torch's ``preserve_format``, ``contiguous_format`` and
``channels_last`` (ember tensors are arrays, and a layout is the order of their dimensions in
memory, innermost first).

torch's rule for a copy (``clone``, the ``*_like`` factories, a dtype cast): an input whose
elements are dense and do not overlap keeps its strides; another (gaps, expanded dimensions)
gets compact strides in its own dimension order, found by ``infer_dense_strides``' sort: by
stride, a tie put the smaller dimension inside, a stride of 0 compares with nothing.
"""
from __future__ import annotations

from . import get_xp

# innermost-first dimension orders of the channels-last formats (N, C, H, W[, D]), by rank
_CHANNELS_LAST = {"channels_last": (4, (1, 3, 2, 0)), "channels_last_3d": (5, (1, 4, 3, 2, 0))}


def _compare(shape, strides, a, b):
    """Which of dimensions ``a`` and ``b`` lies outside (1: ``a``, -1: ``b``, 0: undecided)."""
    sa, sb = abs(strides[a]), abs(strides[b])
    if sa == 0 or sb == 0:
        return 0
    if sa != sb:
        return 1 if sa > sb else -1
    return 1 if shape[a] > shape[b] else 0


def preserved_order(shape, strides):
    """The innermost-first dimension order torch's preserve_format gives a copy of an array of
    ``shape`` and (element or byte) ``strides``: an insertion sort that leaves undecided pairs
    in place, starting from the C order."""
    return insertion_sorted(list(range(len(shape)))[::-1],
                            lambda a, b: _compare(shape, strides, a, b))


def insertion_sorted(order, compare):
    """``order`` (dimensions, innermost first) sorted as torch sorts dimensions (its
    TensorIterator, infer_dense_strides): an insertion sort where ``compare(a, b)`` > 0 moves
    ``a`` outside ``b``, < 0 stops the scan and 0 (undecided) looks further out."""
    order = list(order)
    for i in range(1, len(order)):
        j = i
        for k in range(i - 1, -1, -1):
            c = compare(order[k], order[j])
            if c > 0:
                order[k], order[j] = order[j], order[k]
                j = k
            elif c < 0:
                break
    return order


def format_order(x, memory_format="preserve_format"):
    """The innermost-first order of ``x``'s copy in ``memory_format`` (a name: preserve_format,
    contiguous_format, channels_last, channels_last_3d), None for the C order."""
    if memory_format in _CHANNELS_LAST:
        rank, order = _CHANNELS_LAST[memory_format]
        if x.ndim != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {memory_format} format")
        return order
    if memory_format == "contiguous_format" or x.ndim < 2 or (x.flags.c_contiguous
                                                               and 1 not in x.shape):
        return None  # (a size-1 dimension's stride may still place it elsewhere)
    order = preserved_order(x.shape, x.strides)
    return None if order == list(range(x.ndim))[::-1] else order


def is_in_format(shape, strides, memory_format):
    """Whether element ``strides`` of ``shape`` are those of ``memory_format`` (contiguous or
    channels-last; size-1 dimensions take any stride): torch's is_contiguous(memory_format)."""
    if memory_format not in _CHANNELS_LAST:
        order = range(len(shape) - 1, -1, -1)
    else:
        rank, order = _CHANNELS_LAST[memory_format]
        if len(shape) != rank:
            return False
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def empty_in_order(x, order, dtype=None):
    """An uninitialised array of ``x``'s shape (and dtype unless told), on ``x``'s device,
    laid out in innermost-first ``order`` (None: the C order)."""
    xp = get_xp(x)
    dtype = x.dtype if dtype is None else dtype
    if order is None:
        return xp.empty(x.shape, dtype)
    outer = order[::-1]
    out = xp.empty(tuple(x.shape[d] for d in outer), dtype)
    return out.transpose(tuple(outer.index(d) for d in range(x.ndim)))


def copy_in_format(x, memory_format="preserve_format"):
    """A copy of ``x`` laid out as torch lays out a copy in ``memory_format``; a C-contiguous
    ``x`` kept in that order costs one plain copy."""
    order = format_order(x, memory_format)
    if order is None:
        return x.copy()
    out = empty_in_order(x, order)
    out[...] = x
    return out


def _iterator_compare(shape, operands, a, b):
    """torch's TensorIterator test of dimensions ``a`` and ``b`` over its operands, first
    decisive one first: a stride of 0 (broadcast) decides nothing, nor a tie where ``a`` is
    not the larger dimension (then the next operand is asked)."""
    for strides in operands:
        sa, sb = abs(strides[a]), abs(strides[b])
        if sa == 0 or sb == 0:
            continue
        if sa != sb:
            return 1 if sa > sb else -1
        if shape[a] > shape[b]:
            return 1
    return 0


def iterator_layout(out, inputs):
    """``out``, an elementwise result of ``inputs`` (arrays, or numbers), laid out as torch's
    TensorIterator lays out its result: dimensions sorted by the inputs' strides, the first
    input deciding where they disagree (NumPy's order 'K' gives up on disagreement and takes
    the C order). Copied only when its strides differ from those."""
    ndim = out.ndim
    operands, contiguous = [], True
    for x in inputs:
        if getattr(x, "ndim", 0) < 2:  # (one dimension alone never decides an order)
            continue
        contiguous = contiguous and x.flags.c_contiguous
        lead = ndim - x.ndim  # (broadcast dimensions get stride 0, as torch's operands do)
        operands.append((0,) * lead + tuple(0 if n == 1 and m != 1 else s for n, m, s in
                                            zip(x.shape, out.shape[lead:], x.strides)))
    if len(operands) < 2 or contiguous:  # (then NumPy's order is torch's: the C order)
        return out
    order = insertion_sorted(range(ndim - 1, -1, -1),
                             lambda a, b: _iterator_compare(out.shape, operands, a, b))
    strides, step = [0] * ndim, out.itemsize
    for d in order:
        strides[d] = step
        step *= out.shape[d]
    if tuple(strides) == out.strides or out.size == 0:
        return out
    copy = empty_in_order(out, None if order == list(range(ndim - 1, -1, -1)) else order)
    copy[...] = out
    return copy
