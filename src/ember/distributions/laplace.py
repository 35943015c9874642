"""Laplace: the double exponential distribution."""
from __future__ import annotations

import ember

from .._size import Size
from . import constraints
from .distribution import Distribution
from .utils import finfo

__all__ = ['Laplace']


class Laplace(Distribution):
    """The Laplace distribution with location ``loc`` and scale ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return 2 ** 0.5 * self.scale

    def __init__(self, loc, scale, validate_args=None):
        batch_shape = self._set_params(loc=loc, scale=scale)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Laplace, batch_shape, _instance, ("loc", "scale"))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        # NOTE: u in (-1, 1), its lower end nudged by eps so that log1p(-|u|) stays finite.
        u = ember.empty(shape, dtype=self.loc.dtype, device=self.loc.device)
        u = u.uniform_(finfo(self.loc.dtype).eps - 1, 1)
        return self.loc - self.scale * u.sign() * ember.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -ember.log(2 * self.scale) - ember.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * ember.expm1(
            -(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * ember.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + ember.log(2 * self.scale)
