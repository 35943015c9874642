"""The order in which torch's CPU kernel adds up a whole float tensor, so that sums agree to
the last bit.

torch's ``cascade_sum`` adds a contiguous float32 (float64) tensor of at least 8 (4) elements
as vectors of that many lanes: the vectors go round four accumulators, each accumulating in
blocks of 16 vectors whose sums accumulate in groups of 16; the four are added in order, then
the elements past the last whole vector are added up, then the lanes one by one. Fewer
elements go round four scalar accumulators. NumPy's pairwise sum rounds differently in about
a third of the sums of even 5 or 10 float32 numbers (a loss averaged over ten batches).

A sum over a contiguous tensor's last dimensions (``x.sum(-1)``, a ``mean(dim=-1)`` in a
hand-written layer norm) is torch's inner reduction: each row is added in that same order.

Beyond torch's grain size (32768 elements) torch splits the sum between its threads, so the
order depends on their number: such sums, and any that is not of a contiguous float32 or
float64 array on x86, keep NumPy's order.
"""
from __future__ import annotations

import numpy as np

from .._cpu_capability import is_x86

_GRAIN_SIZE = 32768  # torch's at::internal::GRAIN_SIZE: larger sums run on several threads
_LANES = {np.dtype(np.float32): 8, np.dtype(np.float64): 4}  # a 32-byte Vectorized<T>
_ACCUMULATORS = 4  # the ILP factor of torch's row_sum
_LEVEL_STEP = 16  # multi_row_sum's block: 1 << max(4, log2(rows) // 4), 16 below 2**20 rows


def follows_torch(x) -> bool:
    """Whether ``x``'s whole sum can be added in torch's order here."""
    return (type(x) is np.ndarray and x.dtype in _LANES and 0 < x.size <= _GRAIN_SIZE
            and x.flags.c_contiguous and is_x86())


def follows_torch_rows(x, rows) -> bool:
    """Whether the sums of ``x``'s ``rows`` rows (``x`` as a (rows, -1) matrix, two or more
    rows of one or more numbers) can be added in torch's order here."""
    return (type(x) is np.ndarray and x.dtype in _LANES and 1 < rows < x.size <= _GRAIN_SIZE
            and x.flags.c_contiguous and is_x86())


def _in_order(rows):
    """``rows[0] + rows[1] + ...`` (along axis 0, rows of two or more numbers) rounded after
    each addition, zeros for no rows: NumPy reduces an outer axis one row after another."""
    return np.add.reduce(rows, axis=0)


def _scalars_in_order(numbers, dtype):
    """``0 + numbers[0] + numbers[1] + ...`` rounded to ``dtype`` after each addition (NumPy's
    sum of a 1-d array is pairwise from 8 numbers on)."""
    total = dtype.type(0)
    for number in numbers:
        total = total + number
    return total


def _blocks_in_order(rows, step):
    """Rows (n, ...) summed in order within each whole block of ``step`` rows."""
    whole = rows.shape[0] // step
    return _in_order(rows[:whole * step].reshape((whole, step) + rows.shape[1:]).swapaxes(0, 1))


def _cascade(rows):
    """torch's multi_row_sum of ``rows`` (n, 4, lanes): blocks of 16 rows summed in order,
    each block's sum added to a running sum flushed into a third one every 16 blocks; the
    rows past the last block, then the two running sums, added last. (A fourth level starts
    at 4096 rows, more than the grain size allows.)"""
    if rows.shape[0] < _LEVEL_STEP:
        return _in_order(rows)
    blocks = _blocks_in_order(rows, _LEVEL_STEP)
    groups = _blocks_in_order(blocks, _LEVEL_STEP)
    level2 = _in_order(groups)
    level1 = _in_order(blocks[groups.shape[0] * _LEVEL_STEP:])
    level0 = _in_order(rows[blocks.shape[0] * _LEVEL_STEP:])
    return (level0 + level1) + level2


def _row_sum(items):
    """torch's row_sum: ``items`` (n, lanes) round four accumulators, the leftovers into the
    first, then the four added in order."""
    whole = items.shape[0] // _ACCUMULATORS
    if not whole:  # the leftovers in the first accumulator, the others still zero
        return _in_order(items)
    acc = _cascade(items[:whole * _ACCUMULATORS].reshape(
        (whole, _ACCUMULATORS) + items.shape[1:]))
    return _in_order(np.concatenate((acc[:1], items[whole * _ACCUMULATORS:], acc[1:])))


def torch_order_sum(x):
    """The sum of all of ``x`` (see :func:`follows_torch`) as torch's CPU kernel adds it, as
    a 0-d array."""
    flat = x.reshape(-1)
    lanes = _LANES[flat.dtype]
    if flat.size < lanes:
        # four scalar accumulators: the first takes elements 0 and 4 on, the others 1, 2, 3
        order = flat if flat.size <= _ACCUMULATORS else np.concatenate(
            (flat[:1], flat[_ACCUMULATORS:], flat[1:_ACCUMULATORS]))
        return np.asarray(_scalars_in_order(order.tolist(), flat.dtype))
    whole = flat.size // lanes
    vector = _row_sum(flat[:whole * lanes].reshape(whole, lanes))
    tail_then_lanes = np.concatenate((flat[whole * lanes:], vector)).tolist()
    return np.asarray(_scalars_in_order(tail_then_lanes, flat.dtype))


def torch_order_row_sums(x, rows):
    """The sums of ``x``'s ``rows`` rows (see :func:`follows_torch_rows`), each added as
    torch's inner reduction adds a row: :func:`torch_order_sum`'s order, row by row. Returns
    an array of ``rows`` sums."""
    n = x.size // rows
    # the rows' items along the leading axis, the rows along the last one, in memory order:
    # NumPy then reduces the leading axis one item after another, for all rows at once
    items = np.ascontiguousarray(x.reshape(rows, n).T)
    lanes = _LANES[items.dtype]
    if n < lanes:
        # four scalar accumulators, as for a whole sum of so few elements
        order = items if n <= _ACCUMULATORS else np.concatenate(
            (items[:1], items[_ACCUMULATORS:], items[1:_ACCUMULATORS]))
        return np.add.reduce(order, axis=0, initial=0)
    whole = n // lanes
    vector = _row_sum(items[:whole * lanes].reshape(whole, lanes, rows))
    return np.add.reduce(np.concatenate((items[whole * lanes:], vector)), axis=0, initial=0)
