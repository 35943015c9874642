"""LKJCholesky: the LKJ distribution over Cholesky factors of correlation matrices."""
from __future__ import annotations

import math

import ember

from .._size import Size
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import _mvlgamma, broadcast_all, finfo

__all__ = ['LKJCholesky']


class LKJCholesky(Distribution):
    """The LKJ distribution (Lewandowski, Kurowicka and Joe, 2009) over ``dim`` x ``dim``
    lower Cholesky factors of correlation matrices: the density of L L^T is proportional to
    det(L L^T) ** (concentration - 1). Sampled by the onion method."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = Size((dim, dim))
        # the Beta marginals of the squared row norms, row by row (row 0 has none)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = ember.arange(self.dim - 1, dtype=self.concentration.dtype,
                              device=self.concentration.device)
        offset = ember.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = Size(batch_shape)
        return self._expanded(LKJCholesky, batch_shape, _instance, dim=self.dim,
                              concentration=self.concentration.expand(batch_shape),
                              _beta=self._beta.expand(batch_shape + (self.dim,)))

    def sample(self, sample_shape=Size()):
        # each row: a direction uniform on the sphere of its length, scaled by the root of
        # a Beta draw, the diagonal completing it to unit norm
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        u_normal = ember.randn(self._extended_shape(sample_shape), dtype=y.dtype,
                               device=y.device).tril(-1)
        u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
        u_hypersphere[..., 0, :].fill_(0.0)  # row 0 has no off-diagonal part (0 / 0 above)
        w = ember.sqrt(y) * u_hypersphere
        eps = finfo(w.dtype).tiny
        diag_elems = ember.clamp(1 - ember.sum(w ** 2, dim=-1), min=eps).sqrt()
        w += ember.diag_embed(diag_elems)
        return w

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ember.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = ember.sum(order * diag_elems.log(), dim=-1)
        # the normaliser, from the Beta marginals
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = ember.lgamma(alpha) * dm1
        numerator = _mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        normalize_term = pi_constant + numerator - denominator
        return unnormalized_log_pdf - normalize_term
