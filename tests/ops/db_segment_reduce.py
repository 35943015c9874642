"""Op table rows for segment_reduce (ember._ops.segment_reduce): every reduction over lengths
with an empty segment, offsets, 2-D lengths along axis 1, an initial value, and exact zeros in
products. torch has no second derivative for it (its backward raises), so neither has ember."""
from __future__ import annotations

import numpy as np

import ember
from ember._ops import segment_reduce as SR

from .op_db import C, S, row

_LENGTHS = C(np.array([2, 0, 3, 1]))
_FULL = C(np.array([2, 1, 3]))
_EMPTY = "an empty segment's value is inf or nan, whose finite differences are nan"


def _samples(m):
    out = []
    for reduce in ("sum", "mean", "max", "min", "prod"):
        out.append(S(f"{reduce}_lengths", m(6), reduce, lengths=_FULL))
        out.append(S(f"{reduce}_2d_axis1", m(2, 3, 2), reduce,
                     lengths=C(np.array([[1, 2], [2, 1]])), axis=1))
        out.append(S(f"{reduce}_empty", m(2, 3, 2), reduce,
                     lengths=C(np.array([[1, 2], [3, 0]])), axis=1,
                     no_gradcheck=_EMPTY if reduce in ("mean", "max", "min") else ""))
    out += [S("sum_offsets", m(6, 2), "sum", offsets=C(np.array([0, 2, 2, 5, 6]))),
            S("mean_initial", m(6), "mean", lengths=_LENGTHS, initial=0.5),
            S("max_initial", m(6), "max", lengths=_LENGTHS, initial=-3.0),
            S("prod_zeros", m.arr([1.5, 0.0, 2.0, 0.0, 0.0, 3.0]), "prod",
              lengths=C(np.array([3, 2, 1])), no_gradcheck="exact zeros (a kink of the product)")]
    return out


row("segment_reduce", ember.segment_reduce, "segment_reduce",
    [SR._segment_reduce, SR._segment_reduce_backward], _samples, gradgrad=False,
    skips={"test_forward_ad": "torch has no forward derivative for segment_reduce either"})
