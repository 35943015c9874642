"""``ember.linalg``: torch.linalg's functions (decompositions, solvers, norms, products)."""
from __future__ import annotations

import sys

import math

from ._ops import linalg as _products
from ._ops import linalg_decomp as _decomp
from ._ops import reduction as _reduction
from ._ops.pointwise import abs as _abs
from ._linalg_factor import (cholesky_ex, eig, eigvals, householder_product,  # noqa: F401
                             inv_ex, ldl_factor, ldl_factor_ex, ldl_solve, lu, lu_factor,
                             lu_factor_ex, lu_solve, matrix_exp, matrix_power, solve_ex,
                             tensorinv, tensorsolve, vander)

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig",
           "eigh", "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor",
           "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot",
           "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]

LinAlgError = _decomp.LinAlgError
matmul = _products.matmul
multi_dot = _products.multi_dot


def inv(A, *, out=None):  # noqa: N803 - torch's names
    """Inverse of a square matrix (or a batch of them)."""
    return _decomp.linalg_inv(A)


def det(A, *, out=None):  # noqa: N803
    """Determinant of a square matrix (or a batch of them)."""
    return _decomp.linalg_det(A)


def slogdet(A, *, out=None):  # noqa: N803
    """Sign and natural log of the absolute value of the determinant."""
    return _decomp.linalg_slogdet(A)


def solve(A, B, *, left=True, out=None):  # noqa: N803
    """The solution X of ``A X = B`` (``X A = B`` when ``left=False``)."""
    return _decomp.linalg_solve(A, B, left)


def solve_triangular(input, B, *, upper, left=True, unitriangular=False, out=None):  # noqa: A002
    """The solution of a triangular system (only the triangle ``upper`` names is read)."""
    return _decomp.linalg_solve_triangular(input, B, upper, left, unitriangular)


def cholesky(input, *, upper=False, out=None):  # noqa: A002
    """Cholesky factor L (``A = L L^T``), or U with ``upper=True``."""
    return _decomp.linalg_cholesky(input, upper)


def qr(A, mode="reduced", *, out=None):  # noqa: N803
    """QR decomposition; ``mode`` is 'reduced', 'complete' or 'r'."""
    return _decomp.linalg_qr(A, mode)


def eigh(input, UPLO="L", *, out=None):  # noqa: A002
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix."""
    return _decomp.linalg_eigh(input, UPLO)


def eigvalsh(input, UPLO="L", *, out=None):  # noqa: A002
    """Eigenvalues (ascending) of a symmetric matrix."""
    return _decomp.linalg_eigh(input, UPLO)[0]


def svd(A, full_matrices=True, *, driver=None, out=None):  # noqa: N803
    """Singular value decomposition ``A = U diag(S) Vh``."""
    return _decomp.linalg_svd(A, full_matrices)


def svdvals(A, *, driver=None, out=None):  # noqa: N803
    """Singular values, in descending order."""
    return _decomp.linalg_svd(A, False)[1]


def pinv(input, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):  # noqa: A002
    """Moore-Penrose pseudo-inverse (``rcond``: torch's older form, a relative tolerance)."""
    if rcond is not None:
        atol, rtol = _old_tolerance("linalg_pinv", "rcond", atol, rtol), rcond
    return _decomp.linalg_pinv(input, atol, rtol, hermitian)


def lstsq(input, b, rcond=None, *, driver=None):  # noqa: A002
    """Least-squares solution of ``A X = B`` (solution, residuals, rank, singular_values)."""
    return _decomp.linalg_lstsq(input, b, rcond, driver)


def _old_tolerance(name, keyword, atol, rtol):
    """0.0, the absolute tolerance of torch's older overloads (``rcond``, ``tol``), which take
    neither ``atol`` nor ``rtol``."""
    if atol is not None or rtol is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"(Tensor, {keyword}, atol/rtol): {keyword} and atol/rtol are "
                        "different overloads")
    return 0.0


def matrix_rank(input, tol=None, hermitian=False, *, atol=None, rtol=None,  # noqa: A002
                out=None):
    """Number of singular values above the tolerance ``max(atol, rtol * largest)`` (``tol``:
    torch's older form, an absolute tolerance)."""
    if tol is not None:
        atol, rtol = tol, _old_tolerance("linalg_matrix_rank", "tol", atol, rtol)
    if input.ndim < 2:
        raise RuntimeError("ember.linalg.matrix_rank: The input tensor input must have at least "
                           "2 dimensions.")
    _decomp.refuse_non_lapack_real(input)
    s = svdvals(input.detach())
    if rtol is None:
        rtol = 0.0 if (atol is not None and atol > 0) else (
            max(input.shape[-2:]) * _eps(input))
    smax = s[..., :1] if s.shape[-1] else s.sum(-1, keepdim=True)
    tol = _products.mul(smax, rtol)
    if atol is not None:
        tol = _reduction.max(tol, _products.mul(tol, 0) + atol)
    return (s > tol).sum(-1)


def _eps(A):
    import numpy as np
    return float(np.finfo(A._data.dtype).eps)


def cross(input, other, *, dim=-1, out=None):  # noqa: A002
    """Cross product of 3-vectors along ``dim`` (inputs broadcast)."""
    return _products.linalg_cross(input, other, dim)


def vecdot(x, y, *, dim=-1, out=None):
    """Dot product of vectors along ``dim``."""
    return _reduction.sum(_products.mul(x, y), dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):  # noqa: N803
    """Diagonals of the matrices in a batch (``A.diagonal(offset, -2, -1)``)."""
    import ember
    if hasattr(ember, "diagonal"):
        return ember.diagonal(A, offset=offset, dim1=dim1, dim2=dim2)
    raise NotImplementedError("ember.linalg.diagonal needs ember.diagonal")


def vector_norm(input, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """Vector norm of ``x`` over ``dim`` (all elements by default)."""
    if isinstance(dim, list):
        dim = tuple(dim)
    return _reduction.linalg_vector_norm(input, ord, dim, keepdim, dtype)


def _matrix_norm_dims(A, dim):
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    d = tuple(int(x) % A.ndim for x in dim)
    if len(d) != 2 or d[0] == d[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    return d


def matrix_norm(input, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None,  # noqa: A002,N803
                out=None):
    """Matrix norm: 'fro', 'nuc', or the induced norms 1, -1, 2, -2, inf, -inf."""
    kernel = getattr(_reduction, "matrix_norm", None)
    if kernel is not None and ord not in ("nuc", 2, -2):
        return kernel(input, ord, dim, keepdim, dtype=dtype)
    d = _matrix_norm_dims(input, dim)
    if dtype is not None:
        input = input.to(dtype)
    if ord == "fro":
        return vector_norm(input, 2, d, keepdim)
    if ord not in ("nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord in ("nuc", 2, -2):
        _decomp.refuse_low_precision(input, name="linalg.matrix_norm")
        # torch's composition: move the matrix dims last, reduce the singular values, and
        # with keepdim put the two kept dims back in place.
        s = svdvals(_to_last_two(input, d))
        if ord == "nuc":
            out = _reduction.sum(s, -1, keepdim)
        else:
            out = _extreme(s, -1, ord > 0, keepdim)
        return _keep(out, d) if keepdim else out
    row_dim, col_dim = (d[0], d[1]) if ord in (1, -1) else (d[1], d[0])
    summed = _reduction.sum(_abs(input), row_dim, keepdim=True)
    out = _extreme(summed, col_dim, ord > 0, keepdim=True)
    return out if keepdim else _squeeze_dims(out, d)


def _extreme(x, dim, largest, keepdim=False):
    import ember
    name = "amax" if largest else "amin"
    if hasattr(ember, name):
        return getattr(ember, name)(x, dim, keepdim)
    return (_reduction.max if largest else _reduction.min)(x, dim, keepdim).values


def _to_last_two(A, d):
    rest = [i for i in range(A.ndim) if i not in d]
    return A.permute(*rest, *d)


def _keep(out, d):
    out = out.unsqueeze(-1)
    rest = [i for i in range(out.ndim) if i not in d]
    perm = [0] * out.ndim
    for src, dst in enumerate(rest + list(d)):
        perm[dst] = src
    return out.permute(*perm)


def _squeeze_dims(x, d):
    for i in sorted(d, reverse=True):
        x = x.squeeze(i)
    return x


def norm(input, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):  # noqa: A002,N803
    """Vector or matrix norm, chosen by ``ord`` and ``dim`` as torch.linalg.norm does."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2:
        return matrix_norm(input, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if ord is not None and dim is None:
        if input.ndim == 2:
            return matrix_norm(input, ord, (-2, -1), keepdim, dtype=dtype)
        if input.ndim != 1:
            raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input "
                               f"must be 1D or 2D. Got {input.ndim}D.")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: Order {ord} not supported.")
    # (torch passes a float 2 for no ord: its node shows _saved_ord 2.0)
    return vector_norm(input, 2.0 if ord is None else ord, dim, keepdim, dtype=dtype)


def cond(input, p=None, *, out=None):  # noqa: A002
    """Condition number (2-norm: ratio of the largest to the smallest singular value)."""
    _check_cond(input, p)
    if p in (None, 2, -2):
        s = svdvals(input)
        big, small = s[..., :1], s[..., -1:]
        return (big / small if p != -2 else small / big).squeeze(-1)
    inverse = inv(input)  # (first, as torch's: an integer input is refused by inv)
    return matrix_norm(input, p) * matrix_norm(inverse, p)


def _check_cond(A, p):  # noqa: N803
    """torch's own checks, before those of the ops it composes (svd, inv, matrix_norm)."""
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if p in (None, 2, -2):
        return
    if p not in ("fro", "nuc", 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but "
                           f"they are {A.shape[-2]} by {A.shape[-1]} matrices")



from ._out import install as _install_out  # noqa: E402  (once the namespace is complete)

_install_out("linalg", globals())

from ._numpy_keywords import accept_numpy_keywords as _accept_numpy  # noqa: E402
# torch's parser binds these: they take NumPy's names too (vector_norm(x, keepdims=True))
_accept_numpy(sys.modules[__name__], ("vector_norm", "matrix_norm", "norm"))
del _accept_numpy
