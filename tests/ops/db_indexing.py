"""Op table rows for indexing.py and pad.py: gather/scatter, index_*, masked_*, take,
triangles, diagonals, trace and nn.functional.pad."""
from __future__ import annotations

import numpy as np

import ember
import ember.nn.functional as F
from ember._ops import indexing as IX
from ember._ops import pad as PD
from ember._ops import shape as SH

from .op_db import C, S, method, row

_REAL = ("float32", "float64", "int64")
_TIE = "amax/amin are not differentiable at a tie (the tie rule is checked against torch)"


def _i(*values):
    return C(np.array(values, dtype=np.int64))


def _np_gather(x, dim, index):
    if x.ndim == 0:
        return np.broadcast_to(x, index.shape).copy()
    key = tuple(index if i == dim % x.ndim else np.arange(n).reshape(
        [n if j == i else 1 for j in range(index.ndim)]) for i, n in enumerate(index.shape))
    return x[key]


def _gather_samples(m):
    return [S("dim1", m(3, 4), 1, _i([0, 1, 1], [3, 3, 0], [2, 0, 0])),
            S("dim0_smaller", m(3, 4), 0, _i([2, 0], [0, 0])),
            S("neg_dim", m(2, 3), -1, _i([2, 2, 2, 2], [0, 1, 0, 1])),
            S("0dim", m(), 0, C(np.array(0))), S("0dim_1d_index", m(), 0, _i(0, 0)),
            S("empty", m(3, 2), 1, C(np.zeros((3, 0), np.int64)))]


row("gather", ember.gather, "gather", [IX._gather, IX._scatter_add], _gather_samples,
    np_ref=_np_gather, dtypes=_REAL + ("bool",))
row("gather_method", method("gather"), None, [IX._gather, IX._scatter_add],
    lambda m: [S("x", m(3, 4), 1, _i([0, 3], [1, 1], [2, 0])),
               S("kw", m(3, 4), 0, index=_i([0, 2, 2, 1]))], np_ref=None)
row("take_along_dim", ember.take_along_dim, "take_along_dim", [IX._gather, SH._expand],
    lambda m: [S("dim1", m(3, 4), _i([0, 3], [1, 1], [2, 0]), 1),
               S("bcast", m(3, 1), _i([0, 0, 1, 2]), 0),
               S("flat", m(3, 4), _i(0, 11, 5, 5)), S("neg_dim", m(2, 3), _i([2], [0]), -1),
               S("wrapped", m(3, 4), _i([4], [5], [-1]), 1)],  # (taken modulo the size)
    np_ref=lambda x, i, dim=None: np.take_along_axis(x, i % x.shape[dim], dim)
    if dim is not None else x.reshape(-1)[i], dtypes=_REAL)


def _np_scatter(x, dim, index, src, reduce=None):
    out = x.copy()
    key = tuple(index if i == dim % x.ndim else np.arange(n).reshape(
        [n if j == i else 1 for j in range(index.ndim)]) for i, n in enumerate(index.shape))
    part = src if np.ndim(src) == 0 else src[tuple(slice(0, n) for n in index.shape)]
    if reduce == "add":
        np.add.at(out, key, part)
    elif reduce == "multiply":
        np.multiply.at(out, key, part)
    else:
        out[key] = part
    return out


row("scatter_src", ember.scatter, "scatter", [IX._scatter_src, IX._scatter_value, IX._gather],
    lambda m: [S("dim1", m(3, 4), 1, _i([0, 1], [3, 2], [2, 0]), m(3, 2)),
               S("dim0", m(3, 2), 0, _i([2, 0]), m(1, 2)),
               S("src_bigger", m(3, 4), 1, _i([0], [3], [2]), m(3, 1)),
               S("kw", m(2, 3), 1, index=_i([1], [0]), src=m(2, 1))],
    np_ref=lambda x, d, index, src: _np_scatter(x, d, index, src), dtypes=_REAL)
row("scatter_value", ember.scatter, "scatter", [IX._scatter_value],
    lambda m: [S("float", m(3, 4), 1, _i([0, 1], [3, 2], [2, 0]), 2.5),
               S("kw", m(3, 2), 0, _i([2, 0]), value=-1.0),
               S("dup", m(3), 0, _i(1, 1), 7.0)],
    np_ref=lambda x, d, i, src=None, value=None: _np_scatter(
        x, d, i, np.asarray(src if src is not None else value, x.dtype)), dtypes=_REAL)
row("scatter_reduce_arg", ember.scatter, "scatter", [IX._scatter_reduce_arg],
    lambda m: [S("add", m(3, 4), 1, _i([0, 0], [3, 3], [2, 0]), m(3, 2), reduce="add"),
               S("multiply", m(3, 2), 0, _i([2, 2]), m(1, 2), reduce="multiply"),
               S("value_add", m(3), 0, _i(1, 1), 2.0, reduce="add")],
    np_ref=lambda x, d, i, src, reduce: _np_scatter(x, d, i, np.asarray(src, x.dtype), reduce),
    differentiable=False, dtypes=_REAL)
row("scatter_", lambda x, *a, **k: x.clone().scatter_(*a, **k), None,
    [IX._scatter_src, IX._scatter_value, IX._gather, SH.clone],
    lambda m: [S("src", m(3, 4), 1, _i([0, 1], [3, 2], [2, 0]), m(3, 2)),
               S("value", m(3, 2), 0, _i([2, 0]), 3.0)],
    np_ref=lambda x, d, i, s: _np_scatter(x, d, i, s), dtypes=_REAL)
row("scatter_reduce_arg_", lambda x, *a, **k: x.clone().scatter_(*a, **k), None,
    [IX._scatter_reduce_arg, SH.clone],
    lambda m: [S("add", m(3, 2), 0, _i([2, 2]), m(1, 2), reduce="add")],
    np_ref=lambda x, d, i, s, reduce: _np_scatter(x, d, i, s, reduce), differentiable=False)


def _np_scatter_add(x, dim, index, src):
    return _np_scatter(x, dim, index, src, "add")


_DUP = _i([0, 0, 2], [1, 1, 1])
row("scatter_add", ember.scatter_add, "scatter_add", [IX._scatter_add, IX._gather],
    lambda m: [S("dup_dim0", m(3, 3), 0, _DUP, m(2, 3)),
               S("dim1", m(2, 4), 1, _i([3, 3], [0, 1]), m(2, 2)),
               S("0dim", m(), 0, C(np.array(0)), m())],
    np_ref=_np_scatter_add, dtypes=_REAL)
row("scatter_add_", lambda x, *a: x.clone().scatter_add_(*a), None,
    [IX._scatter_add, IX._gather, SH.clone],
    lambda m: [S("dup", m(3, 3), 0, _DUP, m(2, 3))], np_ref=_np_scatter_add, dtypes=_REAL)


def _np_scatter_reduce(x, dim, index, src, reduce, include_self=True):
    key = tuple(index if i == dim % x.ndim else np.arange(n).reshape(
        [n if j == i else 1 for j in range(index.ndim)]) for i, n in enumerate(index.shape))
    part = src[tuple(slice(0, n) for n in index.shape)]
    out = x.copy()
    hit = np.zeros(x.shape, bool)
    hit[key] = True
    cnt = np.zeros(x.shape, np.int64)
    np.add.at(cnt, key, 1)
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
             "amin": np.minimum}[reduce]
    if not include_self:
        ident = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
        if ident is None:
            ident = (-np.inf if reduce == "amax" else np.inf) if x.dtype.kind == "f" else (
                np.iinfo(x.dtype).min if reduce == "amax" else np.iinfo(x.dtype).max)
        out[hit] = ident
    ufunc.at(out, key, part)
    if reduce == "mean":
        n = np.maximum(cnt + (1 if include_self else 0), 1)
        out = out // n if x.dtype.kind in "iu" else (out / n).astype(x.dtype)
    return out


def _scatter_reduce_samples(m):
    out = []
    idx = _i([0, 0, 2], [1, 0, 1])
    for red in ("sum", "prod", "mean", "amax", "amin"):
        tie = _TIE if red in ("amax", "amin") else ""
        out.append(S(red, m(3, 3), 0, idx, m(2, 3), red))
        out.append(S(f"{red}_excl", m(3, 3), 0, idx, m(2, 3), red, include_self=False))
        out.append(S(f"{red}_dim1", m(2, 4), 1, _i([3, 3], [0, 0]), m(2, 2), red))
        if red in ("amax", "amin"):
            ties = m.arr([[1.0, 2.0], [0.5, 0.5]])
            out.append(S(f"{red}_tie", m.arr([[1.0, 0.0, 3.0], [2.0, 0.5, 1.0]]), 1,
                         _i([0, 2], [1, 1]), ties, red, no_gradcheck=tie))
    out.append(S("prod_zero", m.arr([[1.0, 0.0], [2.0, 3.0]]), 0, _i([0, 0], [0, 0]),
                 m.arr([[0.0, 2.0], [1.5, 0.5]]), "prod"))
    return out


row("scatter_reduce", ember.scatter_reduce, "scatter_reduce", [IX._scatter_reduce, IX._gather,
                                                               IX._scatter_add,
                                                               IX._scatter_value],
    _scatter_reduce_samples, np_ref=_np_scatter_reduce, dtypes=_REAL)
row("scatter_reduce_", lambda x, *a, **k: x.clone().scatter_reduce_(*a, **k), None,
    [IX._scatter_reduce, SH.clone],
    lambda m: [S("sum", m(3, 3), 0, _DUP, m(2, 3), "sum"),
               S("mean_excl", m(3, 3), 0, _DUP, m(2, 3), "mean", include_self=False)],
    np_ref=_np_scatter_reduce, dtypes=_REAL)


def _np_index_select(x, dim, index):
    return np.take(x, index.reshape(-1), axis=dim) if x.ndim else x.copy()


row("index_select", ember.index_select, "index_select", [IX._index_select, IX._index_add],
    lambda m: [S("dup", m(3, 4), 0, _i(0, 2, 2, 0)), S("dim1", m(3, 4), 1, _i(3, 1)),
               S("neg_dim", m(2, 3), -1, _i(0)), S("0dim_index", m(3, 2), 0, C(np.array(1))),
               S("0dim", m(), 0, _i(0)), S("empty", m(3, 2), 0, C(np.zeros(0, np.int64)))],
    np_ref=_np_index_select, dtypes=_REAL + ("bool",))
row("index_select_method", method("index_select"), None, [IX._index_select],
    lambda m: [S("x", m(3, 4), 1, _i(0, 0))], np_ref=_np_index_select)


def _np_index_add(x, dim, index, source, alpha=1):
    out = x.copy()
    np.add.at(out, (slice(None),) * (dim % x.ndim) + (index,), source * alpha)
    return out


row("index_add", ember.index_add, "index_add", [IX._index_add, IX._index_select],
    lambda m: [S("dup", m(3, 2), 0, _i(0, 2, 0), m(3, 2)),
               S("dim1_alpha", m(2, 4), 1, _i(3, 1), m(2, 2), alpha=2),
               S("neg_dim", m(2, 3), -1, _i(1), m(2, 1))],
    np_ref=_np_index_add, dtypes=_REAL)
row("index_add_", lambda x, *a, **k: x.clone().index_add_(*a, **k), None,
    [IX._index_add, SH.clone],
    lambda m: [S("dup", m(3, 2), 0, _i(1, 1), m(2, 2), alpha=-1.5)], np_ref=_np_index_add)


def _np_index_copy(x, dim, index, source):
    out = x.copy()
    out[(slice(None),) * (dim % x.ndim) + (index,)] = source
    return out


row("index_copy", ember.index_copy, "index_copy", [IX._index_copy, IX._index_fill,
                                                   IX._index_select],
    lambda m: [S("rows", m(3, 2), 0, _i(2, 0), m(2, 2)),
               S("cols", m(2, 4), 1, _i(3, 1, 0), m(2, 3))],
    np_ref=_np_index_copy, dtypes=_REAL)
row("index_copy_", lambda x, *a: x.clone().index_copy_(*a), None, [IX._index_copy, SH.clone],
    lambda m: [S("rows", m(3, 2), 0, _i(1), m(1, 2))], np_ref=_np_index_copy)


def _np_index_fill(x, dim, index, value):
    out = x.copy()
    out[(slice(None),) * (dim % x.ndim) + (index.reshape(-1),)] = value
    return out


row("index_fill", ember.index_fill, "index_fill", [IX._index_fill, IX._index_fill_tensor,
                                                   IX._index_select],
    lambda m: [S("scalar", m(3, 4), 1, _i(0, 2), 1.5), S("neg_index", m(3, 2), 0, _i(-1), 2.0),
               S("dup", m(3, 2), 0, _i(1, 1), -1.0), S("0dim_index", m(3, 2), 1, C(np.array(0)), 3.0),
               S("tensor_value", m(3, 4), 1, _i(0, 2, 2), m())],
    np_ref=_np_index_fill, dtypes=_REAL)
row("index_fill_", lambda x, *a: x.clone().index_fill_(*a), None,
    [IX._index_fill, IX._index_fill_tensor, SH.clone],
    lambda m: [S("scalar", m(3, 4), 0, _i(1), 0.5), S("tensor", m(3, 4), 0, _i(1, 2), m())],
    np_ref=_np_index_fill)


def _np_masked_fill(x, mask, value):
    return np.where(mask, value, x).astype(x.dtype)


row("masked_fill", ember.masked_fill, "masked_fill", [IX._masked_fill, IX._masked_fill_tensor,
                                                      SH._expand],
    lambda m: [S("scalar", m(3, 4), C(m.mask(3, 4)), 2.5), S("bcast_mask", m(3, 4),
                                                              C(m.mask(4)), -1.0),
               S("0dim", m(), C(np.array(True)), 1.0),
               S("tensor_value", m(3, 4), C(m.mask(3, 4)), m()),
               S("tensor_value_bcast", m(3, 4), C(m.mask(4)), m()),
               S("empty", m(0, 2), C(m.mask(0, 2)), 1.0)],
    np_ref=_np_masked_fill, dtypes=_REAL + ("bool",))
row("masked_fill_", lambda x, *a: x.clone().masked_fill_(*a), None,
    [IX._masked_fill, IX._masked_fill_tensor, SH.clone],
    lambda m: [S("scalar", m(3, 4), C(m.mask(3, 4)), 2.5), S("tensor", m(3, 4), C(m.mask(4)), m())],
    np_ref=_np_masked_fill, dtypes=_REAL)


def _np_masked_select(x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]


row("masked_select", ember.masked_select, "masked_select", [IX._masked_select,
                                                            IX._masked_scatter],
    lambda m: [S("same", m(3, 4), C(m.mask(3, 4))), S("bcast_mask", m(3, 4), C(m.mask(4))),
               S("bcast_self", m(4), C(m.mask(2, 4))), S("none", m(2, 2), C(np.zeros((2, 2), bool))),
               S("0dim", m(), C(np.array(True)))],
    np_ref=_np_masked_select, dtypes=_REAL + ("bool",))


def _np_masked_scatter(x, mask, source):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    out = np.broadcast_to(x, shape).copy()
    mb = np.broadcast_to(mask, shape)
    out[mb] = source.reshape(-1)[:mb.sum()]
    return out


row("masked_scatter", ember.masked_scatter, "masked_scatter",
    [IX._masked_scatter, IX._masked_fill, IX._masked_select, PD.constant_pad_nd],
    lambda m: [S("same", m(3, 4), C(m.mask(3, 4)), m(3, 4)),
               S("bigger_source", m(2, 2), C(np.array([[True, False], [True, True]])), m(5)),
               S("bcast_mask", m(3, 2), C(np.array([True, False])), m(2, 3))],
    np_ref=_np_masked_scatter, dtypes=_REAL)
row("masked_scatter_", lambda x, *a: x.clone().masked_scatter_(*a), None,
    [IX._masked_scatter, SH.clone],
    lambda m: [S("same", m(3, 4), C(m.mask(3, 4)), m(3, 4))], np_ref=_np_masked_scatter)

row("take", ember.take, "take", [IX._take, IX._put],
    lambda m: [S("dup", m(3, 4), _i(0, 5, 5, 11)), S("neg", m(3, 4), _i([-1, 0], [-12, 3])),
               S("0dim", m(), _i(0, 0)), S("0dim_index", m(2, 2), C(np.array(3)))],
    np_ref=lambda x, i: x.reshape(-1)[i], dtypes=_REAL + ("bool",))
row("take_method", method("take"), None, [IX._take], lambda m: [S("x", m(3, 4), _i(1, 1))],
    np_ref=lambda x, i: x.reshape(-1)[i])



def _np_put(x, index, source, accumulate=False):
    out = x.copy().reshape(-1)
    flat = index.reshape(-1) % max(out.size, 1)
    if accumulate:
        np.add.at(out, flat, source.reshape(-1))
    else:
        out[flat] = source.reshape(-1)
    return out.reshape(x.shape)


def _put_samples(m):
    return [S("x", m(3, 4), _i(0, 5, -1), m(3)),
            S("accumulate_dup", m(3, 4), _i(1, 1, 7), m(3), True),
            S("matrix_index", m(2, 3), _i([0, 1], [4, -4]), m(2, 2)),
            S("0dim", m(), _i(0), m(1)), S("empty_index", m(2, 2), _i(), m(0))]


row("put", ember.put, "put", [IX._put, IX._take], _put_samples, np_ref=_np_put)
row("put_", lambda x, *a: x.clone().put_(*a), None, [IX._put, IX._take, SH.clone],
    lambda m: [S("x", m(2, 3), _i(4, 0), m(2)), S("acc", m(2, 3), _i(2, 2), m(2), True)],
    np_ref=_np_put)


for _n, _np_fn in (("tril", np.tril), ("triu", np.triu)):
    _d = getattr(IX, _n)
    row(_n, getattr(ember, _n), _n, [_d],
        lambda m: [S("square", m(3, 3)), S("wide_k1", m(2, 4), 1), S("tall_kneg", m(4, 2), -1),
                   S("batch", m(2, 3, 3), 0), S("empty", m(0, 3)), S("big_k", m(2, 3), 5)],
        np_ref=_np_fn, dtypes=_REAL + ("bool",))
    row(f"{_n}_", lambda x, *a, _n=_n: getattr(x.clone(), f"{_n}_")(*a), None, [_d, SH.clone],
        lambda m: [S("square", m(3, 3)), S("k", m(3, 4), -1)], np_ref=_np_fn)


def _np_diagonal(x, offset=0, dim1=0, dim2=1):
    return np.diagonal(x, offset, dim1, dim2)


row("diagonal", ember.diagonal, "diagonal", [IX._diagonal, IX.diagonal_backward],
    lambda m: [S("square", m(3, 3)), S("offset", m(3, 4), 1), S("neg_offset", m(3, 4), -2),
               S("dims", m(2, 3, 4), 0, 2, 0), S("neg_dims", m(2, 3, 4), 1, -1, -2),
               S("out_of_range", m(2, 3), 5), S("empty", m(0, 3))],
    np_ref=_np_diagonal, dtypes=_REAL + ("bool",))
row("diagonal_method", lambda x, **k: x.diagonal(**k), None, [IX._diagonal],
    lambda m: [S("kw", m(2, 3, 3), offset=-1, dim1=1, dim2=2)], np_ref=_np_diagonal)
row("diagonal_backward", IX.diagonal_backward,
    lambda torch: lambda g, sizes, o, d1, d2: torch.ops.aten.diagonal_backward(
        g, list(sizes), o, d1, d2),
    [IX.diagonal_backward, IX._diagonal],
    lambda m: [S("square", m(3), (3, 3), 0, 0, 1), S("offset", m(2), (2, 4), 2, 0, 1),
               S("dims", m(3, 2), (2, 3, 4), -1, 2, 0)], public=False)


def _np_diag_embed(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), x.dtype)
    idx = np.arange(x.shape[-1])
    r, c = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[..., r, c] = x
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


row("diag_embed", ember.diag_embed, "diag_embed", [IX._diag_embed, IX._diagonal],
    lambda m: [S("vector", m(3)), S("batch", m(2, 3)), S("offset", m(3), 1),
               S("neg_offset", m(2, 2), -1), S("dims", m(2, 3), 0, 0, 2)],
    np_ref=_np_diag_embed, dtypes=_REAL)
row("diag", ember.diag, "diag", [IX._diag_embed, IX._diagonal_copy, IX.diagonal_backward],
    lambda m: [S("vector", m(3)), S("vector_offset", m(3), -1), S("matrix", m(3, 4)),
               S("matrix_offset", m(3, 4), 2), S("matrix_neg", m(3, 4), -1)],
    np_ref=np.diag, dtypes=_REAL + ("bool",))
row("diag_method", lambda x, *a: x.diag(*a), None, [IX._diagonal_copy],
    lambda m: [S("x", m(3, 3), 1)], np_ref=np.diag)
row("trace", ember.trace, "trace", [IX._trace, IX.diagonal_backward],
    lambda m: [S("square", m(3, 3)), S("wide", m(2, 4)), S("tall", m(4, 1)),
               S("empty", m(0, 3))],
    np_ref=lambda x: np.trace(x, dtype=np.int64 if x.dtype.kind in "iub" else None),
    dtypes=_REAL)
row("trace_method", method("trace"), None, [IX._trace], lambda m: [S("x", m(2, 2))],
    np_ref=np.trace)


def _np_pad(x, pad, mode="constant", value=None):
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode == "constant":
        key = tuple(slice(-min(a, 0), x.shape[d] + min(b, 0) if b < 0 else None)
                    for d, (a, b) in enumerate(widths))
        return np.pad(x[key], [(max(a, 0), max(b, 0)) for a, b in widths],
                      constant_values=value or 0)
    np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    return np.pad(x, widths, mode=np_mode)


row("pad_constant", F.pad, "nn.functional.pad", [PD.constant_pad_nd],
    lambda m: [S("last", m(2, 3), (1, 2)), S("two_dims", m(2, 3), (1, 0, 0, 2)),
               S("value", m(3), (2, 1), value=1.5), S("negative", m(2, 4), (-1, 1)),
               S("crop_both", m(3, 4), (-1, -1, -1, 0)), S("empty_pad", m(2, 2), ()),
               S("0dim_list", m(2), [0, 0])],
    np_ref=_np_pad, dtypes=_REAL + ("bool",))
row("pad_reflect", F.pad, "nn.functional.pad",
    [PD.reflection_pad1d, PD.reflection_pad2d, PD.reflection_pad3d, PD.pad_backward],
    lambda m: [S("1d", m(2, 5), (2, 1), "reflect"), S("1d_batch", m(2, 2, 4), (3, 3), "reflect"),
               S("2d", m(1, 3, 4), (1, 2, 2, 1), "reflect"),
               S("3d", m(1, 3, 3, 3), (1, 1, 2, 0, 0, 2), mode="reflect")],
    np_ref=_np_pad)
row("pad_replicate", F.pad, "nn.functional.pad",
    [PD.replication_pad1d, PD.replication_pad2d, PD.replication_pad3d, PD.pad_backward],
    lambda m: [S("1d", m(2, 3), (3, 1), "replicate"), S("2d", m(2, 2, 3), (1, 2, 3, 0),
                                                         "replicate"),
               S("3d", m(1, 1, 2, 2, 2), (1, 1, 1, 1, 1, 1), mode="replicate")],
    np_ref=_np_pad)
row("pad_circular", F.pad, "nn.functional.pad", [],
    lambda m: [S("1d", m(2, 4), (2, 1), "circular"), S("2d", m(1, 3, 4), (1, 2, 3, 0),
                                                        "circular"),
               S("full_wrap", m(1, 3), (3, 3), mode="circular")],
    np_ref=_np_pad)
row("constant_pad_nd", PD.constant_pad_nd,
    lambda torch: lambda x, p, v=0: torch.constant_pad_nd(x, p, v), [PD.constant_pad_nd],
    lambda m: [S("x", m(2, 3), (1, -1, 2, 0), 0.5)], public=False)
row("pad_backward", PD.pad_backward,
    lambda torch: lambda g, sizes, idx, name: torch.ops.aten.reflection_pad1d_backward(
        g, torch.zeros(sizes, dtype=g.dtype), [2, 1]),
    [PD.pad_backward, PD.reflection_pad1d],
    lambda m: [S("reflect1d", m(1, 6), (1, 3), ((1, (2, 1, 0, 1, 2, 1)),),
                 "reflection_pad1d")], public=False)

# torch.index_put (out of place): the indices are a tuple of tensors
row("index_put", ember.index_put, "index_put", [IX._index_put],
    lambda m: [S("rows", m(3, 2), (_i(2, 0),), m(2, 2)),
               S("accumulate_repeats", m(3, 2), (_i(1, 1),), m(2, 2), accumulate=True),
               S("pairs", m(2, 3), (_i(0, 1), _i(2, 0)), m(2))],
    dtypes=_REAL)
