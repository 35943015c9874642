"""Op table rows for the shape ops of rearrange.py (movedim, repeat, flip, roll, stacks, ...)
and the shape.py additions (alias, mH/H); the older shape rows are in op_db.py."""
from __future__ import annotations

import numpy as np

import ember
from ember._ops import diagonal as DG
from ember._ops import indexing as IX
from ember._ops import inplace_forms as IF
from ember._ops import rearrange as RA
from ember._ops import scan as SC
from ember._ops import shape as SH
from ember._ops import view_scatter as VS

from .op_db import C, S, method, row

_REAL = ("float32", "float64", "int64", "bool")


def _np_unflatten(x, dim, sizes):
    d = dim % x.ndim
    return x.reshape(x.shape[:d] + tuple(sizes) + x.shape[d + 1:])


row("unflatten", ember.unflatten, "unflatten", [SH.view],
    lambda m: [S("mid", m(2, 6, 2), 1, (2, 3)), S("infer", m(2, 6), -1, (-1, 2)),
               S("ones", m(4), 0, (1, 4, 1)), S("empty", m(0, 4), 1, (2, 2))],
    np_ref=_np_unflatten, dtypes=_REAL)
row("unflatten_method", lambda x, d, s: x.unflatten(d, s), None, [SH.view],
    lambda m: [S("last", m(3, 4), -1, (2, 2))], np_ref=_np_unflatten)

row("movedim", ember.movedim, "movedim", [SH._permute, SH.alias],
    lambda m: [S("int", m(2, 3, 4), 0, 2), S("neg", m(2, 3, 4), -1, 0),
               S("tuples", m(2, 3, 4), (0, 1), (2, 0)), S("lists", m(2, 3), [0], [1]),
               S("0dim", m(), 0, -1), S("empty", m(0, 3), 0, 1)],
    np_ref=lambda x, s, d: np.moveaxis(x, s, d) if x.ndim else x, dtypes=_REAL)
row("moveaxis", ember.moveaxis, "moveaxis", [SH._permute],
    lambda m: [S("int", m(2, 3, 4), 2, 0)], np_ref=np.moveaxis)
row("movedim_method", lambda x, s, d: x.movedim(s, d), None, [SH._permute],
    lambda m: [S("int", m(2, 3, 4), 1, 0)], np_ref=np.moveaxis)
row("broadcast_to_fn", ember.broadcast_to, "broadcast_to", [SH._expand],
    lambda m: [S("row", m(3), (2, 3)), S("0dim", m(), (2,)), S("minus1", m(2, 1), (-1, 4))],
    np_ref=lambda x, s: np.broadcast_to(x, tuple(x.shape[i - len(s) + x.ndim] if v == -1
                                                 else v for i, v in enumerate(s))))


def _np_repeat(x, *sizes):
    sizes = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], tuple) else sizes
    return np.tile(x.reshape((1,) * (len(sizes) - x.ndim) + x.shape), sizes)


row("repeat", lambda x, *s: x.repeat(*s), None, [RA._repeat],
    lambda m: [S("same_dims", m(2, 3), 2, 1), S("new_lead", m(2, 3), 2, 1, 3),
               S("tuple", m(3), (2, 2)), S("0dim", m(), 3), S("0dim_none", m(), ()),
               S("zero", m(2, 3), 0, 2), S("empty", m(0, 2), 2, 2)],
    np_ref=_np_repeat, dtypes=_REAL)
row("tile", ember.tile, "tile", [RA._repeat],
    lambda m: [S("short", m(2, 3), (2,)), S("long", m(3), (2, 2)), S("0dim", m(), (2,)),
               S("varargs_like", m(2, 2), [2])],
    np_ref=lambda x, d: np.tile(x, d), dtypes=("float32", "float64", "int64"))
row("tile_method", lambda x, d: x.tile(d), None, [RA._repeat],
    lambda m: [S("x", m(2, 3), (1, 2))], np_ref=np.tile)


def _np_repeat_interleave(x, r, dim=None):
    return np.repeat(x, np.asarray(r) if not isinstance(r, int) else r, axis=dim)


row("repeat_interleave_int", ember.repeat_interleave, "repeat_interleave",
    [SH._expand, SH.clone, SH.view, SH.unsqueeze],
    lambda m: [S("flat", m(2, 3), 2), S("dim0", m(2, 3), 3, 0), S("dim_neg", m(2, 3), 2, -1),
               S("0dim", m(), 3), S("zero", m(2, 3), 0, 1)],
    np_ref=_np_repeat_interleave, dtypes=_REAL)
row("repeat_interleave_tensor", ember.repeat_interleave, "repeat_interleave",
    [IX._index_select, IX._index_add],
    lambda m: [S("dim0", m(3, 2), C(np.array([1, 0, 2])), 0),
               S("flat", m(2, 2), C(np.array([2, 1, 1, 0]))),
               S("one_elem", m(2, 3), C(np.array([2])), 1),
               S("0dim_reps", m(3), C(np.array(2)), 0)],
    np_ref=_np_repeat_interleave)
row("repeat_interleave_method", lambda x, *a, **k: x.repeat_interleave(*a, **k), None,
    [SH._expand, SH.clone, SH.view, SH.unsqueeze],
    lambda m: [S("dim1", m(2, 3), 2, dim=1)], np_ref=_np_repeat_interleave)
row("repeat_interleave_repeats_only", lambda r: ember.repeat_interleave(r),
    lambda torch: lambda r: torch.repeat_interleave(r), [],
    lambda m: [S("x", C(np.array([1, 0, 3]))), S("empty", C(np.zeros(0, np.int64)))],
    np_ref=lambda r: np.repeat(np.arange(len(r)), r), differentiable=False)

row("flip", ember.flip, "flip", [SC.flip_dims],
    lambda m: [S("dim0", m(3, 2), (0,)), S("both", m(3, 2), (0, -1)),
               S("0dim", m(), ()), S("list", m(2, 3, 2), [2, 0]), S("empty", m(0, 3), (1,))],
    np_ref=lambda x, d: np.flip(x, d) if x.ndim else x, dtypes=_REAL)
row("flip_method", lambda x, *d: x.flip(*d), None, [SC.flip_dims],
    lambda m: [S("x", m(3, 2), 1)], np_ref=np.flip)
row("fliplr", ember.fliplr, "fliplr", [SC.flip_dims],
    lambda m: [S("matrix", m(3, 2)), S("3d", m(2, 3, 2))], np_ref=np.fliplr)
row("flipud", ember.flipud, "flipud", [SC.flip_dims],
    lambda m: [S("vector", m(3)), S("matrix", m(3, 2))], np_ref=np.flipud)


def _np_roll(x, shifts, dims=None):
    return np.roll(x, shifts, dims) if x.ndim else x


row("roll", ember.roll, "roll", [RA._roll],
    lambda m: [S("flat", m(2, 3), 2), S("dim", m(2, 3), 1, 1), S("neg", m(4), -3, 0),
               S("tuples", m(2, 3), (1, -1), (0, 1)), S("big_shift", m(3), 7, 0),
               S("0dim", m(), 1), S("empty", m(0, 2), 1, 1)],
    np_ref=_np_roll, dtypes=_REAL)
row("roll_method", lambda x, *a: x.roll(*a), None, [RA._roll],
    lambda m: [S("x", m(2, 3), 1, -1)], np_ref=np.roll)

row("rot90", ember.rot90, "rot90", [RA._rot90],
    lambda m: [S("default", m(2, 3)), S("k2", m(2, 3), 2), S("k_neg", m(2, 3), -1),
               S("k0", m(2, 3), 0), S("dims", m(2, 3, 2), 1, (2, 0)), S("k5", m(2, 3), 5)],
    np_ref=lambda x, k=1, dims=(0, 1): np.rot90(x, k, dims), dtypes=_REAL)
row("rot90_method", lambda x, *a: x.rot90(*a), None, [RA._rot90],
    lambda m: [S("x", m(2, 3), 3, [1, 0])], np_ref=lambda x, k, d: np.rot90(x, k, d))

_STACKS = [("hstack", np.hstack), ("vstack", np.vstack), ("dstack", np.dstack),
           ("column_stack", np.column_stack), ("row_stack", np.vstack)]
for _name, _np_fn in _STACKS:
    row(_name, getattr(ember, _name), _name if _name != "row_stack" else "vstack",
        [SH._cat, SH.slice_],
        lambda m: [S("vectors", [m(3), m(3)]), S("matrices", [m(2, 3), m(2, 3)]),
                   S("0dims", [m(), m()]), S("one", [m(2, 2)]), S("3d", [m(2, 2, 1), m(2, 2, 1)])],
        np_ref=_np_fn, dtypes=("float32", "float64", "int64"))


def _np_tensor_split(x, ios, dim=0):
    return tuple(np.array_split(x, ios, axis=dim))


row("tensor_split", ember.tensor_split, "tensor_split", [SH.slice_],
    lambda m: [S("sections", m(7, 2), 3), S("indices", m(2, 6), [1, 4], 1),
               S("more_sections", m(2), 3), S("unsorted", m(5), [3, 1]),
               S("tensor_sections", m(4, 2), C(np.array(2))),
               S("tensor_indices", m(5), C(np.array([1, 3]))), S("neg_dim", m(2, 4), 2, -1)],
    np_ref=lambda x, ios, dim=0: _np_tensor_split(x, ios.tolist() if isinstance(
        ios, np.ndarray) else ios, dim), dtypes=_REAL, host_args=(1,))
row("tensor_split_method", lambda x, *a: x.tensor_split(*a), None, [SH.slice_],
    lambda m: [S("x", m(5, 2), 2)], np_ref=_np_tensor_split)

row("narrow", ember.narrow, "narrow", [SH.slice_],
    lambda m: [S("dim0", m(4, 3), 0, 1, 2), S("neg_dim", m(4, 3), -1, 0, 2),
               S("neg_start", m(4, 3), 0, -2, 2), S("empty", m(4, 3), 1, 3, 0),
               S("tensor_start", m(4, 3), 0, C(np.array(1)), 3)],
    np_ref=lambda x, d, s, n: np.take(x, range(int(s) % x.shape[d], int(s) % x.shape[d] + n),
                                      axis=d), dtypes=_REAL)
row("narrow_method", lambda x, *a: x.narrow(*a), None, [SH.slice_],
    lambda m: [S("x", m(4, 3), 1, 1, 2)])
row("narrow_copy", ember.narrow_copy, "narrow_copy", [RA._narrow_copy, SH.slice_backward],
    lambda m: [S("dim0", m(4, 3), 0, 1, 2), S("neg", m(4, 3), -1, 1, 2),
               S("empty", m(4, 3), 1, 3, 0)],
    np_ref=lambda x, d, s, n: np.take(x, range(s % x.shape[d], s % x.shape[d] + n), axis=d),
    dtypes=_REAL)

for _n, _fn in (("atleast_1d", np.atleast_1d), ("atleast_2d", np.atleast_2d),
                ("atleast_3d", np.atleast_3d)):
    row(_n, getattr(ember, _n), _n, [SH.view] + ([SH.unsqueeze] if _n != "atleast_1d" else []),
        lambda m: [S("0dim", m()), S("vector", m(3)), S("matrix", m(2, 3)),
                   S("3d", m(2, 1, 3)), S("4d", m(1, 2, 1, 2))],
        np_ref=_fn, dtypes=("float32", "float64", "int64"))
    row(f"{_n}_many", lambda *ts, _n=_n: getattr(ember, _n)(*ts),
        lambda torch, _n=_n: lambda *ts: getattr(torch, _n)(*ts),
        [SH.view] + ([SH.unsqueeze] if _n != "atleast_1d" else []),
        lambda m: [S("two", m(), m(3)), S("tuple", (m(2), m(2, 2)))],
        np_ref=lambda *ts, _fn=_fn: _fn(*(ts[0] if len(ts) == 1 else ts)))

row("mH_property", lambda x: x.mH, None, [SH.transpose],
    lambda m: [S("matrix", m(2, 3)), S("3d", m(2, 3, 4))],
    np_ref=lambda x: np.swapaxes(x, -1, -2))
row("H_property", lambda x: x.H, None, [SH.transpose],
    lambda m: [S("matrix", m(2, 3))], np_ref=lambda x: x.T)
row("adjoint", lambda x: x.adjoint(), None, [SH.transpose],
    lambda m: [S("3d", m(2, 3, 4))], np_ref=lambda x: np.swapaxes(x, -1, -2))
row("alias", SH.alias, lambda torch: torch.ops.aten.alias, [SH.alias],
    lambda m: [S("matrix", m(2, 3)), S("0dim", m())], np_ref=np.copy)


def _unpacked_primal(torch):
    """forward AD's primal as torch makes it (``_fw_primal`` needs a dual level)."""
    def primal(x):
        with torch.autograd.forward_ad.dual_level():
            return torch.autograd.forward_ad.unpack_dual(x).primal
    return primal


row("_fw_primal", SH.fw_primal, _unpacked_primal, [SH.fw_primal],
    lambda m: [S("matrix", m(2, 3)), S("0dim", m()), S("empty", m(0, 2))], np_ref=np.copy)
row("swapdims_method", lambda x, a, b: x.swapdims(a, b), None, [SH.transpose],
    lambda m: [S("3d", m(2, 3, 4), 2, 0), S("0dim", m(), 0, 0)],
    np_ref=lambda x, a, b: np.swapaxes(x, a, b) if x.ndim else x)
row("unsqueeze_0dim_neg", lambda x, d: x.unsqueeze(d), None, [SH.unsqueeze],
    lambda m: [S("neg", m(), -1)], np_ref=lambda x, d: np.expand_dims(x, d))
row("squeeze_0dim_dim", lambda x, d: x.squeeze(d), None, [SH._squeeze_dim],
    lambda m: [S("zero", m(), 0), S("neg", m(), -1)], np_ref=lambda x, d: x)

# -- in-place view ops (a clone first: a leaf that requires grad may not be changed in place) --
row("t_", lambda x: x.clone().t_(), None, [IF._t_, SH.clone],
    lambda m: [S("matrix", m(2, 3)), S("vector", m(3))], np_ref=lambda x: x.T)
row("transpose_", lambda x, a, b: x.clone().transpose_(a, b), None, [IF._transpose_, SH.clone],
    lambda m: [S("3d", m(2, 3, 4), 0, 2)], np_ref=lambda x, a, b: np.swapaxes(x, a, b))
row("swapdims_", lambda x, a, b: x.clone().swapdims_(a, b), None, [IF._transpose_, SH.clone],
    lambda m: [S("3d", m(2, 3, 4), -1, 0)], np_ref=lambda x, a, b: np.swapaxes(x, a, b))
row("unsqueeze_", lambda x, d: x.clone().unsqueeze_(d), None, [IF._unsqueeze_, SH.clone],
    lambda m: [S("matrix", m(2, 3), 1), S("0dim", m(), -1)],
    np_ref=lambda x, d: np.expand_dims(x, d))
row("squeeze_", lambda x, *d: x.clone().squeeze_(*d), None,
    [IF._squeeze_all_, IF._squeeze_dim_, IF._squeeze_dims_, SH.clone],
    lambda m: [S("all", m(2, 1, 3, 1)), S("dim", m(2, 1, 3), 1), S("dims", m(1, 2, 1), (0, 2))],
    np_ref=lambda x, *d: np.squeeze(x, *d))
row("as_strided_", lambda x, size, stride: x.clone().as_strided_(size, stride), None,
    [IF._as_strided_, SH.clone], lambda m: [S("window", m(6), (2, 2), (1, 2))],
    np_ref=lambda x, size, stride: np.lib.stride_tricks.as_strided(
        x, size, [s * x.itemsize for s in stride]))
# set_: backward through its NotImplemented node raises (tests/test_storage.py checks that)
row("set_", lambda x, y: x.clone().set_(y), None, [IF._set_source, SH.clone],
    lambda m: [S("tensor", m(3), m(2, 3))], np_ref=lambda x, y: y, differentiable=False)
row("set_storage", lambda x, y: x.clone().set_(y.untyped_storage(), 1, (2, 2)), None,
    [IF._set_storage, SH.clone], lambda m: [S("storage", m(3), m(6))],
    np_ref=lambda x, y: y.reshape(-1)[1:5].reshape(2, 2), differentiable=False)


def _np_block_diag(*arrays):
    blocks = [a.reshape((1, -1) if a.ndim < 2 else a.shape) for a in arrays]
    out = np.zeros(tuple(map(sum, zip(*(b.shape for b in blocks)))),
                   np.result_type(*arrays) if arrays else np.float32)
    row = col = 0
    for b in blocks:
        out[row:row + b.shape[0], col:col + b.shape[1]] = b
        row, col = row + b.shape[0], col + b.shape[1]
    return out


row("block_diag", ember.block_diag, "block_diag", [DG.block_diag_op, SH.slice_],
    lambda m: [S("matrices", m(2, 3), m(1, 2)), S("mixed_dims", m(2, 2), m(3), m(), m(1)),
               S("one", m(2, 3)), S("no_columns", m(2, 0), m(0, 2), m(1, 1))],
    np_ref=_np_block_diag, dtypes=("float32", "float64", "int64", "bool"))
# an empty 1-D input takes a row of the result (1, 0), which torch's block_diag_backward does
# not step over: its gradients of the inputs after it are the wrong blocks (ember's are right,
# gradcheck checks them here)
row("block_diag_empty_vector", ember.block_diag, "block_diag", [DG.block_diag_op],
    lambda m: [S("empty_vector", m(0), m(2, 2), m(1))], np_ref=_np_block_diag,
    skips={t: "torch's gradients after an empty 1-D input are shifted by a row" for t in (
        "test_grad_vs_torch", "test_gradgrad_vs_torch")})
row("block_diag_mixed_dtypes", ember.block_diag, "block_diag", [DG.block_diag_op],
    lambda m: [S("f32_f64", m(2, dtype="float32"), m(1, 2, dtype="float64")),
               S("int_float", C(m(2, 2, dtype="int64")), m(2, dtype="float32"))],
    np_ref=_np_block_diag, dtypes=("float64",),
    skips={t: "float32 inputs: gradcheck needs float64" for t in (
        "test_gradcheck", "test_gradgradcheck")})


def _np_combinations(a, r=2, with_replacement=False):
    import itertools
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    return np.array(list(pick(a, r)), a.dtype).reshape(-1, r) if r else a[:0]


# torch's composition (meshgrid, masked_select, stack): its nodes are those ops'
row("combinations", ember.combinations, "combinations", [IX._masked_select, SH._stack],
    lambda m: [S("pairs", m(4)), S("triples_replacement", m(3), 3, True), S("r1", m(3), 1),
               S("r_over_n", m(2), 3), S("none", m(3), 0), S("empty", m(0), 2),
               S("kw", m(3), r=2, with_replacement=True)],
    np_ref=_np_combinations, dtypes=("float32", "float64", "int64"))



def _np_scattered(view):
    """A NumPy reference of a ``*_scatter`` op: ``view`` of a copy of ``a`` set to ``src``."""
    def ref(a, src, *args, **kwargs):
        out = a.copy()
        view(out, *args, **kwargs)[...] = src
        return out
    return ref


def _np_slice(a, dim=0, start=None, end=None, step=1):
    return a[(slice(None),) * (dim % a.ndim) + (slice(start, end, step),)]


def _np_select(a, dim, index):
    return a[(slice(None),) * (dim % a.ndim) + (index, Ellipsis)]


def _np_diagonal(a, offset=0, dim1=0, dim2=1):
    from ember._ops.diagonal import _diagonal_view  # (a writable view, NumPy's is read-only)
    return _diagonal_view(a, offset, dim1, dim2)


row("slice_scatter", ember.slice_scatter, "slice_scatter", [VS.slice_scatter, SH.slice_],
    lambda m: [S("dim1", m(3, 4), m(3, 2), 1, 1, 3), S("step", m(4, 3), m(2, 3), 0, 0, None, 2),
               S("whole", m(2, 3), m(2, 3)), S("negative", m(3, 4), m(3, 1), -1, -1),
               S("transposed", m(4, 3).T, m(2, 4), 0, 1),
               S("kw", m(3, 4), m(1, 4), start=2)],
    np_ref=_np_scattered(_np_slice), dtypes=("float32", "float64", "int64"))
row("select_scatter", ember.select_scatter, "select_scatter", [VS.select_scatter, SH.select],
    lambda m: [S("dim0", m(3, 4), m(4), 0, 1), S("negative", m(3, 4), m(3), -1, -2),
               S("0dim_src", m(3), m(), 0, 2)],
    np_ref=_np_scattered(_np_select), dtypes=("float32", "float64", "int64"))
row("diagonal_scatter", ember.diagonal_scatter, "diagonal_scatter",
    [VS.diagonal_scatter, DG._diagonal],
    lambda m: [S("main", m(3, 3), m(3)), S("offset", m(3, 4), m(3), 1),
               S("below", m(4, 3), m(3), -1), S("dims", m(2, 3, 4), m(4, 2), 0, 0, 1)],
    np_ref=_np_scattered(_np_diagonal), dtypes=("float32", "float64", "int64"))
row("slice_scatter_method", method("slice_scatter"), None, [VS.slice_scatter],
    lambda m: [S("dim1", m(3, 4), m(3, 2), 1, 1, 3)], np_ref=_np_scattered(_np_slice))
row("select_scatter_method", method("select_scatter"), None, [VS.select_scatter],
    lambda m: [S("dim0", m(3, 4), m(4), 0, 1)], np_ref=_np_scattered(_np_select))
row("diagonal_scatter_method", method("diagonal_scatter"), None, [VS.diagonal_scatter],
    lambda m: [S("offset", m(3, 4), m(3), 1)], np_ref=_np_scattered(_np_diagonal))
