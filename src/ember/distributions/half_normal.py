"""HalfNormal: |X| for X ~ Normal(0, scale)."""
from __future__ import annotations

import math

from ._folded import _Folded
from .normal import Normal

__all__ = ['HalfNormal']


class HalfNormal(_Folded):
    """The half-normal distribution with scale ``scale``."""

    @staticmethod
    def _symmetric(scale):
        return Normal(0, scale, validate_args=False)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)
