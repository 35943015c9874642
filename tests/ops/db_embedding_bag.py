"""Op table rows for embedding bags (ember._ops.embedding_bag): F.embedding_bag in every mode,
with offsets or a 2-D input, padding, empty bags and per-sample weights. The derivatives of its
backward are not implemented in torch (tests/test_embedding_bag.py checks those errors), so the
rows have no second-order checks."""
from __future__ import annotations

import numpy as np

import ember
import ember.nn.functional as F
from ember._ops import embedding_bag as EB

from .op_db import C, S, row

_IDX = np.array([0, 2, 2, 4, 1, 3, 0])
_NO_FORWARD = "torch has no forward AD for it (tests/test_embedding_bag.py checks the error)"
_BY_DESIGN = "the gradient is not the derivative by design (frequency scaling)"


def _bags(m):
    idx, offs = C(_IDX), C(np.array([0, 3, 3, 5]))
    return [S("sum", idx, m(5, 3), offs, mode="sum"),
            S("mean", idx, m(5, 3), offs),
            S("max", idx, m(5, 3), offs, mode="max"),
            S("2d_mean", C(_IDX[:6].reshape(2, 3)), m(5, 2)),
            S("2d_max", C(_IDX[:6].reshape(3, 2)), m(5, 2), mode="max"),
            S("last_offset", idx, m(5, 2), C(np.array([0, 2, 7])), mode="sum",
              include_last_offset=True),
            S("padding_mean", idx, m(5, 2), offs, padding_idx=2),
            S("padding_max", idx, m(5, 2), offs, mode="max", padding_idx=-1),
            S("weights", idx, m(5, 3), offs, mode="sum", per_sample_weights=m(7)),
            S("weights_2d", C(_IDX[:6].reshape(2, 3)), m(5, 2), mode="sum",
              per_sample_weights=m(2, 3)),
            S("freq", idx, m(5, 2), offs, scale_grad_by_freq=True, no_gradcheck=_BY_DESIGN),
            S("int32", C(_IDX.astype(np.int32)), m(5, 2), C(np.array([0, 4], np.int32))),
            S("empty_input", C(np.zeros(0, np.int64)), m(3, 2), C(np.array([0, 0])))]


row("embedding_bag", F.embedding_bag, "nn.functional.embedding_bag",
    [EB._embedding_bag, EB._embedding_bag_backward, EB._per_sample_weights_backward], _bags,
    gradgrad=False, skips={"test_forward_ad": _NO_FORWARD})
row("torch_embedding_bag", ember.embedding_bag, "embedding_bag", [EB._embedding_bag],
    lambda m: [S("max", m(5, 3), C(_IDX), C(np.array([0, 3, 3])), False, 2),
               S("mean", m(5, 3), C(_IDX), C(np.array([0, 3, 3])), False, 1),
               S("sum_padding", m(5, 3), C(_IDX), C(np.array([0, 3])), False, 0, False, None,
                 False, 2)],
    gradgrad=False, skips={"test_forward_ad": _NO_FORWARD})
