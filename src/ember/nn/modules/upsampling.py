"""``torch.nn.modules.upsampling`` (the layers are defined in pooling.py)."""
from __future__ import annotations

from .pooling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
