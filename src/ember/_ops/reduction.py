"""Reductions: sums, means, products, max/min and their index variants, logsumexp, all/any.

Also ``sum_to`` (how broadcasting is undone) and the helpers other reduction-like families
share (``_dims``, ``_unreduce``, ``value_selecting_backward``, named-tuple results). Variance
and norms live in ``statistics.py``.
"""
from __future__ import annotations

__all__ = ['all', 'amax', 'amin', 'any', 'argmax', 'argmin', 'count_nonzero', 'logsumexp',
           'max', 'mean', 'min', 'nanmean', 'nansum', 'prod', 'sum']

import builtins
import collections
import functools
import math

import numpy as np

from .. import _dtype as D
from .._backend import arg_extreme, as_array, get_xp, reduce_sum
from .._state import forward_hook, profiler_hook, state, vmap_hook
from .._tensor import Tensor, _wrap, _wrap_dim
from ..autograd._grad_versions import note_view
from .._numpy_keywords import own_keywords
from .registry import FLOAT, NONE, op
from .pointwise import div_scalar, eq, exp, maximum, minimum, not_implemented, where
from .shape import expand, expand_to, raw as _raw, reshape, unsqueeze
from .torch_sum_order import follows_torch, follows_torch_rows, torch_order_row_sums, torch_order_sum


# -- helpers shared by the reduction families ----------------------------------------------------

def contiguous_result(kernel):
    """``kernel`` with row-major (C-contiguous) results: torch allocates the results of its
    reductions, scans and softmax contiguous whatever the input's layout, where NumPy keeps
    the input's order. Their strides show, and so does whether a later ``view``, ``flatten``
    or ``reshape`` of them can be a view. (Only a result of another layout is copied.)"""
    @functools.wraps(kernel)
    def contiguous_kernel(*args, **kwargs):
        out = kernel(*args, **kwargs)
        if type(out) is tuple:
            return tuple(_row_major(a) for a in out)
        return _row_major(out)
    return contiguous_kernel


def _row_major(a):
    if a.flags.c_contiguous and (a.ndim < 2 or (1 not in a.shape and 0 not in a.shape)):
        return a
    # (NumPy calls an array contiguous whatever the strides of its dimensions of one element,
    # which torch's contiguous strides give the size of the dimensions after them)
    step, strides = a.itemsize, []
    for n in reversed(a.shape):
        strides.append(step)
        step *= builtins.max(n, 1)
    if a.flags.c_contiguous and a.strides == tuple(reversed(strides)):
        return a
    return get_xp(a).array(a, order="C", copy=True)

def _dims(dim, ndim):
    """A sorted tuple of non-negative dims from an int, a sequence, or None (all dims).

    NOTE: a 0-dim tensor accepts dim 0 and -1 (torch wraps dims as if it had one), but has no
    axis to reduce: its dims are ``()``, which NumPy reduces as "nothing".
    """
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, (tuple, list)):
        dims = tuple(sorted(_wrap_dim(d, ndim) for d in dim))
        if len(set(dims)) != len(dims):
            dup = next(d for d in dims if dims.count(d) > 1)
            raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    else:
        dims = (_wrap_dim(dim, ndim),)
    return dims if ndim else ()


def _kept_shape(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _unreduce(x, shape, dim, keepdim):
    """A reduced tensor with its reduced dimensions back (size one), so that it broadcasts
    against the input it came from: one unsqueeze per dimension, as torch's formulas do."""
    if keepdim:
        return x
    x = _a(x)
    for d in sorted(_dims(dim, len(shape))):
        x = unsqueeze(x, d)
    return x


def _a(x):
    """A NumPy scalar (what a Python operator gives on 0-d arrays) as a 0-d array.

    NOTE: raw formulas pass such results on to ember ops, whose raw path takes only arrays.
    """
    return x if isinstance(x, (Tensor, np.ndarray)) else as_array(x)


def _like(x, array):
    """A constant ``array`` in the mode of ``x``: a Tensor beside Tensors, else raw."""
    return _wrap(array) if isinstance(x, Tensor) else array


def _dtype_name(x):
    return D._BY_NP[x.dtype].scalar_name


def return_type(name, fields=("values", "indices")):
    """A named tuple printed as torch prints ``torch.return_types.<name>``."""
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"ember.return_types.{name}(\n{body})"
    cls = type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__str__": __repr__})
    cls.__module__ = "ember.return_types"
    return cls


def _check_nonempty(x, name, dims=None, given=None):
    """torch's refusals for max-like reductions over no elements (the dimension named as
    ``given`` by the caller where that differs: amax/amin show the user's -1)."""
    if dims is None:
        if x.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        return
    for d, shown in zip(dims, dims if given is None else given):
        if x.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {shown} to have non-zero size.")


@op("notnan_mask", promote=NONE, differentiable=False)
def notnan_mask(self):
    """Where ``self`` is not NaN (a constant mask for derivative formulas)."""
    return ~get_xp(self).isnan(self)


@op("same_mask", tensors=2, promote=NONE, differentiable=False)
def same_mask(self, other):
    """Where ``self`` equals ``other``, NaN counting as equal to NaN."""
    xp = get_xp(self)
    if self.dtype.kind not in "fc":
        return self == other
    return (self == other) | (xp.isnan(self) & xp.isnan(other))


def _evenly_distribute(grad, self, result):
    # NOTE: ties share the gradient equally, as torch's evenly_distribute_backward does (a NaN
    # result sends it to the NaNs).
    mask = same_mask(self, result)
    from .._creation import zeros as zeros_factory
    from .indexing import masked_fill
    zeros = (zeros_factory(tuple(self.shape), dtype=grad.dtype, device=grad.device)
             if isinstance(grad, Tensor) else get_xp(grad).zeros(tuple(self.shape), grad.dtype))
    return masked_fill(zeros, mask, _a(grad / sum_all(mask)))


# -- sum_to: the inverse of broadcasting --------------------------------------------------------
def sum_to(self, shape):
    """``self`` summed down to ``shape`` (undoing broadcasting), as torch's sum_to: the leading
    dimensions and those broadcast from one summed (keeping dims), then a view dropping the
    leading ones. On a Tensor these are ops (SumBackward1, ViewBackward0: torch's graph), on
    an array NumPy's sum."""
    shape = tuple(shape)
    if not isinstance(self, Tensor):
        return _sum_to_array(self, shape)
    if tuple(self.shape) == shape:
        return self
    lead = self.ndim - len(shape)
    axes = _sum_to_axes(self.shape, shape)
    if not shape:
        return sum_all(self)
    if axes:
        self = sum_dim(self, axes, True)
    return reshape(self, shape) if lead else self


def _sum_to_axes(have, shape):
    lead = len(have) - len(shape)
    return tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and have[i + lead] != 1)


def _sum_to_array(x, shape):
    if x.shape == shape:
        return x
    # NOTE: an array, never a NumPy scalar (a 0-d sum is one): the engine sums gradients into
    # the arrays it holds in place, which a scalar would silently ignore.
    axes = _sum_to_axes(x.shape, shape)
    lead = x.ndim - len(shape)
    if len(axes) == lead:
        return sum_leading(x, lead)
    out = as_array(_array_sum(x, axes, True))
    return out.reshape(shape) if lead else out


def sum_leading(x, lead):
    """Array ``x`` summed over its first ``lead`` dimensions (``_sum_to_array`` when only
    leading dimensions were broadcast: a bias's gradient). As torch's, a view dropping the
    leading dimensions of the sum that keeps them (autograd.grad returns it as such a view,
    made in no_grad mode), which the engine keeps as a leaf's .grad without copying it, and
    never sums a second gradient into (see note_view); except a sum down to 0-d, torch's
    plain sum()."""
    if lead == x.ndim:
        return as_array(_array_sum(x, tuple(range(lead)), False))
    out = _array_sum(x, tuple(range(lead)), True).reshape(x.shape[lead:])
    note_view(out)
    return out


_array_sum = reduce_sum  # ``xp.sum(x, axes, keepdims)`` without np.sum's Python layers


sum_to.kernel = _sum_to_array  # the array form, for code that calls kernels (ember.compile)


# -- sum and mean -------------------------------------------------------------------------------
def _acc_dtype(x, dtype):
    """torch accumulates integers and bools in int64, and float16 in float32."""
    if dtype is not None:
        return dtype.np
    if x.dtype.kind in "biu":
        return np.int64
    return x.dtype


def _reduce(fn, x, axis, keepdim, dtype):
    acc = _acc_dtype(x, dtype)
    if acc == np.float16:
        return fn(x, axis=axis, keepdims=keepdim, dtype=np.float32).astype(np.float16)
    return fn(x, axis=axis, keepdims=keepdim, dtype=acc)


# the dtypes whose sum is the ufunc's own reduce (float and complex, but half precision)
_ADD_REDUCES = frozenset(np.dtype(c) for c in "fdgFDG")


def _reduce_sum(x, axis, keepdim, dtype):
    if dtype is None and axis and axis[-1] == x.ndim - 1 and len(axis) == x.ndim - axis[0]:
        in_order = _sum_of_last_dims(x, axis[0], keepdim)
        if in_order is not None:
            return in_order
    if dtype is None and type(x) is np.ndarray and x.dtype in _ADD_REDUCES:
        # NOTE: the ufunc's own reduce: what np.sum comes to, without its Python wrapper (a
        # third of a small sum's time)
        return np.add.reduce(x, axis=axis, keepdims=keepdim)
    return _reduce(get_xp(x).sum, x, axis, keepdim, dtype)


def _sum_of_last_dims(x, first, keepdim):
    """The sums over ``x``'s dims from ``first`` on in torch's order (one inner reduction of
    each row, as torch coalesces them), or None where NumPy's order stays."""
    lead = x.shape[:first]
    rows = math.prod(lead)
    if rows == 1 and follows_torch(x):
        sums = torch_order_sum(x)
    elif follows_torch_rows(x, rows):
        sums = torch_order_row_sums(x, rows)
    else:
        return None
    return sums.reshape(lead + (1,) * (x.ndim - first) if keepdim else lead)


def sum_whole(x, dtype):
    """The sum of all of ``x``; a float32 or float64 one added in torch's order where it can
    be (see torch_sum_order)."""
    if dtype is None and follows_torch(x):
        return torch_order_sum(x)
    return _reduce_sum(x, None, False, dtype)


@op("sum", promote=NONE, quiet=True, node="SumBackward0", writes=1, conj_saved=True)
def sum_all(self, dtype=None):
    return sum_whole(self, dtype)


@sum_all.grad("self")
def _(grad, self_shape):
    return expand_to(grad, self_shape)


@sum_all.batched_grad("self")
def _(grad, self_shape):
    return _expand_batch(grad, self_shape)


def _expand_batch(grad, shape):
    """A batch of scalars ``(batch,)`` broadcast to ``(batch, *shape)``."""
    batch = grad.shape[0]
    return expand(reshape(grad, (batch,) + (1,) * len(shape)), (batch,) + tuple(shape))


@sum_all.jvp("self")
def _(self_t, dtype):
    return sum_all(self_t, dtype)


@op("sum", promote=NONE, quiet=True, node="SumBackward1", writes=1, conj_saved=True)
@contiguous_result
def sum_dim(self, dim, keepdim=False, dtype=None):
    return _reduce_sum(self, _dims(dim, self.ndim), keepdim, dtype)


@sum_dim.grad("self")
def _(grad, self_shape, dim, keepdim):
    return expand_to(_unreduce(grad, self_shape, dim, keepdim), self_shape)


@sum_dim.batched_grad("self")
def _(grad, self_shape, dim, keepdim):
    return _unreduce_batch(grad, self_shape, dim, keepdim)


def _unreduce_batch(grad, shape, dim, keepdim):
    """``_unreduce`` and expand for a batch: ``(batch, *reduced)`` to ``(batch, *shape)``."""
    batch = grad.shape[0]
    if not keepdim:
        grad = reshape(grad, (batch,) + _kept_shape(shape, _dims(dim, len(shape))))
    return expand(grad, (batch,) + tuple(shape))


@sum_dim.jvp("self")
def _(self_t, dim, keepdim, dtype):
    return sum_dim(self_t, dim, keepdim, dtype)


# torch's signatures of sum and mean, as its argument parser lists them when a call fits none
_SIGNATURES = {
    ("sum", True): ["*, torch.dtype dtype = None",
                    "tuple of ints dim, bool keepdim = False, *, torch.dtype dtype = None"],
    ("sum", False): ["Tensor input, *, torch.dtype dtype = None",
                     "Tensor input, tuple of ints dim, bool keepdim = False, *, torch.dtype "
                     "dtype = None, Tensor out = None"],
    ("mean", False): ["Tensor input, *, torch.dtype dtype = None, Tensor out = None",
                      "Tensor input, tuple of ints dim, bool keepdim = False, *, torch.dtype "
                      "dtype = None, Tensor out = None"],
}
_SIGNATURES["mean", True] = _SIGNATURES["sum", True]


_SUM_KEYWORDS = frozenset(("input", "dim", "keepdim", "dtype", "out"))


def _reduction_args(name, is_method):
    """The Python entry point of reduction ``name`` (torch.sum, Tensor.sum): it refuses a
    ``dim`` that is not an int or a sequence of ints with torch's TypeError."""
    target = {"sum": sum, "mean": mean}[name]
    whole = {"sum": sum_all, "mean": mean_all}[name]  # (what target does without a dim)

    def entry(input, *args, **kwargs):
        if not args and not kwargs:  # x.sum(), x.mean(): the usual call, two calls less
            if type(input) is Tensor and forward_hook[0] is None and profiler_hook[0] is None:
                call = whole.caller  # (the op's generated path, as its call would take)
                if call is not None:
                    return call((input, None))
            return whole(input, None)
        if kwargs and not _SUM_KEYWORDS.issuperset(kwargs):  # x.sum(axis=1, keepdims=True)
            kwargs = own_keywords(kwargs, _SUM_KEYWORDS, name)
        dim = args[0] if args else kwargs.get("dim")
        if dim is not None and not isinstance(dim, (int, tuple, list)) and not (
                isinstance(dim, Tensor)):
            raise _bad_dim(name, is_method, dim, bool(args), len(args) + len(kwargs) > 1)
        return target(input, *args, **kwargs)
    entry.__name__ = entry.__qualname__ = name
    entry.__doc__ = target.__doc__
    entry.__wrapped__ = target  # (its signature is target's)
    return entry


def _bad_dim(name, is_method, dim, positional, more):
    kind = type(dim).__name__
    if more:
        where = f" (position {1 if is_method else 2})" if positional else ""
        return TypeError(f"{name}(): argument 'dim'{where} must be tuple of ints, not {kind}")
    given = kind if positional else f"dim={kind}"
    got = f"({given})" if is_method and positional else (
        f"({given}, )" if is_method else f"(Tensor, {given})")
    lines = "".join(f" * ({sig})\n" for sig in _SIGNATURES[name, is_method])
    return TypeError(f"{name}() received an invalid combination of arguments - got {got}, but "
                     f"expected one of:\n{lines}".replace("torch.", "ember."))


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001 - torch's name
    """Sum of all elements, or over ``dim`` (an int or a tuple of ints)."""
    if dim is None:
        return sum_all(input, dtype)
    return sum_dim(input, dim, keepdim, dtype)


def _check_float(x, dtype, name):
    if dtype is None and x.dtype.kind not in "fc":
        raise RuntimeError(f"{name}(): could not infer output dtype. Input dtype must be either "
                           f"a floating point or complex dtype. Got: {_dtype_name(x)}")
    if dtype is not None and np.dtype(dtype.np).kind not in "fc":
        raise RuntimeError(f"{name}(): could not infer output dtype. Optional dtype must be "
                           f"either a floating point or complex dtype. Got: {dtype.scalar_name}")


@op("mean", promote=NONE, quiet=True, node="MeanBackward0", writes=2,
    conj_saved=True)
def mean_all(self, dtype=None):
    _check_float(self, dtype, "mean")
    return _mean(self, None, False, dtype, self.size)


@mean_all.grad("self")
def _(grad, self_shape):
    return div_scalar(expand_to(grad, self_shape), builtins.max(math.prod(self_shape), 1))


@mean_all.batched_grad("self")
def _(grad, self_shape):
    return _expand_batch(grad / builtins.max(math.prod(self_shape), 1), self_shape)


@mean_all.jvp("self")
def _(self_t, dtype):
    return mean_all(self_t, dtype)


@op("mean", promote=NONE, quiet=True, node="MeanBackward1", writes=2,
    conj_saved=True)
@contiguous_result
def mean_dim(self, dim, keepdim=False, dtype=None):
    _check_float(self, dtype, "mean")
    dims = _dims(dim, self.ndim)
    n = math.prod(self.shape[d] for d in dims)
    return _mean(self, dims, keepdim, dtype, n)


def _mean(x, axis, keepdim, dtype, n):
    """The sum over ``axis`` divided by its ``n`` elements (NaN for none). A float16 mean is
    torch's: the float32 sum divided in float32 and rounded once (rounding the sum first
    would put the result one step off for many inputs)."""
    if _acc_dtype(x, dtype) == np.float16:
        s = get_xp(x).sum(x, axis=axis, keepdims=keepdim, dtype=np.float32)
        out = s / np.float32(n) if n else get_xp(s).full(s.shape, np.nan, s.dtype)
        return out.astype(np.float16)
    s = sum_whole(x, dtype) if axis is None else _reduce_sum(x, axis, keepdim, dtype)
    return (s / n).astype(s.dtype) if n else get_xp(s).full(s.shape, np.nan, s.dtype)


@mean_dim.grad("self")
def _(grad, self_shape, dim, keepdim):
    n = math.prod(self_shape[d] for d in _dims(dim, len(self_shape)))
    g = _unreduce(grad, self_shape, dim, keepdim)
    # NOTE: with nothing reduced (n == 0) the gradient is empty: leave the 1/n out, so that
    # its own derivative is 0 rather than 0/0 (torch gives 0).
    g = expand_to(g, self_shape)
    return div_scalar(g, n) if n else g


@mean_dim.batched_grad("self")
def _(grad, self_shape, dim, keepdim):
    n = math.prod(self_shape[d] for d in _dims(dim, len(self_shape)))
    return _unreduce_batch(grad / n if n else grad, self_shape, dim, keepdim)


@mean_dim.jvp("self")
def _(self_t, dim, keepdim, dtype):
    return mean_dim(self_t, dim, keepdim, dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean of all elements, or over ``dim``."""
    if dim is None:
        return mean_all(input, dtype)
    return mean_dim(input, dim, keepdim, dtype)


@op("nansum", promote=NONE, quiet=True, node="NansumBackward0", writes=1)
@contiguous_result
def _nansum(self, dim=None, keepdim=False, dtype=None):
    axis = None if dim is None else _dims(dim, self.ndim)
    return _reduce(get_xp(self).nansum, self, axis, keepdim, dtype)


@_nansum.grad("self")
def _(grad, self, dim, keepdim):
    # NOTE: a product, not a where: an infinite grad (nanmean of all-NaN) gives NaN, as torch.
    return _unreduce(grad, self.shape, dim, keepdim) * notnan_mask(self)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum of all elements, or over ``dim``, treating NaN as zero."""
    return _nansum(input, dim, keepdim, dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean of the non-NaN elements, or over ``dim``."""
    x = _raw(input)
    if x.dtype.kind not in "fc":
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {_dtype_name(x)}")
    # NOTE: torch computes nansum / count (so its grad_fn is DivBackward0).
    if vmap_hook[0] is not None and type(input) is not Tensor:
        # (one example under vmap, whose array cannot be read: the count made by ops too,
        # each batched by its rule, as torch's composite nanmean is)
        return _nansum(input, dim, keepdim, dtype) / input.isnan().logical_not().sum(
            dim, keepdim)
    axis = None if dim is None else _dims(dim, x.ndim)
    # (laid out as torch's count: contiguous, so the division keeps the sum's layout)
    count = _row_major(get_xp(x).sum(~get_xp(x).isnan(x), axis=axis, keepdims=keepdim))
    return _nansum(input, dim, keepdim, dtype) / _like(input, as_array(count))


Tensor.sum = _reduction_args("sum", True)
Tensor.mean = _reduction_args("mean", True)
sum = _reduction_args("sum", False)  # noqa: A001 - torch.sum
mean = _reduction_args("mean", False)
Tensor.nansum = nansum
Tensor.nanmean = nanmean

# -- prod ----------------------------------------------------------------------------------------


def _reduce_prod(x, axis, keepdim, dtype):
    return _reduce(get_xp(x).prod, x, axis, keepdim, dtype)


@op("prod", promote=NONE, node="ProdBackward0", quiet=True, writes=1)
def prod_all(self, dtype=None):
    return _reduce_prod(self, None, False, dtype)


@prod_all.grad("self")
def _(grad, self, result):
    if self.ndim == 0:
        return grad
    zeros = 0 if _in_transform() else int((_raw(self) == 0).sum())
    if not _in_transform() and not zeros:
        return grad * (result / self)
    if zeros > 1 and not state.grad_enabled:
        # (torch's shortcut: with two zeros every product of the others is zero; a fresh
        # zero tensor, so +0.0 whatever the signs)
        data = _raw(self)
        return _like(self, get_xp(data).zeros(data.shape, data.dtype))
    # NOTE: with zeros, result / self is 0/0: multiply the products of the other elements,
    # as torch does (flattened, so the "other elements" are all of them).
    return reshape(_prod_safe_zeros_backward(grad, reshape(self, (-1,)), 0), self.shape)


@op("prod", promote=NONE, node="ProdBackward1", quiet=True, writes=1)
@contiguous_result
def prod_dim(self, dim, keepdim=False, dtype=None):
    return _reduce_prod(self, _dims(dim, self.ndim), keepdim, dtype)


@prod_dim.grad("self")
def _(grad, self, result, dim, keepdim):
    if self.ndim == 0:
        return grad
    g = _unreduce(grad, self.shape, dim, keepdim)
    if not _in_transform() and not _has_zero(self):
        return g * (_unreduce(result, self.shape, dim, keepdim) / self)
    return _prod_safe_zeros_backward(g, self, _wrap_dim(dim, self.ndim))


def _has_zero(x):
    return bool((_raw(x) == 0).any())


def _in_transform():
    """Whether a torch.func transform runs now: torch's prod_backward takes its zero-safe
    path for functorch's wrapped tensors (isTensorSubclassLike), without dividing."""
    from ..func._outer_graph import transform_running
    return transform_running()


def _prod_safe_zeros_backward(grad, x, d):
    """torch's prod_safe_zeros_backward: ``grad`` times the products of the other elements
    along ``d``; ``grad`` itself where there are none."""
    if x.shape[d] == 1:
        return grad
    return grad * _prod_others(x, d)


def _prod_others(x, d):
    """Along ``d``, the product of all other elements (exclusive cumprods from both ends)."""
    from .scan import cumprod, flip_dims
    from .shape import cat, slice_
    n = x.shape[d]
    if n == 0:
        return x
    data = _raw(x)
    ones = _like(x, get_xp(data).ones(_kept_shape(data.shape, (d,)), data.dtype))
    left = cumprod(cat([ones, slice_(x, d, 0, n - 1, 1)], d), d)
    right = flip_dims(cumprod(flip_dims(cat([slice_(x, d, 1, n, 1), ones], d), (d,)), d), (d,))
    return left * right


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product of all elements, or over ``dim`` (an int)."""
    if dim is None:
        return prod_all(input, dtype)
    if not isinstance(dim, int):
        raise TypeError("prod() received an invalid combination of arguments - got (Tensor, "
                        f"{type(dim).__name__}), but expected one of: (Tensor input, *, "
                        "dtype dtype = None), (Tensor input, int dim, bool keepdim = False, *, "
                        "dtype dtype = None)")
    return prod_dim(input, dim, keepdim, dtype)


Tensor.prod = prod

# -- logsumexp ----------------------------------------------------------------------------------


@op("logsumexp", promote=FLOAT, quiet=True, node="LogsumexpBackward0", writes=1)
@contiguous_result
def _logsumexp(self, dim, keepdim=False):
    xp = get_xp(self)
    dims = _dims(dim, self.ndim)
    acc = np.float32 if self.dtype == np.float16 else self.dtype
    x = self.astype(acc, copy=False)
    if x.size:
        m = xp.max(x, axis=dims, keepdims=True)
        # NOTE: shift by the max for stability, but not by an infinite one (inf - inf).
        m = xp.where(xp.isfinite(m), m, 0)
    else:
        m = xp.zeros(_kept_shape(x.shape, dims), acc)
    out = xp.log(xp.sum(xp.exp(x - m), axis=dims, keepdims=True)) + m
    if not keepdim:
        out = out.reshape([s for i, s in enumerate(out.shape) if i not in dims])
    return out.astype(self.dtype, copy=False)


@_logsumexp.grad("self")
def _(grad, self, result, dim, keepdim):
    shape = self.shape
    return _unreduce(grad, shape, dim, keepdim) * exp(_a(self - _unreduce(result, shape, dim,
                                                                             keepdim)))


@_logsumexp.jvp("self")
def _(self_t, self, dim, keepdim):
    # torch's logsumexp_jvp: the exp-normalized input weighs the tangent, and the weighted
    # sum is divided in place by the weights' sum (so the tangent is at version 1)
    weights = exp(self - amax(self, dim, True)) if self.numel() else exp(self)
    return sum_dim(weights * self_t, dim, keepdim).div_(sum_dim(weights, dim, keepdim))


def logsumexp(input, dim, keepdim=False, *, out=None):
    """log(sum(exp(input))) over ``dim``, computed stably."""
    return _logsumexp(input, dim, keepdim)


Tensor.logsumexp = logsumexp

# -- all / any / count_nonzero (no gradient) -----------------------------------------------------


def _logical_reduction(name, ufunc):
    @op(name, promote=NONE, differentiable=False, writes=1)
    @contiguous_result
    def kernel(self, dim=None, keepdim=False):
        axis = None if dim is None else _dims(dim, self.ndim)
        out = getattr(get_xp(self), ufunc)(self, axis=axis, keepdims=keepdim)
        # NOTE: torch keeps uint8 for uint8 inputs (a legacy of masks); every other is bool.
        return out.astype(np.uint8) if self.dtype == np.uint8 else out
    return kernel


_all = _logical_reduction("all", "all")
_any = _logical_reduction("any", "any")


def all(input, dim=None, keepdim=False, *, out=None):  # noqa: A001 - torch's name
    """Whether all elements (over ``dim``) are true."""
    return _all(input, dim, keepdim)


def any(input, dim=None, keepdim=False, *, out=None):  # noqa: A001 - torch's name
    """Whether any element (over ``dim``) is true."""
    return _any(input, dim, keepdim)


@op("count_nonzero", promote=NONE, differentiable=False, method=True)
@contiguous_result
def count_nonzero(self, dim=None):
    """Number of non-zero elements, over ``dim`` (an int or a tuple) or all."""
    axis = None if dim is None else _dims(dim, self.ndim)
    return as_array(get_xp(self).count_nonzero(self, axis=axis)).astype(np.int64)


Tensor.all = all
Tensor.any = any

# -- max / min ----------------------------------------------------------------------------------


@op("max", promote=NONE, node="MaxBackward1", writes=1)
def max_all(self):
    if self.dtype.kind == "c":
        raise not_implemented("max_all", self)
    _check_nonempty(self, "max")
    return get_xp(self).max(self)


@op("min", promote=NONE, node="MinBackward1", writes=1)
def min_all(self):
    if self.dtype.kind == "c":
        raise not_implemented("min_all", self)
    _check_nonempty(self, "min")
    return get_xp(self).min(self)


max_all.grad("self", writes=1)(_evenly_distribute)
min_all.grad("self", writes=1)(_evenly_distribute)


@max_all.jvp("self")
@min_all.jvp("self")
def _evenly_read(self_t, self, result):
    """torch's evenly_read_jvp: the mean tangent of the elements equal to the result, as
    ``sum(mask * (self_t / count))``: NaN where none is (a NaN result; the reverse formula
    counts NaNs as equal), 0 for an empty input (median's)."""
    mask = self == result
    return sum_all(mask * (self_t / sum_all(mask)))

MaxResult = return_type("max")
MinResult = return_type("min")


def _reshaped_writes(self, keepdim, zero_dim_writes):
    """The writes torch's kernels of max, min and mode along a dimension leave on their fresh
    results (see op()'s ``writes``): none for an empty input, ``zero_dim_writes`` for a 0-d one
    (written by fill_ or copy_), else an unsqueeze_ and a squeeze_ unless ``keepdim``."""
    if self.numel() == 0:
        return 0
    if self.ndim == 0:
        return zero_dim_writes
    return 0 if keepdim else 2


def _arg_reduce(name, fn, self, dim, keepdim):
    """Index of the first max/min along ``dim`` (NumPy's ties and NaNs are torch's)."""
    if self.ndim == 0:
        _wrap_dim(dim, 0)
        return self.copy(), get_xp(self).zeros((), np.int64)
    d = _wrap_dim(dim, self.ndim)
    _check_nonempty(self, name, (d,))
    xp = get_xp(self)
    idx = arg_extreme(self, fn, axis=d, keepdims=True)
    values = xp.take_along_axis(self, idx, axis=d)
    if not keepdim:
        idx, values = idx.squeeze(d), values.squeeze(d)
    return values, idx.astype(np.int64, copy=False)


@op("max", promote=NONE, node="MaxBackward0", outputs=2, diff_outputs=(True, False),
    result_type=MaxResult, writes=lambda self, dim, keepdim=False: _reshaped_writes(
        self, keepdim, 1))
def max_dim(self, dim, keepdim=False):
    return _arg_reduce("max", "max", self, dim, keepdim)


@op("min", promote=NONE, node="MinBackward0", outputs=2, diff_outputs=(True, False),
    result_type=MinResult, writes=lambda self, dim, keepdim=False: _reshaped_writes(
        self, keepdim, 1))
def min_dim(self, dim, keepdim=False):
    return _arg_reduce("min", "min", self, dim, keepdim)


def _select_back(grads, self_shape, dim, keepdim, result1):
    return value_selecting_backward(grads[0], result1, dim, self_shape, keepdim)


max_dim.grad("self", writes=2)(_select_back)
min_dim.grad("self", writes=2)(_select_back)


def value_selecting_backward(grad, indices, dim, sizes, keepdim):
    """Scatter ``grad`` into zeros of ``sizes`` at ``indices`` along ``dim`` (the gradient of
    max(dim), sort, topk, ...). On Tensors it is composed as in torch (zeros, unsqueeze,
    scatter: ScatterBackward0), on arrays one NumPy put."""
    if isinstance(grad, Tensor):
        from .._creation import zeros as zeros_factory
        from .indexing import _scatter_src
        zeros = zeros_factory(tuple(sizes), dtype=grad.dtype, device=grad.device)
        if not keepdim and len(sizes):
            grad, indices = unsqueeze(grad, dim), unsqueeze(indices, dim)
        return _scatter_src(zeros, indices, grad, dim)
    xp = get_xp(grad)
    if len(sizes) == 0:  # a 0-dim input: its one element was selected
        return xp.array(grad, copy=True).reshape(())
    d = dim % len(sizes)
    if not keepdim:
        grad, indices = xp.expand_dims(grad, d), xp.expand_dims(indices, d)
    out = xp.zeros(sizes, grad.dtype)
    xp.put_along_axis(out, indices, grad, axis=d)
    return out


@op("take_along_dim", promote=NONE, tensors=2, node="TakeAlongDimBackward0")
def take_along_dim_keep(self, indices, dim, keepdim=True):
    if self.ndim == 0:
        return self.copy()
    xp = get_xp(self)
    d = dim % self.ndim
    if not keepdim:
        indices = xp.expand_dims(indices, d)
    out = xp.take_along_axis(self, indices, axis=d)
    return out if keepdim else xp.squeeze(out, d)


@take_along_dim_keep.grad("self")
def _(grad, indices, dim, self_shape, keepdim):
    return take_along_dim_backward(grad, indices, dim, self_shape, keepdim)


def take_along_dim_backward(grad, indices, dim, sizes, keepdim=True):
    """Add ``grad`` into zeros of ``sizes`` at ``indices`` along ``dim`` (repeats accumulate),
    composed as torch composes it: zeros, then scatter_add (under create_graph a
    ScatterAddBackward0 whose first edge, the zeros, is empty)."""
    from .indexing import _scatter_add, _zeros
    if not keepdim and len(sizes):
        grad, indices = unsqueeze(grad, dim), unsqueeze(indices, dim)
    return _scatter_add(_zeros(grad, sizes), indices, grad, dim % builtins.max(len(sizes), 1))


def _minmax(name, all_op, dim_op, binary):
    def f(input, dim=None, keepdim=False, *, other=None, out=None):
        if other is not None:  # max(input, other=): the elementwise overload
            if dim is not None:
                raise TypeError(f"{name}() got multiple values for argument 'other'")
            dim = other
        if isinstance(dim, Tensor):
            return binary(input, dim)
        if dim is None:
            return all_op(input)
        if not isinstance(dim, int):
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"(Tensor, {type(dim).__name__}), but expected one of: (Tensor "
                            "input, *, Tensor out = None), (Tensor input, Tensor other, *, "
                            "Tensor out = None), (Tensor input, int dim, bool keepdim = False, "
                            "*, tuple of Tensors out = None)")
        return dim_op(input, dim, keepdim)
    f.__name__ = name
    f.__doc__ = f"The {name}imum of all elements, or ({name}, argument) along ``dim``."
    return f


max = _minmax("max", max_all, max_dim, maximum)  # noqa: A001 - torch's name
min = _minmax("min", min_all, min_dim, minimum)  # noqa: A001
Tensor.max = max
Tensor.min = min

# -- amax / amin / argmax / argmin ----------------------------------------------------------------


def _amax_kernel(name, fn):
    def kernel(self, dim=(), keepdim=False):
        if self.dtype.kind == "c":
            raise not_implemented(f"{fn}_values_cpu", self)
        dims = _dims(dim, self.ndim)
        if self.ndim and not (isinstance(dim, (tuple, list)) and len(dim) == 0):
            given = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
            _check_nonempty(self, name, tuple(d % self.ndim for d in given), given)
        else:
            _check_nonempty(self, name)
        return getattr(get_xp(self), fn)(self, axis=dims, keepdims=keepdim)
    kernel.__name__ = name
    return op(name, promote=NONE, method=True,
              writes=lambda self, dim=(), keepdim=False: int(self.numel() > 0))(
        contiguous_result(kernel))


amax = _amax_kernel("amax", "max")
amin = _amax_kernel("amin", "min")


def _scale_by_count(grad, self, result, dim, keepdim):
    # NOTE: ties share the gradient (torch's scale_grad_by_count). A NaN max equals nothing,
    # so its slice gets grad / 0 * 0: NaNs, as in torch.
    shape = self.shape
    mask = eq(self, _unreduce(result, shape, dim, keepdim))
    count = sum_dim(mask, dim if self.ndim else (), True)
    return _unreduce(grad, shape, dim, keepdim) / count * mask


amax.grad("self")(_scale_by_count)
amin.grad("self")(_scale_by_count)


def _aminmax_writes(self, dim=None, keepdim=False):
    """The writes torch's aminmax kernels leave on their fresh results (see op()'s
    ``writes``): a fill_ or copy_ of a full reduction or of a 0-d input, else an unsqueeze_
    and a squeeze_ unless ``keepdim`` (an empty input's too)."""
    if dim is None or self.ndim == 0:
        return 1
    return 0 if keepdim else 2


@op("aminmax", promote=NONE, outputs=2, node="AminmaxBackward0", writes=_aminmax_writes)
def aminmax(self, dim=None, keepdim=False):
    """``(amin, amax)`` in one op: torch records one AminmaxBackward0 node for both (the
    caller, ember.aminmax, makes torch's checks for an empty input first)."""
    if self.dtype.kind == "c":
        raise not_implemented("aminmax_cpu", self)
    dims = () if dim is None else dim
    return amin(self, dims, keepdim), amax(self, dims, keepdim)


@aminmax.grad("self")
def _(grads, self, result0, result1, dim, keepdim):
    dims = () if dim is None else dim
    return (_scale_by_count(grads[0], self, result0, dims, keepdim)
            + _scale_by_count(grads[1], self, result1, dims, keepdim))


def _argmax_kernel(name):
    def kernel(self, dim=None, keepdim=False):
        if self.dtype == np.bool_:
            raise RuntimeError(f"{name}(): does not support bool input")
        if self.dtype.kind == "c":
            raise RuntimeError(f"{name}(): does not support complex input")
        if dim is not None:
            return _arg_reduce(name, name[3:], self, dim, keepdim)[1]
        if self.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        idx = as_array(arg_extreme(self, name[3:])).astype(np.int64)
        return idx.reshape((1,) * self.ndim) if keepdim else idx
    kernel.__name__ = name
    return op(name, promote=NONE, method=True, differentiable=False,
              writes=_arg_writes)(kernel)


def _arg_writes(self, dim=None, keepdim=False):
    """torch's argmax and argmin kernels fill their result with 0 in place along a dimension
    of one element (see op()'s ``writes``)."""
    return int(dim is not None and self.ndim > 0 and self.shape[dim] == 1)


argmax = _argmax_kernel("argmax")
argmin = _argmax_kernel("argmin")

from .statistics import (linalg_vector_norm, matrix_norm, norm, std, std_mean, var,  # noqa: E402,F401
                         var_mean, vector_norm)

__all__ += ['norm', 'std', 'std_mean', 'var', 'var_mean']


# torch's kernels that write their results through these out= functions, whose autograd
# layer refuses an inference dual (see forward_ad._check_out_function)
mean_all.out_function = mean_dim.out_function = "sum_out"
_logsumexp.out_function = "logsumexp_out"
