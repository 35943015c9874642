"""``torch.nn.modules.channelshuffle`` (the layer is defined in pooling.py)."""
from __future__ import annotations

from .pooling import ChannelShuffle

__all__ = ["ChannelShuffle"]
