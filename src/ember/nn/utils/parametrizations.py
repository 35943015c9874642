"""``nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` as parametrizations
(see parametrize.py)."""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ..modules.module import Module
from . import parametrize
from .reparam_hooks import _norm_except_dim

__all__ = ["spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v,
                                                        None if self.dim == -1 else self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, None if self.dim == -1 else self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """``module.<name>`` as ``original0 * original1 / ||original1||`` (magnitude, direction)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        from ..functional import normalize
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = mat.new_empty(h).normal_(0, 1)
            v = mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute((self.dim,) + tuple(d for d in range(weight.dim())
                                                        if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat, n_power_iterations):
        from ..functional import normalize
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(mat.t().mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        from ..functional import normalize
        if weight.dim() == 1:
            return normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.dot(mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """``module.<name>`` divided by its spectral norm (power iteration in training mode)."""
    from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
    weight = getattr(module, name, None)
    if weight is None:
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
