"""Wishart: the distribution of scatter matrices of normal vectors."""
from __future__ import annotations

import math
import warnings
from numbers import Number

import ember

from .._size import Size
from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import _mvlgamma, broadcast_shapes, finfo, lazy_property

__all__ = ['Wishart']

_log_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma function of dimension ``p``."""
    if not x.gt((p - 1) / 2).all():
        raise AssertionError("Wrong domain for multivariate digamma function.")
    halves = ember.arange(p, dtype=x.dtype, device=x.device).div(2)
    return ember.digamma(x.unsqueeze(-1) - halves.expand(x.shape + (-1,))).sum(-1)


def _clamp_above_eps(x):
    return x.clamp(min=finfo(x.dtype).eps)


class Wishart(ExponentialFamily):
    """The Wishart distribution with ``df`` degrees of freedom and exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` as its scale. Sampled by
    Bartlett's decomposition; a singular sample (possible for df < dimension) is drawn
    again, up to ``max_try_correction`` times."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + (
                precision_matrix is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril)
                     if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = Size(param.shape[:-2])
            self.df = ember.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        if self.df.le(event_shape[-1] - 1).any():
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{event_shape[-1] - 1}.")
        if scale_tril is not None:
            self.scale_tril = param.expand(batch_shape + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(batch_shape + (-1, -1))
        else:
            self.precision_matrix = param.expand(batch_shape + (-1, -1))
        if self.df.lt(event_shape[-1]).any():
            warnings.warn("Low df values detected. Singular samples are highly likely to "
                          "occur for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._bartlett_chi2(self.df, batch_shape)

    def _bartlett_chi2(self, df, batch_shape):
        """The chi-squared laws of the squared diagonal of Bartlett's factor."""
        steps = ember.arange(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype,
                             device=self._unbroadcasted_scale_tril.device)
        return Chi2(df=df.unsqueeze(-1) - steps.expand(batch_shape + (-1,)))

    def expand(self, batch_shape, _instance=None):
        batch_shape = Size(batch_shape)
        cov_shape = batch_shape + self.event_shape
        new = self._get_checked_instance(Wishart, _instance)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        new._event_shape = self._event_shape
        new._dist_chi2 = new._bartlett_chi2(new.df, batch_shape)
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        tril = self._unbroadcasted_scale_tril
        return (tril @ tril.transpose(-2, -1)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        tril = self._unbroadcasted_scale_tril
        eye = ember.eye(self._event_shape[-1], device=tril.device, dtype=tril.dtype)
        return ember.cholesky_solve(eye, tril).expand(self._matrix_shape())

    @property
    def mean(self):
        return self.df.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor[factor <= 0] = math.nan
        return factor.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self.df.view(self._batch_shape + (1, 1)) * (
            V.pow(2) + ember.einsum("...i,...j->...ij", diag_V, diag_V))

    def _bartlett_sampling(self, sample_shape=Size()):
        p = self._event_shape[-1]
        # Bartlett's factor: chi roots on the diagonal, standard normals below it
        noise = _clamp_above_eps(self._dist_chi2.rsample(sample_shape).sqrt()).diag_embed(
            dim1=-2, dim2=-1)
        i, j = ember.tril_indices(p, p, offset=-1)
        noise[..., i, j] = ember.randn(Size(sample_shape) + self._batch_shape
                                       + (int(p * (p - 1) / 2),),
                                       dtype=noise.dtype, device=noise.device)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=Size(), max_try_correction=None):
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        # NOTE: as in torch, the first check's result is used as "singular" as it is
        is_singular = self.support.check(sample)
        if self._batch_shape:
            is_singular = is_singular.amax(self._batch_dims)
        if is_singular.any():
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                sample_new = self._bartlett_sampling(is_singular[is_singular].shape)
                sample[is_singular] = sample_new
                is_singular_new = ~self.support.check(sample_new)
                if self._batch_shape:
                    is_singular_new = is_singular_new.amax(self._batch_dims)
                is_singular[is_singular.clone()] = is_singular_new
                if not is_singular.any():
                    break
        return sample

    def _log_det_scale(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        return (-nu * (p * _log_2 / 2 + self._log_det_scale())
                - _mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * ember.linalg.slogdet(value).logabsdet
                - ember.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(
                    dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        return ((p + 1) * (p * _log_2 / 2 + self._log_det_scale())
                + _mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-ember.linalg.slogdet(-2 * x).logabsdet + _log_2 * p)
                + _mvlgamma(y + (p + 1) / 2, p))
