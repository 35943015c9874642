"""Linear algebra on float16 and bfloat16: torch has no LAPACK kernel for them, so each
decomposition and solver refuses them with torch's exception and message (the dispatcher's
NotImplementedError naming the kernel, or the op's own RuntimeError), after the checks torch
makes first (shapes, matching dtypes). Products and the elementwise norms still compute.

Each case runs on PyTorch 2.13 and on ember (``oracle.same``); skipped without torch.
"""
from __future__ import annotations

import pytest
from oracle import same


def _sq(t, dt):
    return t.tensor([[4.0, 1.0], [1.0, 3.0]], dtype=dt)


def _wide(t, dt):
    return t.ones(2, 3, dtype=dt)


def _pivots(t):
    return t.tensor([1, 2], dtype=t.int32)


_CASES = {
    "linalg.qr": lambda t, a: t.linalg.qr(a),
    "qr": lambda t, a: t.qr(a),
    "geqrf": lambda t, a: t.geqrf(a),
    "ormqr": lambda t, a: t.ormqr(a, a[:, 0], a),
    "householder_product": lambda t, a: t.linalg.householder_product(a, a[:, 0]),
    "svd": lambda t, a: t.linalg.svd(a),
    "svdvals": lambda t, a: t.linalg.svdvals(a),
    "torch.svd": lambda t, a: t.svd(a),
    "eigh": lambda t, a: t.linalg.eigh(a),
    "eigvalsh": lambda t, a: t.linalg.eigvalsh(a),
    "eig": lambda t, a: t.linalg.eig(a),
    "eigvals": lambda t, a: t.linalg.eigvals(a),
    "cholesky": lambda t, a: t.linalg.cholesky(a),
    "cholesky_ex": lambda t, a: t.linalg.cholesky_ex(a),
    "torch.cholesky": lambda t, a: t.cholesky(a),
    "cholesky_solve": lambda t, a: t.cholesky_solve(a, a),
    "cholesky_inverse": lambda t, a: t.cholesky_inverse(a),
    "inv": lambda t, a: t.linalg.inv(a),
    "inv_ex": lambda t, a: t.linalg.inv_ex(a),
    "inverse": lambda t, a: t.inverse(a),
    "matrix_power_negative": lambda t, a: t.linalg.matrix_power(a, -2),
    "tensorinv": lambda t, a: t.linalg.tensorinv(a, 1),
    "det": lambda t, a: t.linalg.det(a),
    "torch.det": lambda t, a: t.det(a),
    "slogdet": lambda t, a: t.linalg.slogdet(a),
    "logdet": lambda t, a: t.logdet(a),
    "solve": lambda t, a: t.linalg.solve(a, a),
    "solve_ex": lambda t, a: t.linalg.solve_ex(a, a),
    "tensorsolve": lambda t, a: t.linalg.tensorsolve(a, a[0]),
    "solve_triangular": lambda t, a: t.linalg.solve_triangular(a, a, upper=True),
    "lstsq": lambda t, a: t.linalg.lstsq(a, a),
    "matrix_rank": lambda t, a: t.linalg.matrix_rank(a),
    "pinv": lambda t, a: t.linalg.pinv(a),
    "lu_factor": lambda t, a: t.linalg.lu_factor(a),
    "lu_factor_ex": lambda t, a: t.linalg.lu_factor_ex(a),
    "lu": lambda t, a: t.linalg.lu(a),
    "lu_solve": lambda t, a: t.linalg.lu_solve(a, _pivots(t), a),
    "ldl_factor": lambda t, a: t.linalg.ldl_factor(a),
    "ldl_solve": lambda t, a: t.linalg.ldl_solve(a, _pivots(t), a),
    "matrix_norm_2": lambda t, a: t.linalg.matrix_norm(a, 2),
    "matrix_norm_nuc": lambda t, a: t.linalg.matrix_norm(a, "nuc"),
    "norm_nuc": lambda t, a: t.norm(a, "nuc"),
    "cond": lambda t, a: t.linalg.cond(a),
    "cond_1": lambda t, a: t.linalg.cond(a, 1),
    "orthogonal_": lambda t, a: t.nn.init.orthogonal_(t.empty(3, 2, dtype=a.dtype)),
    # (these compute, in torch as in ember)
    "matrix_power": lambda t, a: t.linalg.matrix_power(a, 2),
    "multi_dot": lambda t, a: t.linalg.multi_dot([a, a]),
    "vector_norm": lambda t, a: t.linalg.vector_norm(a),
}

# the checks torch makes before it looks at the dtype
_FIRST_CHECKS = {
    "qr_vector": lambda t, dt: t.linalg.qr(t.ones(3, dtype=dt)),
    "cholesky_wide": lambda t, dt: t.linalg.cholesky(_wide(t, dt)),
    "inv_wide": lambda t, dt: t.linalg.inv(_wide(t, dt)),
    "det_wide": lambda t, dt: t.linalg.det(_wide(t, dt)),
    "eigh_wide": lambda t, dt: t.linalg.eigh(_wide(t, dt)),
    "logdet_wide": lambda t, dt: t.logdet(_wide(t, dt)),
    "solve_dtypes": lambda t, dt: t.linalg.solve(_sq(t, dt), _sq(t, t.float64)),
    "lstsq_dtypes": lambda t, dt: t.linalg.lstsq(_sq(t, dt), _sq(t, t.float64)),
    "matrix_rank_vector": lambda t, dt: t.linalg.matrix_rank(t.ones(3, dtype=dt)),
    "pinv_vector": lambda t, dt: t.linalg.pinv(t.ones(3, dtype=dt)),
    "matrix_norm_vector": lambda t, dt: t.linalg.matrix_norm(t.ones(3, dtype=dt), 2),
    "cholesky_solve_dtypes": lambda t, dt: t.cholesky_solve(_sq(t, dt), _sq(t, t.float64)),
    "lu_solve_dtypes": lambda t, dt: t.linalg.lu_solve(_sq(t, t.float64), _pivots(t),
                                                       _sq(t, dt)),
}

_DTYPES = ["float16", "bfloat16"]


@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("name", sorted(_CASES))
def test_low_precision_linalg_as_torch(name, dtype):
    same(lambda t: _CASES[name](t, _sq(t, getattr(t, dtype))), check_warnings=False,
         rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("name", sorted(_FIRST_CHECKS))
def test_checks_before_the_dtype_as_torch(name, dtype):
    same(lambda t: _FIRST_CHECKS[name](t, getattr(t, dtype)), check_warnings=False)


def test_pinv_names_an_integer_input_as_torch():
    same(lambda t: t.linalg.pinv(t.ones(2, 2, dtype=t.int64)))


_MIXED = [("bfloat16", "float32"), ("float32", "bfloat16"), ("float16", "float32"),
          ("bfloat16", "float16"), ("complex64", "float32"), ("complex128", "float64"),
          ("int16", "float32"), ("int8", "uint8")]


@pytest.mark.parametrize("a,b", _MIXED)
def test_matmul_dtype_mismatch_names_the_types_as_torch(a, b):
    # (svd_lowrank and pca_lowrank of a bfloat16 matrix stop here, multiplying it by a
    # float32 one)
    same(lambda t: t.ones(2, 2, dtype=getattr(t, a)) @ t.ones(2, 2, dtype=getattr(t, b)))


@pytest.mark.parametrize("name", ["svd_lowrank", "pca_lowrank"])
def test_lowrank_of_bfloat16_as_torch(name):
    same(lambda t: getattr(t, name)(t.ones(3, 2, dtype=t.bfloat16), 1))


# the names torch's checks give: the _ex functions' are their plain ones', cond's its own
_CHECK_NAMES = {
    "cholesky_ex_int": lambda t: t.linalg.cholesky_ex(t.eye(2, dtype=t.int64)),
    "cholesky_ex_vector": lambda t: t.linalg.cholesky_ex(t.ones(3)),
    "cholesky_ex_wide": lambda t: t.linalg.cholesky_ex(t.ones(2, 3)),
    "inv_ex_int": lambda t: t.linalg.inv_ex(t.eye(2, dtype=t.int64)),
    "inv_ex_wide": lambda t: t.linalg.inv_ex(t.ones(2, 3)),
    "cond_vector": lambda t: t.linalg.cond(t.ones(3)),
    "cond_1_vector": lambda t: t.linalg.cond(t.ones(3), 1),
    "cond_1_wide": lambda t: t.linalg.cond(t.ones(2, 3), 1),
    "cond_fro_wide": lambda t: t.linalg.cond(t.ones(2, 3), "fro"),
    "cond_inf_wide": lambda t: t.linalg.cond(t.ones(2, 3), float("inf")),
    "cond_1_int": lambda t: t.linalg.cond(t.eye(2, dtype=t.int64), 1),
    "cond_int": lambda t: t.linalg.cond(t.eye(2, dtype=t.int64)),
    "cond_order_3": lambda t: t.linalg.cond(t.eye(2), 3),
}


@pytest.mark.parametrize("name", sorted(_CHECK_NAMES))
def test_linalg_checks_name_the_op_as_torch(name):
    same(_CHECK_NAMES[name])

