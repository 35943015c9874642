"""Memory layouts of copies: torch's ``preserve_format``, ``contiguous_format`` and
``channels_last`` (ember tensors are arrays, and a layout is the order of their dimensions in
memory, innermost first).

torch's rule for a copy (``clone``, the ``*_like`` factories, a dtype cast): an input whose
elements are dense and do not overlap keeps its strides; another (gaps, expanded dimensions)
gets compact strides in its own dimension order, found by ``infer_dense_strides``' sort: by
stride, a tie put the smaller dimension inside, a stride of 0 compares with nothing.
"""
from __future__ import annotations

import numpy as np

from . import contiguous_strides, data_address, get_xp, strided_view

# innermost-first dimension orders of the channels-last formats (N, C, H, W[, D]), by rank
_CHANNELS_LAST = {"channels_last": (4, (1, 3, 2, 0)), "channels_last_3d": (5, (1, 4, 3, 2, 0))}
_CHANNELS_LAST_OF_RANK = {4: "channels_last", 5: "channels_last_3d"}


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
    strides = kept_strides(x, memory_format)
    if strides is not None:
        out = empty_strided(x, strides)
    else:
        order = format_order(x, memory_format)
        if order is None:
            return x.copy()
        out = empty_in_order(x, order)
    out[...] = x
    return out


def is_dense(x):
    """torch's is_non_overlapping_and_dense: the strides of the dimensions of more than one
    element, in increasing order, are those of a contiguous layout."""
    expected = x.itemsize
    for stride, n in sorted((s, n) for s, n in zip(x.strides, x.shape) if n != 1):
        if stride != expected:
            return False
        expected *= n
    return True


def kept_strides(x, memory_format="preserve_format"):
    """The element strides torch's copies and ``empty_like`` in ``memory_format`` keep from
    ``x``: a dense ``x``'s very strides in preserve_format (those of its dimensions of one
    element included, which an order of dimensions does not give), else None (C strides or
    an order: see format_order)."""
    if memory_format != "preserve_format" or x.ndim < 2 or not x.size or not is_dense(x):
        return None
    if x.strides == contiguous_strides(x.shape, x.itemsize):
        return None
    return tuple(s // x.itemsize for s in x.strides)


def empty_strided(like, strides, dtype=None):
    """An uninitialised array of ``like``'s shape (and dtype unless told) on its device, with
    the element ``strides`` of a dense layout (torch's empty_strided)."""
    xp = get_xp(like)
    dtype = like.dtype if dtype is None else xp.dtype(dtype)
    flat = xp.empty(like.size, dtype)
    return strided_view(flat, like.shape, tuple(s * dtype.itemsize for s in strides),
                        data_address(flat))


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
    TensorIterator lays out its result (see iterator_strides); copied only when its strides
    differ from those."""
    if out.size == 0:
        return out
    return _laid_out(out, iterator_strides(out.shape, out.itemsize, inputs))


def iterator_strides(shape, itemsize, inputs):
    """The byte strides torch's TensorIterator gives a result of ``shape`` of ``inputs``
    (arrays, or numbers). Inputs all of that shape (no number, nothing broadcast) that are
    contiguous give the C order, that are dense with equal strides give those very strides;
    otherwise dimensions are sorted by the inputs' strides, the first input deciding where
    they disagree (NumPy's order 'K' gives up on disagreement and takes the C order), a
    dimension of one element placed by its stride too (NumPy puts those anywhere)."""
    if all(getattr(x, "shape", None) == shape for x in inputs):
        if all(x.flags.c_contiguous for x in inputs):
            return contiguous_strides(shape, itemsize)
        channels_last = _CHANNELS_LAST_OF_RANK.get(len(shape))
        if channels_last and all(is_in_format(shape, [s // x.itemsize for s in x.strides],
                                              channels_last) for x in inputs):
            return _strides_in_order(shape, itemsize, _CHANNELS_LAST[channels_last][1])
        first = inputs[0]
        if is_dense(first) and all(x.strides == first.strides and x.itemsize == first.itemsize
                                   for x in inputs[1:]):
            return tuple(s // first.itemsize * itemsize for s in first.strides)
    ndim = len(shape)
    operands, canonical = [], True
    for x in inputs:
        if getattr(x, "ndim", 0) < 2:  # (one dimension alone never decides an order)
            continue
        canonical = canonical and x.flags.c_contiguous and (
            1 not in x.shape or x.strides == contiguous_strides(x.shape, x.itemsize))
        lead = ndim - x.ndim  # (broadcast dimensions get stride 0, as torch's operands do)
        operands.append((0,) * lead + tuple(0 if n == 1 and m != 1 else s for n, m, s in
                                            zip(x.shape, shape[lead:], x.strides)))
    if not operands or canonical:  # (then the sort leaves the C order)
        return contiguous_strides(shape, itemsize)
    return _strides_in_order(shape, itemsize, insertion_sorted(
        range(ndim - 1, -1, -1), lambda a, b: _iterator_compare(shape, operands, a, b)))


def _strides_in_order(shape, itemsize, order):
    """The byte strides of a dense layout of ``shape`` in innermost-first ``order``."""
    strides, step = [0] * len(shape), itemsize
    for d in order:
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def _laid_out(out, strides):
    """``out``, or a copy of it with byte ``strides`` (of a dense layout) where its own
    differ."""
    if strides == out.strides:
        return out
    copy = empty_strided(out, tuple(s // out.itemsize for s in strides))
    copy[...] = out
    return copy


def preserving_layout(out, x):
    """``out``, a fresh result of ``x``'s shape, laid out as torch's ``empty_like(x)``."""
    if x.ndim < 2 or (x.flags.c_contiguous and 1 not in x.shape):
        return out
    strides = kept_strides(x)
    if strides is not None:
        copy = empty_strided(out, strides)
    else:
        copy = empty_in_order(out, format_order(x))
    if copy.strides == out.strides:
        return out
    copy[...] = out
    return copy


# torch's CPU elementwise loops (cpu_kernel_vec): each inner row of the iteration runs its
# vectorized loop over whole steps of _VECTOR_STEP elements and its scalar loop over the rest;
# rows of strided operands run the scalar loop whole. The step, 2 * Vectorized<Half>::size()
# of torch 2.13's CPU build, was measured element by element (float16 add with alpha).
_VECTOR_STEP = 32
_GRAIN_SIZE = 32768  # torch's at::internal::GRAIN_SIZE: smaller iterations run on one thread


def scalar_loop_mask(shape, inputs, threads):
    """A boolean array of ``shape``: the elements torch's CPU elementwise kernel over
    ``inputs`` (arrays of one dtype, or numbers) computes in its scalar loop rather than its
    vectorized one, as its TensorIterator lays the iteration out: the dimensions sorted by the
    inputs' strides and coalesced where every operand (the result too) steps through them as
    one, the iteration split among ``threads`` threads (one range each) where it has
    ``_GRAIN_SIZE`` elements or more, each range's rows running one loop each."""
    numel = int(np.prod(shape, dtype=np.int64))
    ndim = len(shape)
    operands = []
    for x in inputs:  # element strides, 0 where broadcast (a number: 0 everywhere)
        xs = getattr(x, "shape", ())
        lead = ndim - len(xs)
        operands.append((0,) * lead + tuple(
            0 if n == 1 else s // x.itemsize
            for n, s in zip(xs, getattr(x, "strides", ()))))
    order = insertion_sorted(range(ndim - 1, -1, -1),
                             lambda a, b: _iterator_compare(shape, operands, a, b))
    arrays = [x for x in inputs if getattr(x, "ndim", 0)]
    itemsize = arrays[0].itemsize if arrays else 1
    out = tuple(s // itemsize for s in iterator_strides(tuple(shape), itemsize, inputs))
    sizes, strides = _coalesced(shape, [out] + operands, order)
    row = sizes[0] if sizes else 1
    inner = [s[0] if s else 0 for s in strides]
    vectorized = all(s == 1 for s in inner) or (
        inner[0] == 1 and sum(s == 0 for s in inner[1:]) == 1
        and all(s in (0, 1) for s in inner[1:]))
    i = np.arange(numel, dtype=np.int64)
    if vectorized:
        start = (i // row) * row
        end = start + row
        if numel >= _GRAIN_SIZE and threads > 1:
            chunk = -(-numel // min(threads, -(-numel // _GRAIN_SIZE)))
            start = np.maximum(start, (i // chunk) * chunk)
            end = np.minimum(end, (i // chunk + 1) * chunk)
        length = end - start
        in_tail = (i - start) >= length - length % _VECTOR_STEP
    else:
        in_tail = np.ones(numel, bool)
    # each element's place in the iteration: its index along the sorted dimensions
    place = np.zeros(shape, np.int64)
    step = 1
    for d in order:
        index = np.arange(shape[d], dtype=np.int64).reshape(
            (-1,) + (1,) * (ndim - 1 - d)) * step
        place = place + index
        step *= shape[d]
    return in_tail[place]


def _coalesced(shape, operands, order):
    """torch's coalesce_dimensions over the dimensions in ``order`` (innermost first): the
    sizes and each operand's strides of the dimensions left, innermost first."""
    sizes = [shape[d] for d in order]
    strides = [[s[d] for d in order] for s in operands]
    if not sizes:
        return sizes, strides
    prev = 0
    for dim in range(1, len(sizes)):
        if sizes[prev] == 1 or sizes[dim] == 1 or all(
                sizes[prev] * s[prev] == s[dim] for s in strides):
            if sizes[prev] == 1:
                for s in strides:
                    s[prev] = s[dim]
            sizes[prev] *= sizes[dim]
        else:
            prev += 1
            if prev != dim:
                for s in strides:
                    s[prev] = s[dim]
                sizes[prev] = sizes[dim]
    return sizes[:prev + 1], [s[:prev + 1] for s in strides]
