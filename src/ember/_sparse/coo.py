"""CooArray: the raw array of a sparse COO tensor, and the kernels on it.

Like torch's COO layout it holds ``indices`` (int64, ``(sparse_dim, nnz)``) and ``values``
(``(nnz, *dense_shape)``), the full ``shape`` and whether the entries are coalesced (sorted by
position, no position twice). It answers what the engine and the registry ask of any array
(``dtype``, ``shape``, ``ndim``, ``astype``, ``copy``, ``+``); anything else a dense kernel
tries on it raises :class:`SparseOperand`, which the registry turns into the sparse op or
torch's "Could not run 'aten::...' with arguments from the 'SparseCPU' backend" error.

Sorting, merging and gathering are NumPy on the index arrays; the sparse x dense products are
SciPy's (an optional dependency, asked for only when such a product runs).
"""
from __future__ import annotations

import math

import numpy as np

from .._backend import KEPT_ARRAY_TYPES, get_xp


class SparseOperand(TypeError, AttributeError):
    """A dense kernel met a sparse operand. A TypeError, so that the registry's generated
    callers hand the call to the sparse route; an AttributeError, so that ``hasattr`` and
    ``getattr`` with a default still answer "no" for attributes a CooArray lacks."""


class CooArray:
    __slots__ = ("indices", "values", "shape", "coalesced", "__weakref__")
    is_sparse = True
    base = None  # (never a view of another array: the engine may sum into it in place)

    def __init__(self, indices, values, shape, coalesced=False):
        self.indices = indices
        self.values = values
        self.shape = tuple(shape)
        self.coalesced = coalesced

    # -- what every array answers --------------------------------------------------------------
    @property
    def dtype(self):
        return self.values.dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def itemsize(self):
        return self.values.itemsize

    @property
    def sparse_dim(self):
        return self.indices.shape[0]

    @property
    def dense_dim(self):
        return self.values.ndim - 1

    @property
    def nnz(self):
        return self.indices.shape[1]

    def astype(self, dtype, copy=True):
        return CooArray(self.indices, self.values.astype(dtype, copy=copy), self.shape,
                        self.coalesced)

    def copy(self):
        return CooArray(self.indices.copy(), self.values.copy(), self.shape, self.coalesced)

    def __add__(self, other):  # the engine summing two gradients of one sparse input
        if type(other) is CooArray:
            return add(self, other)
        raise SparseOperand("a sparse gradient met a dense one")

    __radd__ = __add__

    def __iadd__(self, other):  # the engine summing into a gradient it owns
        total = self + other
        self.indices, self.values, self.coalesced = total.indices, total.values, total.coalesced
        return self

    # A dense node's formula run on a sparse gradient (an embedding's sparse gradient into a
    # weight computed by mul, div, neg, exp): torch's sparse mul by a number or by a dense
    # tensor of its shape keeps the sparse entries, and so does its division by a number.
    # Only inside a backward pass: a forward op's dense kernel must still refuse a sparse
    # operand, so that the registry takes the op's sparse route (its own kernels and node).
    def __mul__(self, other):
        _only_in_formulas()
        if _is_number(other):
            return CooArray(self.indices, self.values * other, self.shape, self.coalesced)
        if type(other) is CooArray and other.shape == self.shape:
            return times_at_entries(self, other)
        shape = getattr(other, "shape", None)
        if type(other) is not CooArray and shape is not None and len(shape) <= self.ndim:
            return times_at_entries(self, get_xp(other).broadcast_to(other, self.shape))
        raise SparseOperand("a sparse gradient met a dense one")

    __rmul__ = __mul__

    def __truediv__(self, other):
        _only_in_formulas()
        if _is_number(other):
            return CooArray(self.indices, self.values / other, self.shape, self.coalesced)
        raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor "
                           f"(got shape {list(getattr(other, 'shape', ()))} for divisor)")

    def __neg__(self):
        _only_in_formulas()
        return CooArray(self.indices, -self.values, self.shape, self.coalesced)

    # -- everything else is a dense kernel that has no business here ----------------------------
    def __getattr__(self, name):
        raise SparseOperand(f"sparse array has no attribute {name!r}")

    def __array_ufunc__(self, *args, **kwargs):
        raise SparseOperand("a dense kernel got a sparse operand")

    def __array_function__(self, *args, **kwargs):
        raise SparseOperand("a dense kernel got a sparse operand")

    def __array__(self, *args, **kwargs):
        raise SparseOperand("a dense kernel got a sparse operand")

    def __repr__(self):
        return f"CooArray(shape={self.shape}, nnz={self.nnz}, dtype={self.dtype})"


# torch sorts this many positions or more with a radix sort (stable), fewer with std::sort
_RADIX_SORTED = 32768


def _only_in_formulas():
    from ..autograd.engine import in_backward_pass  # (the engine imports this module)
    if not in_backward_pass():
        raise SparseOperand("a dense kernel met a sparse operand")


def _is_number(x):
    """A Python number, a NumPy scalar or a 0-d array: what scales every entry alike."""
    return isinstance(x, (int, float, complex, np.generic)) or getattr(x, "ndim", None) == 0


def _keys(indices, shape):
    """Each entry's position in row-major order over the sparse dimensions."""
    xp = get_xp(indices)
    if indices.shape[1] == 0:
        return xp.zeros(0, dtype=np.int64)
    return xp.ravel_multi_index(tuple(indices), shape[:indices.shape[0]])


def _unkeys(keys, shape, sparse_dim):
    xp = get_xp(keys)
    if keys.size == 0:
        return xp.zeros((sparse_dim, 0), dtype=np.int64)
    return xp.stack(xp.unravel_index(keys, shape[:sparse_dim])).astype(np.int64)


def coalesce(a: CooArray) -> CooArray:
    """Entries sorted by position, the values of a repeated position summed (torch's
    coalesce; an already coalesced array is returned as it is)."""
    if a.coalesced:
        return a
    xp = get_xp(a.values)
    keys = _keys(a.indices, a.shape)
    if xp is not np or keys.size == 0:
        unique, inverse = xp.unique(keys, return_inverse=True)
        values = xp.zeros((unique.size,) + a.values.shape[1:], dtype=a.values.dtype)
        xp.add.at(values, inverse, a.values)
        return CooArray(_unkeys(unique, a.shape, a.sparse_dim), values, a.shape, True)
    # torch's order: its positions sorted by std::sort (not stable: the order of a repeated
    # position's values follows its steps; a radix sort from _RADIX_SORTED on), each first
    # value copied and the others added to it one by one, so sums of repeats agree to the
    # last bit
    from .._ops._stl_order import std_sort
    order = (std_sort(keys, "asc") if keys.size < _RADIX_SORTED
             else np.argsort(keys, kind="stable"))
    keys, ordered = keys[order], a.values[order]
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    values = ordered[first]  # (a copy: fancy indexing)
    np.add.at(values, np.cumsum(first)[~first] - 1, ordered[~first])
    return CooArray(_unkeys(keys[first], a.shape, a.sparse_dim), values, a.shape, True)


def to_dense(a: CooArray):
    xp = get_xp(a.values)
    out = xp.zeros(a.shape, dtype=a.values.dtype)
    if a.coalesced:
        out[tuple(a.indices)] = a.values
    else:
        xp.add.at(out, tuple(a.indices), a.values)
    return out


def add_into_dense(dense, a: CooArray):
    """``dense += a`` in place (each entry summed into its position, repeats each time)."""
    get_xp(dense).add.at(dense, tuple(a.indices), a.values.astype(dense.dtype, copy=False))
    return dense


def from_dense(x, sparse_dim=None) -> CooArray:
    """The nonzero entries of a dense array (torch's to_sparse: row-major, coalesced)."""
    xp = get_xp(x)
    sparse_dim = x.ndim if sparse_dim is None else sparse_dim
    lead = x.reshape(x.shape[:sparse_dim] + (-1,)) if sparse_dim < x.ndim else x[..., None]
    where = xp.nonzero(xp.any(lead != 0, axis=-1))
    indices = xp.stack(where).astype(np.int64) if where else xp.zeros((0, 1), dtype=np.int64)
    if sparse_dim == 0:  # a 0-dim sparse part: one entry holding the whole tensor
        return CooArray(xp.zeros((0, 1), dtype=np.int64), x[None].copy(), x.shape, True)
    return CooArray(indices, x[where], x.shape, True)


def mask(dense, pattern: CooArray) -> CooArray:
    """``dense`` (or a sparse array) at each of ``pattern``'s entries, in their order (torch's
    sparse_mask: a position repeated in ``pattern`` is repeated in the result, which is
    coalesced when ``pattern`` is)."""
    return CooArray(pattern.indices, lookup(dense, pattern.indices), pattern.shape,
                    pattern.coalesced)


def lookup(a: CooArray, indices):
    """The values of ``a`` (or of a dense array) at each column of ``indices`` (zero where
    ``a`` has no entry; every copy of a repeated index gets the same value)."""
    if type(a) is not CooArray:
        return a[tuple(indices)]
    a = coalesce(a)
    xp = get_xp(a.values)
    have, want = _keys(a.indices, a.shape), _keys(indices, a.shape)
    out = xp.zeros((want.size,) + a.values.shape[1:], dtype=a.values.dtype)
    if have.size:
        at = xp.minimum(xp.searchsorted(have, want), have.size - 1)
        found = have[at] == want
        out[found] = a.values[at[found]]
    return out


def add(a: CooArray, b: CooArray, alpha=1) -> CooArray:
    """``a + alpha * b`` as torch's CPU kernel merges them: one walk over both entry lists
    in their stored order, summing an entry of ``b`` into the current one of ``a`` at the
    same position; the result is coalesced when both are."""
    bv = b.values if alpha == 1 else b.values * alpha
    if a.coalesced and b.coalesced:
        return _merge_sorted(a, b, bv)
    ka, kb = _keys(a.indices, a.shape).tolist(), _keys(b.indices, b.shape).tolist()
    keys, parts = [], []
    i = j = 0
    while i < len(ka) or j < len(kb):  # NOTE: the walk of uncoalesced inputs has no
        if j == len(kb) or (i < len(ka) and ka[i] < kb[j]):  # vectorised form
            keys.append(ka[i])
            parts.append(a.values[i])
            i += 1
        elif i == len(ka) or kb[j] < ka[i]:
            keys.append(kb[j])
            parts.append(bv[j])
            j += 1
        else:
            keys.append(ka[i])
            parts.append(a.values[i] + bv[j])
            i += 1
            j += 1
    xp = get_xp(a.values)
    values = (xp.stack(parts) if parts else xp.zeros((0,) + a.values.shape[1:], a.dtype))
    return CooArray(_unkeys(xp.asarray(keys, dtype=np.int64), a.shape, a.sparse_dim),
                    values.astype(a.dtype), a.shape, False)


def _merge_sorted(a, b, bv):
    xp = get_xp(a.values)
    both = CooArray(xp.concatenate([a.indices, b.indices], axis=1),
                    xp.concatenate([a.values, bv.astype(a.dtype)]), a.shape)
    return coalesce(both)


def transpose(a: CooArray, d0, d1) -> CooArray:
    indices = a.indices.copy()
    indices[[d0, d1]] = indices[[d1, d0]]
    shape = list(a.shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    return CooArray(indices, a.values, shape, False)


def scale(a: CooArray, factor) -> CooArray:
    return CooArray(a.indices, (a.values * factor).astype(a.dtype), a.shape, a.coalesced)


def times_at_entries(a: CooArray, other) -> CooArray:
    """``a`` times ``other`` (dense, or sparse) where ``a`` has entries: ``a``'s pattern."""
    factor = lookup(other, a.indices)
    return CooArray(a.indices, (a.values * factor).astype(a.dtype), a.shape, a.coalesced)


def map_values(a: CooArray, fn) -> CooArray:
    """``fn`` of each coalesced value: a zero-preserving elementwise op (abs, relu)."""
    a = coalesce(a)
    return CooArray(a.indices, fn(a.values), a.shape, True)


def times_slope(grad, a: CooArray, slope) -> CooArray:
    """``grad`` (on ``a``'s coalesced pattern) times ``slope`` of ``a``'s values there."""
    a = coalesce(a)
    g = lookup(grad, a.indices)
    return CooArray(a.indices, (g * slope(a.values)).astype(g.dtype), a.shape, True)


def divide(a: CooArray, divisor) -> CooArray:
    return CooArray(a.indices, (a.values / divisor).astype(a.dtype), a.shape, a.coalesced)


def sum_dims(a: CooArray, dims) -> CooArray | object:
    """The sum over ``dims``: sparse while sparse dimensions remain, else dense."""
    sparse = [d for d in dims if d < a.sparse_dim]
    dense = tuple(d - a.sparse_dim + 1 for d in dims if d >= a.sparse_dim)
    values = a.values.sum(axis=dense) if dense else a.values
    keep = [d for d in range(a.sparse_dim) if d not in sparse]
    shape = [n for d, n in enumerate(a.shape) if d not in dims]
    if not keep:  # (the values as stored, added in torch's order where it can be)
        from .._ops.reduction import sum_whole
        return sum_whole(values, None) if values.ndim == 1 else values.sum(axis=0)
    return coalesce(CooArray(a.indices[keep], values, shape))


def _scipy_matrix(a: CooArray):
    try:
        import scipy.sparse as sp
    except ImportError:
        raise ModuleNotFoundError("ember's sparse matrix products use SciPy, which is not "
                                  "installed: pip install scipy (or ember[scipy])") from None
    return sp.csr_array((a.values, (a.indices[0], a.indices[1])), shape=a.shape)


def mm(a: CooArray, dense):
    """sparse (n, k) @ dense (k, m), dense (n, m)."""
    out = _scipy_matrix(a) @ dense
    return np.ascontiguousarray(out, dtype=a.dtype)


def mm_dense_sparse(dense, b: CooArray):
    """dense (n, k) @ sparse (k, m), dense (n, m)."""
    out = (_scipy_matrix(transpose(b, 0, 1)) @ dense.T).T
    return np.ascontiguousarray(out, dtype=b.dtype)


KEPT_ARRAY_TYPES.add(CooArray)


def _line_ids(a: CooArray, dim):
    """For each entry of coalesced ``a``, which line along sparse dimension ``dim`` it is on
    (the entries that share every other sparse index), numbered from 0."""
    xp = get_xp(a.indices)
    others = [d for d in range(a.sparse_dim) if d != dim]
    if not others:
        return xp.zeros(a.indices.shape[1], dtype=np.int64), 1
    keys = _keys(a.indices[others], tuple(a.shape[d] for d in others))
    unique, ids = xp.unique(keys, return_inverse=True)
    return ids.reshape(-1), unique.size


def _line_sum(values, ids, lines):
    xp = get_xp(values)
    out = xp.zeros((lines,) + values.shape[1:], dtype=values.dtype)
    xp.add.at(out, ids, values)
    return out[ids]


def softmax(a: CooArray, dim, log=False) -> CooArray:
    """torch.sparse.softmax (``log``: log_softmax) of ``a`` along ``dim``: over the specified
    entries of each line only, as if the others were -inf; coalesced."""
    a = coalesce(a)
    xp = get_xp(a.values)
    v = a.values
    if dim >= a.sparse_dim:  # (a dense dimension: every line is whole)
        axis = dim - a.sparse_dim + 1
        shifted = v - (v.max(axis=axis, keepdims=True) if v.size else 0)
        total = xp.exp(shifted).sum(axis=axis, keepdims=True)
    else:
        ids, lines = _line_ids(a, dim)
        peak = xp.full((lines,) + v.shape[1:], -np.inf, dtype=v.dtype)
        xp.maximum.at(peak, ids, v)
        shifted = v - peak[ids]
        total = _line_sum(xp.exp(shifted), ids, lines)
    values = shifted - xp.log(total) if log else xp.exp(shifted) / total
    return CooArray(a.indices, values.astype(v.dtype), a.shape, True)


def softmax_backward(grad, out: CooArray, dim, log=False):
    """The gradient of (log_)softmax's input values, from ``grad`` (dense or sparse) at the
    result's entries: ``y * (g - sum(g * y))`` per line, or ``g - exp(y) * sum(g)``."""
    xp = get_xp(out.values)
    g = lookup(grad, out.indices)
    y = out.values
    if dim >= out.sparse_dim:
        axis = dim - out.sparse_dim + 1
        total = (g if log else g * y).sum(axis=axis, keepdims=True)
    else:
        ids, lines = _line_ids(out, dim)
        total = _line_sum(g if log else g * y, ids, lines)
    values = g - xp.exp(y) * total if log else y * (g - total)
    return CooArray(out.indices, values.astype(y.dtype), out.shape, True)
