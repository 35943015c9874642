"""Op table rows for index_reduce (ember._ops.index_reduce): every reduction with and without
self, repeated indices, along each dim, the method and in-place forms. Values stay away from
ties for amax / amin (their gradients split ties, which gradcheck cannot follow)."""
from __future__ import annotations

import numpy as np

import ember
from ember._ops import index_reduce as IR

from .op_db import C, S, method, row

_IDX0 = C(np.array([0, 2, 0, 1]))
_IDX1 = C(np.array([3, 3, 1]))


def _samples(m):
    out = []
    for reduce in ("prod", "mean", "amax", "amin"):
        for inc in (True, False):
            out.append(S(f"{reduce}_{int(inc)}_dim0", m(3, 4), 0, _IDX0, m(4, 4), reduce,
                         include_self=inc))
        out.append(S(f"{reduce}_dim1", m(3, 4), 1, _IDX1, m(3, 3), reduce))
    out.append(S("prod_3d", m(2, 3, 2), -2, C(np.array([2, 2])), m(2, 2, 2), "prod",
                 include_self=False))
    return out


_NO_FORWARD = {"test_forward_ad": "torch has no forward AD for index_reduce (tests/"
               "test_forward_ad.py::test_index_reduce_refuses_forward_ad checks the error)"}
row("index_reduce", ember.index_reduce, "index_reduce", [IR._index_reduce], _samples,
    domain=(0.5, 2.0), dtypes=("float32", "float64", "int64"), skips=_NO_FORWARD)
row("index_reduce_method", method("index_reduce"), None, [IR._index_reduce],
    lambda m: _samples(m)[:3], skips=_NO_FORWARD)
row("index_reduce_", lambda x, *a, **k: x.clone().index_reduce_(*a, **k), None,
    [IR._index_reduce], lambda m: _samples(m)[3:6], skips=_NO_FORWARD)
