"""torch's older linear-algebra names: the ones torch removed (``eig``, ``symeig``, ``lstsq``,
``solve``, ``matrix_rank`` raise torch's error that names the ``linalg`` replacement), the
deprecated ``triangular_solve`` (which still works), and small forms of other ops
(``adjoint``, ``slice_inverse``, the ``view_as_*_copy`` functions).
"""
from __future__ import annotations

__all__ = ["adjoint", "eig", "lstsq", "matrix_rank", "slice_inverse", "solve", "symeig",
           "triangular_solve", "view_as_complex_copy", "view_as_real_copy"]

import warnings

_REMOVED = "This function was deprecated since version 1.9 and is now removed. "


def matrix_rank(input, tol=None, symmetric=False, *, out=None):  # noqa: A002
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed.\n"
        "Please use the `ember.linalg.matrix_rank` function instead. "
        "The parameter 'symmetric' was renamed in `ember.linalg.matrix_rank()` to 'hermitian'.")


def solve(input, A, *, out=None):  # noqa: A002, N803
    raise RuntimeError(
        _REMOVED + "`ember.solve` is deprecated in favor of `ember.linalg.solve`. "
        "`ember.linalg.solve` has its arguments reversed and does not return the LU "
        "factorization.\n\nTo get the LU factorization see `ember.lu`, which can be used with "
        "`ember.lu_solve` or `ember.lu_unpack`.\nX = ember.solve(B, A).solution should be "
        "replaced with:\nX = ember.linalg.solve(A, B)")


def lstsq(input, A, *, out=None):  # noqa: A002, N803
    raise RuntimeError(
        _REMOVED + "`ember.lstsq` is deprecated in favor of `ember.linalg.lstsq`.\n"
        "`ember.linalg.lstsq` has reversed arguments and does not return the QR decomposition "
        "in the returned tuple (although it returns other information about the problem).\n\n"
        "To get the QR decomposition consider using `ember.linalg.qr`.\n\n"
        "The returned solution in `ember.lstsq` stored the residuals of the solution in the "
        "last m - n columns of the returned value whenever m > n. In ember.linalg.lstsq, the "
        "residuals are in the field 'residuals' of the returned named tuple.\n\n"
        "The unpacking of the solution, as in\nX, _ = ember.lstsq(B, A).solution[:A.size(1)]\n"
        "should be replaced with:\nX = ember.linalg.lstsq(A, B).solution")


def symeig(input, eigenvectors=False, upper=True, *, out=None):  # noqa: A002
    raise RuntimeError(
        _REMOVED + "The default behavior has changed from using the upper triangular portion "
        "of the matrix by default to using the lower triangular portion.\n\n"
        "L, _ = ember.symeig(A, upper=upper) should be replaced with:\n"
        "L = ember.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\n"
        "L, V = ember.symeig(A, eigenvectors=True) should be replaced with:\n"
        "L, V = ember.linalg.eigh(A, UPLO='U' if upper else 'L')")


def eig(self, eigenvectors=False, *, e=None, v=None):
    raise RuntimeError(
        _REMOVED + "`ember.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` "
        "rather than real tensors mimicking complex tensors.\n\n"
        "L, _ = ember.eig(A) should be replaced with:\nL_complex = ember.linalg.eigvals(A)\n\n"
        "and\n\nL, V = ember.eig(A, eigenvectors=True) should be replaced with:\n"
        "L_complex, V_complex = ember.linalg.eig(A)")


_TRIANGULAR_SOLVE_WARNED = []


def _triangular_solve_result():
    from ._ops.reduction import return_type
    return return_type("triangular_solve", ("solution", "cloned_coefficient"))


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *,  # noqa: A002,N803
                     out=None):
    """Solve ``A X = b`` (``A^T X = b`` with ``transpose``) for a triangular ``A``; returns the
    solution and a copy of ``A``. Deprecated in favor of ``ember.linalg.solve_triangular``."""
    from ._ops.linalg_decomp import triangular_solve as triangular_solve_op
    if not _TRIANGULAR_SOLVE_WARNED:  # torch warns once per process
        _TRIANGULAR_SOLVE_WARNED.append(True)
        warnings.warn(
            "ember.triangular_solve is deprecated in favor of ember.linalg.solve_triangular"
            "and will be removed in a future PyTorch release.\nember.linalg.solve_triangular "
            "has its arguments reversed and does not return a copy of one of the inputs.\n"
            "X = ember.triangular_solve(B, A).solution\nshould be replaced with\n"
            "X = ember.linalg.solve_triangular(A, B).", UserWarning, stacklevel=2)
    if input.dtype != A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{input.dtype.scalar_name} and A of type {A.dtype.scalar_name} instead.")
    if input.ndim < 2 or A.ndim < 2 or A.shape[-1] != input.shape[-2]:
        raise RuntimeError(
            f"Incompatible matrix sizes for triangular_solve: each A matrix is {A.shape[-2]} by "
            f"{A.shape[-1]} but each b matrix is {input.shape[-2]} by {input.shape[-1]}")
    return _triangular_solve_result()(*triangular_solve_op(input, A, upper, transpose,
                                                           unitriangular))


def adjoint(input):  # noqa: A002
    """The conjugate transpose of the last two dimensions, as a view."""
    return input.adjoint()


def slice_inverse(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    """The inverse of ``src.slice(dim, start, end, step) == input``: a view of ``input``'s
    memory with ``src``'s sizes, strides and offset (``input`` is a slice of a tensor laid out
    as ``src``)."""
    return input.as_strided(src.size(), src.stride(), src.storage_offset())


from ._ops.view_copies import view_as_complex_copy, view_as_real_copy  # noqa: E402,F401
