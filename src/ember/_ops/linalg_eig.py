"""Eigen-decomposition of general matrices, the matrix exponential and Householder products:
``linalg.eig`` / ``eigvals``, ``linalg.matrix_exp``, ``linalg.householder_product``.

``eig`` returns complex eigenvalues and eigenvectors (LAPACK geev's, unit-norm vectors) for
real and complex input; its gradient is torch's, written for complex tensors, and refuses
losses that depend on the eigenvectors' arbitrary phases. ``matrix_exp`` uses SciPy's expm
when installed, else scaling and squaring of the degree-13 Pade approximant; its gradient is
the exponential of the block matrix [[A^H, G], [0, A^H]] (its top-right block), so it
differentiates again. ``householder_product`` multiplies the reflectors
``H_i = I - tau_i v_i v_i^H`` and pulls a gradient back through each of them.
"""
from __future__ import annotations

__all__ = ["matrix_exp"]

import math

import numpy as np

from .. import _dtype as D
from .._backend import get_xp, linalg_functions
from .._tensor import Tensor
from .linalg import matmul
from .linalg_decomp import (_check_matrix, _result, _shape, linalg_solve, mH, mT,
                            refuse_low_precision)
from .registry import NONE, conj_any, op

EigResult = _result("linalg_eig", ["eigenvalues", "eigenvectors"])


def _data(x):
    return x._data if isinstance(x, Tensor) else x


# -- eig ------------------------------------------------------------------------------------------
def _check_eig(A):
    _check_matrix("linalg.eig", A, floating=False)
    if A.dtype.kind not in "fc":
        raise RuntimeError(f"Unknown Complex ScalarType for {D._BY_NP[A.dtype].scalar_name}")
    refuse_low_precision(A, "linalg_eig_out_cpu")
    if A.size and not bool(get_xp(A).isfinite(A).all()):
        raise RuntimeError("ember.linalg.eig: input tensor should not contain infs or NaNs.")


@op("linalg_eig", promote=NONE, node="LinalgEigBackward0", outputs=2, result_type=EigResult,
    complex_grad=True)
def linalg_eig(A):
    _check_eig(A)
    xp = get_xp(A)
    cplx = D._BY_NP[A.dtype].to_complex().np
    w, v = xp.linalg.eig(A)
    return w.astype(cplx, copy=False), v.astype(cplx, copy=False)


@linalg_eig.grad("A")
def _(grads, result0, result1):
    gL, gV = grads
    L, V = result0, result1
    if _is_zero(gV):  # eigenvalues only: V^-H diag(gL) V^H
        return linalg_solve(mH(V), unsqueeze(gL, -1) * mH(V))
    VhgV = matmul(mH(V), gV)
    diag = diagonal(VhgV)
    _check_phase_invariance(diag)
    # Project onto the tangent space at V (columns of unit norm, any phase).
    VhgV = VhgV - matmul(mH(V), V * unsqueeze(real_part(diag), -2))
    n = _shape(L)[-1]
    eye = _constant(np.eye(n), L)
    Lc = conj_any(L)
    Econj = unsqueeze(Lc, -2) - unsqueeze(Lc, -1) + eye
    inner = VhgV / Econj
    if not _is_zero(gL):  # the eigenvalues' gradients sit on the diagonal
        inner = inner * (1 - eye) + diag_embed(gL)
    return linalg_solve(mH(V), matmul(inner, mH(V)))


def _check_phase_invariance(diag):
    im = np.imag(_data(diag))
    if not np.allclose(im, 0, rtol=1e-2, atol=1e-2):
        raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are "
                           "specified up to multiplication by e^{i phi}. The specified loss "
                           "function depends on this quantity, so it is ill-defined.")


def _is_zero(g):
    return not (isinstance(g, Tensor) and g.requires_grad) and not _data(g).any()


def _constant(values, like):
    data = _data(like)
    arr = get_xp(data).asarray(values, dtype=data.dtype)
    return _wrap(arr) if isinstance(like, Tensor) else arr


def diagonal(x):
    n = _shape(x)[-1]
    return sum_dim(x * _constant(np.eye(n), x), -1)


def diag_embed(v):
    n = _shape(v)[-1]
    return unsqueeze(v, -1) * _constant(np.eye(n), v)


# -- matrix_exp ---------------------------------------------------------------------------------
def _pade13(a):
    """exp(A) by scaling and squaring of the [13/13] Pade approximant (Higham 2005)."""
    xp = get_xp(a)
    n = a.shape[-1]
    # b_j = (2m - j)! m! / ((2m)! j! (m - j)!) for m = 13
    b = [math.factorial(26 - j) * math.factorial(13) /
         (math.factorial(26) * math.factorial(j) * math.factorial(13 - j)) for j in range(14)]
    norm = xp.abs(a).sum(-2).max(-1) if a.size else xp.zeros(a.shape[:-2])
    theta13 = 5.371920351148152
    s = xp.maximum(0, xp.ceil(xp.log2(xp.maximum(norm, 1e-300) / theta13))).astype(np.int64)
    a = a / (2.0 ** s)[..., None, None]
    eye = xp.broadcast_to(xp.eye(n, dtype=a.dtype), a.shape)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
             + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + \
        b[0] * eye
    r = xp.linalg.solve(v - u, v + u)
    for k in range(int(s.max()) if s.size else 0):
        r = xp.where((k < s)[..., None, None], r @ r, r)
    return r


def _check_matrix_exp(A):
    _check_matrix("linalg.matrix_exp", _data(A))


@op("linalg_matrix_exp", promote=NONE, node="LinalgMatrixExpBackward0",
    check=_check_matrix_exp)
def matrix_exp(A):
    """The matrix exponential of a square matrix (or a batch of them)."""
    xp = get_xp(A)
    linalg = linalg_functions(A)
    if linalg is not None and A.size:
        return xp.asarray(linalg.expm(A)).astype(A.dtype, copy=False)
    return _pade13(A)


@matrix_exp.grad("A")
def _(grad, A):
    # NOTE: the derivative of exp at A applied to G is the top-right block of
    # exp([[A, G], [0, A]]); the adjoint uses A^H (conjugation comes from the registry).
    n = _shape(A)[-1]
    At = mT(A)
    zero = At * 0
    block = cat([cat([At, grad], -1), cat([zero, At], -1)], -2)
    return matrix_exp(block)[..., :n, n:]


# -- householder_product --------------------------------------------------------------------
def _check_householder(A, tau):
    name = "ember.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if A.dtype != tau.dtype:
        raise RuntimeError(f"{name}: tau dtype {D._BY_NP[tau.dtype].scalar_name} does not match "
                           f"input dtype {D._BY_NP[A.dtype].scalar_name}")
    refuse_low_precision(A, "orgqr_cpu")


def _reflector(A, i):
    """v_i: zeros above row i, 1 at row i, A's column i below (arrays or Tensors)."""
    m = _shape(A)[-2]
    mask = np.zeros(m)
    mask[i + 1:] = 1
    unit = np.zeros(m)
    unit[i] = 1
    return A[..., :, i] * _constant(mask, A) + _constant(unit, A)


def _apply_reflector(v, tau, Q):
    """H Q = Q - tau v (v^H Q) for the reflector H = I - tau v v^H."""
    w = matmul(unsqueeze(conj_any(v), -2), Q)  # (..., 1, n)
    return Q - unsqueeze(tau, -1) * unsqueeze(v, -1) * w


@op("linalg_householder_product", tensors=2, promote=NONE,
    node="LinalgHouseholderProductBackward0", complex_grad=True)
def householder_product(A, tau):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H (LAPACK orgqr)."""
    _check_householder(A, tau)
    xp = get_xp(A)
    m, n = A.shape[-2:]
    Q = xp.broadcast_to(xp.eye(m, n, dtype=A.dtype), A.shape).copy()
    for i in range(tau.shape[-1] - 1, -1, -1):
        Q = _apply_reflector(_reflector(A, i), tau[..., i:i + 1], Q)
    return Q


@householder_product.grad("A", "tau")
def _(grad, A, tau):
    # NOTE: Q = H_1 ... H_k E. With G_i = (H_1 ... H_{i-1})^H grad and R_i = H_{i+1} ... H_k E,
    # H_i's share is <G_i R_i^H, dH_i>, dH_i = -(dtau v v^H + tau dv v^H + tau v dv^H).
    k = _shape(tau)[-1]
    m, n = _shape(A)[-2:]
    rights = [None] * k
    R = _constant(np.eye(m, n), A) + A * 0
    for i in range(k - 1, -1, -1):
        rights[i] = R
        R = _apply_reflector(_reflector(A, i), tau[..., i:i + 1], R)
    G = grad
    gA_cols, g_tau = [], []
    for i in range(k):
        v = _reflector(A, i)
        t = tau[..., i:i + 1]
        Gv = matmul(mH(G), unsqueeze(v, -1))[..., 0]       # G_i^H v
        Rv = matmul(mH(rights[i]), unsqueeze(v, -1))[..., 0]  # R_i^H v
        g_tau.append(-sum_dim(conj_any(Gv) * Rv, -1, True))
        Wv = matmul(G, unsqueeze(Rv, -1))[..., 0]              # W_i v
        WHv = matmul(rights[i], unsqueeze(Gv, -1))[..., 0]     # W_i^H v
        gv = -(conj_any(t) * Wv + t * WHv)
        mask = np.zeros(m)
        mask[i + 1:] = 1
        gA_cols.append(gv * _constant(mask, gv))
        G = _reflect_adjoint(v, t, G)
    gA = stack(gA_cols + [A[..., :, 0] * 0] * (n - k), -1)
    return gA, cat(g_tau, -1)


def _reflect_adjoint(v, tau, G):
    """H^H G = G - conj(tau) v (v^H G)."""
    return _apply_reflector(v, conj_any(tau), G)


from .._tensor import _wrap  # noqa: E402
from .complex import real_part  # noqa: E402
from .reduction import sum_dim  # noqa: E402
from .shape import cat, stack, unsqueeze  # noqa: E402
