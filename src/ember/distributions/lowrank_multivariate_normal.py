"""LowRankMultivariateNormal: a multivariate normal with covariance W W^T + diag(D)."""
from __future__ import annotations

import math

import ember

from .._size import Size
from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis, _batch_mv
from .utils import _standard_normal, broadcast_tensors, lazy_property

__all__ = ['LowRankMultivariateNormal']


def _plus_identity(m):
    return m + ember.eye(m.shape[-1], dtype=m.dtype, device=m.device)


def _batch_capacitance_tril(W, D):
    """The Cholesky factor of the capacitance matrix I + W^T D^-1 W."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    return ember.linalg.cholesky(_plus_identity(ember.matmul(Wt_Dinv, W)))


def _batch_lowrank_logdet(W, D, capacitance_tril):
    """log det(W W^T + D), by the matrix determinant lemma."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x, by the Woodbury identity."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    Wt_Dinv_x = _batch_mv(Wt_Dinv, x)
    mahalanobis_term1 = (x.pow(2) / D).sum(-1)
    mahalanobis_term2 = _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)
    return mahalanobis_term1 - mahalanobis_term2


class LowRankMultivariateNormal(Distribution):
    """A multivariate normal with mean ``loc`` and covariance
    ``cov_factor @ cov_factor.mT + diag(cov_diag)``: log_prob, entropy and sampling cost
    O(n m^2) rather than O(n^3) for an n x m factor."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        loc_shape = Size(batch_shape) + self.event_shape
        return self._expanded(
            LowRankMultivariateNormal, batch_shape, _instance,
            loc=self.loc.expand(loc_shape), cov_diag=self.cov_diag.expand(loc_shape),
            cov_factor=self.cov_factor.expand(loc_shape + self.cov_factor.shape[-1:]),
            _unbroadcasted_cov_factor=self._unbroadcasted_cov_factor,
            _unbroadcasted_cov_diag=self._unbroadcasted_cov_diag,
            _capacitance_tril=self._capacitance_tril)

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape + self._event_shape

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1)
                + self._unbroadcasted_cov_diag).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        # W W^T + D = D^1/2 (I + K) D^1/2 with K = (D^-1/2 W)(D^-1/2 W)^T: factor I + K,
        # which is well conditioned
        cov_diag_sqrt_unsqueeze = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / cov_diag_sqrt_unsqueeze
        K = _plus_identity(ember.matmul(Dinvsqrt_W, Dinvsqrt_W.mT))
        scale_tril = cov_diag_sqrt_unsqueeze * ember.linalg.cholesky(K)
        return scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        covariance_matrix = (ember.matmul(self._unbroadcasted_cov_factor,
                                          self._unbroadcasted_cov_factor.mT)
                             + ember.diag_embed(self._unbroadcasted_cov_diag))
        return covariance_matrix.expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        # Woodbury: (W W^T + D)^-1 = D^-1 - D^-1 W C^-1 W^T D^-1, C the capacitance
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        A = ember.linalg.solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        precision_matrix = ember.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - A.mT @ A
        return precision_matrix.expand(self._matrix_shape())

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        W_shape = shape[:-1] + self.cov_factor.shape[-1:]
        eps_W = _standard_normal(W_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_D = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def _log_det(self):
        return _batch_lowrank_logdet(self._unbroadcasted_cov_factor,
                                     self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor,
                                       self._unbroadcasted_cov_diag, diff,
                                       self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + m)

    def entropy(self):
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        if len(self._batch_shape) == 0:
            return h
        return h.expand(self._batch_shape)
