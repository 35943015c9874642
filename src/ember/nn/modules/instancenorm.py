"""``torch.nn.modules.instancenorm``, where libraries import instance norm layers and their
base from; ember defines them in normalization.py and lazy.py."""
from __future__ import annotations

from .lazy import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d
from .normalization import (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,  # noqa: F401
                            _InstanceNorm, _NormBase)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]
