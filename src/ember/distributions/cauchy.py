"""Cauchy: the Lorentz distribution, a ratio of independent normals."""
from __future__ import annotations

import math

import ember

from .._size import Size
from . import constraints
from .distribution import Distribution

__all__ = ['Cauchy']


class Cauchy(Distribution):
    """The Cauchy distribution with median ``loc`` and half width ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        batch_shape = self._set_params(loc=loc, scale=scale)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return ember.full(self._extended_shape(), math.nan, dtype=self.loc.dtype,
                          device=self.loc.device)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return ember.full(self._extended_shape(), math.inf, dtype=self.loc.dtype,
                          device=self.loc.device)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = ember.empty(shape, dtype=self.loc.dtype, device=self.loc.device).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - (((value - self.loc) / self.scale) ** 2).log1p())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ember.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return ember.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
