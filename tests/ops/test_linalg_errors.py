"""Linear algebra errors: torch's exception type and message, word for word (torch. -> ember.).

Each case runs on ember and, in the oracle test, on torch 2.13 (which must still say the same).
Failed factorizations raise ``linalg.LinAlgError`` (a RuntimeError), as torch does.
"""
from __future__ import annotations

import warnings

import pytest

import ember
import ember.linalg  # noqa: F401


def _err(m):
    return m.linalg.LinAlgError


CASES = {
    "mm_shapes": (lambda m: m.mm(m.ones(2, 3), m.ones(4, 5)), RuntimeError,
                  "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    "matmul_shapes": (lambda m: m.ones(2, 3) @ m.ones(4, 5), RuntimeError,
                      "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    "matmul_dtype": (lambda m: m.ones(2, 3) @ m.ones(3, 2, dtype=m.float64), RuntimeError,
                     "expected m1 and m2 to have the same dtype, but got: float != double"),
    "matmul_0d": (lambda m: m.matmul(m.tensor(1.0), m.ones(2)), RuntimeError,
                  "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    "addmm_shapes": (lambda m: m.addmm(m.ones(2, 2), m.ones(2, 3), m.ones(2, 2)), RuntimeError,
                     "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x2)"),
    "addmm_bias_dtype": (lambda m: m.addmm(m.ones(2, 2, dtype=m.float64), m.ones(2, 3),
                                           m.ones(3, 2)), RuntimeError,
                         "self and mat2 must have the same dtype, but got Double and Float"),
    "addmv_size": (lambda m: m.addmv(m.ones(2), m.ones(2, 3), m.ones(4)), RuntimeError,
                   "size mismatch, got input (2), mat (2x3), vec (4)"),
    "baddbmm_size": (lambda m: m.baddbmm(m.ones(2, 2, 2), m.ones(2, 2, 3), m.ones(2, 4, 2)),
                     RuntimeError, "Expected size for first two dimensions of batch2 tensor to "
                                   "be: [2, 3] but got: [2, 4]."),
    "addbmm_batches": (lambda m: m.addbmm(m.ones(2, 2), m.ones(2, 2, 3), m.ones(3, 3, 2)),
                       RuntimeError, "batch1 and batch2 must have same number of batches, got 2 "
                                     "and 3"),
    "vdot_2d": (lambda m: m.vdot(m.ones(2, 3), m.ones(2, 3)), RuntimeError,
                "1D tensors expected, but got 2D and 2D tensors"),
    "inner_last_dim": (lambda m: m.inner(m.ones(2, 3), m.ones(4, 5)), RuntimeError,
                       "inner() the last dimension must match on both input tensors but got "
                       "shapes [2, 3] and [4, 5]"),
    "tensordot_neg": (lambda m: m.tensordot(m.ones(2, 3), m.ones(3, 2), dims=-1), RuntimeError,
                      "tensordot expects dims >= 0, but got dims=-1"),
    "tensordot_lists": (lambda m: m.tensordot(m.ones(2, 3), m.ones(3, 2), dims=([0], [0, 1])),
                        RuntimeError, "both dimension lists should have same length"),
    "tensordot_size": (lambda m: m.tensordot(m.ones(2, 3), m.ones(4, 5), dims=1), RuntimeError,
                       "contracted dimensions need to match, but first has size 3 in dim -1 and "
                       "second has size 4 in dim 0"),
    "cross_len": (lambda m: m.linalg.cross(m.ones(2, 2), m.ones(2, 2)), RuntimeError,
                  "linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2"),
    "cross_ndim": (lambda m: m.linalg.cross(m.ones(2, 3), m.ones(3)), RuntimeError,
                   "linalg.cross: inputs must have the same number of dimensions."),
    "multi_dot_one": (lambda m: m.linalg.multi_dot([m.ones(2, 2)]), RuntimeError,
                      "multi_dot(): expected at least 2 tensors but got 1"),
    "multi_dot_shapes": (lambda m: m.linalg.multi_dot([m.ones(2, 3), m.ones(4, 5)]),
                         RuntimeError, "multi_dot(): tensors 0 and 1 with shapes [2, 3] and "
                                       "[4, 5] cannot be multiplied"),
    "multi_dot_3d": (lambda m: m.linalg.multi_dot([m.ones(2, 2, 2), m.ones(2, 3)]),
                     RuntimeError, "multi_dot(): the first tensor must be 1D or 2D but got 3D"),
    "chain_matmul_none": (lambda m: m.chain_matmul(), RuntimeError,
                          "chain_matmul(): Expected one or more matrices"),
    "einsum_size": (lambda m: m.einsum("ij,jk", m.ones(2, 3), m.ones(4, 5)), RuntimeError,
                    "einsum(): subscript j has size 4 for operand 1 which does not broadcast "
                    "with previously seen size 3"),
    "einsum_ndim": (lambda m: m.einsum("ij", m.ones(3)), RuntimeError,
                    "einsum(): the number of subscripts in the equation (2) does not match the "
                    "number of dimensions (1) for operand 0 and no ellipsis was given"),
    "einsum_fewer": (lambda m: m.einsum("i,i", m.ones(3)), RuntimeError,
                     "einsum(): fewer operands were provided than specified in the equation"),
    "einsum_more": (lambda m: m.einsum("i", m.ones(3), m.ones(3)), RuntimeError,
                    "einsum(): more operands were provided than specified in the equation"),
    "einsum_output": (lambda m: m.einsum("i->j", m.ones(3)), RuntimeError,
                      "einsum(): output subscript j does not appear in the equation for any "
                      "input operand"),
    "inv_square": (lambda m: m.linalg.inv(m.ones(2, 3)), RuntimeError,
                   "linalg.inv: A must be batches of square matrices, but they are 2 by 3 "
                   "matrices"),
    "inv_int": (lambda m: m.linalg.inv(m.ones(3, 3, dtype=m.long)), RuntimeError,
                "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    "inv_1d": (lambda m: m.linalg.inv(m.ones(3)), RuntimeError,
               "linalg.inv: The input tensor A must have at least 2 dimensions."),
    "inv_singular": (lambda m: m.linalg.inv(m.zeros(3, 3)), _err,
                     "linalg.inv: The diagonal element 1 is zero, the inversion could not be "
                     "completed because the input matrix is singular."),
    "inv_singular_batch": (lambda m: m.linalg.inv(m.ones(2, 3, 3)), _err,
                           "linalg.inv: (Batch element 0): The diagonal element 2 is zero, the "
                           "inversion could not be completed because the input matrix is "
                           "singular."),
    "det_1d": (lambda m: m.linalg.det(m.ones(3)), RuntimeError,
               "linalg.det: The input tensor A must have at least 2 dimensions."),
    "solve_square": (lambda m: m.linalg.solve(m.ones(2, 3), m.ones(2)), RuntimeError,
                     "linalg.solve: A must be batches of square matrices, but they are 2 by 3 "
                     "matrices"),
    "solve_shapes": (lambda m: m.linalg.solve(m.eye(3), m.ones(4, 2)), RuntimeError,
                     "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 "
                     "and 4x2)"),
    "solve_dtype": (lambda m: m.linalg.solve(m.eye(3), m.ones(3, 2, dtype=m.float64)),
                    RuntimeError, "linalg.solve: Expected A and B to have the same dtype, but "
                                  "found A of type Float and B of type Double instead"),
    "solve_singular": (lambda m: m.linalg.solve(m.zeros(3, 3), m.ones(3, 2)), _err,
                       "torch.linalg.solve: The solver failed because the input matrix is "
                       "singular."),
    "cholesky_not_pd": (lambda m: m.linalg.cholesky(-m.eye(3)), _err,
                        "linalg.cholesky: The factorization could not be completed because the "
                        "input is not positive-definite (the leading minor of order 1 is not "
                        "positive-definite)."),
    "cholesky_batch": (lambda m: m.linalg.cholesky(m.stack([m.eye(2), m.tensor(
        [[1.0, 2.0], [2.0, 1.0]])])), _err,
        "linalg.cholesky: (Batch element 1): The factorization could not be completed because "
        "the input is not positive-definite (the leading minor of order 2 is not "
        "positive-definite)."),
    "eigh_square": (lambda m: m.linalg.eigh(m.ones(2, 3)), RuntimeError,
                    "linalg.eigh: A must be batches of square matrices, but they are 2 by 3 "
                    "matrices"),
    "eigh_uplo": (lambda m: m.linalg.eigh(m.eye(3), UPLO="X"), RuntimeError,
                  "Expected UPLO argument to be 'L' or 'U', but got X"),
    "qr_mode": (lambda m: m.linalg.qr(m.ones(2, 3), mode="x"), RuntimeError,
                "qr received unrecognized mode 'x' but expected one of 'reduced' (default), "
                "'r', or 'complete'"),
    "qr_complete_tall_backward": (
        lambda m: m.linalg.qr(m.ones(4, 3, requires_grad=True), mode="complete").Q.sum()
        .backward(), RuntimeError,
        "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."),
    "qr_r_backward": (
        lambda m: m.linalg.qr(m.eye(3, requires_grad=True), mode="r").R.sum().backward(),
        RuntimeError, "The derivative of linalg.qr depends on Q, which is not computed when "
                      "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                      "differentiate through linalg.qr."),
    "svd_1d": (lambda m: m.linalg.svd(m.ones(3)), RuntimeError,
               "linalg.svd: The input tensor A must have at least 2 dimensions."),
    "lstsq_rows": (lambda m: m.linalg.lstsq(m.ones(3, 2), m.ones(4, 2)), RuntimeError,
                   "torch.linalg.lstsq: input.size(-2) should match other.size(-2)"),
    "matrix_norm_1d": (lambda m: m.linalg.matrix_norm(m.ones(3)), RuntimeError,
                       "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."),
    "matrix_norm_ord": (lambda m: m.linalg.matrix_norm(m.ones(3, 3), 3), RuntimeError,
                        "linalg.matrix_norm: Order 3 not supported."),
}


def _raised(fn, m):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(m)
        except Exception as err:  # noqa: BLE001 - the error is what is under test
            return err
    pytest.fail("no exception raised")


def _exc(exc, m):
    return exc(m) if exc is _err else exc


@pytest.mark.parametrize("case", sorted(CASES))
def test_ember_error(case):
    fn, exc, message = CASES[case]
    err = _raised(fn, ember)
    assert isinstance(err, _exc(exc, ember)), f"{type(err).__name__}: {err}"
    assert str(err) == message.replace("torch.", "ember.")


@pytest.mark.parametrize("case", sorted(CASES))
def test_torch_error(case):
    torch = pytest.importorskip("torch")
    fn, exc, message = CASES[case]
    err = _raised(fn, torch)
    assert isinstance(err, _exc(exc, torch))
    assert str(err) == message


def test_linalg_error_is_a_runtime_error():
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)
