"""LDL factorization of symmetric (or Hermitian) matrices: ``linalg.ldl_factor(_ex)`` and
``linalg.ldl_solve``.

``A = L D L^T`` with Bunch-Kaufman pivoting, in LAPACK sytrf's packed form: ``LD`` holds L's
strict lower triangle and D's 1x1 and 2x2 blocks, the pivots are 1-based row interchanges
(negative for a 2x2 block). SciPy's LAPACK routines compute it when SciPy is installed,
ember's own transcription of the unblocked algorithm (sytf2, sytrs) otherwise. torch does not
differentiate these: their results require grad but their backward raises.
"""
from __future__ import annotations

__all__: list[str] = []

import math

import numpy as np

from .._backend import get_xp, linalg_functions, to_numpy
from .linalg_decomp import _check_matrix, _result, refuse_low_precision
from .registry import NONE, op

_ALPHA = (1 + math.sqrt(17)) / 8  # Bunch-Kaufman's pivot threshold


LDLFactorResult = _result("linalg_ldl_factor", ["LD", "pivots"])
LDLFactorExResult = _result("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


# -- factorization -------------------------------------------------------------------------------
def _lapack(name, host_array, hermitian):
    """SciPy's LAPACK routine ``?sy<name>`` (``?he<name>`` for Hermitian complex) for a host
    array, or None. (LDL runs on the host: CuPy has no LDL routines.)"""
    linalg = linalg_functions(host_array)
    if linalg is None:
        return None
    prefix = {"f": "s", "d": "d", "F": "c", "D": "z"}[host_array.dtype.char]
    kind = "he" if hermitian and prefix in "cz" else "sy"
    return getattr(linalg.lapack, f"{prefix}{kind}{name}", None)


def _sytf2(a):
    """Bunch-Kaufman factorization of one symmetric matrix (its lower triangle), as LAPACK's
    unblocked sytf2: (LD, 1-based pivots, info)."""
    a = a.copy()
    n = a.shape[0]
    ipiv = np.zeros(n, np.int32)
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = abs(a[k, k])
        imax, colmax = k, 0.0
        if k < n - 1:
            imax = k + 1 + int(np.argmax(np.abs(a[k + 1:, k])))
            colmax = abs(a[imax, k])
        if max(absakk, colmax) == 0 or np.isnan(absakk):
            info = info or k + 1
            kp = k
        else:
            kp, kstep = _bunch_kaufman_pivot(a, k, imax, absakk, colmax)
            kk = k + kstep - 1
            if kp != kk:
                _interchange(a, k, kk, kp, kstep)
            if kstep == 1 and k < n - 1:
                d11 = 1 / a[k, k]
                col = a[k + 1:, k].copy()
                a[k + 1:, k + 1:] -= d11 * np.outer(col, col)
                a[k + 1:, k] = col * d11
            elif kstep == 2 and k < n - 2:
                _update_2x2(a, k)
        if kstep == 1:
            ipiv[k] = kp + 1
        else:
            ipiv[k] = ipiv[k + 1] = -(kp + 1)
        k += kstep
    return np.tril(a), ipiv, info


def _bunch_kaufman_pivot(a, k, imax, absakk, colmax):
    """(pivot row, block size) by Bunch and Kaufman's rule."""
    if absakk >= _ALPHA * colmax:
        return k, 1
    n = a.shape[0]
    rowmax = float(np.max(np.abs(a[imax, k:imax])))
    if imax < n - 1:
        rowmax = max(rowmax, float(np.max(np.abs(a[imax + 1:, imax]))))
    if absakk >= _ALPHA * colmax * (colmax / rowmax):
        return k, 1
    if abs(a[imax, imax]) >= _ALPHA * rowmax:
        return imax, 1
    return imax, 2


def _interchange(a, k, kk, kp, kstep):
    """Swap rows and columns kk and kp of the trailing (lower-stored) submatrix."""
    n = a.shape[0]
    if kp < n - 1:
        a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
    column, row = a[kk + 1:kp, kk].copy(), a[kp, kk + 1:kp].copy()
    a[kk + 1:kp, kk], a[kp, kk + 1:kp] = row, column
    a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
    if kstep == 2:
        a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]


def _update_2x2(a, k):
    """The rank-2 update below a 2x2 pivot block (sytf2's formulas)."""
    d21 = a[k + 1, k]
    d11 = a[k + 1, k + 1] / d21
    d22 = a[k, k] / d21
    d21 = (1 / (d11 * d22 - 1)) / d21
    for j in range(k + 2, a.shape[0]):
        wk = d21 * (d11 * a[j, k] - a[j, k + 1])
        wkp1 = d21 * (d22 * a[j, k + 1] - a[j, k])
        a[j:, j] -= a[j:, k] * wk + a[j:, k + 1] * wkp1
        a[j, k], a[j, k + 1] = wk, wkp1


def _own_kernel(hermitian, dtype):
    """ember's transcriptions cover symmetric matrices; Hermitian complex ones need SciPy."""
    if hermitian and np.dtype(dtype).kind == "c":
        raise NotImplementedError("ember.linalg: the LDL factorization of a Hermitian complex "
                                  "matrix needs SciPy (the optional scipy extra)")


def ldl_factor_arrays(A, hermitian):
    xp = get_xp(A)
    batch, n = A.shape[:-2], A.shape[-1]
    flat = A.reshape((-1, n, n))
    routine = _lapack("trf", to_numpy(flat), hermitian)
    lds, pivs, infos = [], [], []
    for mat in flat:
        if routine is not None and n:
            ld, piv, info = routine(to_numpy(mat), lower=1)
            ld, piv = np.tril(ld), piv.astype(np.int32)
        else:
            _own_kernel(hermitian, A.dtype)
            ld, piv, info = _sytf2(to_numpy(mat))
        lds.append(ld)
        pivs.append(piv)
        infos.append(info)
    ld = xp.asarray(np.stack(lds) if lds else np.empty((0, n, n), A.dtype)).reshape(A.shape)
    piv = xp.asarray(np.stack(pivs) if pivs else np.empty((0, n), np.int32))
    return ld, piv.reshape(batch + (n,)), xp.asarray(np.asarray(infos, np.int32)).reshape(batch)


def _not_differentiable(name):
    def formula(grad):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    return formula


@op("linalg_ldl_factor_ex", promote=NONE, node="NotImplemented", outputs=3,
    diff_outputs=(True, False, False), result_type=LDLFactorExResult, complex_grad=True)
def linalg_ldl_factor_ex(A, hermitian=False, check_errors=False):
    _check_matrix("ember.linalg.ldl_factor_ex", A)
    refuse_low_precision(A, "ldl_factor_kernel_cpu")
    return ldl_factor_arrays(A, hermitian)


linalg_ldl_factor_ex.grad("A")(_not_differentiable("linalg_ldl_factor_ex"))


# -- solve ---------------------------------------------------------------------------------------
def _sytrs(ld, ipiv, b):
    """Solve A X = B from sytf2's factorization of one matrix, as LAPACK's sytrs."""
    b = b.copy()
    n = ld.shape[0]
    k = 0
    while k < n:  # L D Y = B
        if ipiv[k] > 0:
            _swap_rows(b, k, ipiv[k] - 1)
            b[k + 1:] -= np.outer(ld[k + 1:, k], b[k])
            b[k] /= ld[k, k]
            k += 1
        else:
            _swap_rows(b, k + 1, -ipiv[k] - 1)
            b[k + 2:] -= np.outer(ld[k + 2:, k], b[k]) + np.outer(ld[k + 2:, k + 1], b[k + 1])
            akm1k = ld[k + 1, k]
            akm1, ak = ld[k, k] / akm1k, ld[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1, bk = b[k] / akm1k, b[k + 1] / akm1k
            b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T X = Y
        b[k] -= ld[k + 1:, k] @ b[k + 1:]
        if ipiv[k] > 0:
            _swap_rows(b, k, ipiv[k] - 1)
            k -= 1
        else:
            b[k - 1] -= ld[k + 1:, k - 1] @ b[k + 1:]
            _swap_rows(b, k, -ipiv[k] - 1)
            k -= 2
    return b


def _swap_rows(b, i, j):
    if i != j:
        b[[i, j]] = b[[j, i]]


def _check_ldl_solve(LD, pivots, B, hermitian=False):
    name = "ember.linalg.ldl_solve"
    if LD.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor LD must have at least 2 dimensions.")
    if B.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    if LD.dtype != B.dtype:
        raise RuntimeError(f"{name}: Expected LD and B to have the same dtype, but found LD of "
                           f"type {LD.dtype.scalar_name} and B of type {B.dtype.scalar_name} "
                           "instead")
    refuse_low_precision(LD, "ldl_solve_kernel_cpu")


@op("linalg_ldl_solve", tensors=3, promote=NONE, node="NotImplemented", complex_grad=True,
    check=_check_ldl_solve)
def linalg_ldl_solve(LD, pivots, B, hermitian=False):
    xp = get_xp(LD)
    batch = np.broadcast_shapes(LD.shape[:-2], B.shape[:-2], pivots.shape[:-1])
    n, k = LD.shape[-1], B.shape[-1]
    # NOTE: LAPACK's sytrs runs on the host (CuPy has no LDL solver).
    lds = np.broadcast_to(to_numpy(LD), batch + (n, n)).reshape(-1, n, n)
    pivs = np.broadcast_to(to_numpy(pivots), batch + (n,)).reshape(-1, n).astype(np.int32)
    bs = np.broadcast_to(to_numpy(B), batch + (n, k)).reshape(-1, n, k)
    routine = _lapack("trs", lds, hermitian)
    if routine is None:
        _own_kernel(hermitian, LD.dtype)
    out = [routine(ld, piv, b, lower=1)[0] if routine is not None and n else
           _sytrs(ld, piv, b) for ld, piv, b in zip(lds, pivs, bs)]
    result = np.stack(out) if out else np.empty((0, n, k), B.dtype)
    return xp.asarray(result.astype(B.dtype, copy=False)).reshape(batch + (n, k))


linalg_ldl_solve.grad("LD", "B")(lambda grad: _not_differentiable("linalg_ldl_solve")(grad))
