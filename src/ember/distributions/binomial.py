"""Binomial: the number of successes in total_count independent trials."""
from __future__ import annotations

import ember

from .._size import Size
from . import constraints
from .distribution import Distribution
from .utils import _BinaryParams, _one_of_probs_logits, broadcast_all

__all__ = ['Binomial']


def _clamp_by_zero(x):
    # max(x, 0), with gradient 1/2 at 0 (as (|x| + x) / 2 has)
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


def _set_count_and_param(dist, total_count, probs, logits):
    """Broadcast ``total_count`` with the given one of probs / logits and store both (the
    count in the parameter's dtype)."""
    name, value = _one_of_probs_logits(probs, logits)
    count, param = broadcast_all(total_count, value)
    dist.total_count = count.type_as(param)
    setattr(dist, name, param)
    dist._param = param
    return param.size()


class Binomial(_BinaryParams, Distribution):
    """The binomial distribution: successes among ``total_count`` trials of probability
    ``probs`` (or sigmoid(``logits``)); ``total_count`` may be a tensor."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        batch_shape = _set_count_and_param(self, total_count, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        shape = Size(batch_shape)
        return self._expand_probs_or_logits(Binomial, shape, _instance,
                                            total_count=self.total_count.expand(shape))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = ember.lgamma(self.total_count + 1)
        log_factorial_k = ember.lgamma(value + 1)
        log_factorial_nmk = ember.lgamma(self.total_count - value + 1)
        # n * log(1 + exp(logits)), written to stay finite for large |logits|
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * ember.log1p(ember.exp(-ember.abs(self.logits)))
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def _homogeneous_count(self, what):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total_count

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(ember.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = self._homogeneous_count("enumerate_support")
        values = ember.arange(1 + total_count, dtype=self._param.dtype,
                              device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values
