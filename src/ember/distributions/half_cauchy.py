"""HalfCauchy: |X| for X ~ Cauchy(0, scale)."""
from __future__ import annotations

import math

import ember

from ._folded import _Folded
from .cauchy import Cauchy

__all__ = ['HalfCauchy']


class HalfCauchy(_Folded):
    """The half-Cauchy distribution with scale ``scale``."""

    @staticmethod
    def _symmetric(scale):
        return Cauchy(0, scale, validate_args=False)

    def _as_value(self, value):
        return ember.as_tensor(value, dtype=self.base_dist.scale.dtype,
                               device=self.base_dist.scale.device)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return ember.full(self._extended_shape(), math.inf, dtype=self.scale.dtype,
                          device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance
