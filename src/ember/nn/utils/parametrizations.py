"""``nn.utils.parametrizations``: ``weight_norm``, ``spectral_norm`` and ``orthogonal`` as
parametrizations (see parametrize.py)."""
from __future__ import annotations

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..modules.module import Module
from . import parametrize
from .reparam_hooks import _norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


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


# -- orthogonal ---------------------------------------------------------------------------------
_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(Q):  # noqa: N803
    """Whether ``Q^H Q`` is the identity, to ``10 n eps`` (torch's tolerance)."""
    from ... import _creation, _info
    n, k = Q.shape[-2], Q.shape[-1]
    eye = _creation.eye(k, dtype=Q.dtype, device=Q.device)
    return bool((Q.mH @ Q).allclose(eye, atol=10.0 * n * _info.finfo(Q.dtype).eps))


def _make_orthogonal(A):  # noqa: N803
    """The Q of ``A = QR`` (``A`` tall) with R's diagonal real and non-negative."""
    from ... import geqrf, linalg
    X, tau = geqrf(A)
    Q = linalg.householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _Orthogonal(Module):
    """A (batch of) matrix with orthonormal columns or rows, from an unconstrained one: the
    exponential or the Cayley transform of the skew-symmetric matrix its lower triangle
    defines, or the product of Householder reflectors its strict lower triangle holds (the
    diagonal's signs choose each reflector's sign). With ``use_trivialization`` the result is
    multiplied by ``base``, an orthogonal matrix that assignment sets (the unconstrained
    matrix is then reset to the one that maps to the identity)."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):  # noqa: N803
        from ... import linalg
        transposed = X.shape[-2] < X.shape[-1]
        if transposed:
            X = X.mT
        n, k = X.shape[-2], X.shape[-1]  # a tall matrix now
        if self.orthogonal_map == "householder":
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg.householder_product(A, tau)
            # the diagonal's signs (read, never differentiated) flip the columns
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            Q = self._from_skew(X, n, k)
        if "base" in self._buffers:  # use_trivialization
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def _from_skew(self, X, n, k):  # noqa: N803
        """exp(A) or the Cayley transform (I + A/2)(I - A/2)^-1 of the skew-symmetric
        (skew-Hermitian) ``A = L - L^H``, ``L`` the lower triangle of ``X`` padded to n x n;
        the first k columns."""
        from ... import _creation, linalg, matrix_exp
        from ..._ops.shape import cat
        X = X.tril()
        if n != k:
            pad = X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)
            X = cat([X, pad], dim=-1)
        A = X - X.mH
        if self.orthogonal_map == "matrix_exp":
            Q = matrix_exp(A)
        else:
            eye = _creation.eye(n, dtype=A.dtype, device=A.device)
            Q = linalg.solve(eye.add(A, alpha=-0.5), eye.add(A, alpha=0.5))
        return Q[..., :k] if n != k else Q

    def right_inverse(self, Q):  # noqa: N803
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q):  # noqa: N803
        from ... import _creation, geqrf, randn
        from ..._ops.shape import cat
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        given = Q
        transposed = Q.shape[-2] < Q.shape[-1]
        if transposed:
            Q = Q.mT
        n, k = Q.shape[-2], Q.shape[-1]
        if "base" not in self._buffers:
            if self.orthogonal_map != "householder":
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential or the Cayley "
                    "parametrizations when use_trivialization=False.")
            # the reflectors of Q's QR; the diagonal: R's signs, flipped where LAPACK used no
            # reflection (tau exactly 0), so that the forward map gives Q back
            A, tau = geqrf(Q)
            A.diagonal(dim1=-2, dim2=-1).sign_()
            A.diagonal(dim1=-2, dim2=-1)[tau == 0.0] *= -1
            return A.mT if transposed else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:  # complete the columns to an orthogonal n x n matrix
            extra = randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(cat([Q, extra], dim=-1))
        self.base = Q
        # the unconstrained matrix every map sends to the identity: -I (householder reads the
        # diagonal's signs; the skew maps see a zero skew part)
        neg_eye = _creation.zeros_like(given)
        neg_eye.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_eye


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain ``module.<name>`` (a matrix or a batch of them) to have orthonormal columns
    (or rows, when wide): ``orthogonal_map`` is "matrix_exp", "cayley" or "householder" (by
    default matrix_exp for square or complex matrices, else householder)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
