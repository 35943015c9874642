"""ExponentialFamily: distributions whose density is exp(<t(x), theta> - F(theta) + k(x))."""
from __future__ import annotations

import ember

from .distribution import Distribution

__all__ = ['ExponentialFamily']


class ExponentialFamily(Distribution):
    """Base class of exponential family distributions: subclasses give their natural
    parameters ``theta`` (``_natural_params``), the log normaliser ``F`` and the carrier
    measure's mean; the entropy (and KL divergences within a family) follow from the
    Bregman divergence of ``F``."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """Entropy from the log normaliser: F(theta) - <theta, grad F(theta)> - E[k(x)]."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = ember.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result += lg_normal
        for theta, g in zip(nparams, gradients):
            result -= (theta * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
