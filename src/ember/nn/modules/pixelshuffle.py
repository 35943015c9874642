"""``torch.nn.modules.pixelshuffle`` (the layers are defined in pooling.py)."""
from __future__ import annotations

from .pooling import PixelShuffle, PixelUnshuffle

__all__ = ["PixelShuffle", "PixelUnshuffle"]
