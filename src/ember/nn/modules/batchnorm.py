"""``torch.nn.modules.batchnorm``, where libraries import batch norm layers and their bases
from (kornia: ``from torch.nn.modules.batchnorm import _BatchNorm``); ember defines them in
normalization.py, lazy.py and sync_batchnorm.py."""
from __future__ import annotations

from .lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm,  # noqa: F401
                            _NormBase)
from .sync_batchnorm import SyncBatchNorm

__all__ = ["BatchNorm1d", "LazyBatchNorm1d", "BatchNorm2d", "LazyBatchNorm2d", "BatchNorm3d",
           "LazyBatchNorm3d", "SyncBatchNorm"]
