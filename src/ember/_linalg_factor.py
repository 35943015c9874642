"""torch.linalg's LU and LDL factorizations and solvers, eig, matrix functions, the ``_ex``
variants and tensor solvers (imported into ``ember.linalg``), and their torch.* names.

The ``_ex`` functions report failures in ``info`` (int32, 0 when all went well) instead of
raising, unless ``check_errors=True``.
"""
from __future__ import annotations

import numpy as np

from ._numpy_in import warn_once
from ._ops import linalg_decomp as _decomp
from ._ops import linalg_eig as _eig
from ._ops import linalg_ldl as _ldl
from ._ops import linalg_lu as _lu
from ._tensor import Tensor


def _no_out(out):
    if out is not None:
        raise NotImplementedError("ember.linalg: out= is not supported")


def _batch_prefix(info, index):
    return f"(Batch element {index}): " if info.ndim else ""


def _first_failure(info):
    """(batch index, value) of the first nonzero ``info``, or None."""
    data = info._data if isinstance(info, Tensor) else info
    flat = data.reshape(-1)
    if not flat.any():  # (the usual case; and a meta array has no failures to count)
        return None
    bad = np.flatnonzero(flat)
    return None if not bad.size else (int(bad[0]), int(flat[bad[0]]))


# -- LU ---------------------------------------------------------------------------------------
def _check_lu_input(A, name):
    if A.ndim < 2:
        raise RuntimeError(f"ember.{name}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise NotImplementedError(f'"lu_cpu" not implemented for \'{A.dtype.scalar_name}\'')


def _raise_lu_info(name, info):
    failure = _first_failure(info)
    if failure is not None:
        b, k = failure
        raise RuntimeError(f"ember.{name}: {_batch_prefix(info._data, b)}U[{k},{k}] is zero and "
                           "using it on lu_solve would result in a division by zero. If you "
                           "still want to perform the factorization, consider calling "
                           "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):  # noqa: N803 - torch's names
    """Packed LU factorization with partial pivoting, its pivots and ``info``."""
    _no_out(out)
    _check_lu_input(A, "lu_factor")
    result = _lu.linalg_lu_factor_ex(A, pivot, check_errors)
    if check_errors:
        _raise_lu_info("linalg.lu_factor_ex", result.info)
    return result


def lu_factor(A, *, pivot=True, out=None):  # noqa: N803
    """Packed LU factorization with partial pivoting: ``(LU, pivots)``."""
    _no_out(out)
    _check_lu_input(A, "lu_factor")
    LU, pivots, info = _lu.linalg_lu_factor_ex(A, pivot, False)
    _raise_lu_info("linalg.lu_factor", info)
    return _lu.LUFactorResult(LU, pivots)


def lu(A, *, pivot=True, out=None):  # noqa: N803
    """``A = P L U``: the permutation, unit lower and upper triangular factors."""
    _no_out(out)
    _check_lu_input(A, "lu_factor")
    return _lu.linalg_lu(A, pivot)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):  # noqa: N803
    """The solution of ``A X = B`` (or ``X A = B``, with ``A^H``) given A's LU factorization."""
    _no_out(out)
    return _lu.linalg_lu_solve(LU, pivots, B, left, adjoint)


def torch_lu(A, pivot=True, get_infos=False, out=None):  # noqa: N803
    """``torch.lu`` (deprecated in torch): ``(LU, pivots)``, and ``info`` with get_infos."""
    warn_once(  # (once per process, as torch's TORCH_WARN_ONCE)
        "ember.lu is deprecated in favor of ember.linalg.lu_factor / ember.linalg.lu_factor_ex "
        "and will be removed in a future PyTorch release.\nLU, pivots = ember.lu(A, "
        "compute_pivots)\nshould be replaced with\nLU, pivots = ember.linalg.lu_factor(A, "
        "compute_pivots)\nand\nLU, pivots, info = ember.lu(A, compute_pivots, get_infos=True)\n"
        "should be replaced with\nLU, pivots, info = ember.linalg.lu_factor_ex(A, "
        "compute_pivots)", stacklevel=2)
    LU, pivots, info = lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    return (LU, pivots, info) if get_infos else (LU, pivots)


def torch_lu_solve(input, LU_data, LU_pivots, *, out=None):  # noqa: N803
    """``torch.lu_solve`` (deprecated in torch): ``linalg.lu_solve`` with reordered arguments."""
    warn_once(  # (once per process, as torch's TORCH_WARN_ONCE)
        "ember.lu_solve is deprecated in favor of ember.linalg.lu_solveand will be removed in a "
        "future PyTorch release.\nNote that ember.linalg.lu_solve has its arguments reversed.\n"
        "X = ember.lu_solve(B, LU, pivots)\nshould be replaced with\nX = "
        "ember.linalg.lu_solve(LU, pivots, B)", stacklevel=2)
    return lu_solve(LU_data, LU_pivots, input, out=out)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):  # noqa: N803
    """P, L and U of a packed LU factorization (``A = P L U``)."""
    _no_out(out)
    return _lu.lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)


LinAlgError = _decomp.LinAlgError


# -- LDL -------------------------------------------------------------------------------------------
def _raise_ldl_info(name, info):
    failure = _first_failure(info)
    if failure is not None:
        raise RuntimeError(f"ember.linalg.{name}: Unknown error code: {failure[1]}.")


def ldl_factor_ex(input, *, hermitian=False, check_errors=False, out=None):  # noqa: A002
    """LDL factorization with Bunch-Kaufman pivoting: ``(LD, pivots, info)``."""
    _no_out(out)
    result = _ldl.linalg_ldl_factor_ex(input, hermitian, check_errors)
    if check_errors:
        _raise_ldl_info("ldl_factor_ex", result.info)
    return result


def ldl_factor(input, *, hermitian=False, out=None):  # noqa: A002
    """LDL factorization with Bunch-Kaufman pivoting: ``(LD, pivots)``."""
    _no_out(out)
    LD, pivots, info = _ldl.linalg_ldl_factor_ex(input, hermitian, False)
    _raise_ldl_info("ldl_factor", info)
    return _ldl.LDLFactorResult(LD, pivots)


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):  # noqa: N803
    """The solution of ``A X = B`` given A's LDL factorization."""
    _no_out(out)
    return _ldl.linalg_ldl_solve(LD, pivots, B, hermitian)


# -- eig, matrix functions ----------------------------------------------------------------
def eig(input, *, out=None):  # noqa: A002
    """Eigenvalues and eigenvectors of a general square matrix (complex)."""
    _no_out(out)
    return _eig.linalg_eig(input)


def eigvals(input, *, out=None):  # noqa: A002
    """Eigenvalues of a general square matrix (complex)."""
    _no_out(out)
    return _eig.linalg_eig(input)[0]


def matrix_exp(input):  # noqa: A002
    """The matrix exponential."""
    return _eig.matrix_exp(input)


def householder_product(input, tau, *, out=None):  # noqa: A002
    """The first n columns of the product of Householder reflectors (LAPACK orgqr)."""
    _no_out(out)
    return _eig.householder_product(input, tau)


def matrix_power(input, n, *, out=None):  # noqa: A002
    """``A`` to the integer power ``n`` (negative: of its inverse), by repeated squaring."""
    _no_out(out)
    _decomp._check_matrix("linalg.matrix_power", input._data, floating=False)
    if n == 0:
        import ember
        eye = ember.eye(input.shape[-1], dtype=input.dtype).expand(input.shape)
        return input.clone().copy_(eye)
    matmul = _matmul()
    if n < 0:
        input = _decomp.linalg_inv(input)
        if n == -1:
            return input
        n = -n
    if n == 1:
        return input.clone()
    if n in (2, 3):
        result = matmul(input, input)
        return result if n == 2 else matmul(result, input)
    z = result = None
    while n > 0:  # binary powering, as torch (same products, same order)
        bit, n = n % 2, n // 2
        z = input if z is None else matmul(z, z)
        if bit:
            result = z if result is None else matmul(result, z)
    return result


def _matmul():
    from ._ops.linalg import matmul
    return matmul


# -- the _ex variants -------------------------------------------------------------------------
def inv_ex(A, *, check_errors=False, out=None):  # noqa: N803
    """Inverse and ``info`` (the first zero pivot of A's LU factorization, or 0)."""
    _no_out(out)
    result = _lu.linalg_inv_ex(A, check_errors)
    if check_errors and bool(result.info._data.any()):
        _decomp._raise_singular("linalg.inv_ex", A._data)
    return result


def solve_ex(A, B, *, left=True, check_errors=False, out=None):  # noqa: N803
    """Solution of ``A X = B`` (``X A = B``) and ``info`` (0, or A's first zero pivot)."""
    _no_out(out)
    result = _lu.linalg_solve_ex(A, B, left, check_errors)
    if check_errors and bool(result.info._data.any()):
        raise LinAlgError("ember.linalg.solve: The solver failed because the input matrix is "
                          "singular.")
    return result


def cholesky_ex(input, *, upper=False, check_errors=False, out=None):  # noqa: A002
    """Cholesky factor and ``info`` (the order of the first leading minor that is not
    positive-definite, or 0)."""
    _no_out(out)
    L, info = _decomp.linalg_cholesky_ex(input, upper)
    if check_errors and bool(info._data.any()):
        _decomp._cholesky_kernel(input._data, upper, "linalg.cholesky_ex")
    return _decomp.CholeskyExResult(L, info)


# -- tensor equations, Vandermonde matrices --------------------------------------------------
def tensorinv(input, ind=2, *, out=None):  # noqa: A002
    """The inverse of ``A`` seen as a linear map from its last dims to its first ``ind``."""
    _no_out(out)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = input.shape[:ind], input.shape[ind:]
    p, q = int(np.prod(rows)), int(np.prod(cols))
    if p != q:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {q} != {p}")
    try:
        inverse = _decomp.linalg_inv(input.reshape(p, q))
    except LinAlgError as e:
        raise LinAlgError(str(e).replace("linalg.inv:", "inv:")) from None
    return inverse.reshape(*cols, *rows)


def tensorsolve(input, other, dims=None, *, out=None):  # noqa: A002
    """X with ``tensordot(A, X, X.ndim) == B`` (``dims``: A's dims moved to the end first)."""
    _no_out(out)
    if dims is not None:
        import ember
        dims = [d % input.ndim for d in dims]
        input = ember.movedim(input, dims, list(range(input.ndim - len(dims), input.ndim)))
    rest = input.shape[other.ndim:]
    p, q = int(np.prod(input.shape[:other.ndim])), int(np.prod(rest))
    if p != q:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:])"
                           f" == prod(self.shape[:other.ndim]), but got {q} != {p}")
    return _decomp.linalg_solve(input.reshape(p, q), other.reshape(p)).view(*rest)


def vander(x, *, N=None):  # noqa: N803
    """Vandermonde matrix of increasing powers ``x^0 .. x^(N-1)`` along a new last dim."""
    import ember
    n = (x.shape[-1] if x.ndim else 1) if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = ember.cumprod(x.unsqueeze(-1).expand(*x.shape, n - 1), -1)
    ones = ember.ones(*x.shape, 1, dtype=powers.dtype, device=x.device)
    return ember.cat([ones, powers], -1)


def torch_matrix_exp(input):  # noqa: A002
    return _eig.matrix_exp(input)


def torch_matrix_power(input, n):  # noqa: A002
    return matrix_power(input, n)


def orgqr(input, input2):  # noqa: A002
    """``torch.orgqr``: ``linalg.householder_product`` (``input2``: the scalar factors)."""
    return _eig.householder_product(input, input2)


Tensor.matrix_exp = torch_matrix_exp
Tensor.matrix_power = torch_matrix_power
Tensor.orgqr = orgqr
Tensor.lu = lambda self, pivot=True, get_infos=False: torch_lu(self, pivot, get_infos)
Tensor.lu_solve = lambda self, LU_data, LU_pivots: torch_lu_solve(self, LU_data, LU_pivots)
