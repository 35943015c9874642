"""torch.sparse: products and reductions of sparse COO tensors (see ``_ops/sparse.py``)."""
from __future__ import annotations

from .._ops.sparse import sparse_mm as mm
from .._ops.sparse import sparse_sum as sum  # noqa: A004 - torch's name

__all__ = ["mm", "sum"]
