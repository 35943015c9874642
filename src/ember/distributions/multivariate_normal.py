"""MultivariateNormal: the Gaussian distribution on vectors."""
from __future__ import annotations

import math

import ember

from .._size import Size
from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, broadcast_shapes, lazy_property

__all__ = ['MultivariateNormal']


def _batch_mv(bmat, bvec):
    """Matrix-vector products over broadcast batch dimensions."""
    return ember.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """x^T (L L^T)^-1 x for a batch of lower triangular L and vectors x, whose batch
    shape may be larger than L's (it must then be a multiple of L's, dim by dim).

    NOTE: x is reshaped so that L's batch dims pair up with x's, letting one batched
    triangular solve serve every x that shares an L (no copy of L per x).
    """
    n = bx.size(-1)
    bx_batch_shape = bx.shape[:-1]
    bx_batch_dims = len(bx_batch_shape)
    bL_batch_dims = bL.dim() - 2
    outer_batch_dims = bx_batch_dims - bL_batch_dims
    old_batch_dims = outer_batch_dims + bL_batch_dims
    new_batch_dims = outer_batch_dims + 2 * bL_batch_dims
    # split each of x's dims that L broadcasts over as (x's size // L's size, L's size)
    bx_new_shape = bx.shape[:outer_batch_dims]
    for sL, sx in zip(bL.shape[:-2], bx.shape[outer_batch_dims:-1]):
        bx_new_shape += (sx // sL, sL)
    bx_new_shape += (n,)
    bx = bx.reshape(bx_new_shape)
    # move L's dims last among the batch dims
    permute_dims = (list(range(outer_batch_dims))
                    + list(range(outer_batch_dims, new_batch_dims, 2))
                    + list(range(outer_batch_dims + 1, new_batch_dims, 2)) + [new_batch_dims])
    bx = bx.permute(permute_dims)
    flat_L = bL.reshape(-1, n, n)
    flat_x = bx.reshape(-1, flat_L.size(0), n)
    flat_x_swap = flat_x.permute(1, 2, 0)
    m_swap = ember.linalg.solve_triangular(flat_L, flat_x_swap, upper=False).pow(2).sum(-2)
    permuted_m = m_swap.t().reshape(bx.shape[:-1])
    # undo the permutation and the split
    permute_inv_dims = list(range(outer_batch_dims))
    for i in range(bL_batch_dims):
        permute_inv_dims += [outer_batch_dims + i, old_batch_dims + i]
    return permuted_m.permute(permute_inv_dims).reshape(bx_batch_shape)


def _precision_to_scale_tril(P):
    """The lower Cholesky factor of P^-1, without inverting P: the flipped Cholesky
    factor of flipped P is the inverse transpose of the factor wanted."""
    Lf = ember.linalg.cholesky(ember.flip(P, (-2, -1)))
    L_inv = ember.transpose(ember.flip(Lf, (-2, -1)), -2, -1)
    eye = ember.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return ember.linalg.solve_triangular(L_inv, eye, upper=False)


class MultivariateNormal(Distribution):
    """The multivariate normal distribution with mean ``loc`` and exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` (its lower Cholesky
    factor, the cheapest to use)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [(n, m) for n, m in (("scale_tril", scale_tril),
                                     ("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix)) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        name, matrix = given[0]
        if matrix.dim() < 2:
            label = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{label} must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        batch_shape = broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    def expand(self, batch_shape, _instance=None):
        batch_shape = Size(batch_shape)
        cov_shape = batch_shape + self.event_shape + self.event_shape
        expanded = {n: self.__dict__[n].expand(cov_shape)
                    for n in ("covariance_matrix", "scale_tril", "precision_matrix")
                    if n in self.__dict__}
        return self._expanded(MultivariateNormal, batch_shape, _instance,
                              loc=self.loc.expand(batch_shape + self.event_shape),
                              _unbroadcasted_scale_tril=self._unbroadcasted_scale_tril,
                              **expanded)

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape + self._event_shape

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        return ember.matmul(self._unbroadcasted_scale_tril,
                            self._unbroadcasted_scale_tril.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return ember.cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        return (-0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m)
                - self._half_log_det())

    def entropy(self):
        h = (0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi))
             + self._half_log_det())
        if len(self._batch_shape) == 0:
            return h
        return h.expand(self._batch_shape)
