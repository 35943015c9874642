"""Op table rows for torch's ``*_copy`` functions (_ops/view_copies.py): each view op's result
as a fresh contiguous tensor, under the view's node name with ``_copy``."""
from __future__ import annotations

import numpy as np

import ember
from ember._ops import view_copies as VC

from .db_strided import _np_as_strided, _pairs
from .op_db import S, row

_REAL = ("float32", "float64", "int64", "bool")


def _np_squeeze(x, dim=None):
    if dim is None:
        return np.squeeze(x)
    dims = dim if isinstance(dim, tuple) else (dim,)
    return np.squeeze(x, tuple(d for d in dims if x.ndim and x.shape[d] == 1))


row("view_copy", ember.view_copy, "view_copy", [VC._view_copy],
    lambda m: [S("2x3_to_3x2", m(2, 3), (3, 2)), S("flat", m(2, 3), (-1,)),
               S("0dim_to_1", m(), (1,)), S("empty", m(0, 3), (3, 0))],
    np_ref=lambda x, s: x.reshape(s), dtypes=_REAL)
row("view_copy_of_transposed", lambda x, s: ember.view_copy(x.t(), s),
    lambda torch: lambda x, s: torch.view_copy(x.t(), s), [VC._view_copy],
    lambda m: [S("flat", m(2, 3), (6,))], np_ref=lambda x, s: x.T.reshape(s))
row("expand_copy", ember.expand_copy, "expand_copy", [VC._expand_copy],
    lambda m: [S("row", m(1, 3), (2, 3)), S("new_lead", m(3), (2, 3)), S("0dim", m(), (3,)),
               S("minus1", m(2, 1), (-1, 3))],
    np_ref=lambda x, s: np.broadcast_to(x, tuple(
        x.shape[i - (len(s) - x.ndim)] if d == -1 else d for i, d in enumerate(s))).copy(),
    dtypes=_REAL)
row("permute_copy", ember.permute_copy, "permute_copy", [VC._permute_copy],
    lambda m: [S("3d", m(2, 3, 4), (2, 0, 1)), S("neg", m(2, 3), (-1, 0)), S("0dim", m(), ())],
    np_ref=lambda x, d: np.transpose(x, d), dtypes=_REAL)
row("t_copy", ember.t_copy, "t_copy", [VC._t_copy],
    lambda m: [S("matrix", m(2, 3)), S("vector", m(3)), S("0dim", m())],
    np_ref=lambda x: x.T, dtypes=_REAL)
row("transpose_copy", ember.transpose_copy, "transpose_copy", [VC._transpose_copy],
    lambda m: [S("matrix", m(2, 3), 0, 1), S("3d_neg", m(2, 3, 4), -1, 0)],
    np_ref=lambda x, a, b: np.swapaxes(x, a, b), dtypes=_REAL)
row("squeeze_copy", ember.squeeze_copy, "squeeze_copy",
    [VC._squeeze_all_copy, VC._squeeze_dim_copy, VC._squeeze_dims_copy],
    lambda m: [S("all", m(1, 3, 1)), S("dim0", m(1, 3), 0), S("dim_noop", m(2, 3), 1),
               S("dims", m(1, 3, 1), (0, 2))],
    np_ref=_np_squeeze, dtypes=_REAL)
row("unsqueeze_copy", ember.unsqueeze_copy, "unsqueeze_copy", [VC._unsqueeze_copy],
    lambda m: [S("front", m(2, 3), 0), S("back", m(2, 3), -1), S("0dim", m(), 0)],
    np_ref=np.expand_dims, dtypes=_REAL)
row("select_copy", ember.select_copy, "select_copy", [VC._select_copy],
    lambda m: [S("dim1", m(2, 3), 1, 0), S("neg_index", m(2, 3), 0, -1)],
    np_ref=lambda x, d, i: np.take(x, i, axis=d), dtypes=_REAL)
row("slice_copy", ember.slice_copy, "slice_copy", [VC._slice_copy],
    lambda m: [S("cols", m(3, 4), 1, 1, 3), S("step", m(5, 2), 0, 0, 5, 2),
               S("defaults", m(3, 2)), S("beyond", m(3, 4), -1, -10, 100)],
    np_ref=lambda x, d=0, s=None, e=None, k=1: x[(slice(None),) * (d % x.ndim) + (
        slice(s, e, k),)], dtypes=_REAL)
row("unfold_copy", ember.unfold_copy, "unfold_copy", [VC._unfold_copy],
    lambda m: [S("frames", m(3, 5), 1, 2, 2), S("rows", m(4, 2), 0, 3, 1)],
    np_ref=lambda x, d, size, step: np.lib.stride_tricks.sliding_window_view(
        x, size, axis=d)[(slice(None),) * d + (slice(None, None, step),)], dtypes=_REAL)
row("as_strided_copy", ember.as_strided_copy, "as_strided_copy", [VC._as_strided_copy],
    lambda m: [S("window", m(12), (3, 3), (2, 1), 1), S("overlap", m(6), (3, 3), (1, 1))],
    np_ref=_np_as_strided, dtypes=_REAL)
row("alias_copy", ember.alias_copy, "alias_copy", [VC._alias_copy],
    lambda m: [S("matrix", m(2, 3)), S("0dim", m())], np_ref=np.copy, dtypes=_REAL)
row("split_copy", ember.split_copy, "split_copy", [VC._split_copy],
    lambda m: [S("rows", m(5, 2), 2), S("cols", m(2, 4), 3, 1)],
    np_ref=lambda x, size, dim=0: tuple(np.split(x, range(size, x.shape[dim], size), dim)),
    dtypes=_REAL)
row("split_with_sizes_copy", ember.split_with_sizes_copy, "split_with_sizes_copy",
    [VC._split_with_sizes_copy],
    lambda m: [S("rows", m(4, 3), [1, 3]), S("cols", m(2, 5), [2, 2, 1], 1)],
    np_ref=lambda x, sizes, dim=0: tuple(np.split(x, np.cumsum(sizes)[:-1], axis=dim)),
    dtypes=_REAL)
row("unbind_copy", ember.unbind_copy, "unbind_copy", [VC._unbind_copy],
    lambda m: [S("dim0", m(3, 2)), S("dim1", m(2, 3), 1)],
    np_ref=lambda x, dim=0: tuple(np.moveaxis(x, dim, 0)), dtypes=_REAL)
row("view_as_real_copy", lambda x: ember.view_as_real_copy(ember.view_as_complex(x)),
    lambda torch: lambda x: torch.view_as_real_copy(torch.view_as_complex(x)),
    [VC._view_as_real_copy], _pairs, np_ref=lambda x: x)
# (torch's copy has no derivative for its complex output: it refuses an input requiring grad)
row("view_as_complex_copy",
    lambda x: ember.view_as_real(ember.view_as_complex_copy(x.detach())),
    lambda torch: lambda x: torch.view_as_real(torch.view_as_complex_copy(x.detach())),
    [VC._view_as_complex_copy], _pairs, np_ref=lambda x: x, differentiable=False)
