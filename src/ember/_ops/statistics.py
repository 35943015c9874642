"""Variance, standard deviation and norms (reductions with their own derivative formulas).

Exported through ``reduction`` (``var``, ``std``, ``var_mean``, ``std_mean``, ``norm``);
``vector_norm`` and ``matrix_norm`` are for ``ember.linalg``.
"""
from __future__ import annotations

__all__: list[str] = []

import builtins
import math
import warnings

import numpy as np

from .. import _dtype as D
from .._backend import get_xp
from .._tensor import Tensor, _wrap_dim
from .registry import NONE, op
from .pointwise import (abs, derivative_not_implemented, div_scalar, eq, mul_scalar,
                        no_forward_ad, sign, where)
from .reduction import (_a, _dims, _dtype_name, _kept_shape, _raw, _unreduce, amax, amin,
                        contiguous_result, mean_all, mean_dim, sum_dim)
from .indexing import _masked_fill
from .shape import expand

# -- var / std -----------------------------------------------------------------------------------


def _default_correction(correction):
    """A correction left as None (see ``_correction``) is Bessel's, 1."""
    return 1 if correction is None else correction


def _moments(x, dim, correction, keepdim, name, warn_as=None, welford=False, take_sqrt=False):
    """(variance, mean) of ``x`` over ``dim`` (None: all); (standard deviation, mean) with
    ``take_sqrt``. ``name``: the op in the dtype error; ``warn_as``: in the degrees-of-freedom
    warning; ``welford``: the mean as torch's Welford pass leaves it (see
    ``_welford_infinities``).

    Real floats narrower than float64 are computed in float64 and rounded once at the end, as
    torch's CPU kernels accumulate them in double: the rounded results are torch's (a float32
    two-pass computation gave another last bit for half of random rows)."""
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"{name} only support floating point and complex dtypes")
    xp = get_xp(x)
    correction = _default_correction(correction)
    dims = _dims(dim, x.ndim)
    n = math.prod(x.shape[d] for d in dims)
    xa = x.astype(np.float64) if x.dtype.kind == "f" and x.dtype.itemsize < 8 else x
    with np.errstate(all="ignore"):
        mean = xp.sum(xa, axis=dims, keepdims=True) / n if n else xp.full(
            _kept_shape(x.shape, dims), np.nan, xa.dtype)
        dev = xa - mean
        ssq = xp.sum((dev * dev.conj()).real, axis=dims, keepdims=keepdim)
        dof = builtins.max(0, n - correction)
        # torch warns on the input's numel over the output's, 0 when either is empty
        if (n if x.size else 0) - correction <= 0:
            from .inplace import _user_stacklevel  # (the user's line, however deep the call)
            warnings.warn(f"{warn_as or name.split()[-1]}(): degrees of freedom is <= 0. Correction should "
                          "be strictly less than the reduction factor (input numel divided by "
                          "output numel). (Triggered internally at "
                          "/__w/pytorch/pytorch/aten/src/ATen/native/ReduceOps.cpp:1861.)",
                          UserWarning, stacklevel=_user_stacklevel())
        var = ssq / dof if dof else ssq / 0.0
        spread = xp.sqrt(var) if take_sqrt else var
    if welford and n and x.dtype.kind == "f":
        mean = _welford_infinities(xp, x, mean, dims)
    if not keepdim:
        mean = mean.reshape(spread.shape)
    real = x.real.dtype if x.dtype.kind == "c" else x.dtype
    with np.errstate(over="ignore"):  # (a float64 result past float32's range: inf, silently)
        return spread.astype(real, copy=False), mean.astype(x.dtype, copy=False)


def _welford_infinities(xp, x, mean, dims):
    """``mean`` (kept dims) with NaN where torch's var_mean / std_mean give it: their Welford
    pass adds ``(x - mean) / k`` element by element, so once the mean is infinite the next
    element makes it NaN (inf - inf). An infinity anywhere but the last element visited (the
    last along every reduced dim, whatever the strides) gives NaN; one there, that infinity."""
    last = x[tuple(slice(-1, None) if d in dims else slice(None) for d in range(x.ndim))]
    infs = xp.sum(xp.isinf(x), axis=dims, keepdims=True)
    return xp.where(infs > xp.isinf(last), np.nan, mean)


def _var_backward(grad, self, dim, correction, keepdim):
    """torch's var_backward: 2 / (N - correction) * grad * (self - mean)."""
    correction = _default_correction(correction)
    shape = self.shape
    if self.ndim == 0 or dim is None:
        dof = math.prod(shape) - correction
        m = mean_all(self)
        if dof <= 0:
            # NOTE: 2 / 0 is inf: inf * 0 is NaN where self == mean, inf elsewhere (torch),
            # a constant of the default dtype, as torch's (a 0-dim grad of another dtype
            # takes it, and the engine casts the gradient back: torch's ToCopyBackward0)
            return grad * where(eq(self, m), math.nan, math.inf)
        return mul_scalar(grad, 2.0 / dof) * (self - m)
    dof = math.prod(shape[d] for d in _dims(dim, len(shape))) - correction
    factor = 2.0 / dof if dof else math.inf
    # (torch unsqueezes the gradient back only above one dimension: a 0-dim one broadcasts)
    grad = _unreduce(grad, shape, dim, keepdim) if len(shape) > 1 else grad
    return mul_scalar(grad, factor) * (self - mean_dim(self, dim, True))


def _std_grad(grad, result):
    """torch's std_backward: grad / (2 * std), 0 where std is 0 (masked_fill's node)."""
    return _masked_fill(_a(grad / mul_scalar(result, 2)), eq(result, 0), 0)


def _var_jvp(self_t, self, dim, correction, keepdim):
    """torch's var_jvp: var's backward formula applied to the tangent, summed over ``dim``
    (its products in that order, and at N <= correction its infinities and NaN)."""
    complex_input = self_t.is_complex()
    terms = _var_backward(self_t.conj() if complex_input else self_t, self, dim, correction,
                          True)
    if complex_input:  # (torch's handle_r_to_c: the real part)
        terms = terms.real
    dims = tuple(range(self.ndim)) if dim is None else tuple(_dims(dim, self.ndim))
    return sum_dim(terms, dims, keepdim)


def _std_jvp(self_t, self, result, dim, correction, keepdim):
    """torch's std tangent: var's over 2 * std, 0 where std is 0 (a constant input, one
    element without correction): not var's 0 over std's 0."""
    tangent = _var_jvp(self_t, self, dim, correction, keepdim) / mul_scalar(result, 2)
    return _masked_fill(tangent, eq(result, 0), 0)


def _mean_backward(grad, shape, dim, keepdim):
    dims = _dims(dim, len(shape))
    n = math.prod(shape[d] for d in dims)
    g = grad if dim is None and len(shape) else _unreduce(grad, shape, dim, keepdim)
    return div_scalar(expand(g, shape), n) if n else expand(g, shape)  # torch's order


def _reduces_all(self, dim=None, *rest):
    """1 write when torch's kernel fills its result (see op()'s ``writes``): that of an empty
    input (with NaN), or one of at most one element (every dimension of more than one
    reduced), else 0."""
    reduced = _dims(dim, self.ndim)
    kept = math.prod(n for d, n in enumerate(self.shape) if d not in reduced)
    return int(self.numel() == 0 or kept <= 1)


def _empty_moments(self, *args):
    """var_mean and std_mean fill (fill_) both results of an empty input with NaN."""
    return int(self.numel() == 0)


@op("var", promote=NONE, node="VarBackward0", writes=_reduces_all)
@contiguous_result
def _var(self, dim=None, correction=1, keepdim=False):
    return _moments(self, dim, correction, keepdim, "std and var")[0]


@_var.grad("self")
def _(grad, self, dim, correction, keepdim):
    return _var_backward(grad, self, dim, correction, keepdim)


_var.jvp("self")(_var_jvp)


@op("std", promote=NONE, node="StdBackward0", writes=_reduces_all)
@contiguous_result
def _std(self, dim=None, correction=1, keepdim=False):
    return _moments(self, dim, correction, keepdim, "std and var", "std", take_sqrt=True)[0]


@_std.grad("self")
def _(grad, self, result, dim, correction, keepdim):
    return _var_backward(_std_grad(grad, result), self, dim, correction, keepdim)


_std.jvp("self")(_std_jvp)


@op("var_mean", promote=NONE, node="VarMeanBackward0", outputs=2, undefined_grads=True,
    writes=_empty_moments)
@contiguous_result
def _var_mean(self, dim=None, correction=1, keepdim=False):
    return _moments(self, dim, correction, keepdim, "var_mean", welford=True)


@_var_mean.grad("self")
def _(grads, self, dim, correction, keepdim):
    gvar, gmean = grads
    return _sum_defined(
        None if gvar is None else _var_backward(gvar, self, dim, correction, keepdim),
        None if gmean is None else _mean_backward(gmean, self.shape, dim, keepdim))


@op("std_mean", promote=NONE, node="StdMeanBackward0", outputs=2, undefined_grads=True,
    writes=_empty_moments)
@contiguous_result
def _std_mean(self, dim=None, correction=1, keepdim=False):
    return _moments(self, dim, correction, keepdim, "std_mean", welford=True, take_sqrt=True)


@_std_mean.grad("self")
def _(grads, self, result0, dim, correction, keepdim):
    gstd, gmean = grads
    return _sum_defined(
        None if gstd is None else _var_backward(_std_grad(gstd, result0), self, dim,
                                                correction, keepdim),
        None if gmean is None else _mean_backward(gmean, self.shape, dim, keepdim))


@_var_mean.jvp("self", joint=True)
def _(tangents, self, dim, correction, keepdim):
    (self_t,) = tangents
    return (_var_jvp(self_t, self, dim, correction, keepdim),
            _mean_of_tangent(self_t, dim, keepdim))


@_std_mean.jvp("self", joint=True)
def _(tangents, self, result, dim, correction, keepdim):
    (self_t,) = tangents
    return (_std_jvp(self_t, self, result[0], dim, correction, keepdim),
            _mean_of_tangent(self_t, dim, keepdim))


def _mean_of_tangent(self_t, dim, keepdim):
    """The mean's tangent: the tangent's mean (NaN for an empty input, as torch's)."""
    return mean_all(self_t) if dim is None and not keepdim else mean_dim(
        self_t, tuple(range(self_t.ndim)) if dim is None else dim, keepdim)


def _sum_defined(a, b):
    """The sum of the gradient terms of the outputs that received one (the other output's
    term is left out, not taken at a zero gradient: at one element it would be 0/0)."""
    return b if a is None else a if b is None else a + b


def _correction(name, dim, unbiased, keepdim, correction):
    """torch's overloads: (dim, unbiased, keepdim), (unbiased), and correction= (keyword)."""
    if isinstance(dim, bool):  # var(input, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got both "
                        "unbiased and correction")
    # torch's node keeps correction None (the default, 1) when none of dim, unbiased and
    # correction is given: var(x) shows ``_saved_correction`` None, var(x, 0) shows 1
    if correction is None and (unbiased is not None or dim is not None):
        correction = 0 if unbiased is False else 1
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    return dim, correction, keepdim


def _moment_fn(name, kernel, doc):
    def f(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
        return kernel(input, *_correction(name, dim, unbiased, keepdim, correction))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


var = _moment_fn("var", _var, "Variance over ``dim`` (all elements by default), with "
                 "Bessel's ``correction``.")
std = _moment_fn("std", _std, "Standard deviation over ``dim``, with Bessel's ``correction``.")
var_mean = _moment_fn("var_mean", _var_mean, "(variance, mean) over ``dim``.")
std_mean = _moment_fn("std_mean", _std_mean, "(standard deviation, mean) over ``dim``.")
Tensor.var = var
Tensor.std = std

# -- vector norms --------------------------------------------------------------------------------


def _norm_input(self, dtype, name):
    if self.dtype.kind not in "fc":
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {_dtype_name(self)}")
    if dtype is None:
        return self
    if dtype.category < D.FLOATING:
        raise RuntimeError(f"{name}: dtype should be floating point or complex, but got "
                           f"{dtype.scalar_name}")
    if np.dtype(dtype.np).itemsize < self.dtype.itemsize:
        raise RuntimeError(f"{name}: the dtype of the input ({_dtype_name(self)}) should be "
                           "convertible without narrowing to the specified dtype "
                           f"({dtype.scalar_name})")
    return self.astype(dtype.np)


def _check_identity(a, ord, dim):  # noqa: A002
    """Norms without an identity (min, max, negative powers) refuse empty reductions."""
    if a.size or not (ord < 0 or ord == math.inf):
        return
    p = "inf" if ord == math.inf else "-inf" if ord == -math.inf else f"{ord:g}"
    if dim is None:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p} norm on an empty tensor "
                           "because the operation does not have an identity")
    for d in _dims(dim, a.ndim):
        if a.shape[d] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {p} norm on the "
                               f"dimension {d}because this dimension is empty and the "
                               "operation does not have an identity")


def _norm_writes(self, ord=2, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """torch's vector norm fills an empty input's result and copies (copy_) the absolute
    values where nothing is reduced: one element, or dimensions of one (see op()'s
    ``writes``; a 0-d input with a dim given is reduced)."""
    if self.numel() == 0:
        return 1
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return int(self.numel() == 1)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return int(self.ndim > 0 and all(self.shape[d] == 1 for d in dims))


@op("linalg_vector_norm", promote=NONE, quiet=True, writes=_norm_writes)
@contiguous_result
def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, dtype=None):  # noqa: A002
    if isinstance(ord, str):
        raise TypeError("linalg_vector_norm(): argument 'ord' (position 2) must be Number, "
                        "not str")
    x = _norm_input(self, dtype, "linalg.vector_norm")
    xp = get_xp(x)
    axis = _dims(dim, x.ndim)
    a = xp.abs(x)
    _check_identity(a, ord, dim)
    if ord == 2:
        out = xp.sqrt(xp.sum(a * a, axis=axis, keepdims=keepdim))
    elif ord == 1:
        out = xp.sum(a, axis=axis, keepdims=keepdim)
    elif ord == math.inf:
        out = xp.max(a, axis=axis, keepdims=keepdim)
    elif ord == -math.inf:
        out = xp.min(a, axis=axis, keepdims=keepdim)
    elif ord == 0:
        out = xp.sum(a != 0, axis=axis, keepdims=keepdim)
    else:
        out = xp.sum(a ** ord, axis=axis, keepdims=keepdim) ** (1.0 / ord)
    return xp.asarray(out).astype(a.dtype)


@op("linalg_vector_norm_inf_mask", tensors=2, promote=NONE, differentiable=False)
def _inf_norm_mask(self, norm):
    """Where |self| is the (inf or -inf) norm, or NaN: the elements that share its gradient."""
    xp = get_xp(self)
    a = xp.abs(self)
    return (a == norm) | xp.isnan(a)


@linalg_vector_norm.grad("self")
def _vector_norm_grad(grad, self, ord, dim, keepdim, result):  # noqa: A002
    # NOTE: torch's norm_backward op for op (masked fills, sgn, and the unsqueezes of only the
    # dimensions it was given), so that the second derivative at zero is torch's NaN rather
    # than a guarded 0, and create_graph records torch's nodes.
    from .pointwise import masked_fill
    from .unary import sgn
    g, r = grad, result
    if dim is not None and self.ndim:
        g, r = _unreduce(grad, self.shape, dim, keepdim), _unreduce(result, self.shape, dim, keepdim)
    if ord == 0:
        return None
    if ord == 1:
        return sgn(self) * g
    if ord == 2:
        return g * masked_fill(_a(self / r), eq(r, 0), 0)
    if ord in (math.inf, -math.inf):
        mask = _inf_norm_mask(self, r)
        return sgn(self) * (g / sum_dim(mask, dim if self.ndim else (), True) * mask)
    if ord < 1:
        scaled = sgn(self) * masked_fill(_a(abs(self) ** (ord - 1)), eq(self, 0), 0)
        return scaled * g * r ** (1 - ord)
    scale = masked_fill(_a(g / r ** (ord - 1)), eq(r, 0), 0)
    if ord < 2:
        return sgn(self) * abs(self) ** (ord - 1) * scale
    return self * abs(self) ** (ord - 2) * scale


def _norm_jvp(self_t, self, ord, dim, keepdim, result):  # noqa: A002
    """torch's norm_jvp, branch for branch: its masks (0 where the norm is 0 for p >= 1, where
    an element is 0 for p < 1) are the tangent's, where the tangent derived from the reverse
    formula at grad = 0 gave NaN (a zero norm of p = 3)."""
    from .complex import conj_physical, real_part
    from .pointwise import masked_fill
    from .unary import sgn

    def dot(a, t):  # Re(conj(a) * t)
        return real_part(conj_physical(a) * t) if a._data.dtype.kind == "c" else a * t

    def summed(x):
        return sum_dim(x, dim, keepdim)
    if ord == 0:
        return result * 0
    if ord == 1:
        return summed(dot(sgn(self), self_t))
    if ord == 2:
        return masked_fill(summed(dot(self, self_t)) / result, eq(result, 0), 0)
    if ord in (math.inf, -math.inf):
        norm = _unreduce(result, self.shape, dim, keepdim) if self.ndim else result
        mask = _inf_norm_mask(self, norm).to(result.dtype)
        count = sum_dim(mask, dim, True) if self.ndim else mask
        return summed(dot(sgn(self), self_t) * mask / count)
    if ord < 1:
        scale = masked_fill(abs(self) ** (ord - 1), eq(self, 0), 0)
        return summed(scale * dot(sgn(self), self_t)) * result ** (1 - ord)
    if ord < 2:
        sumpow_t = summed(abs(self) ** (ord - 1) * dot(sgn(self), self_t))
    else:
        sumpow_t = summed(abs(self) ** (ord - 2) * dot(self, self_t))
    return masked_fill(sumpow_t / result ** (ord - 1), eq(result, 0), 0)


@op("norm", promote=NONE, quiet=True, node="NormBackward1", writes=_norm_writes)
@contiguous_result
def norm_dim(self, ord=2, dim=None, keepdim=False, dtype=None):  # noqa: A002
    """``at::norm(self, p, dim, keepdim)``, the norm torch's own ops call (pairwise_distance):
    linalg_vector_norm under its older name."""
    return linalg_vector_norm.kernel(self, ord, dim, keepdim, dtype)


norm_dim.grad("self")(_vector_norm_grad)
linalg_vector_norm.jvp("self")(_norm_jvp)
norm_dim.jvp("self")(_norm_jvp)


def _check_renorm(self, p, dim, maxnorm):
    if self.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.ndim} "
                           f"dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")


def _renorm_dims(self, dim):
    """The dimensions renorm takes each slice's norm over: all but ``dim``."""
    d = _wrap_dim(dim, self.ndim)
    return tuple(k for k in range(self.ndim) if k != d)


def _renorm_norm_dtype(self):
    """torch's accumulation dtype of renorm's norms (float for half and bfloat16), or None."""
    return D.float32 if _raw(self).dtype in (np.float16, *D.REDUCED_NP) else None


@op("renorm", promote=NONE, quiet=True, method=True, inplace=True, check=_check_renorm,
    complex_grad=True, writes=1)
def renorm(self, p, dim, maxnorm):
    """Each slice along ``dim`` scaled down to p-norm ``maxnorm`` where its norm is larger:
    torch's kernel, ``self * (maxnorm / (norm + 1e-7) if norm > maxnorm else 1)``, the
    factor computed in the norm's dtype and cast to ``self``'s."""
    norm = linalg_vector_norm.kernel(self, p, _renorm_dims(self, dim), True,
                                     _renorm_norm_dtype(self))
    real = norm.dtype.type
    factor = np.where(norm > real(maxnorm), real(maxnorm) / (norm + real(1e-7)), real(1))
    return self * factor.astype(self.real.dtype)


# torch's kernel scales the input with mul_out, whose autograd layer refuses an inference dual
# (see forward_ad._check_out_function)
renorm.out_function = "mul_out"


@renorm.grad("self")
def _renorm_grad(grad, self, p, dim, maxnorm):
    """torch's renorm_backward, op for op so that create_graph records torch's nodes."""
    from .complex import conj_physical, real_part
    from .pointwise import reciprocal, where
    dims = _renorm_dims(self, dim)
    norm = linalg_vector_norm(self, p, dims, True, _renorm_norm_dtype(self))
    inner = self * grad
    if _raw(inner).dtype.kind == "c":  # (the norm is real: so is its gradient's input)
        inner = real_part(conj_physical(self) * grad)
    summed = sum_dim(inner, dims, True, dtype=D.from_numpy_dtype(_raw(norm).dtype))
    nb = _vector_norm_grad(summed, self, p, dims, True, norm)
    invnorm = reciprocal(norm + 1e-7)
    factor = invnorm * maxnorm
    return where(norm > maxnorm, factor * grad - (factor * invnorm) * nb, grad)


@renorm.jvp("self")
def _(self_t, self, p, dim, maxnorm):
    """torch's renorm_jvp: ``factor * (t - self / (norm + 1e-7) * norm's tangent)`` where the
    slice is scaled, ``t`` where it is not."""
    from .pointwise import reciprocal, where
    dims = _renorm_dims(self, dim)
    norm = linalg_vector_norm(self, p, dims, True, _renorm_norm_dtype(self))
    invnorm = reciprocal(norm + 1e-7)
    factor = invnorm * maxnorm
    norm_t = _norm_jvp(self_t, self, p, dims, True, norm)
    return where(norm > maxnorm, factor * (self_t - self * invnorm * norm_t), self_t)


@op("dist", tensors=2, quiet=True, node="DistBackward0")
def dist_op(self, other, p=2):
    """torch.dist: the p-norm of ``self - other``, one op (its node is DistBackward0)."""
    diff = self - other
    if diff.dtype.kind not in "fc":
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {D.from_numpy_dtype(diff.dtype).scalar_name} instead.")
    return linalg_vector_norm.kernel(diff, p, None, False, None)


@dist_op.grad("self")
def _(grad, self, other, p, result):
    return _vector_norm_grad(grad, self - other, p, None, False, result)


@dist_op.grad("other")
def _(grad, self, other, p, result):
    g = _vector_norm_grad(grad, self - other, p, None, False, result)
    if g is None:  # torch negates norm_backward's undefined gradient (p = 0) and fails so
        raise RuntimeError("Expected a proper Tensor but got None (or an undefined Tensor in "
                           "C++) for argument #0 'self'")
    return -g


@dist_op.jvp("self", "other", joint=True)
def _(tangents, self, other, p, result):
    # torch's: norm_jvp of self - other along self_t - other_t
    self_t, other_t = tangents
    diff_t = -other_t if self_t is None else self_t if other_t is None else self_t - other_t
    return _norm_jvp(diff_t, self - other, p, None, False, result)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements by default)."""
    if isinstance(dim, int):
        dim = (dim,)
    return linalg_vector_norm(x, ord, dim, keepdim, dtype)


# -- matrix norms --------------------------------------------------------------------------------


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """The matrix ``ord``-norm ('fro', 1, -1, inf, -inf) of the matrices in ``dim`` of ``A``."""
    a = _raw(A)
    if a.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if a.dtype.kind not in "fc" and a.dtype not in D.REDUCED_NP:  # (bfloat16 is a float)
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor "
                           f"as input. Got {_dtype_name(a)}")
    dim = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if len(dim) != 2:
        raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                           + " ".join(str(d) for d in dim))
    d0, d1 = (_wrap_dim(d, a.ndim) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if ord == "fro":
        return linalg_vector_norm(A, 2, (d0, d1), keepdim, dtype)
    if ord == "nuc" or ord in (2, -2):
        # NOTE: these need singular values: ember.linalg composes them from svdvals.
        from .. import linalg
        return linalg.matrix_norm(A, ord, (d0, d1), keepdim, dtype=dtype)
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    # NOTE: torch's composition (so grad_fn names match): the 1-norm over one dim, then the
    # max (ord > 0) or min over the other.
    if builtins.abs(ord) == math.inf:
        d0, d1 = d1, d0
    if not keepdim and d0 < d1:
        d1 -= 1
    col = linalg_vector_norm(A, 1, (d0,), keepdim, dtype)
    return amax(col, d1, keepdim) if ord > 0 else amin(col, d1, keepdim)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):  # noqa: A002
    """The matrix or vector norm of ``input`` (torch.norm's dispatch to linalg)."""
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(p, str):
        if p == "fro" and (dim is None or len(dim) <= 2):
            return linalg_vector_norm(input, 2, dim, keepdim, dtype)
        if dim is None:
            dim = tuple(range(_raw(input).ndim))
        return matrix_norm(input, p, dim, keepdim, dtype=dtype)
    return linalg_vector_norm(input, 2.0 if p is None else p, dim, keepdim, dtype)


Tensor.norm = norm


# -- cdist's own kernels (torch's _cdist_forward / _cdist_backward) ----------------------------
def _pair_differences(x1, x2):
    """x1's rows minus x2's rows, (..., P, R, M), the batch dimensions broadcast."""
    return x1[..., :, None, :] - x2[..., None, :, :]


@op("_cdist_forward", tensors=2, promote=NONE, node="CdistBackward0")
def cdist_forward(x1, x2, p):
    return _norms_of_differences(get_xp(x1, x2).abs(_pair_differences(x1, x2)), p)


def _norms_of_differences(a, p):
    """The p-norms over the last dimension of ``a``, absolute differences (torch's distance
    kernels: a count for p = 0, the maximum for inf)."""
    if p == 0:
        return (a != 0).sum(axis=-1).astype(a.dtype)
    if p == 1:
        return a.sum(axis=-1)
    if p == 2:
        return get_xp(a).sqrt((a * a).sum(axis=-1))
    if math.isinf(p):
        return a.max(axis=-1) if a.shape[-1] else a.sum(axis=-1)
    return (a ** p).sum(axis=-1) ** (1.0 / p)


def _last_two_swapped(x):
    # torch's formula passes grad.mT and cdist.mT made contiguous (CloneBackward0)
    return x.mT.contiguous() if isinstance(x, Tensor) else x.swapaxes(-1, -2)


@cdist_forward.grad("x1")
def _(grad, x1, x2, p, result):
    return cdist_backward(grad, x1, x2, result, p)


@cdist_forward.grad("x2")
def _(grad, x1, x2, p, result):
    return cdist_backward(_last_two_swapped(grad), x2, x1, _last_two_swapped(result), p)


cdist_forward.jvp("x1", "x2")(no_forward_ad("_cdist_forward"))


@op("_euclidean_dist", tensors=2, promote=NONE, node="EuclideanDistBackward0")
def euclidean_dist(x1, x2):
    """torch's matrix product form of p = 2 distances (cdist beyond 25 rows): the squared
    norms and -2 x1 . x2 in one product, clamped at 0 before the square root (so identical
    rows are 0 apart, and their gradient is the subgradient 0, not the ratio of a tiny
    distance)."""
    xp = get_xp(x1, x2)
    n1 = (x1 * x1).sum(-1, keepdims=True)
    n2 = (x2 * x2).sum(-1, keepdims=True)
    a = xp.concatenate([x1 * -2, n1, xp.ones_like(n1)], -1)
    b = xp.concatenate([x2, xp.ones_like(n2), n2], -1)
    return xp.sqrt(xp.maximum(a @ b.swapaxes(-1, -2), x1.dtype.type(0)))


def _euclidean_ratio(grad, result):
    from .pointwise import masked_fill
    return masked_fill(grad / result, eq(result, 0), 0)  # (a subgradient of 0 at 0)


@euclidean_dist.grad("x1")
def _(grad, x1, x2, result):
    from .linalg import matmul
    ratio = _euclidean_ratio(grad, result)
    return x1 * sum_dim(ratio, -1, True) - matmul(ratio, x2)


@euclidean_dist.grad("x2")
def _(grad, x1, x2, result):
    from .linalg import matmul
    from .shape import transpose, unsqueeze
    ratio = _euclidean_ratio(grad, result)
    return x2 * unsqueeze(sum_dim(ratio, -2), -1) - matmul(transpose(ratio, -2, -1), x1)


euclidean_dist.jvp("x1", "x2")(no_forward_ad("_euclidean_dist"))


@op("_cdist_backward", tensors=4, promote=NONE, node="CdistBackwardBackward0")
def cdist_backward(grad, x1, x2, cdist, p):
    """x1's gradient in torch's formulas: each of x1's rows gets the sum over x2's rows (an
    inf-norm tie gives every tied element the full gradient, as torch's kernel)."""
    xp = get_xp(x1, x2)
    d = _pair_differences(x1, x2)
    g = grad[..., None]
    dist = cdist[..., None]
    with np.errstate(all="ignore"):
        if p == 0:
            out = xp.zeros_like(d)
        elif p == 1:
            out = g * xp.sign(d)
        elif p < 2:  # (torch's: 0 where a difference is 0, also between 1 and 2)
            out = xp.where((d == 0) | (dist == 0), 0.0,
                           xp.sign(d) * xp.abs(d) ** (p - 1) * g / dist ** (p - 1))
        elif p == 2:
            out = xp.where(dist == 0, 0.0, g * d / dist)
        elif math.isinf(p):
            out = g * xp.sign(d) * (xp.abs(d) == dist)
        else:
            out = xp.where(dist == 0, 0.0, d * xp.abs(d) ** (p - 2) * g / dist ** (p - 1))
    return out.sum(axis=-2).astype(x1.dtype, copy=False)


cdist_backward.grad("grad", "x1", "x2", "cdist")(derivative_not_implemented("_cdist_backward"))


# -- pdist's own kernels (torch's _pdist_forward / _pdist_backward) ----------------------------
def _row_pairs(x):
    """The (i, j) row indices, i < j, in the order of pdist's result, on ``x``'s device."""
    from .._backend import asarray_like
    i, j = np.triu_indices(x.shape[0], 1)
    return asarray_like(i, x), asarray_like(j, x)


@op("_pdist_forward", promote=NONE, node="PdistBackward0")
def pdist_forward(self, p):
    """The p-norm distances between the rows of a 2-D ``self``, pair by pair (i < j)."""
    i, j = _row_pairs(self)
    return _norms_of_differences(get_xp(self).abs(self[i] - self[j]), p)


@pdist_forward.grad("self")
def _(grad, self, p, result):
    return pdist_backward(grad, self, result, p)


pdist_forward.jvp("self")(no_forward_ad("_pdist_forward"))


@op("_pdist_backward", tensors=3, promote=NONE, node="PdistBackwardBackward0")
def pdist_backward(grad, self, pdist, p):
    """self's gradient in torch's formulas: cdist's of self with itself, the pairs' gradients
    and distances set out as symmetric matrices (the diagonal's zero gradients add nothing)."""
    xp = get_xp(self)
    n = self.shape[0]
    i, j = _row_pairs(self)
    square_grad = xp.zeros((n, n), grad.dtype)
    square_dist = xp.zeros((n, n), pdist.dtype)
    square_grad[i, j] = square_grad[j, i] = grad
    square_dist[i, j] = square_dist[j, i] = pdist
    return cdist_backward.kernel(square_grad, self, self, square_dist, p)


pdist_backward.grad("grad", "self", "pdist")(derivative_not_implemented("_pdist_backward"))


# torch's kernels that write their results through these out= functions, whose autograd
# layer refuses an inference dual (see forward_ad._check_out_function)
_var.out_function = _std.out_function = (
    lambda *args: "sum_out" if _reduces_all(*args) and args[0].numel() else None)
