"""NegativeBinomial: successes before total_count failures."""
from __future__ import annotations

import ember
import ember.nn.functional as F

from .._size import Size
from . import constraints
from .binomial import _set_count_and_param
from .distribution import Distribution
from .gamma import Gamma
from .utils import _BinaryParams, lazy_property

__all__ = ['NegativeBinomial']


class NegativeBinomial(_BinaryParams, Distribution):
    """The number of successes (probability ``probs``) before ``total_count`` failures;
    ``total_count`` may be any nonnegative real (a gamma-Poisson mixture)."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        batch_shape = _set_count_and_param(self, total_count, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        shape = Size(batch_shape)
        return self._expand_probs_or_logits(NegativeBinomial, shape, _instance,
                                            total_count=self.total_count.expand(shape))

    @property
    def mean(self):
        return self.total_count * ember.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / ember.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        # the mixing distribution of the Poisson rate
        return Gamma(concentration=self.total_count, rate=ember.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=Size()):
        with ember.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return ember.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * F.logsigmoid(-self.logits)
                                 + value * F.logsigmoid(self.logits))
        log_normalization = (-ember.lgamma(self.total_count + value)
                             + ember.lgamma(1.0 + value) + ember.lgamma(self.total_count))
        # total_count + value == 0 only at value 0 with total_count 0: probability 1
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
