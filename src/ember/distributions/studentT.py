"""StudentT: the t distribution, a normal over the root of a scaled chi-squared."""
from __future__ import annotations

import math

import ember

from .._size import Size
from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal

__all__ = ['StudentT']


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and scale
    ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        m = self.loc.clone()
        m[self.df <= 1] = math.nan  # undefined for df <= 1
        return m

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        m = self.df.clone()
        finite = self.df > 2
        m[finite] = self.scale[finite].pow(2) * self.df[finite] / (self.df[finite] - 2)
        m[(self.df <= 2) & (self.df > 1)] = math.inf
        m[self.df <= 1] = math.nan
        return m

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self._set_params(df=df, loc=loc, scale=scale)
        self._chi2 = Chi2(self.df)
        # batched like its (broadcast) df, even when every parameter is a number
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        shape = Size(batch_shape)
        return self._expanded(StudentT, shape, _instance, df=self.df.expand(shape),
                              loc=self.loc.expand(shape), scale=self.scale.expand(shape),
                              _chi2=self._chi2.expand(shape))

    def rsample(self, sample_shape=Size()):
        # X ~ Normal(0, 1), Z ~ Chi2(df): Y = X / sqrt(Z / df) ~ StudentT(df)
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        y = x * ember.rsqrt(z / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + ember.lgamma(0.5 * self.df) - ember.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * ember.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        lbeta = (ember.lgamma(0.5 * self.df) + math.lgamma(0.5)
                 - ember.lgamma(0.5 * (self.df + 1)))
        return (self.scale.log()
                + 0.5 * (self.df + 1) * (ember.digamma(0.5 * (self.df + 1))
                                         - ember.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
