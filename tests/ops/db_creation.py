"""Op table rows for the differentiable creation helpers (meshgrid, cartesian_prod, tensor
constructors' dtypes are in tests/test_creation.py)."""
from __future__ import annotations

import numpy as np

import ember
from ember._ops import shape as SH

from .op_db import ALL_REAL, S, row


def _np_meshgrid(*ts, indexing="ij"):
    return tuple(np.meshgrid(*ts, indexing=indexing))


row("meshgrid", ember.meshgrid, "meshgrid", [SH._expand, SH.view],
    lambda m: [S("ij", m(2), m(3), indexing="ij"), S("xy", m(2), m(3), indexing="xy"),
               S("three_xy", m(2), m(3), m(4), indexing="xy"), S("one", m(3), indexing="ij"),
               S("0dim", m(), m(2), indexing="ij"), S("list", [m(2), m(2)], indexing="ij")],
    np_ref=lambda *ts, indexing="ij": _np_meshgrid(
        *(ts[0] if isinstance(ts[0], list) else ts), indexing=indexing),
    dtypes=ALL_REAL)
row("cartesian_prod", ember.cartesian_prod, "cartesian_prod", [SH._stack],
    lambda m: [S("two", m(2), m(3)), S("three", m(2), m(1), m(2))],
    np_ref=lambda *ts: np.stack([g.ravel() for g in np.meshgrid(*ts, indexing="ij")], 1),
    dtypes=("float32", "float64", "int64"))
