"""Uniform: the continuous uniform distribution on [low, high)."""
from __future__ import annotations

import math

import ember

from .._size import Size
from . import constraints
from .distribution import Distribution

__all__ = ['Uniform']


class Uniform(Distribution):
    """Uniformly distributed samples from the half-open interval ``[low, high)``."""

    has_rsample = True

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return math.nan * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def __init__(self, low, high, validate_args=None):
        batch_shape = self._set_params(low=low, high=high)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Uniform, batch_shape, _instance, ("low", "high"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        rand = ember.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return ember.log(lb.mul(ub)) - ember.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return ember.log(self.high - self.low)
