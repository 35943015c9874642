"""GeneralizedPareto: the distribution of exceedances over a threshold."""
from __future__ import annotations

import math
from numbers import Real

import ember

from .._size import Size
from . import constraints
from .distribution import Distribution

__all__ = ['GeneralizedPareto']


class GeneralizedPareto(Distribution):
    """The generalised Pareto distribution with location ``loc``, scale ``scale`` and shape
    ``concentration`` (0: exponential tail, > 0: heavy tail, < 0: bounded support)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        batch_shape = self._set_params(loc=loc, scale=scale, concentration=concentration)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, batch_shape, _instance,
                                   ("loc", "scale", "concentration"))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = ember.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def _safe_concentration(self):
        """(concentration is ~0, concentration with 1 where it is ~0)."""
        eq_zero = ember.isclose(self.concentration, ember.tensor(0.0))
        safe = ember.where(eq_zero, ember.ones_like(self.concentration), self.concentration)
        return eq_zero, safe

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + ember.ones_like(z)
        where_nonzero = ember.where(y == 0, y, y * ember.log1p(safe_conc * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - ember.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        """log(1 - cdf(value))."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        where_nonzero = -ember.log1p(safe_conc * z) / safe_conc
        return ember.where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value):
        """log(cdf(value))."""
        return ember.log1p(-ember.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return ember.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero = ember.isclose(self.concentration, ember.zeros_like(self.concentration))
        safe_conc = ember.where(eq_zero, ember.ones_like(self.concentration),
                                self.concentration)
        logu = ember.log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * ember.expm1(-safe_conc * logu)
        where_zero = self.loc - self.scale * logu
        return ember.where(eq_zero, where_zero, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        valid = self.concentration < 1
        safe_conc = ember.where(valid, self.concentration, 0.5)
        return ember.where(valid, self.loc + self.scale / (1 - safe_conc), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe_conc = ember.where(valid, self.concentration, 0.25)
        result = self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return ember.where(valid, result, math.nan)

    def entropy(self):
        return ember.broadcast_to(ember.log(self.scale) + self.concentration + 1,
                                  self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = ember.where(self.concentration < 0, lower - self.scale / self.concentration,
                            math.inf)
        return constraints.interval(lower, upper)
