"""Op table rows for LAPACK's QR in Householder form (ember._ops.linalg_geqrf): geqrf (no
derivative, as in torch) and ormqr (any reflectors and scales are valid inputs)."""
from __future__ import annotations

import ember
from ember._ops import linalg_geqrf as GQ

from .op_db import S, row

_ORMQR = ("ormqr is householder_product's full Q times other here (MmBackward0 ... where "
          "torch records one OrmqrBackward0)")

row("geqrf", ember.geqrf, "geqrf", [GQ._geqrf],
    lambda m: [S("tall", m(4, 3)), S("wide", m(2, 4)), S("batch", m(2, 3, 3))],
    differentiable=False)
row("ormqr", ember.ormqr, "ormqr", [],
    lambda m: [S("left", m(4, 3), m(3), m(4, 2)),
               S("left_t", m(3, 3), m(3), m(3, 2), transpose=True),
               S("right", m(4, 2), m(2), m(3, 4), left=False),
               S("right_t_batch", m(2, 3, 2), m(2, 2), m(2, 2, 3), False, True)],
    skips={"test_grad_fn_name": _ORMQR})
