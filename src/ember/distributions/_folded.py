"""The half distributions: |X| for X symmetric about 0 (HalfNormal, HalfCauchy)."""
from __future__ import annotations

import math

import ember

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform


class _Folded(TransformedDistribution):
    """|X|, X ~ ``self._symmetric(scale)``: its density is twice X's on [0, inf)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        super().__init__(self._symmetric(scale), AbsTransform(), validate_args=validate_args)

    @staticmethod
    def _symmetric(scale):
        raise NotImplementedError

    def _as_value(self, value):
        return value

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return ember.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = self._as_value(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return ember.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
