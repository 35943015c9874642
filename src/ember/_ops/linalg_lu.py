"""LU decompositions: ``linalg.lu_factor(_ex)``, ``linalg.lu``, ``lu_unpack``, ``linalg.lu_solve``.

``A = P L U`` with partial pivoting, for square and rectangular batches: ``L`` (m, k) unit lower
triangular, ``U`` (k, n) upper triangular, k = min(m, n), the pivots LAPACK's (1-based row
interchanges, int32). The factorization is SciPy's (LAPACK getrf) when SciPy is installed,
ember's own elimination with LAPACK's pivot choice otherwise.

Gradients are the adjoints of the factorization, as torch's: with M = L^-1 P^T dA U^-1, dL is
L times M's strictly lower part and dU M's upper part times U (a wide or tall A carries its
extra columns of U or rows of L through); every formula is written with ember ops, so it
differentiates again.
"""
from __future__ import annotations

__all__ = ["lu_unpack"]

import warnings

import numpy as np

from .._backend import get_xp, linalg_functions
from .._tensor import Tensor
from .linalg import matmul
from .linalg_decomp import (InvExResult, _column_major, SolveExResult, _check_matrix, _check_solve, _result,
                            _shape, _solution_layout, _vector_rhs, inv_backward,
                            linalg_solve_triangular, mT,
                            refuse_low_precision, solve_backward, tril, triu)
from .registry import NONE, op


LUFactorResult = _result("linalg_lu_factor", ["LU", "pivots"])
LUFactorExResult = _result("linalg_lu_factor_ex", ["LU", "pivots", "info"])
LUResult = _result("linalg_lu", ["P", "L", "U"])
LUUnpackResult = _result("lu_unpack", ["P", "L", "U"])


# -- the factorization --------------------------------------------------------------------------
def lu_factor_arrays(a):
    """(LU, pivots, info) of a batch of matrices: LAPACK getrf's outputs."""
    xp = get_xp(a)
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    flat = a.reshape((-1, m, n))
    linalg = linalg_functions(a)
    if linalg is not None and flat.shape[0] and m and n:
        lus, pivs = [], []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an exactly singular matrix: info reports it
            for mat in flat:
                lu, piv = linalg.lu_factor(mat, check_finite=False)
                lus.append(lu)
                pivs.append(piv + 1)
        lu, piv = xp.stack(lus), xp.stack(pivs).astype(np.int32)
    else:
        lu, piv = _eliminate(flat.copy())
    diag = xp.diagonal(lu, 0, -2, -1)
    zero = diag == 0
    info = xp.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype(np.int32)
    k = min(m, n)
    return (lu.reshape(batch + (m, n)), piv.reshape(batch + (k,)), info.reshape(batch))


def _eliminate(lu):
    """Gaussian elimination with partial pivoting (LAPACK's choice: the first largest
    magnitude), in place on a (batch, m, n) array; a zero pivot column is left unscaled."""
    xp = get_xp(lu)
    b, m, n = lu.shape
    k = min(m, n)
    rows = xp.arange(b)
    piv = xp.zeros((b, k), np.int32)
    for j in range(k):
        p = j + xp.abs(lu[:, j:, j]).argmax(-1)
        piv[:, j] = p + 1
        top, chosen = lu[rows, j].copy(), lu[rows, p].copy()
        lu[rows, j], lu[rows, p] = chosen, top
        pivot = lu[:, j, j]
        safe = xp.where(pivot == 0, 1, pivot)
        lu[:, j + 1:, j] = xp.where((pivot == 0)[:, None], lu[:, j + 1:, j],
                                    lu[:, j + 1:, j] / safe[:, None])
        lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j:j + 1] * lu[:, j:j + 1, j + 1:]
    return lu, piv


def permutation(pivots, m, dtype, xp):
    """P (..., m, m) from LAPACK's row interchanges: A = P L U."""
    batch = pivots.shape[:-1]
    flat = pivots.reshape((-1, pivots.shape[-1])).astype(np.int64) - 1
    perm = xp.broadcast_to(xp.arange(m), (flat.shape[0], m)).copy()
    rows = xp.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        p = flat[:, j]
        a, b = perm[rows, j].copy(), perm[rows, p].copy()
        perm[rows, j], perm[rows, p] = b, a
    eye = xp.eye(m, dtype=dtype)
    return xp.swapaxes(eye[perm], -1, -2).reshape(batch + (m, m))


def _unpack_arrays(lu, pivots, unpack_data=True, unpack_pivots=True):
    xp = get_xp(lu)
    m, n = lu.shape[-2:]
    k = min(m, n)
    empty = xp.empty((0,), lu.dtype)
    P = permutation(pivots, m, lu.dtype, xp) if unpack_pivots else empty
    if not unpack_data:
        return P, empty, empty
    L = xp.tril(lu[..., :, :k], -1) + xp.eye(m, k, dtype=lu.dtype)
    U = xp.triu(lu[..., :k, :])
    return P, L, U


# -- gradients -----------------------------------------------------------------------------------
def lu_backward(gL, gU, P, L, U):
    """The gradient w.r.t. A = P L U of the gradients ``gL`` and ``gU`` (None: zero)."""
    m, k = _shape(L)[-2:]
    n = _shape(U)[-1]
    if gL is None and gU is None:
        return None
    if m == n:
        gM = _add(tril(matmul(mH(L), gL), -1) if gL is not None else None,
                  triu(matmul(gU, mH(U))) if gU is not None else None)
        gA = linalg_solve_triangular(mH(U), gM, False, False)
        gA = linalg_solve_triangular(mH(L), gA, True, True, True)
    elif m < n:  # wide: U = [U1 U2]
        U1, U2 = U[..., :k], U[..., k:]
        inner = _add(matmul(mH(L), gL) if gL is not None else None,
                     -matmul(gU[..., k:], mH(U2)) if gU is not None else None)
        gM = _add(tril(inner, -1), triu(matmul(gU[..., :k], mH(U1))) if gU is not None else None)
        gA1 = linalg_solve_triangular(mH(U1), gM, False, False)
        gA2 = gU[..., k:] if gU is not None else U2 * 0
        gA = linalg_solve_triangular(mH(L), cat([gA1, gA2], -1), True, True, True)
    else:  # tall: L = [L1; L2]
        L1, L2 = L[..., :k, :], L[..., k:, :]
        inner = _add(matmul(gU, mH(U)) if gU is not None else None,
                     -matmul(mH(L2), gL[..., k:, :]) if gL is not None else None)
        gM = _add(triu(inner), tril(matmul(mH(L1), gL[..., :k, :]), -1)
                  if gL is not None else None)
        gA1 = linalg_solve_triangular(mH(L1), gM, True, True, True)
        gA2 = gL[..., k:, :] if gL is not None else L2 * 0
        gA = linalg_solve_triangular(mH(U), cat([gA1, gA2], -2), False, False)
    return matmul(P, gA)


def _add(a, b):
    return b if a is None else a if b is None else a + b


def mH(x):
    return mT(conj_any(x))


def _is_zero(g):
    data = g._data if isinstance(g, Tensor) else g
    return not (isinstance(g, Tensor) and g.requires_grad) and not data.any()


def _given(g):
    """None for an upstream gradient that is known to be zero (an output nobody used)."""
    return None if g is None or _is_zero(g) else g


# -- lu_factor_ex, lu, lu_unpack ----------------------------------------------------------------
def _check_lu(name, A):
    _check_matrix(name, A, square=False)
    refuse_low_precision(A, "lu_cpu")


@op("linalg_lu_factor_ex", promote=NONE, node="LinalgLuFactorExBackward0", outputs=3,
    diff_outputs=(True, False, False), result_type=LUFactorExResult, complex_grad=True)
def linalg_lu_factor_ex(A, pivot=True, check_errors=False):
    _check_lu("linalg.lu_factor_ex", A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    return lu_factor_arrays(A)


@linalg_lu_factor_ex.grad("A")
def _(grads, result0, result1):
    g = grads[0]
    m, n = _shape(result0)[-2:]
    k = min(m, n)
    P, L, U = lu_unpack(result0, result1)
    return lu_backward(g[..., :k], g[..., :k, :], P, L, U)


@op("linalg_lu", promote=NONE, node="LinalgLuBackward0", outputs=3,
    diff_outputs=(False, True, True), result_type=LUResult, complex_grad=True)
def linalg_lu(A, pivot=True):
    _check_lu("linalg.lu", A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu, piv, _ = lu_factor_arrays(A)
    return _unpack_arrays(lu, piv)


@linalg_lu.grad("A")
def _(grads, result0, result1, result2):
    return lu_backward(_given(grads[1]), _given(grads[2]), result0, result1, result2)


def _check_unpack(LU, pivots, unpack_data=True, unpack_pivots=True):
    data = pivots._data if isinstance(pivots, Tensor) else pivots
    if data.dtype != np.int32:
        raise RuntimeError("ember.lu_unpack: LU_pivots is expected to be a contiguous tensor "
                           "of ember.int32 dtype.\nNote: this function is intended to be used "
                           "with the output produced by ember.linalg.lu_factor")


@op("lu_unpack", tensors=2, promote=NONE, node="LuUnpackBackward0", outputs=3,
    diff_outputs=(False, True, True), result_type=LUUnpackResult, check=_check_unpack,
    complex_grad=True)
def lu_unpack(LU, pivots, unpack_data=True, unpack_pivots=True):
    """P, L and U from lu_factor's packed LU and pivots (``A = P L U``)."""
    return _unpack_arrays(LU, pivots, unpack_data, unpack_pivots)


@lu_unpack.grad("LU")
def _(grads, LU_shape):
    gL, gU = _given(grads[1]), _given(grads[2])
    if any(g is not None and len(_shape(g)) < 2 for g in (gL, gU)):  # unpack_data=False
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    m, n = LU_shape[-2:]
    k = min(m, n)
    if gL is None and gU is None:
        return None
    lower = tril(gL, -1) if gL is not None else None
    upper = triu(gU) if gU is not None else None
    if m == n:
        return _add(lower, upper)
    if m < n:  # the L part sits in U's first k columns
        lower = cat([lower, zeros_part(lower, -1, n - k)], -1) if lower is not None else None
        return _add(lower, upper)
    upper = cat([upper, zeros_part(upper, -2, m - k)], -2) if upper is not None else None
    return _add(lower, upper)


def zeros_part(x, dim, size):
    """Zeros shaped like ``x`` but ``size`` long in ``dim`` (formulas get arrays or Tensors)."""
    shape = list(_shape(x))
    shape[dim] = size
    data = x._data if isinstance(x, Tensor) else x
    z = get_xp(data).zeros(shape, data.dtype)
    return _wrap(z) if isinstance(x, Tensor) else z


# -- lu_solve -------------------------------------------------------------------------------------
def _check_lu_solve(LU, pivots, B, left=True, adjoint=False):
    _check_matrix("linalg.lu_solve", LU._data if isinstance(LU, Tensor) else LU)
    if LU.dtype != B.dtype:
        raise RuntimeError("linalg.lu_solve: Expected LU and B to have the same dtype, but found "
                           f"LU of type {LU.dtype.scalar_name} and B of type "
                           f"{B.dtype.scalar_name} instead")
    n = LU.shape[-1]
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 "
                           "dimensions.")
    k = B.shape[-2] if left else B.shape[-1]
    if k != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    refuse_low_precision(LU, "linalg.lu_solve_cpu")


def _lu_solve_arrays(lu, piv, b, left, adjoint):
    """X with op(A) X = B (``left``) or X op(A) = B, op = adjoint or identity, A = P L U."""
    xp = get_xp(lu)
    if not left:  # X op(A) = B  <=>  op(A)^H X^H = B^H
        return _h(_lu_solve_arrays(lu, piv, _h(b), True, not adjoint))
    P, L, U = _unpack_arrays(lu, piv)
    if adjoint:  # A^H X = B: U^H L^H P^T X = B
        y = _triangular(_h(U), b, lower=True)
        y = _triangular(_h(L), y, lower=False, unit=True)
        return P @ y
    y = _triangular(L, xp.swapaxes(P, -1, -2) @ b, lower=True, unit=True)
    return _triangular(U, y, lower=False)


def _h(x):
    """The conjugate transpose of a batch of matrices (an array)."""
    x = get_xp(x).swapaxes(x, -1, -2)
    return x.conj() if x.dtype.kind == "c" else x


def _triangular(T, b, lower, unit=False):
    """T^-1 b by substitution, row by row as LAPACK's trsm (a zero pivot gives inf / nan,
    as torch's does, instead of an error)."""
    xp = get_xp(T)
    n = T.shape[-1]
    x = xp.zeros(np.broadcast_shapes(T.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                 xp.result_type(T, b))
    order = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in order:
            done = slice(0, i) if lower else slice(i + 1, n)
            row = b[..., i, :] - (T[..., i:i + 1, done] @ x[..., done, :])[..., 0, :]
            x[..., i, :] = row if unit else row / T[..., i, i][..., None]
    return x


@op("linalg_lu_solve", tensors=3, promote=NONE, node="LinalgLuSolveBackward0",
    check=_check_lu_solve, complex_grad=True)
def linalg_lu_solve(LU, pivots, B, left=True, adjoint=False):
    return _solution_layout(_lu_solve_arrays(LU, pivots, B, left, adjoint), left)


@linalg_lu_solve.grad("B")
def _(grad, LU, pivots, left, adjoint):
    return linalg_lu_solve(LU, pivots, grad, left, not adjoint)


@linalg_lu_solve.grad("LU")
def _(grad, LU, pivots, left, adjoint, result):
    gB = linalg_lu_solve(LU, pivots, grad, left, not adjoint)
    X = result
    if left:
        gA = -matmul(gB, mH(X)) if not adjoint else -matmul(X, mH(gB))
    else:
        gA = -matmul(mH(X), gB) if not adjoint else -matmul(mH(gB), X)
    P, L, U = lu_unpack(LU, pivots)
    PtgA = matmul(mT(P), gA)
    return tril(matmul(PtgA, mH(U)), -1) + triu(matmul(mH(L), PtgA))


# -- inv_ex, solve_ex: failures reported in ``info``, LAPACK's inf / nan values -----------------
def _lu_info(A):
    return lu_factor_arrays(A)[2]


@op("linalg_inv_ex", promote=NONE, node="LinalgInvExBackward0", outputs=2,
    diff_outputs=(True, False), result_type=InvExResult)
def linalg_inv_ex(A, check_errors=False):
    _check_matrix("linalg.inv", A)  # (torch's checks name linalg.inv)
    refuse_low_precision(A, name="linalg.inv")
    info = _lu_info(A)
    if not info.any():
        return _column_major(get_xp(A).linalg.inv(A)), info
    eye = get_xp(A).broadcast_to(get_xp(A).eye(A.shape[-1], dtype=A.dtype), A.shape)
    lu, piv, _ = lu_factor_arrays(A)
    # LAPACK's layout, as torch's result: its reshapes then record ReshapeAliasBackward0
    return _column_major(_lu_solve_arrays(lu, piv, eye, True, False)), info


@linalg_inv_ex.grad("A")
def _(grads, result0):
    return inv_backward(grads[0], result0)


@op("linalg_solve_ex", tensors=2, promote=NONE, node="LinalgSolveExBackward0", outputs=2,
    diff_outputs=(True, False), result_type=SolveExResult)
def linalg_solve_ex(A, B, left=True, check_errors=False):
    _check_solve(A, B, left)
    lu, piv, info = lu_factor_arrays(A)
    vector = _vector_rhs(A, B)
    rhs = B[..., None] if vector else B
    X = _lu_solve_arrays(lu, piv, rhs, left, False)
    return _solution_layout(X[..., 0] if vector else X, left), info


@linalg_solve_ex.grad("A", "B")
def _(grads, A, B_shape, left, result0):
    return solve_backward(grads[0], A, B_shape, left, result0,
                          lambda a, b, left: linalg_solve_ex(a, b, left)[0])


from .._tensor import _wrap  # noqa: E402
from .registry import conj_any  # noqa: E402
from .shape import cat  # noqa: E402
