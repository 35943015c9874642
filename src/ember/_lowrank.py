"""Randomized low-rank SVD and PCA (Halko, Martinsson and Tropp 2009, algorithms 4.4 and 5.1),
as torch's ``svd_lowrank`` and ``pca_lowrank``: the same steps and the same random draws from
ember's generator, so a seeded call gives torch's factors. Built from differentiable ops
(matmul, ``linalg.qr``, ``linalg.svd``), so the factors have gradients.
"""
from __future__ import annotations

__all__ = ["pca_lowrank", "svd_lowrank"]

from . import _dtype as D


def _floating(dtype):
    """torch's _utils.get_floating_dtype: the float dtypes themselves, float32 for the rest."""
    return dtype if dtype in (D.float16, D.float32, D.float64) else D.float32


def _approximate_basis(A, q, niter, M):  # noqa: N803
    """An orthonormal (m, q) basis Q whose span approximates the range of ``A - M``, by
    ``niter`` power iterations from a Gaussian start."""
    from . import linalg, randn
    dtype = A.dtype if A.is_complex() else _floating(A.dtype)
    R = randn(A.shape[-1], q, dtype=dtype, device=A.device)

    def times(X, MX):
        return X if M is None else X - MX
    Q = linalg.qr(times(A @ R, None if M is None else M @ R)).Q
    for _ in range(2 if niter is None else niter):
        Q = linalg.qr(times(A.mH @ Q, None if M is None else M.mH @ Q)).Q
        Q = linalg.qr(times(A @ Q, None if M is None else M @ Q)).Q
    return Q


def _svd_lowrank(A, q=6, niter=2, M=None):  # noqa: N803
    from . import linalg
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    wide = m < n
    if wide:  # work on the tall A^H
        A = A.mH
        M = None if M is None else M.mH
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mH @ A
    if M is not None:
        B = B - Q.mH @ M
    U, S, Vh = linalg.svd(B, full_matrices=False)
    V = Vh.mH
    U = Q.matmul(U)
    return (V, S, U) if wide else (U, S, V)


def svd_lowrank(A, q=6, niter=2, M=None):  # noqa: N803
    """``(U, S, V)`` of a rank-``q`` approximate SVD of ``A - M`` (``A ~ U diag(S) V^H``),
    found in a random ``q``-dimensional subspace refined by ``niter`` power iterations."""
    return _svd_lowrank(A, q=q, niter=niter, M=M)


def pca_lowrank(A, q=None, center=True, niter=2):  # noqa: N803
    """``(U, S, V)`` of the approximate rank-``q`` SVD of ``A`` with its column means
    subtracted (``center``): ``V``'s columns are the principal directions."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)"
                         f"={min(m, n)}")
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter=niter, M=None)
    return _svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter=niter, M=None)
