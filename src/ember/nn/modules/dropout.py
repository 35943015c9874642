"""Dropout modules (active in training mode only)."""
from __future__ import annotations

__all__ = ['AlphaDropout', 'Dropout', 'Dropout1d', 'Dropout2d', 'Dropout3d',
           'FeatureAlphaDropout']

from .. import functional as F
from .module import Module


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zeroes elements with probability p during training, scaling the rest by 1/(1-p)."""

    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of (N, C, L) inputs during training."""

    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of (N, C, H, W) inputs during training."""

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of (N, C, D, H, W) inputs during training."""

    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps the self-normalising property of SELU networks."""

    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels."""

    _fn = staticmethod(F.feature_alpha_dropout)
