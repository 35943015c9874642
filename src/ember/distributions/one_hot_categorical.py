"""OneHotCategorical: a categorical draw as a one-hot vector."""
from __future__ import annotations

import ember

from .._size import Size
from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ['OneHotCategorical', 'OneHotCategoricalStraightThrough']


class OneHotCategorical(Distribution):
    """Samples are one-hot vectors of size K: Categorical(probs, logits) draws, encoded."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(OneHotCategorical, batch_shape, _instance,
                              _categorical=self._categorical.expand(batch_shape))

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        mode = probs.argmax(dim=-1)
        return ember.nn.functional.one_hot(mode, num_classes=probs.shape[-1]).to(probs)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=Size()):
        indices = self._categorical.sample(Size(sample_shape))
        return ember.nn.functional.one_hot(indices, self._categorical._num_events).to(
            self._categorical.probs)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        indices = value.max(-1)[1]
        return self._categorical.log_prob(indices)

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = ember.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + self.batch_shape + (n,))
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical with the straight-through gradient estimator: ``rsample`` returns
    the one-hot sample whose gradient is that of ``probs``."""

    has_rsample = True

    def rsample(self, sample_shape=Size()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs  # cached from sample()
        return samples + (probs - probs.detach())
