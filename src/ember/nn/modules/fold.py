"""``torch.nn.modules.fold`` (the layers are defined in pooling.py)."""
from __future__ import annotations

from .pooling import Fold, Unfold

__all__ = ["Fold", "Unfold"]
