"""Matrix functions and decompositions: inv, det, slogdet, solve, cholesky, qr, eigh, svd, ...

Every op takes batches (..., m, n). Derivatives are torch's (FunctionsManual.cpp), written with
ember ops so that they differentiate again; triangles are torch's tril and triu (their nodes
in a gradient's graph are torch's), diagonal and identity matrices products with constant
masks.
Decompositions carry torch's gauge caveats: eigenvector and singular vector gradients assume
distinct eigen/singular values and a loss that does not depend on the vectors' signs.
"""
from __future__ import annotations

__all__ = ['cholesky', 'cholesky_inverse', 'cholesky_solve', 'det', 'inverse', 'logdet', 'pinverse', 'qr', 'slogdet', 'svd']


import numpy as np

from .. import _dtype as D
from .._backend import device_type, get_xp, linalg_errors, to_numpy
from .._tensor import Tensor
from .diagonal import tril, triu
from .einsum import const
from .linalg import matmul
from . import opmath
from .pointwise import no_forward_ad
from .registry import NONE, conj_value, op


class LinAlgError(RuntimeError):
    """A linear algebra routine failed (``torch.linalg.LinAlgError``)."""


# (torch's class is torch._C._LinAlgError: its errors are reported by that name)
LinAlgError.__name__ = LinAlgError.__qualname__ = "_LinAlgError"


def _result(name, fields):
    """A named tuple printed as torch prints ``torch.return_types.<name>``."""
    from .reduction import return_type
    return return_type(name, tuple(fields))


SlogdetResult = _result("slogdet", ["sign", "logabsdet"])
LinalgSlogdetResult = _result("linalg_slogdet", ["sign", "logabsdet"])
QRResult = _result("linalg_qr", ["Q", "R"])
EighResult = _result("linalg_eigh", ["eigenvalues", "eigenvectors"])
SVDResult = _result("linalg_svd", ["U", "S", "Vh"])
LstsqResult = _result("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
CholeskyExResult = _result("linalg_cholesky_ex", ["L", "info"])
InvExResult = _result("linalg_inv_ex", ["inverse", "info"])
SolveExResult = _result("linalg_solve_ex", ["result", "info"])


# -- helpers (all work on arrays and on Tensors) ------------------------------------------------
def mT(x):
    return transpose(x, -2, -1)


def mH(x):
    """The conjugate transpose (the transpose of a real matrix), as torch's ``x.mH``: the
    transpose's conjugate (under create_graph a ConjBackward0 over a TransposeBackward0)."""
    return conj_value(mT(x))


def _shape(x):
    return tuple(x.shape)


def diagonal(x):
    """The main diagonal of the last two dims of a square batch."""
    n = _shape(x)[-1]
    return sum_dim(x * const(np.eye(n), x), -1)


def diag_embed(v):
    n = _shape(v)[-1]
    return unsqueeze(v, -1) * const(np.eye(n), v)


def _mat(v):
    """A batch of scalars as a batch of 1x1 matrices (broadcasts against matrices)."""
    # NOTE: reshape, not unsqueeze: raw formulas may hold 0-d results as NumPy scalars.
    return reshape(v, _shape(v) + (1, 1))


def _is_zero(g):
    """An upstream gradient that is known to be zero (an output nobody used)."""
    if isinstance(g, Tensor):
        return not g.requires_grad and not g._data.any()
    return not np.any(g)


def _type_name(a):
    return D._BY_NP[a.dtype].scalar_name


def _check_matrix(name, a, square=True, floating=True):
    if a.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    if floating and a.dtype.kind not in "fc" and a.dtype not in D.REDUCED_NP:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {_type_name(a)}")


_LOW_PRECISION = frozenset(("Half", "BFloat16"))


def _torch_type_name(a):
    """The dtype torch sees for ``a`` (a Tensor, or a kernel's array): a bfloat16 op's
    kernel runs on float32 arrays (see opmath.py)."""
    if isinstance(a, Tensor):
        return a.dtype.scalar_name
    reduced = opmath.reduced_now()
    if reduced is not None and a.dtype == np.float32:
        return D._BY_NP[reduced].scalar_name
    return _type_name(a)


def refuse_low_precision(a, kernel=None, name=None):
    """torch's LAPACK kernels exist for float, double and their complex types only (NumPy's
    have none for float16 either): a Half or BFloat16 matrix gets the dispatcher's
    NotImplementedError naming ``kernel``, or, with ``kernel=None``, the RuntimeError of an
    op ``name`` that checks the dtype itself (linalg.inv, slogdet, matrix_norm)."""
    type_name = _torch_type_name(a)
    if type_name not in _LOW_PRECISION:
        return
    if kernel is None:
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {type_name}")
    raise NotImplementedError(f'"{kernel}" not implemented for \'{type_name}\'')


def _batch_prefix(a, index):
    return f"(Batch element {index}): " if a.ndim > 2 else ""


def _first_zero_pivot(m):
    """1-based index of LAPACK getrf's first zero pivot (partial pivoting), or 0."""
    u = to_numpy(m).astype(np.float64)  # (an error message's detail: worked out on the host)
    n = u.shape[0]
    for k in range(n):
        p = k + int(np.argmax(np.abs(u[k:, k])))
        if u[p, k] == 0:
            return k + 1
        u[[k, p]] = u[[p, k]]
        u[k + 1:, k:] -= np.outer(u[k + 1:, k] / u[k, k], u[k, k:])
    return 0


def _raise_singular(name, a):
    flat = a.reshape((-1,) + a.shape[-2:])
    for b, m in enumerate(flat):
        k = _first_zero_pivot(m)
        if k:
            raise LinAlgError(f"{name}: {_batch_prefix(a, b)}The diagonal element {k} is zero, "
                              "the inversion could not be completed because the input matrix "
                              "is singular.")
    raise LinAlgError(f"{name}: The inversion could not be completed because the input matrix "
                      "is singular.")


# -- inverse, determinants ----------------------------------------------------------------------
@op("linalg_inv", promote=NONE, node="LinalgInvExBackward0")
def linalg_inv(A):
    _check_matrix("linalg.inv", A)
    refuse_low_precision(A, name="linalg.inv")
    try:
        with linalg_errors(A):  # (LAPACK's layout, as torch's: its reshapes are aliases)
            return _column_major(np.linalg.inv(A))
    except np.linalg.LinAlgError:
        _raise_singular("linalg.inv", A)


@linalg_inv.grad("A")
def inv_backward(grad, result):
    rt = mT(result)
    return -matmul(rt, matmul(grad, rt))


@op("linalg_det", promote=NONE, node="LinalgDetBackward0", writes=1)
def linalg_det(A):
    _check_matrix("linalg.det", A)
    refuse_low_precision(A, "lu_cpu")
    return np.linalg.det(A)


@linalg_det.grad("A")
def _(grad, A, result):
    if _shape(A)[-1] == 0:
        return A * 0
    eps = np.finfo(_dtype_np(A)).eps
    if np.any(np.abs(_data(result)) < 100 * eps):
        # The adjugate of a singular matrix through the SVD (Higham), as torch does.
        U, S, Vh = linalg_svd(A, False)
        alpha = linalg_det(U) * linalg_det(Vh) * grad
        alpha = reshape(alpha, _shape(alpha) + (1,))
        return matmul(U * unsqueeze(_prod_others(S) * alpha, -2), Vh)
    return _mat(grad * result) * mT(linalg_inv(A))


def _prod_others(s):
    """``out[..., i] = prod_{j != i} s[..., j]`` without dividing (s may hold zeros)."""
    n = _shape(s)[-1]
    cols = []
    for i in range(n):
        p = s[..., :1] * 0 + 1
        for j in range(n):
            if j != i:
                p = p * s[..., j:j + 1]
        cols.append(p)
    return cat(cols, -1)


def _data(x):
    return x._data if isinstance(x, Tensor) else x


def _dtype_np(x):
    return _data(x).dtype


@op("linalg_slogdet", promote=NONE, node="LinalgSlogdetBackward0", outputs=2,
    result_type=LinalgSlogdetResult, writes=1)
def linalg_slogdet(A):
    _check_matrix("linalg.slogdet", A)
    refuse_low_precision(A, name="linalg.slogdet")
    sign, logabsdet = np.linalg.slogdet(A)
    return sign.astype(A.dtype), logabsdet.astype(A.real.dtype)  # (real for a complex A)


@linalg_slogdet.grad("A")
def _(grads, A):
    # Real inputs: the sign is locally constant, only logabsdet carries a gradient.
    return _mat(grads[1]) * mT(linalg_inv(A))


@linalg_slogdet.jvp("A", joint=True)
def _(tangents, A, result):
    # torch's slogdet_jvp: tr(A^-1 dA) by an LU solve, no inverse, so that a singular A gives
    # its inf / NaN tangent as torch's does (linalg_inv refuses it)
    from .linalg_lu import linalg_lu_factor_ex, linalg_lu_solve
    (A_t,) = tangents
    LU, pivots, _ = linalg_lu_factor_ex(A)
    tr = sum_dim(linalg_lu_solve(LU, pivots, A_t).diagonal(0, -2, -1), -1)
    sign = result[0]
    if not is_complex_value(tr):
        return sign * 0, tr
    return tr.imag * (1j * sign), tr.real


def slogdet(input):  # noqa: A002 - torch's name
    """Sign and log absolute value of the determinant."""
    return SlogdetResult(*linalg_slogdet(input))


def logdet(input):  # noqa: A002
    """Log determinant (NaN where the determinant is negative)."""
    _check_matrix("logdet", input._data)  # (torch's checks name logdet, not slogdet)
    refuse_low_precision(input, name="logdet")
    sign, logabsdet = linalg_slogdet(input)
    return where(sign == -1, float("nan"), logabsdet)


def det(input):  # noqa: A002
    return linalg_det(input)


def inverse(input):  # noqa: A002
    return linalg_inv(input)


# -- solvers ------------------------------------------------------------------------------------
def _vector_rhs(A, B):
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def _check_solve(A, B, left=True):
    _check_matrix("linalg.solve", A)
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A "
                           f"of type {_torch_type_name(A)} and B of type "
                           f"{_torch_type_name(B)} instead")
    refuse_low_precision(A, "lu_cpu")
    vec = _vector_rhs(A, B)
    k = B.shape[-1] if vec else B.shape[-2 if left else -1]
    if k != A.shape[-1]:
        b = f"{B.shape[-1]}" if vec else f"{B.shape[-2]}x{B.shape[-1]}"
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{b})")


def _solve_left(A, B):
    # NOTE: batch dimensions are broadcast here: NumPy's solve does it, CuPy's does not.
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    xp = get_xp(A, B)
    A = xp.broadcast_to(A, batch + A.shape[-2:])
    B = xp.broadcast_to(B, batch + B.shape[-2:])
    try:
        with linalg_errors(A):
            return np.linalg.solve(A, B)
    except np.linalg.LinAlgError:
        raise LinAlgError("ember.linalg.solve: The solver failed because the input matrix is "
                          "singular.") from None


def _solution_layout(X, left=True):
    """``X`` laid out as torch's solvers leave their solution: each matrix column-major
    (LAPACK's layout) for ``A X = B``, row-major for ``X A = B`` (the transposed system's
    solution, transposed back); a batch of vectors is laid out as one matrix. Later reshapes
    of it (a batched matmul's) are then aliases where torch's are."""
    if X.ndim < 2:
        return X
    return _column_major(X) if left else get_xp(X).ascontiguousarray(X)


@op("linalg_solve", tensors=2, promote=NONE, node="LinalgSolveExBackward0")
def linalg_solve(A, B, left=True):
    _check_solve(A, B, left)
    if _vector_rhs(A, B):
        X = _solve_left(A if left else np.swapaxes(A, -1, -2), B[..., None])[..., 0]
    elif left:
        X = _solve_left(A, B)
    else:
        X = np.swapaxes(_solve_left(np.swapaxes(A, -1, -2), np.swapaxes(B, -1, -2)), -1, -2)
    return _solution_layout(X, left)


@linalg_solve.grad("A", "B")
def _(grad, A, B_shape, left, result):
    return solve_backward(grad, A, B_shape, left, result, linalg_solve)


def solve_backward(grad, A, B_shape, left, result, solve):
    """Gradients of ``X = solve(A, B)``; ``solve`` solves the transposed system."""
    vec = len(B_shape) == 1 or (len(B_shape) == len(_shape(A)) - 1
                                and tuple(B_shape) == _shape(A)[:-1])
    if vec:
        # torch's: the vectors solved as one-column matrices, the column squeezed off after
        gB = solve(mT(A), unsqueeze(grad, -1), left)
        gA = -(gB * unsqueeze(result, -2))
        return (gA if left else mT(gA)), squeeze(gB, -1)
    gB = solve(mT(A), grad, left)
    gA = -matmul(gB, mT(result)) if left else -matmul(mT(result), gB)
    return gA, gB


@op("linalg_solve_triangular", tensors=2, promote=NONE)
def linalg_solve_triangular(self, B, upper, left=True, unitriangular=False):
    refuse_low_precision(self, "triangular_solve_cpu")
    A = self
    n = A.shape[-1]
    xp = get_xp(A)
    mask = (1 - xp.tri(n, n, -1)) if upper else xp.tri(n, n)
    A = A * mask.astype(A.dtype)
    if unitriangular:
        A = A * (1 - xp.eye(n, dtype=A.dtype)) + xp.eye(n, dtype=A.dtype)
    if left:
        return _column_major(_solve_left(A, B))
    # column-major on either side, as torch's (LAPACK's trsm writes B's copy in place)
    return _column_major(np.swapaxes(
        _solve_left(np.swapaxes(A, -1, -2), np.swapaxes(B, -1, -2)), -1, -2))


@linalg_solve_triangular.grad("self", "B")
def _(grad, self, upper, left, unitriangular, result):
    gB = linalg_solve_triangular(mT(self), grad, not upper, left, unitriangular)
    gA = -matmul(gB, mT(result)) if left else -matmul(mT(result), gB)
    k = int(unitriangular)
    return (triu(gA, k) if upper else tril(gA, -k)), gB


def _column_major(x):
    """A copy of ``x`` with each matrix laid out column by column (LAPACK's layout, which
    torch's triangular_solve results keep), its batches one after another."""
    return get_xp(x).swapaxes(get_xp(x).swapaxes(x, -1, -2).copy(), -1, -2)


def _in_lapack_rhs_buffer(X, rows):
    """``X`` as the first rows of a column-major buffer of ``rows`` rows: LAPACK's
    least-squares drivers overwrite the right-hand side, max(m, n) rows, with the solution,
    and torch's solution is that view of it."""
    xp = get_xp(X)
    buffer = _column_major(xp.zeros(X.shape[:-2] + (rows, X.shape[-1]), X.dtype))
    buffer[..., :X.shape[-2], :] = X
    return buffer[..., :X.shape[-2], :]


@op("triangular_solve", tensors=2, promote=NONE, outputs=2, undefined_grads=True,
    node="TriangularSolveBackward0")
def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):  # noqa: N803
    """torch's deprecated triangular_solve: X of ``A X = self`` (``A^T X = self`` with
    ``transpose``) and a copy of ``A``, both with the batch dimensions of the two, laid out
    column-major as LAPACK leaves them in torch."""
    xp = get_xp(self, A)
    batch = np.broadcast_shapes(self.shape[:-2], A.shape[:-2])
    A = xp.broadcast_to(A, batch + A.shape[-2:])
    B = xp.broadcast_to(self, batch + self.shape[-2:])
    X = linalg_solve_triangular.kernel(xp.swapaxes(A, -1, -2) if transpose else A, B,
                                       upper != transpose, True, unitriangular)
    return _column_major(X), _column_major(A)


@triangular_solve.grad("self", "A")
def _(grads, self, A, upper, transpose, unitriangular, result0, grad_input_mask):  # noqa: N803
    """torch's triangular_solve_backward: the cloned coefficient's gradient goes to ``A``
    whole; the solution's through the transposed solve."""
    grad_x, grad_m = grads
    grad_b = grad_a = None
    if grad_x is not None:
        grad_b = triangular_solve(grad_x, conj_value(A), upper, not transpose, unitriangular)[0]
        if grad_input_mask[1]:
            grad_a = (-matmul(conj_value(result0), mT(grad_b)) if transpose else
                      -matmul(grad_b, mH(result0)))
            k = int(unitriangular)
            grad_a = triu(grad_a, k) if upper else tril(grad_a, -k)
    from .pointwise import zero_gradient
    if grad_a is None:
        grad_a = zero_gradient(A)
    if grad_b is None:
        grad_b = zero_gradient(self)
    if grad_input_mask[1] and grad_m is not None:
        grad_a = grad_a + grad_m
    return grad_b, grad_a


# -- cholesky -----------------------------------------------------------------------------------
def _cholesky_kernel(A, upper, name):
    _check_matrix(name, A)
    refuse_low_precision(A, "cholesky_cpu")
    try:
        with linalg_errors(A):
            L = np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        flat = to_numpy(A).reshape((-1,) + A.shape[-2:])  # (the error's detail: on the host)
        for b, m in enumerate(flat):
            for k in range(1, m.shape[-1] + 1):
                try:
                    np.linalg.cholesky(m[:k, :k])
                except np.linalg.LinAlgError:
                    raise LinAlgError(
                        f"{name}: {_batch_prefix(A, b)}The factorization could not be "
                        "completed because the input is not positive-definite (the leading "
                        f"minor of order {k} is not positive-definite).") from None
        raise
    return np.swapaxes(L, -1, -2).copy() if upper else L


def _cholesky_grad(grad, upper, result):
    L = mH(result) if upper else result
    gL = mH(grad) if upper else grad
    gA = tril(matmul(mH(L), gL))
    gA = mul_scalar(gA + mH(tril(gA, -1)), 0.5)  # (torch's C++ 0.5 *: MulBackward1)
    gA = linalg_solve_triangular(mH(L), gA, True, True)
    return linalg_solve_triangular(L, gA, False, False)


@op("linalg_cholesky", promote=NONE, complex_grad=True, node="LinalgCholeskyExBackward0")
def linalg_cholesky(A, upper=False):
    return _cholesky_kernel(A, upper, "linalg.cholesky")


linalg_cholesky.grad("A")(_cholesky_grad)


def _potf2(A):
    """LAPACK's unblocked Cholesky (lower) of a batch, with its partial result where it fails:
    (L, info), info the order of the first leading minor that is not positive-definite."""
    a = np.array(to_numpy(A).reshape((-1,) + A.shape[-2:]), copy=True)
    n = a.shape[-1]
    info = np.zeros(a.shape[0], np.int32)
    with np.errstate(all="ignore"):
        for b, m in enumerate(a):
            for j in range(n):
                ajj = m[j, j] - np.dot(m[j, :j], np.conj(m[j, :j]))
                if not (ajj.real > 0):
                    m[j, j] = ajj
                    info[b] = j + 1
                    break
                m[j, j] = ajj = np.sqrt(ajj)
                m[j + 1:, j] = (m[j + 1:, j] - m[j + 1:, :j] @ np.conj(m[j, :j])) / ajj
    return np.tril(a).reshape(A.shape), info.reshape(A.shape[:-2])


@op("linalg_cholesky_ex", promote=NONE, complex_grad=True, node="LinalgCholeskyExBackward0",
    outputs=2, diff_outputs=(True, False), result_type=CholeskyExResult)
def linalg_cholesky_ex(A, upper=False):
    _check_matrix("linalg.cholesky", A)  # (torch's checks name linalg.cholesky)
    refuse_low_precision(A, "cholesky_cpu")
    xp = get_xp(A)
    try:
        with linalg_errors(A):
            L, info = xp.linalg.cholesky(A), xp.zeros(A.shape[:-2], np.int32)
    except np.linalg.LinAlgError:  # LAPACK's partial factor and info (computed on the host)
        L, info = (xp.asarray(v) for v in _potf2(A))
    return (xp.swapaxes(L, -1, -2).conj().copy() if upper else L), info


@linalg_cholesky_ex.grad("A")
def _(grads, upper, result0):
    return _cholesky_grad(grads[0], upper, result0)


@op("cholesky", promote=NONE, complex_grad=True, method=True)
def cholesky(self, upper=False):
    """Cholesky factor (deprecated in torch in favour of ``linalg.cholesky``)."""
    return _cholesky_kernel(self, upper, "linalg.cholesky")


cholesky.jvp("self")(no_forward_ad("cholesky"))  # (linalg_cholesky has one)
cholesky.grad("self")(_cholesky_grad)


# -- solving with a Cholesky factor ---------------------------------------------------------------
def _factor_solve(factor, B, upper):
    """X with (L L^T) X = B given L (``upper``: U^T U X = B given U): two triangular solves."""
    L = np.swapaxes(factor, -1, -2) if upper else factor
    y = linalg_solve_triangular.kernel(L, B, False)
    return linalg_solve_triangular.kernel(np.swapaxes(L, -1, -2), y, True)


def _check_cholesky_solve(self, input2, upper=False):
    for name, x in (("b", self), ("u", input2)):
        if x.ndim < 2:
            raise RuntimeError(f"{name} should have at least 2 dimensions, but has {x.ndim} "
                               "dimensions instead")
    if self.dtype != input2.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_type_name(_data(self))} and A of type {_type_name(_data(input2))}"
                           " instead.")
    refuse_low_precision(self, "cholesky_solve_cpu")


@op("cholesky_solve", tensors=2, promote=NONE, method=True, check=_check_cholesky_solve)
def cholesky_solve(self, input2, upper=False):
    """Solve A X = ``self`` given the Cholesky factor ``input2`` of A."""
    return _solution_layout(_factor_solve(input2, self, upper))


@cholesky_solve.grad("self", "input2")
def _(grad, input2, upper, result):
    g_self = cholesky_solve(grad, input2, upper)
    common = matmul(g_self, mT(result))
    common = common + mT(common)
    return g_self, (-matmul(input2, common) if upper else -matmul(common, input2))


@op("cholesky_inverse", promote=NONE, method=True)
def cholesky_inverse(self, upper=False):
    """A^-1 given the Cholesky factor ``self`` of A."""
    _check_matrix("cholesky_inverse", self)
    refuse_low_precision(self, "cholesky_inverse_out_cpu")
    xp = get_xp(self)
    eye = xp.broadcast_to(xp.eye(self.shape[-1], dtype=self.dtype), self.shape)
    return _factor_solve(self, eye, upper)


@cholesky_inverse.grad("self")
def _(grad, self, upper, result):
    common = matmul(result, matmul(grad + mT(grad), result))
    return -matmul(self, common) if upper else -matmul(common, self)


# -- QR -----------------------------------------------------------------------------------------
def _check_qr_mode(mode):
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")


@op("linalg_qr", promote=NONE, complex_grad=True, node="LinalgQrBackward0", outputs=2,
    result_type=QRResult)
def linalg_qr(A, mode="reduced"):
    _check_qr_mode(mode)
    _check_matrix("linalg.qr", A, square=False)
    refuse_low_precision(A, "geqrf_cpu")
    # (Q and R in LAPACK's layout, as torch's: matmul's reshapes of them are aliases)
    if mode == "r":
        return get_xp(A).empty((0,), A.dtype), _column_major(np.linalg.qr(A, mode="r"))
    return tuple(_column_major(x) for x in np.linalg.qr(A, mode=mode))


@linalg_qr.grad("A")
def _(grads, mode, result0, result1):
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                           "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                           "going to differentiate through linalg.qr.")
    gQ, gR = grads
    Q, R = result0, result1
    m, n = _shape(Q)[-2], _shape(R)[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                           "and nrows > ncols.")
    gA = matmul(gR, mH(R)) - matmul(mH(Q), gQ)
    if m >= n:
        X = triu(gA)
        X = X + mH(X)
        X = X - 0.5 * diag_embed(diagonal(X))
        gA = matmul(Q, X) + gQ
        return linalg_solve_triangular(mH(R), gA, False, False)
    X = -gA
    X = tril(X - mH(X))
    X = X - 0.5 * diag_embed(diagonal(X))  # (a complex diagonal counts once, as torch's)
    gA = matmul(Q, X)
    gA = linalg_solve_triangular(mH(R[..., :m]), gA, False, False)
    zeros = const(np.zeros(_shape(gA)[:-1] + (n - m,)), gA)
    return cat([gA, zeros], -1) + matmul(Q, gR)


def qr(input, some=True):  # noqa: A002 - torch's name
    """QR decomposition (torch.qr: ``some=False`` is mode='complete')."""
    return linalg_qr(input, "reduced" if some else "complete")


# -- eigh ---------------------------------------------------------------------------------------
@op("linalg_eigh", promote=NONE, complex_grad=True, node="LinalgEighBackward0", outputs=2,
    result_type=EighResult, writes=(0, 1))  # (the eigenvectors are written in place)
def linalg_eigh(A, UPLO="L"):  # noqa: N803 - torch's name
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    _check_matrix("linalg.eigh", A)
    refuse_low_precision(A, "linalg_eigh_cpu")
    w, v = np.linalg.eigh(A, UPLO=UPLO)
    return w, v


@linalg_eigh.grad("A")
def _(grads, result0, result1):
    gL, gV = grads
    L, V = result0, result1
    Vh = mH(V)
    if _is_zero(gV):
        return matmul(V * unsqueeze(gL, -2), Vh)
    VhgV = matmul(Vh, gV)
    VhgV = 0.5 * (VhgV - mH(VhgV))
    n = _shape(L)[-1]
    E = unsqueeze(L, -2) - unsqueeze(L, -1) + const(np.eye(n), L)
    return matmul(V, matmul(VhgV / E + diag_embed(gL), Vh))


# -- SVD ----------------------------------------------------------------------------------------
@op("linalg_svd", promote=NONE, complex_grad=True, node="LinalgSvdBackward0", outputs=3,
    result_type=SVDResult)
def linalg_svd(A, full_matrices=True):
    _check_matrix("linalg.svd", A, square=False)
    refuse_low_precision(A, "linalg_svd_cpu")
    U, S, Vh = np.linalg.svd(A, full_matrices=full_matrices)
    return _column_major(U), S, _column_major(Vh)  # (LAPACK's layout, as torch's)


@linalg_svd.grad("A")
def _(grads, full_matrices, result0, result1, result2):
    gU, gS, gVh = grads
    U, S, Vh = result0, result1, result2
    k = _shape(S)[-1]
    if full_matrices:
        U, Vh, gU, gVh = U[..., :k], Vh[..., :k, :], gU[..., :k], gVh[..., :k, :]
    m, n = _shape(U)[-2], _shape(Vh)[-1]
    has_u, has_v = not _is_zero(gU), not _is_zero(gVh)
    if not has_u and not has_v:
        return matmul(U * unsqueeze(gS, -2), Vh)
    S2 = S * S
    E = unsqueeze(S2, -2) - unsqueeze(S2, -1) + const(np.eye(k), S)
    ret = diag_embed(gS)
    UhgU = matmul(mH(U), gU) if has_u else None
    VhgV = matmul(Vh, mH(gVh)) if has_v else None
    if is_complex_value(U):
        ret = ret + _svd_phase_term(UhgU, VhgV, S)
    if has_u:
        ret = ret + ((UhgU - mH(UhgU)) / E) * unsqueeze(S, -2)
    if has_v:
        ret = ret + unsqueeze(S, -1) * ((VhgV - mH(VhgV)) / E)
    if m > n and has_u:
        gUSinv = gU / unsqueeze(S, -2)
        gA = matmul(U, ret) + gUSinv - matmul(U, matmul(mH(U), gUSinv))
        return matmul(gA, Vh)
    if m < n and has_v:
        SinvgVh = gVh / unsqueeze(S, -1)
        gA = matmul(ret, Vh) + SinvgVh - matmul(matmul(SinvgVh, mH(Vh)), Vh)
        return matmul(U, gA)
    return matmul(U, matmul(ret, Vh))


def _svd_phase_term(UhgU, VhgV, S):
    """Complex singular vectors are defined up to a phase e^{i phi} per pair: a loss that
    depends on it is refused (torch's check); the imaginary part of diag(U^H gU) otherwise
    enters the diagonal as torch's formula has it."""
    from .complex import imag_part
    im_u = imag_part(diagonal(UhgU)) if UhgU is not None else 0
    im_v = imag_part(diagonal(VhgV)) if VhgV is not None else 0
    total = _data(im_u + im_v) if UhgU is not None or VhgV is not None else 0
    s = _data(S)
    largest = float(abs(s).max()) if s.size else 0.0  # CuPy's amax takes no initial=
    if bool((abs(get_xp(s).asarray(total)) > 1e-6 * max(1.0, largest)).any()):
        raise RuntimeError("svd_backward: The singular vectors in the complex case are specified "
                           "up to multiplication by e^{i phi}. The specified loss function "
                           "depends on this phase term, making it ill-defined.")
    if UhgU is None:
        return 0
    return diag_embed(im_u * 1j / S)


SvdResult = _result("svd", ["U", "S", "V"])


def svd(input, some=True, compute_uv=True):  # noqa: A002 - torch's name
    """torch.svd: ``(U, S, V)`` with V (not V^H); ``some=False`` gives full U and V."""
    U, S, Vh = linalg_svd(input, not some)
    if not compute_uv:
        return SvdResult(zeros_like(U), S, zeros_like(mT(Vh)))
    return SvdResult(U, S, mT(Vh))


# -- pinv and lstsq -----------------------------------------------------------------------------
_PINV_TYPES = frozenset(("Float", "Double", "ComplexFloat", "ComplexDouble"))


def _check_pinv(a):
    type_name = _torch_type_name(a)
    if a.ndim < 2 or type_name not in _PINV_TYPES:
        raise RuntimeError(f"linalg.pinv({type_name}{{{list(a.shape)}}}): expected a tensor with "
                           "2 or more dimensions of float, double, cfloat or cdouble types")


@op("linalg_pinv", promote=NONE, complex_grad=True, node="LinalgPinvBackward0")
def linalg_pinv(self, atol=None, rtol=None, hermitian=False):
    _check_pinv(self)
    u, s, vh = np.linalg.svd(self, full_matrices=False)
    if s.shape[-1] == 0:
        return get_xp(self).zeros(self.shape[:-2] + self.shape[-1:] + self.shape[-2:-1],
                                  self.dtype)
    smax = s[..., :1]
    if rtol is None:
        rtol = 0.0 if (atol is not None and atol > 0) else (
            max(self.shape[-2:]) * np.finfo(self.dtype).eps)
    tol = np.maximum(atol or 0.0, rtol * smax)
    with np.errstate(divide="ignore"):
        sinv = np.where(s > tol, 1 / s, 0).astype(self.dtype)
    return np.swapaxes(vh, -1, -2).conj() @ (sinv[..., None] * np.swapaxes(u, -1, -2).conj())


@linalg_pinv.grad("self")
def _(grad, self, result):
    return pinv_backward(grad, result, self)


def pinv_backward(grad, pinvA, A):
    """torch's pinv_backward."""
    m, n = _shape(A)[-2:]
    pinvAh, gradh = mH(pinvA), mH(grad)
    if m <= n:
        K = matmul(gradh, pinvA)
        KpinvAh = matmul(K, pinvAh)
        return (-mH(matmul(pinvA, K)) + KpinvAh - matmul(matmul(A, pinvA), KpinvAh)
                + matmul(matmul(pinvAh, pinvA), gradh - matmul(K, A)))
    K = matmul(pinvA, gradh)
    pinvAhK = matmul(pinvAh, K)
    return (-mH(matmul(K, pinvA)) + matmul(matmul(gradh - matmul(A, K), pinvA), pinvAh)
            + pinvAhK - matmul(matmul(pinvAhK, pinvA), A))


def pinverse(input, rcond=1e-15):  # noqa: A002 - torch's name
    return linalg_pinv(input, None, rcond)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def refuse_non_lapack_real(a):
    """torch's lstsq and matrix_rank compute their tolerance for float and double only."""
    if _torch_type_name(a) in _LOW_PRECISION:
        raise RuntimeError("This function doesn't handle types other than float and double")


def _check_lstsq(self, b, rcond=None, driver=None):
    if driver is not None and driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("ember.linalg.lstsq: parameter `driver` should be one of (gels, "
                           "gelsy, gelsd, gelss)")
    if driver not in (None, "gels") and device_type(self) == "cuda":
        raise RuntimeError("ember.linalg.lstsq: `driver` other than `gels` is not supported on "
                           "CUDA")
    if self.ndim < 2:
        raise RuntimeError("ember.linalg.lstsq: input must have at least 2 dimensions.")
    if self.dtype != b.dtype:
        raise RuntimeError("ember.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {_torch_type_name(self)} and other's "
                           f"dtype {_torch_type_name(b)}")
    vec = b.ndim == self.ndim - 1
    if self.shape[-2] != b.shape[-1 if vec else -2]:
        raise RuntimeError("ember.linalg.lstsq: input.size(-2) should match other.size(-"
                           f"{1 if vec else 2})")


@op("linalg_lstsq", tensors=2, promote=NONE, node="LinalgLstsqBackward0", outputs=4,
    diff_outputs=(True, True, False, False), result_type=LstsqResult)
def linalg_lstsq(self, b, rcond=None, driver=None):
    _check_lstsq(self, b, rcond, driver)
    refuse_non_lapack_real(self)
    driver = driver or ("gels" if device_type(self) == "cuda" else "gelsy")
    vec = b.ndim == self.ndim - 1
    B = b[..., None] if vec else b
    s = np.linalg.svd(self, compute_uv=False)
    tol = (rcond if rcond is not None and rcond > 0 else
           max(self.shape[-2:]) * np.finfo(self.dtype).eps) * s[..., :1]
    rank = (s > tol).sum(-1).astype(np.int64)
    X = linalg_pinv.kernel(self, None, rcond)
    m, n = self.shape[-2:]
    X = _in_lapack_rhs_buffer(X @ B, max(m, n))
    empty = get_xp(self).empty((0,), self.dtype)
    residuals = empty
    if driver != "gelsy" and m > n and np.all(rank == n):
        residuals = ((self @ X - B) ** 2).sum(-2)
    sv = s if driver in ("gelsd", "gelss") else empty
    if driver == "gels":
        rank = get_xp(self).empty((0,), np.int64)
    return (X[..., 0] if vec else X), residuals, rank, sv


@linalg_lstsq.grad("self", "b")
def _(grads, self, b, result0, result1):
    gX, gL = grads[0], grads[1]
    vec = len(_shape(b)) == len(_shape(self)) - 1
    B = unsqueeze(b, -1) if vec else b
    gX = unsqueeze(gX, -1) if vec else gX
    pinvA = linalg_pinv(self)
    gA = pinv_backward(matmul(gX, mT(B)), pinvA, self)
    gB = matmul(mT(pinvA), gX)
    if _shape(gL)[-1:] != (0,) and not _is_zero(gL):
        X = unsqueeze(result0, -1) if vec else result0
        r = matmul(self, X) - B
        g = unsqueeze(gL, -2)
        gA = gA + 2 * matmul(g * r, mT(X))
        gB = gB - 2 * g * r
    return gA, (gB[..., 0] if vec else gB)


Tensor.det = det
Tensor.logdet = logdet
Tensor.slogdet = slogdet
Tensor.inverse = inverse
Tensor.pinverse = pinverse
Tensor.qr = qr
Tensor.svd = svd

from .._creation import zeros_like  # noqa: E402
from .pointwise import is_complex_value, mul_scalar, where  # noqa: E402
from .reduction import sum_dim  # noqa: E402
from .shape import cat, reshape, squeeze, transpose, unsqueeze  # noqa: E402
