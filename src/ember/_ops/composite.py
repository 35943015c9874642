"""Composite functions: torch functions written with ember's ops, so their derivatives (first
and second order, forward mode, batching) follow from those ops' and need no formula here.

diff, cov/corrcoef, cdist, dist, quantile/nanquantile, diagflat,
combinations, broadcast_tensors, the ``*_scatter`` functions, Tensor.unfold,
trapezoid and its cumulative form, vander; aminmax's checks (its
values and node are reduction.aminmax's).
"""
from __future__ import annotations

__all__ = ['aminmax', 'block_diag', 'broadcast_shapes',
           'broadcast_tensors', 'cdist', 'combinations', 'corrcoef', 'cov',
           'cumulative_trapezoid', 'diagflat', 'diagonal_scatter', 'diff', 'dist',
           'nanquantile', 'quantile', 'renorm', 'select_scatter',
           'slice_scatter', 'trapezoid', 'trapz', 'vander']

import math

import numpy as np

from .. import _dtype as D
from .._backend import asarray_like
from .._size import Size
from .._tensor import Tensor, _wrap, _wrap_dim
from ..autograd.forward_ad import check_out_function
from ..overrides import handle_torch_function, has_torch_function
from .reduction import aminmax as _aminmax_op
from .reduction import return_type
from .diagonal import block_diag  # noqa: F401  (ops; exported with these functions)
from .statistics import renorm  # noqa: F401
from .view_scatter import diagonal_scatter, select_scatter, slice_scatter  # noqa: F401

_aminmax = return_type("aminmax", ("min", "max"))


def broadcast_shapes(*shapes):
    """The shape tensors of these shapes broadcast to (torch's errors for shapes that don't)."""
    dims = [tuple(s) if isinstance(s, (tuple, list, Size)) else (int(s),) for s in shapes]
    result = [1] * max((len(d) for d in dims), default=0)
    for i, shape in enumerate(dims):
        for k in range(1, len(shape) + 1):
            s = shape[-k]
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                                   f"{list(shape)}")
            if s == 1:
                continue
            if result[-k] == 1:
                result[-k] = s
            elif result[-k] != s:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {s} at "
                                   f"{-k}! Mismatching argument at index {i} had {shape}; but "
                                   f"expected shape should be broadcastable to {result}")
    return Size(tuple(result))


def broadcast_tensors(*tensors):
    """Each tensor expanded to their common shape (views); one of that shape already is
    returned itself, as torch's expand_outplace does."""
    if has_torch_function(tensors):  # (torch.functional's: a Python function that dispatches)
        return handle_torch_function(broadcast_tensors, tensors, *tensors)
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = _broadcast_of(tensors)
    return tuple(t if tuple(t.shape) == shape else t.expand(shape) for t in tensors)


broadcast_tensors.__module__ = "ember.functional"  # (where torch writes it: its handlers' name)


def _broadcast_of(tensors):
    try:
        return tuple(broadcast_shapes(*[t.shape for t in tensors]))
    except RuntimeError:
        shape = tuple(tensors[0].shape)
        for t in tensors[1:]:  # (torch folds the shapes pairwise, left to right)
            shape = _infer_size(shape, tuple(t.shape))
        raise


def _infer_size(a, b):
    """torch's infer_size of two shapes: their broadcast, or its error naming the first
    mismatching dimension from the right (numbered in the result's dimensions)."""
    ndim = max(len(a), len(b))
    out = []
    for i in range(ndim):
        size_a = a[i - ndim + len(a)] if i - ndim + len(a) >= 0 else 1
        size_b = b[i - ndim + len(b)] if i - ndim + len(b) >= 0 else 1
        out.append((size_a, size_b, i))
    for size_a, size_b, i in reversed(out):
        if size_a != size_b and size_a != 1 and size_b != 1:
            raise RuntimeError(f"The size of tensor a ({size_a}) must match the size of tensor "
                               f"b ({size_b}) at non-singleton dimension {i}")
    return tuple(size_b if size_a == 1 else size_a for size_a, size_b, _ in out)


def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002 - torch's name
    """The ``n``-th forward difference along ``dim`` (with ``prepend``/``append`` joined)."""
    from .shape import cat
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap_dim(dim, input.dim())
    parts = [p if p.dim() else p.expand(_along(input, d, 1)) for p in (prepend,)
             if p is not None] + [input] + [p if p.dim() else p.expand(_along(input, d, 1))
                                            for p in (append,) if p is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        hi, lo = x.narrow(d, 1, size - 1), x.narrow(d, 0, size - 1)
        x = (hi ^ lo) if x.dtype is D.bool else hi - lo
    return x


def _along(x, d, size):
    shape = list(x.shape)
    shape[d] = size
    return tuple(shape)


def cov(input, *, correction=1, fweights=None, aweights=None):  # noqa: A002
    """The covariance matrix of the variables in the rows of ``input`` (observations in the
    columns)."""
    if input.dim() > 2:
        raise ValueError(f"cov(): expected input to have two or fewer dimensions but got an "
                         f"input with {input.dim()} dimensions")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    if not x.is_floating_point() and not x.is_complex():
        x = x.to(D.get_default_dtype())
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = float(n)
        avg = x.sum(1) / w_sum  # (torch's sum over the observations, not mean's sum_out)
        norm = n - correction
    else:
        w = w.to(x.dtype)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
    if not isinstance(norm, Tensor) and norm <= 0:
        norm = 0.0
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    # (torch's mm(x, (x * w).t().conj()): the weights on the right operand, conj after t)
    c = xm @ xw.t().conj() if x.is_complex() else xm @ xw.t()
    c = c / norm
    return c.squeeze()  # (torch's: always, so a single variable gives a 0-dim result)


def corrcoef(input):  # noqa: A002
    """Pearson correlation coefficients of the variables in the rows of ``input``."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    stddev = d.sqrt()
    c = c / stddev.view(-1, 1)  # (torch's views, ViewBackward0)
    c = c / stddev.view(1, -1)
    return c.clamp(-1, 1)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between the rows of ``x1`` (…, P, M) and of ``x2`` (…, R, M)."""
    from .statistics import vector_norm
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.is_floating_point():
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{x.dtype.scalar_name}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    _refuse_cdist_dtypes(x1, x2, p, compute_mode)
    if _cdist_kernel_applies(x1, x2, p, compute_mode):
        from .statistics import cdist_forward
        return cdist_forward(x1, x2, float(p))
    if _same_float(x1, x2) and p == 2 and compute_mode != "donot_use_mm_for_euclid_dist":
        return _euclidean_cdist(x1, x2)
    return vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


def _refuse_cdist_dtypes(x1, x2, p, compute_mode):
    """torch's refusals of the inputs' float dtypes, unless the result is empty (returned
    before any kernel runs): two dtypes in its matrix product form (p = 2 beyond 25 rows),
    else its distance kernel's, which dispatches on x1's dtype (no float16 or bfloat16) and
    reads x2 as that."""
    from .._tensor import _c_type_name
    try:
        batch = np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    except ValueError:
        return  # (torch's error for the batch shapes, later)
    if 0 in (x1.shape[-2], x2.shape[-2], x1.shape[-1], math.prod(batch)):
        return
    rows = max(x1.shape[-2], x2.shape[-2])
    mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode == "use_mm_for_euclid_dist_if_necessary" and rows > 25))
    if mm and x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_c_type_name(x1.dtype)} != {_c_type_name(x2.dtype)}")
    if not mm and x1.dtype in (D.float16, D.bfloat16):
        raise NotImplementedError(f"\"cdist\" not implemented for '{x1.dtype.scalar_name}'")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {x1.dtype.scalar_name} but found "
                           f"{x2.dtype.scalar_name}")


def _euclidean_cdist(x1, x2):
    """torch's cdist for p = 2 beyond 25 rows: _euclidean_dist (matrix products) on the
    inputs, or on their batch dims expanded and flattened, then viewed to the result's
    shape."""
    from .statistics import euclidean_dist
    batch = tuple(np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
    (r1, c), r2 = x1.shape[-2:], x2.shape[-2]
    if math.prod(batch) != 1:
        n = math.prod(batch)
        x1 = x1.expand(batch + (r1, c)).reshape(n, r1, c)
        x2 = x2.expand(batch + (r2, c)).reshape(n, r2, c)
    return euclidean_dist(x1, x2).view(batch + (r1, r2))


def _same_float(x1, x2):
    return x1.dtype is x2.dtype and x1.is_floating_point() and not x1.is_complex()


def _cdist_kernel_applies(x1, x2, p, compute_mode):
    """Whether torch computes these distances with its _cdist_forward kernel (not the matrix
    product form it takes for p = 2 beyond 25 rows), for inputs of one floating dtype."""
    if not _same_float(x1, x2):
        return False
    if p != 2 or compute_mode == "donot_use_mm_for_euclid_dist":
        return True
    rows = max(x1.shape[-2], x2.shape[-2])
    return compute_mode == "use_mm_for_euclid_dist_if_necessary" and rows <= 25


def dist(input, other, p=2):  # noqa: A002
    """The p-norm of ``input - other`` (torch's argument checks, then the dist op)."""
    from numbers import Number

    from .statistics import dist_op
    if not isinstance(other, Tensor):
        raise TypeError(f"dist(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    if not isinstance(p, (Number, Tensor)) or isinstance(p, complex):
        raise TypeError(f"dist(): argument 'p' (position 3) must be Number, not "
                        f"{type(p).__name__}")
    return dist_op(input, other, p.item() if isinstance(p, Tensor) else p)


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):  # noqa: A002
    """torch's quantile_compute, op for op (so its nodes are torch's: sort, a view, gather,
    lerp_ and squeeze_ in place)."""
    from ..autograd.grad_mode import no_grad
    scalar_q = not isinstance(q, Tensor)
    if scalar_q and not 0 <= q <= 1:  # (torch's number overload checks first)
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    qt = input.new_tensor(q) if scalar_q else q
    _check_quantile(input, qt)
    sorted_ = _sorted_rows(input, dim, keepdim)
    with no_grad():
        ranks = _quantile_ranks(sorted_, qt, interpolation, ignore_nan)
    below = ranks.long()
    values = sorted_.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        weights = ranks.new_full(ranks.shape, 0.5) if interpolation == "midpoint" else (
            ranks - below)
        values.lerp_(sorted_.gather(-1, ranks.ceil_().long()), weights)
    if qt.dim() == 0:
        return values.squeeze_(-1)
    return values.unsqueeze_(0).transpose_(0, -1).squeeze_(-1)


def _check_quantile(input, q):  # noqa: A002
    """torch's quantile_checks, in its order (its messages say quantile() for nanquantile)."""
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q.dim() > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.dtype not in (D.float32, D.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if q.dtype is not input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if not ((q >= 0) & (q <= 1)).all():  # (a NaN q too)
        raise RuntimeError("quantile() q values must be in the range [0, 1]")


def _sorted_rows(input, dim, keepdim):  # noqa: A002
    """torch's quantile_compute: ``input`` sorted along ``dim`` (flattened without one), viewed
    as rows of the output's shape (without q's dimension) whose last dimension is sorted."""
    if dim is None:
        out_shape = [1] * input.dim() if keepdim else []
        rows = input.flatten().sort()[0]
    else:
        d = _wrap_dim(dim, input.dim())
        out_shape = list(input.shape)
        if out_shape:
            if keepdim:
                out_shape[d] = 1
            else:
                del out_shape[d]
        rows = (input.sort()[0] if d == input.dim() - 1 else
                input.unsqueeze(-1).transpose(d, -1).sort()[0])
    return rows.view(out_shape + [rows.shape[-1]])


def _quantile_ranks(sorted_, q, interpolation, ignore_nan):
    """The (fractional) ranks of the ``q``-quantiles in each sorted row (torch's: of the
    non-NaN values, 0 when all are NaN; or the last, NaN, one of a row holding a NaN)."""
    nan = sorted_.isnan()
    if ignore_nan:
        ranks = q * ((~nan).sum(-1, keepdim=True) - 1)
        ranks.masked_fill_(ranks < 0, 0)
    else:
        last = sorted_.shape[-1] - 1
        scaled, bad = broadcast_tensors(q * last, nan.any(-1, keepdim=True))
        ranks = scaled.masked_fill(bad, last)
    rounding = {"lower": "floor_", "higher": "ceil_", "nearest": "round_"}.get(interpolation)
    return getattr(ranks, rounding)() if rounding else ranks


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):  # noqa: A002
    """The ``q``-quantiles of ``input`` (over ``dim``, or all of it)."""
    return _quantile(input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):  # noqa: A002
    """``quantile`` ignoring NaNs."""
    return _quantile(input, q, dim, keepdim, interpolation, True)


Tensor.quantile = quantile
Tensor.nanquantile = nanquantile


def diagflat(input, offset=0):  # noqa: A002
    """A 2-D tensor with the flattened ``input`` on its ``offset``-th diagonal."""
    from .indexing import diag
    return diag(input.reshape(-1), offset)


Tensor.diagflat = diagflat


def combinations(input, r=2, with_replacement=False):  # noqa: A002
    """The length-``r`` combinations of the elements of 1-D ``input`` (as itertools).

    torch's composition, so its nodes are torch's: the ``r``-fold meshgrid of ``input`` (a
    view and an expand each), each grid's elements where the indices ascend (masked_select),
    stacked as columns."""
    from .._creation import meshgrid
    from .indexing import masked_select
    from .shape import stack
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    grids = meshgrid(*[input] * r, indexing="ij")
    mask = _wrap(asarray_like(_ascending_mask(input.shape[0], r, with_replacement), input._data))
    return stack([masked_select(g, mask) for g in grids], 1)


def _ascending_mask(n, r, with_replacement):
    """torch's _triu_mask: True at the (i, j, k, ...) of ``r`` indices below ``n`` with
    i < j < k ... (i <= j <= k ... with replacement)."""
    grids = np.meshgrid(*[np.arange(n)] * r, indexing="ij")
    mask = np.ones((n,) * r, bool)
    ascends = np.less_equal if with_replacement else np.less
    for a, b in zip(grids, grids[1:]):
        mask &= ascends(a, b)
    return mask


def _unfold(self, dimension, size, step):
    """Every slice of length ``size`` along ``dimension``, ``step`` apart, as a new last
    dimension (a view)."""
    # (the unfold op, not an as_strided view: its node and gradient are torch's UnfoldBackward0,
    # a 0-dim input's too)
    from .spectral import unfold
    return unfold(self, unfold_dimension(self, dimension, size, step), size, step)


def unfold_dimension(self, dimension, size, step):
    """unfold's ``dimension`` wrapped, after torch's checks of its arguments."""
    nd = self.dim()
    d = _wrap_dim(dimension, max(nd, 1))
    length = self.shape[d] if nd else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return d


Tensor.unfold = _unfold


# -- the trapezoidal rule: torch's compositions (Integration.cpp), op for op, so that their nodes
# are torch's ---------------------------------------------------------------------------------
_TRAPEZOID_OVERLOADS = {
    "trapezoid": ("(Tensor y, Tensor x, *, int dim = -1)",
                  "(Tensor y, *, Number dx = 1, int dim = -1)"),
    "trapz": ("(Tensor y, *, float dx = 1, int dim = -1)",
              "(Tensor y, Tensor x, *, int dim = -1)"),
}
_TRAPEZOID_OVERLOADS["cumulative_trapezoid"] = _TRAPEZOID_OVERLOADS["trapezoid"]


def _invalid_combination(name, got):
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                     "but expected one of:\n" + "".join(
                         f" * {o}\n" for o in _TRAPEZOID_OVERLOADS[name]))


def _check_trapezoid_args(name, y, x, dx):
    """torch's TypeErrors of its argument parser: sample points that are no tensor (a spacing
    goes by keyword), and for trapz a spacing that is no real number."""
    if x is not None and not isinstance(x, Tensor):
        raise _invalid_combination(name, f"Tensor, {type(x).__name__}")
    if name == "trapz" and isinstance(dx, (bool, complex)):
        raise _invalid_combination(name, f"Tensor, dx={type(dx).__name__}")


def _scaled(t, c, divide=False):
    """``t * c`` (``t / c``) as torch's C++ computes it with a number: mul.Scalar (div.Scalar),
    MulBackward1 (DivBackward1); an integer ``t`` (no graph) promotes as Python's operator."""
    from .pointwise import div_scalar, mul_scalar
    if t.is_floating_point() or t.is_complex():
        return div_scalar(t, c) if divide else mul_scalar(t, c)
    return t / c if divide else t * c


def _check_has_dims(y, dim):
    if y.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")


def _spacing(name, y, dx):
    """``dx`` as the Python number torch's Scalar overload takes."""
    if isinstance(dx, Tensor):
        dx = dx.item()
    if isinstance(dx, (bool, complex)):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")
    if y.dtype == D.bool:
        raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not supported")
    return float(dx)  # (torch's Scalar overloads take dx.toDouble())


def _pairs_along(t, d):
    """``t.slice(d, 0, -1)`` and ``t.slice(d, 1)``: each interval's left and right ends."""
    from .shape import slice_
    n = t.shape[d]
    return slice_(t, d, 0, max(n - 1, 0), 1), slice_(t, d, 1, max(n, 1), 1)


def _differences_of(name, y, x, d):
    """torch's ``dx``: differences of the sample points ``x`` along ``d``, a 1-D ``x`` viewed
    along ``d``, a shorter one padded with leading dimensions of 1."""
    if y.dtype == D.bool or x.dtype == D.bool:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           "supported")
    if x.dim() == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[d] = x.shape[0]
        x = x.view(shape)
    elif x.dim() < y.dim():
        x = x.view((1,) * (y.dim() - x.dim()) + tuple(x.shape))
    left, right = _pairs_along(x, d)
    return right - left


def _trapezoid(name, y, x, dx, dim):
    _check_trapezoid_args(name, y, x, dx)
    _check_has_dims(y, dim)
    d = _wrap_dim(dim, y.dim())
    if y.shape[d] == 0:  # (no samples: 0, as NumPy's)
        return y.new_zeros(tuple(y.shape[:d] + y.shape[d + 1:]))
    if x is not None:
        dxs = _differences_of("trapezoid", y, x, d)
        left, right = _pairs_along(y, d)
        return _scaled(((left + right) * dxs).sum(d), 2.0, divide=True)
    step = _spacing("trapezoid", y, 1 if dx is None else dx)
    # (torch's constants are C++ numbers: mul.Scalar and div.Scalar, MulBackward1/DivBackward1;
    # its dx overload takes dim as given, unwrapped, and so do the nodes it records)
    return _scaled(y.sum(dim) - _scaled(y.select(dim, 0) + y.select(dim, -1), 0.5), step)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim`` (sample points ``x``, or spacing ``dx``, default 1)."""
    return _trapezoid("trapezoid", y, x, dx, dim)


def trapz(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim`` (torch.trapezoid's older name)."""
    return _trapezoid("trapz", y, x, dx, dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along ``dim``."""
    _check_trapezoid_args("cumulative_trapezoid", y, x, dx)
    if x is not None:
        _check_has_dims(y, dim)
        d = _wrap_dim(dim, y.dim())
        dxs = _differences_of("cumulative_trapezoid", y, x, d)
        left, right = _pairs_along(y, d)
        return _scaled(((left + right) * dxs).cumsum(d), 2.0, divide=True)
    step = _spacing("cumulative_trapezoid", y, 1 if dx is None else dx)
    if y.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    left, right = _pairs_along(y, dim)  # (dim as given, unwrapped: torch's dx overload)
    return _scaled(left + right, step / 2.0).cumsum(dim)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of 1-D ``x``: columns ``x ** k``."""
    from .shape import stack
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    # torch's composition: an empty tensor of x's dtype promoted with int64 filled with 1, x
    # copied into columns 1..., their running product copied back (CopySlices twice), flipped
    # unless increasing. NOTE: the second copy overwrites what cumprod saved, so a gradient
    # through it raises torch's "modified by an inplace operation" error, as torch's does.
    from .shape import slice_
    dtype = D.promote_types(x.dtype, D.int64)
    if n == 0:  # (torch returns the empty result unfilled: its version stays 0)
        return x.new_empty((x.shape[0], 0), dtype=dtype)
    result = x.new_empty((x.shape[0], n), dtype=dtype).fill_(1)
    if n > 1:
        slice_(result, 1, 1, None, 1).copy_(x.unsqueeze(1))
        slice_(result, 1, 1, None, 1).copy_(slice_(result, 1, 1, None, 1).cumprod(1))
    return result if increasing else result.flip(1)


def aminmax(input, *, dim=None, keepdim=False):  # noqa: A002
    """``(min, max)`` of ``input`` (over ``dim``, or all of it)."""
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        return _aminmax(*_aminmax_op(input, None, keepdim))
    n = input.dim()
    if n and -n <= dim < n and input.shape[dim] == 0:  # (torch's wording, dim normalised)
        raise IndexError(f"aminmax: Expected reduction dim {dim % n} to have non-zero size.")
    return _aminmax(*_aminmax_op(input, dim, keepdim))


Tensor.aminmax = aminmax
