"""torch.sparse: products, reductions and softmaxes of sparse COO tensors (see
``_ops/sparse.py``)."""
from __future__ import annotations

import functools

from .._ops.sparse import sparse_addmm as addmm
from .._ops.sparse import sparse_mm as mm
from .._ops.sparse import sparse_softmax as softmax
from .._ops.sparse import sparse_sum as sum  # noqa: A004 - torch's name

log_softmax = functools.partial(softmax, log=True)

__all__ = ["addmm", "log_softmax", "mm", "softmax", "sum"]
