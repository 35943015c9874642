"""Op table rows for reductions, scans and sorting (reduction.py, statistics.py, scan.py,
sorting.py); the rows of sum, mean, max/min and norm are in op_db.py."""
from __future__ import annotations

import math

import numpy as np

import ember
import ember.nn.functional as F
from ember._ops import indexing as IX
from ember._ops import pointwise as PW
from ember._ops import reduction as R
from ember._ops import scan as SC
from ember._ops import shape as SH
from ember._ops import sorting as SO
from ember._ops import statistics as ST

from .op_db import ALL_REAL, DT, C, S, method, row

INF = math.inf
_TIE = "not differentiable at a tie (torch's choice of gradient is checked against torch)"


def _np_axis(x, dim):
    if dim is None or x.ndim == 0:
        return None
    return tuple(np.atleast_1d(dim) % x.ndim)


def _distinct(m, *shape):
    """Values without ties in any dtype (ints: a shuffled range), so that indices are defined."""
    if m.floating:
        return m(*shape)
    n = math.prod(shape)
    return m.arr(m.rng.permutation(n).reshape(shape) - n // 2)


def _reduce_samples(m, zero_dim=True, empty=True):
    out = [S("all", m(2, 3)), S("dim1", m(2, 3), 1), S("keep", m(2, 3), 0, True),
           S("tuple", m(2, 3, 4), (0, 2)), S("tuple_keep", m(2, 3, 4), (-1, 1), keepdim=True),
           S("vector", m(5), 0), S("3d_neg", m(2, 1, 3), -2)]
    if zero_dim:
        out += [S("0dim", m()), S("0dim_dim", m(), 0), S("0dim_keep", m(), -1, True)]
    if empty:
        out += [S("empty", m(0, 3)), S("empty_reduced", m(0, 3), 0), S("empty_kept", m(0, 3), 1)]
    return out


# -- nansum / nanmean ----------------------------------------------------------------------------
def _nan_samples(m):
    out = _reduce_samples(m)
    if m.floating:
        out += [S("nans", m.arr([[1.0, np.nan, 2.0], [np.nan, np.nan, -1.0]]), 1),
                S("all_nan", m.arr([np.nan, np.nan]), no_gradcheck="NaN input"),
                S("dtype", m(2, 3), 1, dtype=DT("float64"))]
    return out


def _np_nan(f):
    def ref(x, dim=None, keepdim=False, dtype=None):
        with np.errstate(all="ignore"):
            return f(x, axis=_np_axis(x, dim), keepdims=keepdim)
    return ref


row("nansum", ember.nansum, "nansum", [R._nansum, R.notnan_mask], _nan_samples,
    np_ref=_np_nan(np.nansum), dtypes=("float32", "float64", "int64", "bool"))
row("nansum_method", method("nansum"), None, [R._nansum], _nan_samples)
row("nanmean", ember.nanmean, "nanmean", [R._nansum], _nan_samples,
    np_ref=_np_nan(np.nanmean), dtypes=("float32", "float64", "int64"))
row("nanmean_method", method("nanmean"), None, [R._nansum],
    lambda m: [S("dim", m.arr([[1.0, np.nan, 2.0], [3.0, 4.0, -1.0]]), 1)])


# -- prod ----------------------------------------------------------------------------------------
def _prod_all_samples(m):
    out = [S("scalar", m()), S("vector", m(5)), S("matrix", m(2, 3)), S("empty", m(0, 3)),
           S("dtype", m(2, 2), dtype=DT("float64"))]
    if m.floating:
        out += [S("one_zero", m.arr([[1.5, 0.0], [-2.0, 0.5]])),
                S("two_zeros", m.arr([0.0, 1.5, 0.0, -0.5])),
                S("all_zeros", m.arr([0.0, 0.0, 0.0]))]
    return out


def _prod_dim_samples(m):
    out = [S("dim1", m(2, 3), 1), S("keep", m(2, 3), 0, True), S("neg", m(2, 3, 2), -2),
           S("0dim", m(), 0), S("empty_reduced", m(0, 3), 0), S("empty_kept", m(0, 3), 1),
           S("single", m(3, 1), 1), S("dtype", m(2, 3), 1, dtype=DT("float64"))]
    if m.floating:
        out += [S("zeros", m.arr([[0.0, 1.5, -1.0], [0.0, 0.0, 2.0], [1.0, 0.5, 0.0]]), 1),
                S("zeros_dim0", m.arr([[0.0, 1.5], [0.0, 0.0], [2.0, 0.0]]), 0, True)]
    return out


def _np_prod(x, dim=None, keepdim=False, dtype=None):
    return np.prod(x, axis=_np_axis(x, dim), keepdims=keepdim)


row("prod", ember.prod, "prod", [R.prod_all], _prod_all_samples, np_ref=_np_prod,
    dtypes=("float32", "float64", "int64", "int32", "uint8", "bool"))
row("prod_dim", ember.prod, "prod", [R.prod_dim], _prod_dim_samples, np_ref=_np_prod,
    dtypes=("float32", "float64", "int64", "bool"))
row("prod_method", method("prod"), None, [R.prod_all, R.prod_dim],
    lambda m: [S("all", m(2, 3)), S("dim_kw", m(2, 3), dim=1, keepdim=True)], np_ref=_np_prod)


# -- logsumexp -----------------------------------------------------------------------------------
def _lse_samples(m):
    out = [S("dim1", m(2, 3), 1), S("keep", m(2, 3), 0, True), S("tuple", m(2, 3, 4), (0, 2)),
           S("vector", m(5), 0), S("0dim", m(), 0), S("empty_reduced", m(0, 3), 0),
           S("empty_kept", m(0, 3), 1)]
    if m.floating:
        out += [S("large", m.arr([[1000.0, 1001.0], [-1000.0, -1002.0]]), 1),
                S("neg_inf", m.arr([[-INF, -INF], [-INF, 1.0]]), 1,
                  no_gradcheck="exp(-inf - -inf) is NaN (as in torch)"),
                S("pos_inf", m.arr([INF, 1.0]), 0, no_gradcheck="inf input")]
    return out


def _np_lse(x, dim, keepdim=False):
    x = x.astype(np.float32) if x.dtype.kind in "biu" else x
    with np.errstate(all="ignore"):
        return np.logaddexp.reduce(x, axis=_np_axis(x, dim), keepdims=keepdim)


row("logsumexp", ember.logsumexp, "logsumexp", [R._logsumexp], _lse_samples, np_ref=_np_lse,
    dtypes=("float32", "float64", "int64", "bool"))
row("logsumexp_method", method("logsumexp"), None, [R._logsumexp],
    lambda m: [S("kw", m(2, 3), dim=1, keepdim=True)], np_ref=_np_lse)


# -- all / any / count_nonzero -------------------------------------------------------------------
def _logical_samples(m):
    out = _reduce_samples(m)
    if m.floating:
        out.append(S("nan", m.arr([np.nan, 0.0])))
    return out


def _np_logical(f):
    def ref(x, dim=None, keepdim=False):
        out = f(x, axis=_np_axis(x, dim), keepdims=keepdim)
        return out.astype(np.uint8) if x.dtype == np.uint8 else out
    return ref


for _name, _d, _f in [("all", R._all, np.all), ("any", R._any, np.any)]:
    row(_name, getattr(ember, _name), _name, [_d], _logical_samples, np_ref=_np_logical(_f),
        dtypes=ALL_REAL, differentiable=False)
    row(f"{_name}_method", method(_name), None, [_d],
        lambda m: [S("all", m(2, 3)), S("dim", m(2, 3), 1)], np_ref=_np_logical(_f),
        dtypes=("float32", "int64", "bool"), differentiable=False)


def _cnz_samples(m):
    return [S("all", m(2, 3)), S("dim", m(2, 3), 1), S("tuple", m(2, 3, 4), (0, 2)),
            S("0dim", m()), S("0dim_dim", m(), 0), S("empty", m(0, 3), 0),
            S("neg", m(2, 3), -1)]


row("count_nonzero", ember.count_nonzero, "count_nonzero", [R.count_nonzero], _cnz_samples,
    np_ref=lambda x, dim=None: np.count_nonzero(x, axis=_np_axis(x, dim)),
    dtypes=("float32", "float64", "int64", "uint8", "bool"), differentiable=False)
row("count_nonzero_method", method("count_nonzero"), None, [R.count_nonzero],
    lambda m: [S("dim", m(2, 3), 0)], dtypes=("float32", "int64"), differentiable=False)


# -- amax / amin / argmax / argmin ----------------------------------------------------------------
def _amax_samples(m):
    out = [S("all", m(2, 3)), S("dim1", m(2, 3), 1), S("keep", m(2, 3), 0, True),
           S("tuple", m(2, 3, 4), (0, 2)), S("tuple_keep", m(2, 3, 4), (-1, 0), True),
           S("empty_dims", m(2, 3), ()), S("vector", m(5), 0), S("0dim", m()),
           S("0dim_dim", m(), 0), S("empty_kept", m(0, 3), 1)]
    if m.floating:
        out += [S("ties", m.arr([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]), 1, no_gradcheck=_TIE),
                S("ties_all", m.arr([[1.0, 3.0], [3.0, -1.0]]), no_gradcheck=_TIE),
                S("nan", m.arr([[1.0, np.nan, 3.0], [1.0, 2.0, 0.0]]), 1,
                  no_gradcheck="a NaN maximum")]
    return out


def _np_amax(f):
    def ref(x, dim=(), keepdim=False):
        axis = None if (dim == () or x.ndim == 0) else _np_axis(x, dim)
        return f(x, axis=axis, keepdims=keepdim)
    return ref


for _name, _d, _f in [("amax", R.amax, np.max), ("amin", R.amin, np.min)]:
    row(_name, getattr(ember, _name), _name, [_d], _amax_samples,
        np_ref=_np_amax(_f), dtypes=("float32", "float64", "float16", "int64", "bool"))
    row(f"{_name}_method", method(_name), None, [_d],
        lambda m: [S("kw", m(2, 3), dim=(0, 1), keepdim=True), S("int", m(2, 3), -1)],
        np_ref=_np_amax(_f))


def _aminmax_samples(m):
    out = [S("all", m(2, 3)), S("all_keep", m(2, 3), keepdim=True), S("dim1", m(2, 3), 1),
           S("keep", m(2, 3), 0, True), S("vector", m(5), -1), S("0dim", m()),
           S("0dim_dim", m(), 0)]
    if m.floating:
        out += [S("ties", m.arr([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]), 1, no_gradcheck=_TIE),
                S("ties_all", m.arr([[1.0, 3.0], [3.0, 1.0]]), no_gradcheck=_TIE),
                S("nan", m.arr([[1.0, np.nan, 3.0], [1.0, 2.0, 0.0]]), 1,
                  no_gradcheck="a NaN extreme")]
    return out


def _np_aminmax(x, dim=None, keepdim=False):
    axis = None if (dim is None or x.ndim == 0) else dim
    return np.min(x, axis, keepdims=keepdim), np.max(x, axis, keepdims=keepdim)


# (the op takes dim positionally: the public function's is keyword-only)
row("aminmax", lambda x, dim=None, keepdim=False: x.aminmax(dim=dim, keepdim=keepdim), None,
    [R.aminmax], _aminmax_samples, np_ref=_np_aminmax,
    dtypes=("float32", "float64", "float16", "int64", "bool"))


def _argmax_samples(m):
    out = [S("all", m(2, 3)), S("dim1", m(2, 3), 1), S("keep", m(2, 3), 0, True),
           S("all_keep", m(2, 3), keepdim=True), S("vector", m(5), 0), S("0dim", m()),
           S("0dim_dim", m(), 0, True), S("empty_kept", m(0, 3), 1)]
    if m.floating:
        out += [S("ties", m.arr([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]), 1),
                S("nan", m.arr([[1.0, np.nan, np.nan], [1.0, 2.0, 0.0]]), 1)]
    return out


def _np_argmax(f):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            out = np.asarray(f(x))
            return out.reshape((1,) * x.ndim) if keepdim else out
        if x.ndim == 0:
            return np.asarray(0)
        return f(x, axis=dim, keepdims=keepdim)
    return ref


for _name, _d, _f in [("argmax", R.argmax, np.argmax), ("argmin", R.argmin, np.argmin)]:
    row(_name, getattr(ember, _name), _name, [_d], _argmax_samples, np_ref=_np_argmax(_f),
        dtypes=("float32", "float64", "int64", "bool"), differentiable=False)
    row(f"{_name}_method", method(_name), None, [_d],
        lambda m: [S("kw", m(2, 3), dim=1, keepdim=True)], np_ref=_np_argmax(_f),
        differentiable=False)

# -- max(dim) / min(dim) ties, NaN and empty slices (the plain rows are in op_db.py) -----------


def _max_dim_extra(m):
    return [S("ties", m.arr([[3.0, 1.0, 3.0], [2.0, 2.0, 2.0]]), 1, no_gradcheck=_TIE),
            S("nan", m.arr([1.0, np.nan, 3.0, np.nan]), 0, no_gradcheck="NaN input"),
            S("empty_kept", m(0, 3), 1), S("0dim_keep", m(), -1, True)]


for _name, _d in [("max", R.max_dim), ("min", R.min_dim)]:
    row(f"{_name}_dim_edge", getattr(ember, _name), _name, [_d], _max_dim_extra)


# -- var / std / var_mean / std_mean -------------------------------------------------------------
_DOF = "degrees of freedom <= 0: the result is NaN or inf (checked against torch)"


def _var_samples(m):
    return [S("all", m(2, 3)), S("dim1", m(2, 3), 1), S("keep", m(2, 3), 0, keepdim=True),
            S("tuple", m(2, 3, 4), (0, 2)), S("unbiased_false", m(2, 3), 1, False),
            S("unbiased_pos_all", m(2, 3), False), S("unbiased_kw", m(4), unbiased=False),
            S("correction0", m(2, 3), 1, correction=0),
            S("correction2", m(3, 4), dim=1, correction=2, keepdim=True),
            S("correction_float", m(5), correction=0.5), S("vector", m(5), 0),
            S("3d_keep", m(2, 1, 3), (0, 1), True, True),
            S("0dim", m(), no_gradcheck=_DOF),
            S("0dim_dim", m(), 0, correction=0, no_gradcheck="std is not differentiable at 0"),
            S("one", m(1), no_gradcheck=_DOF), S("one_dim", m(3, 1), 1, no_gradcheck=_DOF),
            S("empty", m(0, 3), no_gradcheck=_DOF), S("empty_kept", m(0, 3), 1),
            S("dof_negative", m(2, 3), 1, correction=4, no_gradcheck=_DOF),
            S("constant", m.arr([1.5, 1.5, 1.5]), no_gradcheck="std is not differentiable "
              "where the deviation is 0")]


def _np_var(f):
    def ref(x, dim=None, unbiased=None, keepdim=False, correction=None):
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        c = correction if correction is not None else (0 if unbiased is False else 1)
        axis = _np_axis(x, dim)
        n = x.size if axis is None else math.prod(x.shape[a] for a in axis)
        with np.errstate(all="ignore"):
            mean = np.sum(x, axis=axis, keepdims=True) / n
            ssq = np.sum((x - mean) ** 2, axis=axis, keepdims=keepdim)
            v = ssq / max(0, n - c)  # torch clips the degrees of freedom at 0
        return f(v, mean if keepdim else mean.reshape(v.shape))
    return ref


_VAR_DTYPES = ("float32", "float64", "float16", "int64")
row("var", ember.var, "var", [ST._var], _var_samples, np_ref=_np_var(lambda v, m: v),
    dtypes=_VAR_DTYPES)
row("std", ember.std, "std", [ST._std], _var_samples,
    np_ref=_np_var(lambda v, m: np.sqrt(v)), dtypes=_VAR_DTYPES)
row("var_mean", ember.var_mean, "var_mean", [ST._var_mean], _var_samples,
    np_ref=_np_var(lambda v, m: (v, m)), dtypes=("float32", "float64", "int64"))
row("std_mean", ember.std_mean, "std_mean", [ST._std_mean], _var_samples,
    np_ref=_np_var(lambda v, m: (np.sqrt(v), m)), dtypes=("float32", "float64", "int64"))
row("var_method", method("var"), None, [ST._var],
    lambda m: [S("dim", m(2, 3), 1, keepdim=True), S("unbiased", m(2, 3), False)])
row("std_method", method("std"), None, [ST._std],
    lambda m: [S("dim", m(2, 3), 1, correction=0), S("all", m(2, 3))])


# -- vector and matrix norms ---------------------------------------------------------------------
_NORM_KINK = "the norm is not differentiable where an element (or the norm) is 0"


def _vector_norm_samples(m):
    return [S("default", m(2, 3)), S("ord1", m(5), 1), S("ord3_dim", m(2, 3), 3, 1),
            S("ord_half", m(2, 3), 0.5), S("ord_1_5", m(4), 1.5, keepdim=True),
            S("ord_neg1", m(2, 3), -1, 0), S("ord_neg_half", m(4), -0.5),
            S("inf", m(2, 3), INF, (0, 1)), S("neg_inf", m(2, 3), -INF, 1, True),
            S("ord0", m(4), 0), S("tuple", m(2, 3, 2), 2, (0, 2)),
            S("tuple_keep", m(2, 3, 2), 4, (-1, 1), True), S("0dim", m(), 2),
            S("0dim_dim", m(), 1, 0), S("empty", m(0, 3)), S("empty_dim", m(0, 3), 1, 1),
            S("dtype", m(2, 3), 2, dtype=DT("float64")),
            S("zeros", m.arr([0.0, 0.0, 0.0]), no_gradcheck=_NORM_KINK),
            S("zeros_p3", m.arr([[0.0, 0.0], [1.0, 0.0]]), 3, 1, no_gradcheck=_NORM_KINK),
            S("zeros_p1_5", m.arr([[0.0, 0.0], [1.0, 0.0]]), 1.5, 1, no_gradcheck=_NORM_KINK),
            S("zeros_half", m.arr([0.0, 1.0, -2.0]), 0.5, no_gradcheck=_NORM_KINK),
            S("inf_ties", m.arr([[1.0, -2.0, 2.0], [0.5, 0.0, -0.5]]), INF, 1,
              no_gradcheck=_TIE)]


def _np_vector_norm(x, ord=2, dim=None, keepdim=False, dtype=None):  # noqa: A002
    axis = _np_axis(x, dim)
    a = np.abs(x.astype(dtype) if dtype is not None else x)
    with np.errstate(all="ignore"):
        if ord == INF:
            return np.max(a, axis=axis, keepdims=keepdim)
        if ord == -INF:
            return np.min(a, axis=axis, keepdims=keepdim)
        if ord == 0:
            return np.sum(a != 0, axis=axis, keepdims=keepdim).astype(a.dtype)
        return np.sum(a ** ord, axis=axis, keepdims=keepdim) ** (1 / ord)


row("vector_norm", ST.vector_norm, "linalg.vector_norm",
    [ST.linalg_vector_norm, ST._inf_norm_mask], _vector_norm_samples, np_ref=_np_vector_norm,
    kinks=(0.0,), dtypes=("float32", "float64", "int64"))
row("dist", ember.dist, "dist", [ST.dist_op],
    lambda m: [S("p2", m(2, 3), m(2, 3)), S("bcast_p3", m(2, 3), m(3), 3),
               S("p1", m(4), m(4), 1), S("p_half", m(2, 3), m(2, 3), 0.5),
               S("inf", m(2, 3), m(1, 3), INF), S("0dim", m(), m(3)),
               S("empty", m(0, 3), m(0, 3))],
    kinks=(0.0,), dtypes=("float32", "float64"))


def _np_renorm(a, p, dim, maxnorm):
    others = tuple(k for k in range(a.ndim) if k != dim % a.ndim)
    norm = _np_vector_norm(a, p, others, True)
    return a * np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1).astype(a.dtype)


row("renorm", ember.renorm, "renorm", [ST.renorm, ST.linalg_vector_norm, ST._inf_norm_mask],
    lambda m: [S("p2_dim0", m(3, 4), 2, 0, 1.5), S("p1_dim1", m(3, 4), 1, 1, 2.0),
               S("p3_3d", m(2, 3, 2), 3, -1, 1.0), S("inf", m(3, 4), INF, 0, 1.0),
               S("p_half", m(2, 3), 0.5, 1, 3.0), S("none_scaled", m(2, 3), 2, 0, 100.0),
               S("empty", m(0, 3), 2, 1, 1.0)],
    np_ref=_np_renorm, kinks=(0.0,), dtypes=("float32", "float64"))
row("renorm_method", lambda x, *a: x.renorm(*a), None, [ST.renorm],
    lambda m: [S("x", m(3, 4), 2, 0, 1.0)], np_ref=_np_renorm)
# torch's _cdist_forward (not the matrix product form it takes for p = 2 beyond 25 rows); its
# gradient's own derivative is not implemented in torch (NotImplementedError)
row("cdist", ember.cdist, "cdist", [ST.cdist_forward, ST.cdist_backward],
    lambda m: [S("p2", m(3, 4), m(5, 4)), S("p1_batch", m(2, 3, 2), m(2, 4, 2), 1.0),
               S("p_half", m(2, 3), m(3, 3), 0.5), S("p3_broadcast", m(2, 1, 2, 3), m(3, 2, 3), 3.0),
               S("p_inf", m(3, 2), m(2, 2), INF), S("p0", m(2, 2), m(3, 2), 0.0),
               S("no_mm", m(2, 3), m(3, 3), compute_mode="donot_use_mm_for_euclid_dist"),
               # (differences of 0 with 1 < p < 2: torch's gradient there is 0, not NaN)
               S("p1_5_zero_diff", m.arr([[0.0, 1.0], [0.5, 2.0]]), m.arr([[0.0, 3.0]]), 1.5)],
    kinks=(0.0,), dtypes=("float32", "float64"), gradgrad=False,
    skips={"test_forward_ad": "torch has no forward-mode derivative of _cdist_forward"})
# p = 2 beyond 25 rows (or asked for): torch's matrix product form, _euclidean_dist
row("cdist_mm", ember.cdist, "cdist", [ST.euclidean_dist],
    lambda m: [S("rows_26", m(26, 3), m(4, 3)), S("rows_30_both", m(30, 2), m(27, 2)),
               S("batch_of_one", m(1, 26, 3), m(1, 5, 3)),
               S("asked", m(3, 4), m(5, 4), compute_mode="use_mm_for_euclid_dist")],
    kinks=(0.0,), dtypes=("float32", "float64"),
    skips={"test_forward_ad": "torch has no forward-mode derivative of _euclidean_dist"})
row("_cdist_backward", ST.cdist_backward,
    lambda torch: lambda g, x1, x2, cdist, p: torch.ops.aten._cdist_backward(g, x1, x2, p, cdist),
    [ST.cdist_backward], lambda m: [
        S("p2", m(3, 5), m(3, 4), m(5, 4), C(m(3, 5, low=0.5, high=2.0)), 2.0),
        S("p_inf", m(2, 3), m(2, 2), m(3, 2), C(m(2, 3, low=0.5, high=2.0)), INF),
        S("p_half", m(2, 3), m(2, 2), m(3, 2), C(m(2, 3, low=0.5, high=2.0)), 0.5)],
    dtypes=("float32", "float64"), differentiable=False, public=False)
def _np_pdist(x, p=2.0):
    i, j = np.triu_indices(x.shape[0], 1)
    return _np_vector_norm(x[i] - x[j], p, (1,), False)


def _pdist_samples(m):
    return [S("p2", m(4, 3)), S("p1", m(3, 2), 1), S("p_half", m(3, 4), 0.5),
            S("p1_5", m(4, 2), 1.5), S("p3", m(3, 3), 3.0), S("p_inf", m(3, 2), INF),
            S("p0", m(3, 2), 0), S("transposed", m(3, 4).T), S("one_row", m(1, 3)),
            S("no_columns", m(3, 0)), S("zero_diff_p1_5", m.arr([[0.0, 1.0], [0.0, 2.0],
                                                                  [1.0, 1.0]]), 1.5)]


# torch's _pdist_forward; its gradient's own derivative is not implemented in torch
for _name, _fn, _ref in (("pdist", ember.pdist, "pdist"),
                         ("nn.functional.pdist", F.pdist, "nn.functional.pdist")):
    row(_name, _fn, _ref, [ST.pdist_forward, ST.pdist_backward, ST.cdist_backward],
        _pdist_samples, np_ref=_np_pdist, kinks=(0.0,), gradgrad=False,
        skips={"test_forward_ad": "torch has no forward-mode derivative of _pdist_forward"})
row("_pdist_backward", ST.pdist_backward,
    lambda torch: lambda g, x, pdist, p: torch.ops.aten._pdist_backward(g, x, p, pdist),
    [ST.pdist_backward], lambda m: [
        S("p2", m(3), m(3, 4), C(m(3, low=0.5, high=2.0)), 2.0),
        S("p_inf", m(6), m(4, 2), C(m(6, low=0.5, high=2.0)), INF),
        S("p_half", m(3), m(3, 2), C(m(3, low=0.5, high=2.0)), 0.5)],
    dtypes=("float32", "float64"), differentiable=False, public=False)
row("norm_fn", ember.norm, "norm", [ST.linalg_vector_norm],
    lambda m: [S("p_none", m(2, 3), None), S("int_dim", m(2, 3), 2, 1),
               S("fro_dims", m(2, 3, 4), "fro", (0, 2), True), S("p_inf", m(3), INF),
               S("matrix_1", m(2, 3), 1.0, None), S("fro_0dim", m()),
               S("dtype", m(2, 3), 2, dtype=DT("float64")), S("nuc", m(3, 2), "nuc")],
    kinks=(0.0,), dtypes=("float32", "float64", "int64"))


def _matrix_norm_samples(m):
    return [S("fro", m(2, 3)), S("ord1", m(3, 4), 1), S("ord_neg1", m(3, 4), -1),
            S("inf", m(3, 4), INF), S("neg_inf", m(3, 4), -INF),
            S("batch", m(2, 3, 4), 1, (0, 2)), S("batch_keep", m(2, 3, 4), INF, (2, 0), True),
            S("keep", m(3, 4), -1, keepdim=True), S("fro_dims", m(2, 3, 4), "fro", (0, 1)),
            S("neg_dims", m(2, 3, 4), -INF, (-1, -3)),
            S("dtype", m(2, 3), 1, dtype=DT("float64")), S("empty_ord1", m(0, 3), 1),
            S("nuc", m(3, 4), "nuc"), S("nuc_keep", m(2, 3, 4), "nuc", (0, 2), True),
            S("ord2", m(2, 3, 4), 2), S("ord_neg2", m(3, 2), -2, (1, 0))]


row("matrix_norm", ST.matrix_norm, "linalg.matrix_norm",
    [ST.linalg_vector_norm, R.amax, R.amin], _matrix_norm_samples,
    kinks=(0.0,), dtypes=("float32", "float64", "int64"))


# -- scans ---------------------------------------------------------------------------------------
def _scan_samples(m):
    out = [S("dim1", m(2, 3), 1), S("dim0", m(3, 2), 0), S("neg", m(2, 3, 4), -1),
           S("vector", m(5), 0), S("0dim", m(), 0), S("0dim_neg", m(), -1),
           S("empty", m(0, 3), 0), S("empty_kept", m(0, 3), 1), S("single", m(3, 1), 1)]
    return out


def _np_scan(f):
    def ref(x, dim, dtype=None):
        if x.ndim == 0:
            return x.astype(np.int64) if x.dtype.kind in "biu" else x
        acc = dtype if dtype is not None else (np.int64 if x.dtype.kind in "biu" else None)
        return f(x, axis=dim, dtype=acc)
    return ref


row("cumsum", ember.cumsum, "cumsum", [SC._cumsum, SC.flip_dims],
    lambda m: _scan_samples(m) + [S("dtype", m(2, 3), 1, dtype=DT("float64"))],
    np_ref=_np_scan(np.cumsum), dtypes=("float32", "float64", "float16", "int64", "uint8",
                                        "bool"))
row("cumsum_method", method("cumsum"), None, [SC._cumsum],
    lambda m: [S("kw", m(2, 3), dim=0)], np_ref=_np_scan(np.cumsum))


def _cumprod_samples(m):
    out = _scan_samples(m) + [S("dtype", m(2, 3), 1, dtype=DT("float64"))]
    if m.floating:
        out += [S("one_zero", m.arr([[1.5, 0.0, -2.0, 0.5], [0.5, 2.0, -1.0, 1.5]]), 1),
                S("two_zeros", m.arr([0.0, 1.5, 0.0, -0.5, 2.0]), 0),
                S("zero_first", m.arr([[0.0, 1.5], [2.0, -0.5], [1.0, 0.0]]), 0),
                S("zero_last", m.arr([1.5, -2.0, 0.0]), 0)]
    return out


row("cumprod", ember.cumprod, "cumprod", [SC._cumprod, SC.flip_dims], _cumprod_samples,
    np_ref=_np_scan(np.cumprod), dtypes=("float32", "float64", "int64", "bool"))
row("cumprod_method", method("cumprod"), None, [SC._cumprod],
    lambda m: [S("kw", m(2, 3), dim=1)], np_ref=_np_scan(np.cumprod))


def _lcse_samples(m):
    out = _scan_samples(m)
    if m.floating:
        out.append(S("large", m.arr([1000.0, 1001.0, -1000.0]), 0))
    return out


def _np_lcse(x, dim):
    return x if x.ndim == 0 else np.logaddexp.accumulate(x, axis=dim)


# (the gradient formula takes log|grad|: differentiated at grad = 0, reverse mode's J t is NaN,
# torch's too)
_LCSE_NO_REVERSE_JVP = {"test_forward_ad": "its reverse-mode reference (the gradient w.r.t. "
                        "grad at grad = 0) is NaN, as torch's; tests/test_forward_ad.py::"
                        "test_logcumsumexp_tangent checks the tangent against torch"}
row("logcumsumexp", ember.logcumsumexp, "logcumsumexp", [SC._logcumsumexp, SC.flip_dims],
    _lcse_samples, np_ref=_np_lcse, dtypes=("float32", "float64", "int64"),
    skips=_LCSE_NO_REVERSE_JVP)
row("logcumsumexp_method", method("logcumsumexp"), None, [SC._logcumsumexp],
    lambda m: [S("dim", m(2, 3), 1)], np_ref=_np_lcse, skips=_LCSE_NO_REVERSE_JVP)


def _cummax_samples(m):
    out = _scan_samples(m)
    if m.floating:
        out += [S("ties", m.arr([3.0, 1.0, 3.0, 2.0, 3.0]), 0, no_gradcheck=_TIE),
                S("nan", m.arr([1.0, np.nan, 3.0, 2.0, np.nan]), 0,
                  no_gradcheck="NaN input")]
    return out


for _name, _d in [("cummax", SC._cummax), ("cummin", SC._cummin)]:
    row(_name, getattr(ember, _name), _name, [_d], _cummax_samples,
        dtypes=("float32", "float64", "int64", "bool"))
    row(f"{_name}_method", method(_name), None, [_d],
        lambda m: [S("dim", m(2, 3), 1)])


# -- sorting -------------------------------------------------------------------------------------
def _sort_samples(m):
    d = _distinct
    out = [S("default", d(m, 2, 3)), S("dim0", d(m, 3, 2), 0), S("desc", d(m, 2, 3), 1, True),
           S("kw", d(m, 2, 3, 2), dim=-2, descending=True), S("vector", d(m, 5)),
           S("0dim", m()), S("0dim_dim", m(), 0), S("empty", m(0, 3)), S("empty0", m(0, 3), 0),
           S("ties", m.arr([[2, 1, 2, 1, 0], [1, 1, 1, 0, 0]]), -1, no_gradcheck=_TIE),
           S("ties_desc", m.arr([[2, 1, 2, 1, 0], [1, 1, 1, 0, 0]]), -1, True,
             no_gradcheck=_TIE)]
    if m.floating:
        out.append(S("nan", m.arr([3.0, np.nan, 1.0, np.nan, 2.0]), no_gradcheck="NaN input"))
        out.append(S("nan_desc", m.arr([3.0, np.nan, 1.0, 2.0]), 0, True,
                     no_gradcheck="NaN input"))
    return out


row("sort", ember.sort, "sort", [SO._sort, IX._scatter_src], _sort_samples,
    dtypes=("float32", "float64", "float16", "int64", "bool"))
row("sort_stable", lambda x, *a, **k: ember.sort(x, *a, stable=True, **k),
    lambda torch: lambda x, *a, **k: torch.sort(x, *a, stable=True, **k),
    [SO._sort_stable], lambda m: [S("ties", m.arr([2.0, 1.0, 2.0, 1.0]), no_gradcheck=_TIE),
                                  S("desc", m(2, 3), dim=0, descending=True)])
row("sort_method", method("sort"), None, [SO._sort],
    lambda m: [S("desc", m(2, 3), 0, True), S("stable", m(4), stable=True)])
row("argsort", ember.argsort, "argsort", [SO._argsort],
    lambda m: [s for s in _sort_samples(m) if not s.name.startswith("nan")]
    + ([S("nan", m.arr([3.0, np.nan, 1.0, np.nan, 2.0]), stable=True)] if m.floating else []),
    dtypes=("float32", "float64", "int64", "bool"), differentiable=False)
row("argsort_method", method("argsort"), None, [SO._argsort],
    lambda m: [S("desc", m(2, 3), 1, True)], differentiable=False)
row("msort", ember.msort, "msort", [SO._sort],
    lambda m: [S("matrix", _distinct(m, 3, 2)), S("vector", _distinct(m, 4)),
               S("ties", m.arr([[1, 0], [0, 0], [1, 1]]), no_gradcheck=_TIE)],
    np_ref=lambda x: np.sort(x, axis=0, kind="stable"), dtypes=("float32", "float64", "int64"))


def _topk_samples(m):
    d = _distinct
    return [S("k2", d(m, 2, 4), 2), S("k1_dim0", d(m, 3, 2), 1, 0),
            S("smallest", d(m, 2, 4), 3, largest=False), S("all", d(m, 5), 5),
            S("k0", d(m, 2, 3), 0), S("kw", d(m, 2, 3, 2), k=2, dim=1, largest=True),
            S("0dim", m(), 1), S("0dim_k0", m(), 0), S("empty", m(0, 3), 2)]


row("topk", ember.topk, "topk", [SO._topk, IX._scatter_src], _topk_samples,
    dtypes=("float32", "float64", "int64"))
row("topk_method", method("topk"), None, [SO._topk],
    lambda m: [S("k2", m(2, 4), 2, -1, False)])


def _kth_samples(m):
    d = _distinct
    return [S("k2", d(m, 2, 4), 2), S("k1_dim0", d(m, 3, 2), 1, 0),
            S("keep", d(m, 2, 4), 3, 1, True), S("last", d(m, 5), 5),
            S("0dim", m(), 1), S("empty", m(0, 3), 1, 1), S("kw", d(m, 2, 3), k=2, dim=1, keepdim=True)]


row("kthvalue", ember.kthvalue, "kthvalue", [SO._kthvalue, IX._scatter_src],
    _kth_samples, dtypes=("float32", "float64", "int64"))
row("kthvalue_method", method("kthvalue"), None, [SO._kthvalue],
    lambda m: [S("k2", m(2, 4), 2, 0)])


def _median_all_samples(m):
    out = [S("odd", _distinct(m, 5)), S("even", _distinct(m, 2, 3)), S("scalar", m()),
           S("empty", m(0, 3))]
    if m.floating:
        out += [S("ties", m.arr([1.0, 2.0, 2.0, 3.0]), no_gradcheck=_TIE),
                S("nan", m.arr([1.0, np.nan, 0.5]), no_gradcheck="NaN input")]
    return out


def _np_median(ignore_nan):
    def ref(x):
        flat = x.reshape(-1)
        if ignore_nan:
            flat = flat[~np.isnan(flat)]
        elif np.isnan(flat).any():
            return np.asarray(np.nan, x.dtype)
        return np.sort(flat)[(flat.size - 1) // 2] if flat.size else np.asarray(np.nan)
    return ref


row("median", ember.median, "median", [SO._median, R.same_mask], _median_all_samples,
    np_ref=_np_median(False), dtypes=("float32", "float64", "int64"))
row("nanmedian", ember.nanmedian, "nanmedian", [SO._nanmedian], lambda m: _median_all_samples(m)
    + ([S("all_nan", m.arr([np.nan, np.nan]), no_gradcheck="NaN input"),
        S("nan_ties", m.arr([2.0, np.nan, 1.0, 2.0, 3.0]), no_gradcheck=_TIE)]
       if m.floating else []),
    np_ref=_np_median(True), dtypes=("float32", "float64", "int64"))


def _median_dim_samples(m):
    d = _distinct
    out = [S("dim1", d(m, 2, 4), 1), S("dim0_keep", d(m, 3, 2), 0, True),
           S("odd", d(m, 2, 5), -1), S("0dim", m(), 0), S("empty_kept", m(0, 3), 1),
           S("kw", d(m, 2, 3), dim=1, keepdim=True)]
    if m.floating:
        out += [S("nan", m.arr([[1.0, np.nan, 3.0, 2.0], [1.0, 2.0, 3.0, 4.0]]), 1,
                  no_gradcheck="NaN input")]
    return out


row("median_dim", ember.median, "median", [SO._median_with_dim, IX._scatter_src],
    _median_dim_samples, dtypes=("float32", "float64", "int64"))
row("nanmedian_dim", ember.nanmedian, "nanmedian",
    [SO._nanmedian_with_dim, IX._scatter_src], lambda m: _median_dim_samples(m)
    + ([S("nan_even", m.arr([[1.0, np.nan, 3.0, 2.0, 5.0], [1.0, 2.0, np.nan, 4.0, 0.5]]), 1,
          no_gradcheck="NaN input")] if m.floating else []),
    dtypes=("float32", "float64", "int64"))
row("median_method", method("median"), None, [SO._median, SO._median_with_dim],
    lambda m: [S("all", m(2, 3)), S("dim", m(2, 3), 1)])


def _mode_samples(m):
    tie = {"no_gradcheck": "repeated values: perturbing one changes the mode"}
    return [S("default", m.arr([[1, 2, 2, 1, 3], [5, 5, 4, 4, 4]]), **tie),
            S("dim0", m.arr([[1, 2], [1, 3], [2, 3]]), 0, **tie),
            S("keep", m.arr([[2, 1, 2, 1, 3]]), 1, True, **tie),
            S("distinct", _distinct(m, 2, 3)), S("0dim", m()), S("empty_kept", m(0, 3)),
            S("kw", m.arr([[0, 0, 1], [1, 0, 1]]), dim=1, **tie)]


row("mode", ember.mode, "mode", [SO._mode, IX._scatter_src], _mode_samples,
    dtypes=("float32", "float64", "int64"))
row("mode_method", method("mode"), None, [SO._mode], lambda m: [S("dim", m(2, 3), 0)])


def _np_sample_points(y, x, d):
    """torch's view of ``x`` beside ``y``: a 1-D one along ``d``, a shorter one padded with
    leading dimensions of 1 (NumPy takes the differences of a shorter ``x`` along its own
    axis ``d``)."""
    if x.ndim == 1:
        return x.reshape([x.size if k == d else 1 for k in range(y.ndim)])
    return x.reshape((1,) * (y.ndim - x.ndim) + x.shape)


def _np_trapezoid(y, x=None, *, dx=None, dim=-1):
    if x is None:
        return np.trapezoid(y, dx=1.0 if dx is None else dx, axis=dim)
    return np.trapezoid(y, _np_sample_points(y, x, dim % y.ndim), axis=dim)


def _np_cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    d = dim % y.ndim
    n = y.shape[d]
    left, right = np.take(y, range(n - 1), d), np.take(y, range(1, n), d)
    if x is None:
        steps = 1.0 if dx is None else dx
    else:
        steps = np.diff(_np_sample_points(y, x, d), axis=d)
    return np.cumsum((left + right) * steps / 2, axis=d)


def _trapezoid_samples(m):
    """torch's compositions: the spacing ``dx`` (a number: sums and selects), or sample
    points ``x`` (slices of ``y`` and ``x``: 1-D along ``dim``, or broadcast)."""
    return [S("unit", m(2, 4)), S("dx", m(3, 4), dx=0.5), S("int_dx", m(5), dx=2),
            S("dim0", m(3, 2), dim=0), S("x_1d", m(2, 4), C(m.arr([0.0, 0.5, 1.5, 3.0]))),
            S("x_grad", m(2, 3), m.arr([0.0, 1.0, 3.0])), S("x_same_shape", m(2, 3), m(2, 3)),
            S("x_broadcast", m(2, 3, 4), m(3, 4), dim=1), S("x_dim0", m(3, 2), m(3), dim=0),
            S("one_sample", m(2, 1)), S("no_samples", m(2, 0))]


for _name in ("trapezoid", "trapz"):
    row(_name, getattr(ember, _name), _name, [PW.mul_scalar, PW.div_scalar, SH.slice_],
        _trapezoid_samples, np_ref=_np_trapezoid, dtypes=("float32", "float64", "int64"))
row("cumulative_trapezoid", ember.cumulative_trapezoid, "cumulative_trapezoid",
    [PW.mul_scalar, PW.div_scalar, SH.slice_, SC._cumsum],
    lambda m: [s for s in _trapezoid_samples(m) if s.name != "no_samples"],
    np_ref=_np_cumulative_trapezoid, dtypes=("float32", "float64", "int64"))


def _np_cov(x, *, correction=1, fweights=None, aweights=None):
    return np.cov(x, ddof=correction, fweights=fweights, aweights=aweights)


# torch's compositions (mean, mm, a division, then squeeze: a single variable gives 0-dim)
row("cov", ember.cov, "cov", [],
    lambda m: [S("matrix", m(3, 5)), S("vector", m(5)), S("one_variable", m(1, 5)),
               S("biased", m(2, 4), correction=0),
               S("fweights", m(2, 4), fweights=C(np.asarray([1, 2, 1, 3]))),
               S("aweights", m(2, 4), aweights=C(m(4, low=0.5, high=2.0)))],
    np_ref=_np_cov, dtypes=("float32", "float64"))
row("corrcoef", ember.corrcoef, "corrcoef", [],
    lambda m: [S("matrix", m(3, 5)), S("one_variable", m(1, 5), no_gradcheck=(
        "c / c of a single variable: a constant 1"))],
    np_ref=np.corrcoef, dtypes=("float32", "float64"), kinks=(0.0,))
