"""Op table rows for torch.linalg's LU and LDL factorizations and solvers, eig, matrix_exp,
matrix_power, householder_product, the ``_ex`` variants, tensorinv / tensorsolve and vander
(and their torch.* names).

Matrices are small and well conditioned (a random matrix plus a multiple of the identity), so
that the factorizations' pivots are the same in ember and torch and gradcheck is stable.
"""
from __future__ import annotations

import numpy as np

import ember
from ember._ops import linalg as LA
from ember._ops import linalg_decomp as LD
from ember._ops import linalg_eig as LE
from ember._ops import linalg_ldl as LL
from ember._ops import linalg_lu as LU
from ember._ops import pointwise as PW
from ember._ops import shape as SH

from .db_linalg import _spd
from .op_db import C, S, row

_NOT_DIFF = "not differentiable in torch"


def _square(m, *batch, n=3):
    return m(*batch, n, n) + 3 * np.eye(n, dtype=m.dtype)


def _lu_samples(m):
    return [S("square", _square(m)), S("batch", _square(m, 2)), S("wide", m(2, 4)),
            S("tall", m(4, 2))]


row("linalg_lu_factor", ember.linalg.lu_factor, "linalg.lu_factor",
    [LU.linalg_lu_factor_ex, LU.lu_unpack], _lu_samples)
row("linalg_lu_factor_ex", ember.linalg.lu_factor_ex, "linalg.lu_factor_ex",
    [LU.linalg_lu_factor_ex], lambda m: [S("square", _square(m))])
row("linalg_lu", ember.linalg.lu, "linalg.lu", [LU.linalg_lu], _lu_samples)
row("lu_unpack", lambda A: ember.lu_unpack(*ember.linalg.lu_factor(A)),
    lambda torch: lambda A: torch.lu_unpack(*torch.linalg.lu_factor(A)),
    [LU.lu_unpack, LU.linalg_lu_factor_ex], _lu_samples)
row("torch_lu", ember.lu, "lu", [LU.linalg_lu_factor_ex],
    lambda m: [S("infos", _square(m), get_infos=True)])


def _lu_solve(left, adjoint):
    def call(A, B, lib=ember):
        LU_, pivots = lib.linalg.lu_factor(A)
        return lib.linalg.lu_solve(LU_, pivots, B, left=left, adjoint=adjoint)
    return call


for _left in (True, False):
    for _adjoint in (False, True):
        _f = _lu_solve(_left, _adjoint)
        row(f"linalg_lu_solve_{'left' if _left else 'right'}{'_adjoint' if _adjoint else ''}",
            _f, lambda torch, f=_f: lambda A, B: f(A, B, torch),
            [LU.linalg_lu_solve, LU.linalg_lu_factor_ex, LU.lu_unpack],
            lambda m, left=_left: [S("batch", _square(m, 2), m(2, 3, 2) if left else m(2, 2, 3))])
row("torch_lu_solve", lambda B, A: ember.lu_solve(B, *ember.linalg.lu_factor(A)),
    lambda torch: lambda B, A: torch.lu_solve(B, *torch.linalg.lu_factor(A)),
    [LU.linalg_lu_solve, LU.linalg_lu_factor_ex], lambda m: [S("one", m(3, 1), _square(m))])

# -- LDL (torch does not differentiate it) ----------------------------------------------------


def _symmetric(m, *batch):
    a = m(*batch, 3, 3)
    return a + np.swapaxes(a, -1, -2)


row("linalg_ldl_factor", ember.linalg.ldl_factor, "linalg.ldl_factor", [LL.linalg_ldl_factor_ex],
    lambda m: [S("one", _symmetric(m)), S("batch", _symmetric(m, 2))], differentiable=False)
row("linalg_ldl_factor_ex", ember.linalg.ldl_factor_ex, "linalg.ldl_factor_ex",
    [LL.linalg_ldl_factor_ex], lambda m: [S("one", _symmetric(m))], differentiable=False)
row("linalg_ldl_solve",
    lambda A, B: ember.linalg.ldl_solve(*ember.linalg.ldl_factor(A), B),
    lambda torch: lambda A, B: torch.linalg.ldl_solve(*torch.linalg.ldl_factor(A), B),
    [LL.linalg_ldl_solve, LL.linalg_ldl_factor_ex],
    lambda m: [S("batch", C(_symmetric(m, 2)), m(2, 3, 2))], differentiable=False)

# -- eig, matrix functions -----------------------------------------------------------------------
row("linalg_eigvals", ember.linalg.eigvals, "linalg.eigvals", [LE.linalg_eig, LD.linalg_solve],
    lambda m: [S("one", m(3, 3)), S("batch", m(2, 2, 2))])
row("linalg_eig_vectors", lambda A: ember.linalg.eig(A).eigenvectors.abs(),
    lambda torch: lambda A: torch.linalg.eig(A).eigenvectors.abs(),
    [LE.linalg_eig, LD.linalg_solve, PW.abs],
    lambda m: [S("one", m(3, 3))])
row("linalg_matrix_exp", ember.linalg.matrix_exp, "linalg.matrix_exp", [LE.matrix_exp],
    lambda m: [S("one", m(3, 3)), S("batch", m(2, 2, 2))])
row("matrix_exp_method", lambda A: A.matrix_exp(), None, [LE.matrix_exp],
    lambda m: [S("one", m(2, 2))])
_POWER_OPS = {0: [], 1: [SH.clone], 3: [LA.bmm], 6: [LA.bmm], -1: [LD.linalg_inv],
              -2: [LD.linalg_inv, LA.bmm]}
for _n, _ops in _POWER_OPS.items():
    row(f"linalg_matrix_power_{_n}".replace("-", "neg"),
        lambda A, n=_n: ember.linalg.matrix_power(A, n),
        lambda torch, n=_n: lambda A: torch.linalg.matrix_power(A, n), _ops,
        lambda m: [S("batch", _square(m, 2, n=2))], gradgrad=_n != 0)
row("linalg_householder_product", ember.linalg.householder_product,
    "linalg.householder_product", [LE.householder_product],
    lambda m: [S("one", m(4, 3), m(2, low=0.5)), S("batch", m(2, 3, 2), m(2, 2, low=0.5))])
row("orgqr", ember.orgqr, "orgqr", [LE.householder_product],
    lambda m: [S("one", m(3, 2), m(2, low=0.5))])

# -- the _ex variants -------------------------------------------------------------------------
row("linalg_inv_ex", ember.linalg.inv_ex, "linalg.inv_ex", [LU.linalg_inv_ex],
    lambda m: [S("one", _square(m)), S("singular", m.arr(np.zeros((2, 2))),
                                      no_gradcheck="singular")])
row("linalg_solve_ex", ember.linalg.solve_ex, "linalg.solve_ex", [LU.linalg_solve_ex],
    lambda m: [S("vector", _square(m), m(3)), S("right", _square(m), m(2, 3), left=False),
               # (torch's first-order gradients there are LU-based inf / nan patterns)
               S("singular", C(m.arr(np.zeros((2, 2)))), C(m(2)))])
row("linalg_cholesky_ex", lambda x, **k: ember.linalg.cholesky_ex(_spd(x), **k),
    lambda torch: lambda x, **k: torch.linalg.cholesky_ex(_spd(x), **k),
    [LD.linalg_cholesky_ex, LD.linalg_solve_triangular],
    lambda m: [S("spd", m(3, 3)), S("upper", m(2, 3, 3), upper=True)], public=False)
row("linalg_cholesky_ex_failing", ember.linalg.cholesky_ex, "linalg.cholesky_ex",
    [LD.linalg_cholesky_ex], lambda m: [S("failing", m.arr(-np.eye(2))),
                                        S("minor_2", m.arr([[4.0, 2.0], [2.0, 1.0]]))],
    differentiable=False)


# -- tensor equations, Vandermonde matrices ---------------------------------------------------
row("linalg_tensorinv", ember.linalg.tensorinv, "linalg.tensorinv", [LD.linalg_inv],
    lambda m: [S("ind1", m(4, 2, 2) + np.eye(4, dtype=m.dtype).reshape(4, 2, 2) * 3, ind=1)],
    public=False)  # (torch's result node is ReshapeAliasBackward0, ember's ViewBackward0)
row("linalg_tensorsolve", ember.linalg.tensorsolve, "linalg.tensorsolve", [LD.linalg_solve],
    lambda m: [S("plain", m(2, 3, 6) + np.eye(6, dtype=m.dtype).reshape(2, 3, 6) * 3,
                 m(2, 3)),
               S("dims", m(6, 2, 3) + np.eye(6, dtype=m.dtype).reshape(6, 2, 3) * 3, m(2, 3),
                 dims=(0,))])
row("linalg_vander", ember.linalg.vander, "linalg.vander", [],
    lambda m: [S("default", m(3)), S("batch", m(2, 3), N=4)],
    dtypes=("float32", "float64", "int64"))
row("torch_vander", ember.vander, "vander", [],
    lambda m: [S("default", m(3)), S("increasing", m(3), N=4, increasing=True)],
    dtypes=("float32", "float64", "int64"),
    # (torch's composition, whose second copy overwrites what cumprod saved: a gradient
    # through it raises the "modified by an inplace operation" error, in torch as in ember)
    differentiable=False)
