"""RelaxedBernoulli: the Concrete / Gumbel-softmax relaxation of a Bernoulli."""
from __future__ import annotations

import ember

from .._size import Size
from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import _BinaryParams, _set_probs_or_logits, broadcast_all, clamp_probs

__all__ = ['LogitRelaxedBernoulli', 'RelaxedBernoulli']


class LogitRelaxedBernoulli(_BinaryParams, Distribution):
    """The logit of a RelaxedBernoulli sample (Maddison et al., 2017): a logistic
    distribution with location ``logits`` and scale 1 / ``temperature``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        batch_shape = _set_probs_or_logits(self, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_probs_or_logits(LogitRelaxedBernoulli, batch_shape, _instance,
                                            temperature=self.temperature)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(ember.rand(shape, dtype=probs.dtype, device=probs.device))
        return (uniforms.log() - (-uniforms).log1p() + probs.log()
                - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class _RelaxedParameters:
    """``temperature``, ``logits`` and ``probs`` of a relaxed distribution: its base's."""

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class RelaxedBernoulli(_RelaxedParameters, TransformedDistribution):
    """A reparameterisable relaxation of Bernoulli(probs, logits) on (0, 1), sharper as
    ``temperature`` goes to 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)
