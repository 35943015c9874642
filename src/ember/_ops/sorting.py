"""Sorting and order statistics: sort, argsort, topk, kthvalue, median, nanmedian, mode.

Every index-returning op's gradient scatters ``grad`` to the positions it selected
(``value_selecting_backward``); median() over all elements shares it among ties.
"""
from __future__ import annotations

__all__ = ['argsort', 'kthvalue', 'median', 'mode', 'msort', 'nanmedian', 'sort', 'topk']

import functools

import numpy as np

from .._backend import accumulate, get_xp
from .._backend.layout import preserving_layout
from .._tensor import Tensor, _wrap_dim
from . import _stl_order
from .pointwise import no_kernel, refuse
from .reduction import (
    _check_nonempty,
    contiguous_result,
    _dtype_name,
    _evenly_distribute,
    _evenly_read,
    _reshaped_writes,
    return_type,
    value_selecting_backward,
)
from .registry import NONE, op

SortResult = return_type("sort")
TopkResult = return_type("topk")
KthvalueResult = return_type("kthvalue")
MedianResult = return_type("median")
NanmedianResult = return_type("nanmedian")
ModeResult = return_type("mode")


def _order(x, d, descending=False):
    """Stable sorting indices along ``d``; NaN sorts above everything (last, or first when
    descending), and equal elements keep their order either way, as torch's CPU sort."""
    xp = get_xp(x)
    if not descending:
        return xp.argsort(x, axis=d, kind="stable")
    # NOTE: sorting the reversed input ascending and reversing back keeps ties in order.
    idx = xp.argsort(xp.flip(x, d), axis=d, kind="stable")
    return x.shape[d] - 1 - xp.flip(idx, d)


def _rows(x, d):
    """``x`` with dim ``d`` last, as (rows, n), and how to put an (rows, m) result back."""
    moved = np.moveaxis(x, d, -1)
    lead = moved.shape[:-1]

    def back(rows):
        return np.moveaxis(rows.reshape(lead + rows.shape[-1:]), -1, d)
    return moved.reshape(-1, moved.shape[-1]), back


def _tied(sorted_rows, upto=None):
    """Rows whose sorted values (ascending or descending) hold two equal neighbours among the
    ``upto`` + 1 first (NaNs count as equal to each other)."""
    s = sorted_rows if upto is None else sorted_rows[:, :upto + 1]
    same = s[:, 1:] == s[:, :-1]
    if s.dtype.kind in "fc":
        nan = np.isnan(s)
        same |= nan[:, 1:] & nan[:, :-1]
    return np.flatnonzero(same.any(axis=1))


def _torch_order(x, d, descending=False):
    """The indices torch's sort (not stable) gives along ``d``: a stable sort, except on rows
    with equal elements, where torch's std::sort is replayed (see _stl_order)."""
    order = _order(x, d, descending)
    n = x.shape[d]
    radix = x.ndim == 1 and x.dtype.kind in "iu" and not descending and n >= 32768
    if n <= _stl_order.THRESHOLD or radix or get_xp(x) is not np:  # (insertion sort, or
        return order  # torch's radix sort: stable)
    rows, back = _rows(x, d)
    orders, _ = _rows(order, d)
    tied = _tied(np.take_along_axis(rows, orders, axis=1))
    if tied.size:
        orders = orders.copy()
        kind = "desc" if descending else "asc"
        for r in tied:
            orders[r] = _stl_order.std_sort(rows[r], kind)
        order = back(orders)
    return order


def _zero_dim(self, dim):
    _wrap_dim(dim, 0)
    return self.copy(), get_xp(self).zeros((), np.int64)


def _pick(x, idx, d, keepdim):
    """(values, indices) at ``idx`` (kept dims) along ``d``."""
    xp = get_xp(x)
    values = xp.take_along_axis(x, idx, axis=d)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return values, idx.astype(np.int64, copy=False)


def _select_back(grads, self_shape, dim, keepdim, result1):
    return value_selecting_backward(grads[0], result1, dim, self_shape, keepdim)


def _sorted_back(grads, self_shape, dim, result1):
    return value_selecting_backward(grads[0], result1, dim, self_shape, True)


# -- sort / argsort / msort ----------------------------------------------------------------------
def _sort_kernel(self, dim=-1, descending=False):
    if self.ndim == 0:
        return _zero_dim(self, dim)
    d = _wrap_dim(dim, self.ndim)
    return _pick(self, _torch_order(self, d, descending), d, True)


def _stable_sort_kernel(self, dim=-1, descending=False):
    if self.ndim == 0:
        return _zero_dim(self, dim)
    d = _wrap_dim(dim, self.ndim)
    return _pick(self, _order(self, d, descending), d, True)


def _in_input_layout(kernel):
    """``kernel`` with results laid out as its input (its very strides where it is dense,
    else dense ones in its order: torch's empty_like): torch's sort allocates its values and
    indices so (and argsort and msort are sort)."""
    @functools.wraps(kernel)
    def laid_out(self, *args, **kwargs):
        out = kernel(self, *args, **kwargs)
        if type(out) is not tuple:
            return preserving_layout(out, self)
        return tuple(preserving_layout(o, self) for o in out)
    return laid_out


_NO_COMPLEX_SORT = refuse("c", lambda t: RuntimeError(" Sort does not support complex dtypes on "
                                                     "CPU"))
_sort = op("sort", promote=NONE, node="SortBackward0", outputs=2, diff_outputs=(True, False),
           result_type=SortResult, check=_NO_COMPLEX_SORT, writes=1)(
    _in_input_layout(_sort_kernel))
_sort_stable = op("sort", promote=NONE, node="SortBackward1", outputs=2,
                  diff_outputs=(True, False), result_type=SortResult,
                  check=_NO_COMPLEX_SORT, writes=1)(_in_input_layout(_stable_sort_kernel))
_sort.grad("self", writes=2)(_sorted_back)
_sort_stable.grad("self", writes=2)(_sorted_back)


# torch's two overloads of sort and argsort: ``(input, dim=-1, descending=False)`` and
# ``(input, *, stable, dim=-1, descending=False)``; a call that fits neither is a TypeError.
_UNSET = object()
_OUT_LINE = {"sort": "tuple of Tensors out = None", "argsort": "Tensor out = None"}


def _type_word(value):
    return "Tensor" if isinstance(value, Tensor) else type(value).__name__


def _refuse_overloads(name, method, positional, named, detail):
    """torch's TypeError for a sort/argsort call no overload takes: ``positional`` without
    the input for a method, ``named`` the keywords given (torch lists them last given
    first); ``detail``: the keywords torch names as why the second overload did not match."""
    got = [_type_word(v) for v in positional] + [
        f"{k}={_type_word(v)}" for k, v in reversed(named.items())]
    given = "Tensor input, " if not method else ""
    outs = ("", "") if method else (f", {_OUT_LINE[name]}", ", *, tuple of Tensors out = None"
                                    if name == "sort" else "")
    lines = [f"{name}() received an invalid combination of arguments - got ({', '.join(got)}), "
             "but expected one of:",
             f" * ({given}*, bool stable, int dim = -1, bool descending = False{outs[0]})",
             f" * ({given}int dim = -1, bool descending = False{outs[1]})"]
    if detail:
        lines.append("      didn't match because some of the keywords were incorrect: "
                     + ", ".join(detail))
    return TypeError("\n".join(lines) + "\n")


def _too_many(name, method, count):
    first = 0 if method else 1  # (the stable overload's one positional argument: input)
    return TypeError(f"{name}() takes from {first + 1} to {first} positional arguments but "
                     f"{count} were given")


def _sort_arguments(name, method, input, positional, stable, dim, descending):
    """``(dim, descending, stable)`` of a sort/argsort call (``stable`` None when not given),
    refused as torch's argument parser refuses it: ``stable`` takes the other two as keywords
    only, and is a bool (sort's also None when nothing else is given)."""
    # (torch lists the keywords last given first: this order reads a stable given last right)
    named = {k: v for k, v in (("descending", descending), ("dim", dim), ("stable", stable))
             if v is not _UNSET}
    shown = positional if method else (input, *positional)
    listed = not method and name == "sort"  # (where torch's parser lists the overloads, not
    if len(positional) > 2 + listed or (stable is not _UNSET and len(positional) > 1 + listed):
        raise _too_many(name, method, len(shown))  # 'takes ... positional arguments')
    if len(positional) == 3:
        raise _refuse_overloads(name, method, shown, named, ())
    # keywords the positional overload cannot take besides what was given by position
    taken = ("dim", "descending")[:len(positional)]
    incorrect = [k for k in reversed(named) if k in taken or k == "stable" and positional]
    if incorrect or stable is not _UNSET and not (
            isinstance(stable, bool) or stable is None and name == "sort"):
        raise _refuse_overloads(name, method, shown, named,
                                incorrect if method or name == "argsort" else ())
    values = list(positional) + [named.get(k, d) for k, d in
                                 (("dim", -1), ("descending", False))][len(positional):]
    return values[0], values[1], None if stable is _UNSET else stable


def sort(input, *dim_descending, stable=_UNSET, dim=_UNSET, descending=_UNSET, out=None):
    """(values, indices) of ``input`` sorted along ``dim`` (ties keep their order)."""
    return _sorted(input, False, dim_descending, stable, dim, descending)


def _sorted(input, method, positional, stable, dim, descending):
    dim, descending, stable = _sort_arguments("sort", method, input, positional, stable, dim,
                                              descending)
    if stable is not None:
        return _sort_stable(input, dim, descending)
    return _sort(input, dim, descending)


@op("argsort", promote=NONE, differentiable=False, writes=1)
@_in_input_layout
def _argsort(self, dim=-1, descending=False, stable=False):
    if self.ndim == 0:
        return _zero_dim(self, dim)[1]
    order = _order if stable else _torch_order
    return order(self, _wrap_dim(dim, self.ndim), descending).astype(np.int64, copy=False)


def argsort(input, *dim_descending, stable=_UNSET, dim=_UNSET, descending=_UNSET):
    """The indices that sort ``input`` along ``dim``."""
    return _argsorted(input, False, dim_descending, stable, dim, descending)


def _argsorted(input, method, positional, stable, dim, descending):
    dim, descending, stable = _sort_arguments("argsort", method, input, positional, stable, dim,
                                              descending)
    return _argsort(input, dim, descending, bool(stable))


def msort(input, *, out=None):
    """``input`` sorted along its first dim."""
    return _sort(input, 0, False).values


# -- topk / kthvalue -----------------------------------------------------------------------------
@op("topk", promote=NONE, node="TopkBackward0", outputs=2, diff_outputs=(True, False),
    check=refuse("c", lambda t: RuntimeError(" topk does not support complex dtypes on CPU")),
    result_type=TopkResult,
    writes=lambda self, k, dim=-1, largest=True, sorted=True: int(self.ndim == 0))  # (copy_)
def _topk(self, k, dim=-1, largest=True, sorted=True):
    size = self.shape[_wrap_dim(dim, self.ndim)] if self.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    if self.ndim == 0:
        return _zero_dim(self, dim)
    d = _wrap_dim(dim, self.ndim)
    return _pick(self, _topk_indices(self, k, d, largest, sorted), d, True)


def _topk_indices(x, k, d, largest, sorted):
    """The k first of a stable sort, except where torch's selection (std::partial_sort or
    std::nth_element, see _stl_order) picks or orders them differently: rows with equal
    elements among the k + 1 first, and unsorted results of nth_element."""
    xp = get_xp(x)
    idx = xp.take(_order(x, d, largest), xp.arange(k), axis=d)
    n = x.shape[d]
    if k == 0 or xp is not np or n <= 3:
        return idx
    rows, back = _rows(x, d)
    full = _rows(_order(x, d, largest), d)[0]
    replay = _tied(np.take_along_axis(rows, full, axis=1), min(k, n - 1))
    if not sorted and k * 64 > n and k > 1:
        replay = np.arange(rows.shape[0])  # (nth_element leaves its own order)
    if replay.size:
        picked = _rows(idx, d)[0].copy()
        for r in replay:
            picked[r] = _stl_order.std_topk(rows[r], k, largest, sorted)
        idx = back(picked)
    return idx


_topk.grad("self", writes=2)(_sorted_back)


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices."""
    return _topk(input, k, dim, largest, sorted)


@op("kthvalue", promote=NONE, node="KthvalueBackward0", outputs=2,
    check=refuse("c", no_kernel("kthvalue_cpu")),
    diff_outputs=(True, False), result_type=KthvalueResult, writes=1)
def _kthvalue(self, k, dim=-1, keepdim=False):
    d = _wrap_dim(dim, self.ndim)
    size = self.shape[d] if self.ndim else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if self.ndim == 0:
        return _zero_dim(self, dim)
    xp = get_xp(self)
    order = _order(self, d)
    idx = xp.take(order, [k - 1], axis=d)
    if xp is np and self.shape[d] > 2:
        # rows whose k-th value has an equal neighbour: torch's quickselect decides which
        rows, back = _rows(self, d)
        lo, hi = max(k - 2, 0), min(k, self.shape[d] - 1)
        window = np.take_along_axis(rows, _rows(order, d)[0][:, lo:hi + 1], axis=1)
        tied = _tied(window)
        if tied.size:
            picked = _rows(idx, d)[0].copy()
            for r in tied:
                picked[r, 0] = _stl_order.quick_select(rows[r], k - 1)
            idx = back(picked)
    return _pick(self, idx, d, keepdim)


_kthvalue.grad("self", writes=2)(_select_back)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The ``k``-th smallest element along ``dim`` and its index."""
    return _kthvalue(input, k, dim, keepdim)


# -- median / nanmedian --------------------------------------------------------------------------
def _check_median(x, name):
    if x.dtype == np.bool_:
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype_name(x)}\'')


def _median_all(x, ignore_nan):
    xp = get_xp(x)
    flat = x.reshape(-1)
    if x.dtype.kind in "fc":
        nan = xp.isnan(flat)
        if nan.any():  # (only then: a meta array has no NaNs to drop, and no count of them)
            if not ignore_nan:
                return xp.asarray(np.nan, x.dtype)
            flat = flat[~nan]
    if flat.size == 0:  # NaN (in an integer dtype: what the cast of NaN gives, as torch)
        with np.errstate(invalid="ignore"):
            return xp.asarray(np.nan).astype(x.dtype)
    # NOTE: the lower median (torch returns an element, never an average).
    k = (flat.size - 1) // 2
    return xp.partition(flat, k)[k]


def _median_dim(x, dim, keepdim, ignore_nan, name):
    if x.ndim == 0:
        return _zero_dim(x, dim)
    xp = get_xp(x)
    d = _wrap_dim(dim, x.ndim)
    _check_nonempty(x, name, (d,))
    order = _order(x, d)
    n = x.shape[d]
    nans = (xp.isnan(x).sum(axis=d, keepdims=True) if x.dtype.kind in "fc"
            else xp.zeros(1, np.int64))
    if ignore_nan:
        pos = xp.maximum((n - nans - 1) // 2, 0)
    else:  # a NaN anywhere is the median (NaNs sort last: take the first of them)
        pos = xp.where(nans > 0, n - nans, (n - 1) // 2)
    pos = xp.broadcast_to(pos, order.shape[:d] + (1,) + order.shape[d + 1:])
    return _pick(x, xp.take_along_axis(order, pos, axis=d), d, keepdim)


@op("median", promote=NONE, node="MedianBackward0", check=refuse("c", no_kernel("median_cpu")),
    writes=lambda self: int(self.numel() == 0))  # (an empty input: fill_ with NaN)
def _median(self):
    _check_median(self, "median")
    return _median_all(self, False)


@op("nanmedian", promote=NONE, node="NanmedianBackward0",
    writes=lambda self: int(self.numel() == 0))
def _nanmedian(self):
    _check_median(self, "nanmedian")
    return _median_all(self, True)


_median.grad("self", writes=1)(_evenly_distribute)
_nanmedian.grad("self", writes=1)(_evenly_distribute)
_median.jvp("self")(_evenly_read)
_nanmedian.jvp("self")(_evenly_read)


@op("median", promote=NONE, node="MedianBackward1", outputs=2, diff_outputs=(True, False),
    check=refuse("c", no_kernel("median_cpu")),
    result_type=MedianResult, writes=1)
@contiguous_result
def _median_with_dim(self, dim, keepdim=False):
    _check_median(self, "median")
    return _median_dim(self, dim, keepdim, False, "median")


@op("nanmedian", promote=NONE, node="NanmedianBackward1", outputs=2,
    diff_outputs=(True, False), result_type=NanmedianResult, writes=1)
@contiguous_result
def _nanmedian_with_dim(self, dim, keepdim=False):
    _check_median(self, "nanmedian")
    return _median_dim(self, dim, keepdim, True, "nanmedian")


_median_with_dim.grad("self", writes=2)(_select_back)
_nanmedian_with_dim.grad("self", writes=2)(_select_back)


def median(input, dim=None, keepdim=False, *, out=None):
    """The lower median of all elements, or (values, indices) along ``dim``."""
    if dim is None:
        return _median(input)
    return _median_with_dim(input, dim, keepdim)


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """median() ignoring NaNs."""
    if dim is None:
        return _nanmedian(input)
    return _nanmedian_with_dim(input, dim, keepdim)


# -- mode ----------------------------------------------------------------------------------------
@op("mode", promote=NONE, node="ModeBackward0", outputs=2, diff_outputs=(True, False),
    check=refuse("c", no_kernel("mode_cpu")),
    result_type=ModeResult, writes=lambda self, dim=-1, keepdim=False: _reshaped_writes(
        self, keepdim, 2))
def _mode(self, dim=-1, keepdim=False):
    if self.ndim == 0:
        return _zero_dim(self, dim)
    xp = get_xp(self)
    d = _wrap_dim(dim, self.ndim)
    _check_nonempty(self, "mode", (d,))
    order = _mode_order(self, d)
    s = xp.take_along_axis(self, order, axis=d)
    n = s.shape[d]
    at = [slice(None)] * s.ndim

    def part(a, b):
        at[d] = slice(a, b)
        return tuple(at)
    # Runs of equal values in the sorted slice: where each starts, where each ends.
    start = xp.ones(s.shape, bool)
    start[part(1, None)] = s[part(1, None)] != s[part(None, -1)]
    end = xp.ones(s.shape, bool)
    end[part(None, -1)] = start[part(1, None)]
    shape = [1] * s.ndim
    shape[d] = n
    pos = xp.arange(n).reshape(shape)
    first = accumulate("maximum", xp.where(start, pos, 0), d)
    length = xp.where(end, pos - first + 1, 0)
    # NOTE: the longest run, the smallest value among equally long ones (argmax takes the
    # first); its last element in sorted order is the value's last occurrence (stable sort),
    # which is the index torch returns.
    best = xp.argmax(length, axis=d, keepdims=True)
    return _pick(self, xp.take_along_axis(order, best, axis=d), d, keepdim)


def _mode_order(x, d):
    """The order torch's mode scans: std::sort with a plain ``<`` (see _stl_order), which a
    stable sort gives unless the row has equal elements or NaNs."""
    order = _order(x, d)
    if get_xp(x) is not np:
        return order
    rows, back = _rows(x, d)
    orders = _rows(order, d)[0]
    # (insertion sort below the threshold: stable, but not NaN last)
    replay = (_tied(np.take_along_axis(rows, orders, axis=1))
              if x.shape[d] > _stl_order.THRESHOLD else np.zeros(0, np.int64))
    if x.dtype.kind in "fc":
        replay = np.union1d(replay, np.flatnonzero(np.isnan(rows).any(axis=1)))
    if not replay.size:
        return order
    orders = orders.copy()
    for r in replay:
        orders[r] = _stl_order.std_sort(rows[r], "lt")
    return back(orders)


_mode.grad("self", writes=2)(_select_back)


def mode(input, dim=-1, keepdim=False, *, out=None):
    """The most frequent value along ``dim`` (the smallest of equally frequent) and its
    index."""
    return _mode(input, dim, keepdim)


Tensor.sort = lambda self, *dim_descending, stable=_UNSET, dim=_UNSET, descending=_UNSET: \
    _sorted(self, True, dim_descending, stable, dim, descending)
Tensor.argsort = lambda self, *dim_descending, stable=_UNSET, dim=_UNSET, descending=_UNSET: \
    _argsorted(self, True, dim_descending, stable, dim, descending)


def _msort_method(self, *args, **kwargs):
    # (torch's Tensor.msort is a builtin method that takes no arguments)
    if kwargs:
        raise TypeError("TensorBase.msort() takes no keyword arguments")
    if args:
        raise TypeError(f"TensorBase.msort() takes no arguments ({len(args)} given)")
    return msort(self)


Tensor.msort = _msort_method
Tensor.topk = topk
Tensor.kthvalue = kthvalue
Tensor.median = median
Tensor.nanmedian = nanmedian
Tensor.mode = mode


# torch's kernels that write their results through these out= functions, whose autograd
# layer refuses an inference dual (see forward_ad._check_out_function)
_kthvalue.out_function = "kthvalue_out"
_median_with_dim.out_function = "median_out"
_nanmedian_with_dim.out_function = "nanmedian_out"
