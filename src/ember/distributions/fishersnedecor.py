"""FisherSnedecor: the F distribution, a ratio of scaled chi-squared variables."""
from __future__ import annotations

import math

import ember

from .._size import Size
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import finfo

__all__ = ['FisherSnedecor']


class FisherSnedecor(Distribution):
    """The F distribution with ``df1`` and ``df2`` degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        batch_shape = self._set_params(df1=df1, df2=df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        shape = Size(batch_shape)
        return self._expanded(FisherSnedecor, shape, _instance, df1=self.df1.expand(shape),
                              df2=self.df2.expand(shape), _gamma1=self._gamma1.expand(shape),
                              _gamma2=self._gamma2.expand(shape))

    @property
    def mean(self):
        df2 = self.df2.clone()
        df2[df2 <= 2] = math.nan
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        mode[self.df1 <= 2] = math.nan
        return mode

    @property
    def variance(self):
        df2 = self.df2.clone()
        df2[df2 <= 4] = math.nan
        return (2 * df2.pow(2) * (self.df1 + df2 - 2)
                / (self.df1 * (df2 - 2).pow(2) * (df2 - 4)))

    def rsample(self, sample_shape=Size(())):
        shape = self._extended_shape(sample_shape)
        # X1 ~ Gamma(df1 / 2, 1 / 2), X2 ~ Gamma(df2 / 2, 1 / 2): (X1 / df1) / (X2 / df2)
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = finfo(x2.dtype).tiny
        x2.clamp_(min=tiny)
        y = x1 / x2
        y.clamp_(min=tiny)
        return y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * ember.log(value)
        t3 = (ct1 + ct2) * ember.log1p(ct3 * value)
        return t1 + t2 - t3
