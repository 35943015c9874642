"""Geometric: the number of failures before the first success."""
from __future__ import annotations

from numbers import Number

import ember
from ember.nn.functional import binary_cross_entropy_with_logits

from .._size import Size
from . import constraints
from .distribution import Distribution
from .utils import (
    _one_of_probs_logits,
    broadcast_all,
    finfo,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ['Geometric']


class Geometric(Distribution):
    """The geometric distribution on {0, 1, ...}: failures before the first success in
    trials of probability ``probs`` (or sigmoid(``logits``))."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        name, value = _one_of_probs_logits(probs, logits)
        (param,) = broadcast_all(value)
        setattr(self, name, param)
        batch_shape = Size() if isinstance(value, Number) else value.size()
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            # probs must also be positive: a success probability of 0 never stops
            valid = self.probs > 0
            if not valid.all():
                invalid_value = self.probs.data[~valid]
                raise ValueError(
                    f"Expected parameter probs ({type(self.probs).__name__} of shape "
                    f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but "
                    f"found invalid values:\n{invalid_value}")

    def expand(self, batch_shape, _instance=None):
        shape = Size(batch_shape)
        expanded = {n: self.__dict__[n].expand(shape) for n in ("probs", "logits")
                    if n in self.__dict__}
        return self._expanded(Geometric, shape, _instance, **expanded)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return ember.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        tiny = finfo(self.probs.dtype).tiny
        with ember.no_grad():
            u = ember.empty(shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u.uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.clone()
        probs[(probs == 1) & (value == 0)] = 0  # 0 * log(0) is 0 here
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs,
                                                reduction="none") / self.probs
