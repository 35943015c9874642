"""Scans: cumulative sums, products, maxima and minima, and logcumsumexp along a dim."""
from __future__ import annotations

__all__ = ['cummax', 'cummin', 'cumprod', 'cumsum', 'logcumsumexp']

import numpy as np

from .._backend import accumulate, get_xp
from .._tensor import Tensor, _wrap_dim
from .registry import NONE, op
from .pointwise import abs, exp, log, no_kernel, refuse, where
from .reduction import (_a, _acc_dtype, _dtype_name, _has_zero, amax, contiguous_result,
                        return_type, sum_dim, take_along_dim_backward)
from .shape import transpose, unsqueeze


def _flip_writes(self, dims):
    """torch's flip kernel copies (copy_) an input with nothing to reverse: empty, or of one
    element along every flipped dimension (see op()'s ``writes``)."""
    n = self.ndim
    return int(self.numel() == 0 or n == 0 or all(self.shape[d % n] == 1 for d in dims))


@op("flip", promote=NONE, node="FlipBackward0", writes=_flip_writes, conj_saved=True)
def flip_dims(self, dims):
    """``self`` reversed along ``dims`` (a copy, as torch.flip)."""
    if not self.ndim:
        return self.copy()
    return get_xp(self).flip(self, tuple(d % self.ndim for d in dims)).copy()


@flip_dims.grad("self")
def _(grad, dims):
    return flip_dims(grad, dims)


def _reversed_cumsum(x, d):
    return flip_dims(cumsum(flip_dims(x, (d,)), d), (d,))


def _scan(fn, x, dim, dtype):
    """``fn`` (a NumPy accumulating function) along ``dim``, accumulating as torch does."""
    d = _wrap_dim(dim, x.ndim)
    if x.ndim == 0:
        return x.astype(_acc_dtype(x, dtype), copy=True)
    acc = _acc_dtype(x, dtype)
    if acc == np.float16:
        return fn(x, axis=d, dtype=np.float32).astype(np.float16)
    return fn(x, axis=d, dtype=acc)


def _filled_when_trivial(self, dim, dtype=None):
    """torch's cumsum and cumprod kernels copy a 0-d input and fill an empty one in place
    (see op()'s ``writes``)."""
    return int(self.ndim == 0 or self.numel() == 0)


@op("cumsum", promote=NONE, quiet=True, node="CumsumBackward0", writes=_filled_when_trivial,
    conj_saved=True)
@contiguous_result
def _cumsum(self, dim, dtype=None):
    return _scan(get_xp(self).cumsum, self, dim, dtype)


@_cumsum.grad("self")
def _(grad, self_shape, dim):
    if len(self_shape) == 0 or self_shape[dim] <= 1:
        return grad
    return _reversed_cumsum(grad, dim % len(self_shape))


def cumsum(input, dim, *, dtype=None, out=None):
    """Cumulative sum of ``input`` along ``dim``."""
    return _cumsum(input, dim, dtype)


@op("cumprod", promote=NONE, node="CumprodBackward0", quiet=True, writes=_filled_when_trivial)
@contiguous_result
def _cumprod(self, dim, dtype=None):
    return _scan(get_xp(self).cumprod, self, dim, dtype)


@_cumprod.grad("self")
def _(grad, self, dim, result):
    if self.ndim == 0 or self.shape[dim] <= 1:
        return grad
    d = dim % self.ndim
    if not _has_zero(self):
        return _reversed_cumsum(result * grad, d) / self
    if isinstance(grad, Tensor):  # create_graph: the graph torch's formula records
        return _cumprod_backward_graph(grad, self, d)
    return _cumprod_backward_zeros(grad, self, d)


def _cumprod_backward_graph(grad, x, d):
    """torch's double-differentiable gradient of cumprod with zeros in ``x``, op for op: for
    each k, the sum over j >= k of grad_j times the product of x_0..x_j but x_k, copied into
    slice k of zeros (a CopySlices node per k)."""
    from .reduction import prod_dim
    from .shape import cat, select, slice_
    n = x.shape[d]
    out = grad.new_zeros(tuple(x.shape))
    ones_shape = list(x.shape)
    ones_shape[d] = 1
    ones = grad.new_ones(1).expand(ones_shape)
    for k in range(n):
        if k == 0:
            omitted = cat([ones, cumprod(slice_(x, d, 1, n, 1), d)], d)
        else:
            until_k = prod_dim(slice_(x, d, 0, k, 1), d, True)
            omitted = until_k
            if k < n - 1:
                from_k_plus_1 = cumprod(slice_(x, d, k + 1, n, 1), d)
                omitted = cat([until_k, until_k.expand_as(from_k_plus_1) * from_k_plus_1], d)
        select(out, d, k).copy_(sum_dim(slice_(grad, d, k, n, 1) * omitted, d))
    return out


def _cumprod_backward_zeros(grad, x, d):
    """d cumprod / dx with zeros in ``x``: sum_{j >= i} grad_j prod_{k <= j, k != i} x_k.

    NOTE: O(n^2) along ``d`` (torch's double-backward-safe formula): a row per i with x_i
    replaced by 1, cumulated, then summed over j >= i. Made of ops, so it differentiates again.
    """
    xp = get_xp(x._data if isinstance(x, Tensor) else x)
    xt, gt = transpose(x, d, -1), transpose(grad, d, -1)
    n = xt.shape[-1]
    others = cumprod(where(xp.eye(n, dtype=bool), 1, unsqueeze(xt, -2)), -1)
    upper = xp.triu(xp.ones((n, n), dtype=bool))  # j >= i
    gx = sum_dim(where(upper, others * unsqueeze(gt, -2), 0), -1)
    return transpose(gx, d, -1)


def cumprod(input, dim, *, dtype=None, out=None):
    """Cumulative product of ``input`` along ``dim``."""
    return _cumprod(input, dim, dtype)


@op("logcumsumexp", promote=NONE, quiet=True, node="LogcumsumexpBackward0",
    writes=lambda self, dim: int(self.ndim == 0))  # (a 0-d input: copy_)
@contiguous_result
def _logcumsumexp(self, dim):
    if self.dtype.kind not in "fc":
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for '
                                  f"'{_dtype_name(self)}'")
    d = _wrap_dim(dim, self.ndim)
    if self.ndim == 0:
        return self.copy()
    # NOTE: logaddexp.accumulate is the stable running log(sum(exp)).
    x = self.astype(np.float32) if self.dtype == np.float16 else self
    return accumulate("logaddexp", x, d).astype(self.dtype)


@_logcumsumexp.grad("self")
def _(grad, self, result, dim):
    if grad.ndim == 0 or grad.size == 0:
        return grad
    # NOTE: torch's formula: sum_{j >= i} grad_j exp(x_i - r_j), summed in log space for the
    # positive and the negative parts of grad separately, so that nothing overflows.
    d = dim % self.ndim
    lowest = float(np.finfo(grad.dtype if not isinstance(grad, Tensor)
                            else grad._data.dtype).min)
    log_abs = log(abs(grad))
    pos = where(_a(grad > 0), log_abs, lowest)
    neg = where(_a(grad < 0), log_abs, lowest)

    def reverse_lcse(t):
        return flip_dims(logcumsumexp(flip_dims(t, (d,)), d), (d,))
    return exp(reverse_lcse(pos - result) + self) - exp(reverse_lcse(neg - result) + self)


@_logcumsumexp.jvp("self")
def _(self_t, self, dim):
    # torch's logcumsumexp_jvp: the tangent weighed by the exp-normalized input, summed
    # cumulatively and divided by the weights' cumulative sum (plus 1e-13, as torch's). The
    # tangent derived from the formula above is NaN: it takes log|grad| at grad = 0.
    weights = exp(self - amax(self, dim, True))
    return cumsum(weights * self_t, dim).div_(cumsum(weights, dim).add_(1e-13))


def logcumsumexp(input, dim, *, out=None):
    """log(cumsum(exp(input))) along ``dim``, computed stably."""
    return _logcumsumexp(input, dim)


CummaxResult = return_type("cummax")
CumminResult = return_type("cummin")


def _cum_extreme(self, dim, ufunc):
    xp = get_xp(self)
    d = _wrap_dim(dim, self.ndim)
    if self.ndim == 0:
        return self.copy(), xp.zeros((), np.int64)
    values = accumulate(ufunc, self, d)
    # NOTE: torch moves the index on ties (>=) and on every NaN; the latest position where
    # the running extreme equals the input is exactly that.
    hit = values == self
    if self.dtype.kind in "fc":
        hit |= xp.isnan(self)
    shape = [1] * self.ndim
    shape[d] = self.shape[d]
    pos = xp.where(hit, xp.arange(self.shape[d]).reshape(shape), 0)
    return values, accumulate("maximum", pos, d).astype(np.int64)


def _cum_backward(grads, self, dim, result1):
    # (torch saves self, not only its shape)
    if 0 in self.shape:
        return grads[0]
    return take_along_dim_backward(grads[0], result1, dim, tuple(self.shape), True)


@op("cummax", promote=NONE, node="CummaxBackward0", outputs=2, diff_outputs=(True, False),
    check=refuse("c", no_kernel("cummax_cpu")),
    result_type=CummaxResult, writes=1)
@contiguous_result
def _cummax(self, dim):
    return _cum_extreme(self, dim, "maximum")


@op("cummin", promote=NONE, node="CumminBackward0", outputs=2, diff_outputs=(True, False),
    check=refuse("c", no_kernel("cummin_cpu")),
    result_type=CumminResult, writes=1)
@contiguous_result
def _cummin(self, dim):
    return _cum_extreme(self, dim, "minimum")


_cummax.grad("self", writes=2)(_cum_backward)
_cummin.grad("self", writes=2)(_cum_backward)


def cummax(input, dim, *, out=None):
    """(running maximum, its index) along ``dim``."""
    return _cummax(input, dim)


def cummin(input, dim, *, out=None):
    """(running minimum, its index) along ``dim``."""
    return _cummin(input, dim)


Tensor.cumsum = cumsum
Tensor.cumprod = cumprod
Tensor.logcumsumexp = logcumsumexp
Tensor.cummax = cummax
Tensor.cummin = cummin


# torch's kernels that write their results through these out= functions, whose autograd
# layer refuses an inference dual (see forward_ad._check_out_function)
_cummax.out_function = "cummax_out"
_cummin.out_function = "cummin_out"
