"""Op table rows for complex tensors: conj, angle, complex, polar, sgn and abs of complex
values, and a few holomorphic ops on complex inputs, whose gradients the registry conjugates
(torch's convention: the gradient w.r.t. z = x + iy is dL/dx + i dL/dy).

Samples hold complex arrays (``m.complex``: complex64 rows for float32, complex128 for
float64), so gradcheck, gradgradcheck and the torch comparisons run on complex values.
"""
from __future__ import annotations

import numpy as np

import ember
from ember._ops import complex as CX
from ember._ops import indexing as IX
from ember._ops import linalg as LA
from ember._ops import linalg_decomp as LD
from ember._ops import pointwise as PW
from ember._ops import reduction as R
from ember._ops import shape as SH
from ember._ops import strided as ST
from ember._ops import unary as UN

from .op_db import S, method, row


def _one(m):
    return [S("vector", m.complex(4)), S("matrix", m.complex(2, 3)), S("0dim", m.complex())]


def _two(m):
    return [S("same", m.complex(2, 3), m.complex(2, 3)), S("bcast", m.complex(2, 3), m.complex(3))]


def _real_pair(m):
    return [S("same", m(2, 3), m(2, 3)), S("bcast", m(2, 3), m(3)), S("0dim", m(), m())]


# -- conjugates ----------------------------------------------------------------------------------
row("conj", lambda z, w: ember.conj(z) * w, lambda torch: lambda z, w: torch.conj(z) * w,
    [CX._conj, PW.mul], _two, np_ref=lambda z, w: np.conj(z) * w)
row("conj_method", lambda z: z.conj(), None, [CX._conj], _one,
    np_ref=np.conj)
row("conj_real", ember.conj, "conj", [], lambda m: [S("vector", m(3))],
    np_ref=lambda x: x, dtypes=("float32", "float64", "int64"))
row("_neg_view", lambda x: x._neg_view().resolve_neg(),
    lambda torch: lambda x: x._neg_view().resolve_neg(), [CX._neg_view_op, SH.clone],
    lambda m: [S("vector", m(3)), S("matrix", m(2, 3)), S("0dim", m())], np_ref=np.negative)
row("conj_physical", ember.conj_physical, "conj_physical", [CX._conj_physical], _one,
    np_ref=np.conj)
row("conj_physical_", lambda z: z.clone().conj_physical_(), None,
    [CX._conj_physical_inplace, CX._conj_physical, SH.clone], _one, np_ref=np.conj)
row("resolve_conj", lambda z: ember.resolve_conj(ember.conj(z)),
    lambda torch: lambda z: torch.resolve_conj(torch.conj(z)),
    [CX._conj, SH.clone], _one, np_ref=np.conj)

# -- angle, abs, sgn of complex values ---------------------------------------------------------
row("angle_complex", ember.angle, "angle", [CX.angle, PW.abs, PW._where], _one, np_ref=np.angle)
row("angle_real", ember.angle, "angle", [CX.angle],
    lambda m: [S("vector", m(5)), S("edges", m.arr([0.0, -0.0, -1.0, np.inf, -np.inf]),
                                    no_gradcheck="angle is constant, so its edges are too")],
    np_ref=lambda x: np.where(x < 0, np.pi, 0.0).astype(x.dtype),
    dtypes=("float32", "float64", "int64"), kinks=(0.0,))
row("abs_complex", ember.abs, "abs", [PW.abs, UN.sgn], _one, np_ref=np.abs)
row("sgn_complex", ember.sgn, "sgn", [UN.sgn, PW.abs, IX._masked_fill], _one,
    np_ref=lambda z: z / np.abs(z))

# -- building complex tensors from real ones --------------------------------------------------
row("complex", ember.complex, "complex", [CX.complex, ST._view_as_real, SH.select],
    _real_pair, np_ref=lambda a, b: a + 1j * b)
row("polar", ember.polar, "polar", [CX.polar, CX._conj_physical, UN.sgn, PW.mul, ST._view_as_real,
                                    SH.select],
    lambda m: [S("same", m(2, 3, low=0.5), m(2, 3)), S("bcast", m(3, low=0.5), m(2, 3))],
    np_ref=lambda r, t: r * np.exp(1j * t))

# -- holomorphic ops on complex values (conjugated formulas) -------------------------------------
row("mul_complex", ember.mul, "mul", [PW.mul], _two, np_ref=np.multiply)
row("mul_real_complex", ember.mul, "mul", [PW.mul],
    lambda m: [S("real_lhs", m(2, 3), m.complex(2, 3)), S("scalar_j", m(3), 2j)],
    np_ref=np.multiply)
row("div_complex", ember.div, "div", [PW.div], _two, np_ref=np.divide)
row("exp_complex", ember.exp, "exp", [PW.exp], _one, np_ref=np.exp)
row("sum_complex", method("sum"), None, [R.sum_dim],
    lambda m: [S("dim", m.complex(2, 3), 1)], np_ref=lambda z, d: z.sum(d))
row("matmul_complex", ember.matmul, "matmul", [LA.mm],
    lambda m: [S("mm", m.complex(2, 3), m.complex(3, 2))], np_ref=np.matmul)
row("vdot_complex", ember.vdot, "vdot", [LA.vdot, CX._conj],
    lambda m: [S("vector", m.complex(3), m.complex(3))], np_ref=np.vdot)


# -- non-holomorphic formulas written for complex values: decompositions, and ops whose complex
# forms need their own kernels or formulas ---------------------------------------------------
def _hpd(lib):
    """A Hermitian positive definite matrix from any square z (differentiably)."""
    return lambda z: z @ z.mH + 3 * lib.eye(z.shape[-1], dtype=z.dtype, device=z.device)


def _eigh_parts(lib):
    """eigh's values and the moduli of its vectors (their phases are arbitrary)."""
    def f(z):
        w, v = lib.linalg.eigh(z + z.mH)
        return w, v.abs()
    return f


def _svd_parts(lib):
    """The singular values, the rebuilt matrix and the moduli of U and Vh (phase-free)."""
    def f(z):
        U, s, Vh = lib.linalg.svd(z, full_matrices=False)
        return s, (U * s.unsqueeze(-2)) @ Vh, U.abs(), Vh.abs()
    return f


_LINALG_TOLS = {"float32": (1e-4, 1e-4)}
row("linalg_cholesky_complex", lambda z: ember.linalg.cholesky(_hpd(ember)(z)),
    lambda torch: lambda z: torch.linalg.cholesky(_hpd(torch)(z)),
    [LD.linalg_cholesky, LD.linalg_solve_triangular, LA.mm],
    lambda m: [S("3x3", m.complex(3, 3))], tols=_LINALG_TOLS)
row("linalg_qr_complex", ember.linalg.qr, "linalg.qr", [LD.linalg_qr, LD.linalg_solve_triangular],
    lambda m: [S("tall", m.complex(4, 3)), S("wide", m.complex(2, 4))], tols=_LINALG_TOLS)
row("linalg_eigh_complex", _eigh_parts(ember), _eigh_parts, [LD.linalg_eigh, PW.abs],
    lambda m: [S("3x3", m.complex(3, 3))], tols=_LINALG_TOLS)
row("linalg_svd_complex", _svd_parts(ember), _svd_parts, [LD.linalg_svd, PW.abs],
    lambda m: [S("tall", m.complex(4, 3)), S("wide", m.complex(2, 3)),
               S("square", m.complex(3, 3))], tols=_LINALG_TOLS)
row("linalg_pinv_complex", ember.linalg.pinv, "linalg.pinv", [LD.linalg_pinv],
    lambda m: [S("tall", m.complex(4, 3)), S("wide", m.complex(2, 4))],
    np_ref=np.linalg.pinv, tols=_LINALG_TOLS)
row("sigmoid_complex", ember.sigmoid, "sigmoid", [PW.sigmoid], _one,
    np_ref=lambda z: 1 / (1 + np.exp(-z)))
row("acosh_complex", ember.acosh, "acosh", [UN.acosh], _one, np_ref=np.arccosh)
