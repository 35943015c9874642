"""Op table rows for torch.special's functions (ember.special) and their torch / Tensor
aliases: Bessel and Airy functions, error-function relatives, incomplete gamma and zeta
functions, entropy, xlog1py, the orthogonal polynomials.

``_numpy_only`` rows run the same samples with SciPy switched off, so ember's own kernels are
compared with torch as well (and with scipy as the NumPy reference).
"""
from __future__ import annotations

import numpy as np
import scipy.special as sps

import ember
import ember.special as ES
from ember._ops import bessel as BS
from ember._ops import polynomials as PL
from ember._ops import shape as SH
from ember._ops import special as SP

from .db_pointwise import _numpy_only
from .op_db import C, S, row

_FLOATS_INT = ("float32", "float64", "int64")
_NOT_DIFF = "not differentiable here"


def _values(m):
    return [S("vector", m(5)), S("matrix", m(2, 3))]


def _unary_rows(name, opdef, np_fn, domain, *, own=True, edges=(), differentiable=True,
                torch_name=None, dtypes=_FLOATS_INT, **kw):
    """Rows for ``ember.special.<name>``, and with SciPy switched off."""
    fn = getattr(ES, name)
    extra = ([lambda m: S("edges", m.arr(list(edges)), no_gradcheck=_NOT_DIFF)]
             if edges else [])

    def samples(m):
        out = _values(m)
        if m.floating:
            out += [e(m) for e in extra]
        return out
    common = dict(np_ref=np_fn, domain=domain, differentiable=differentiable, **kw)
    row(f"special_{name}", fn, torch_name or f"special.{name}", [opdef], samples,
        dtypes=dtypes, **common)
    if own:
        row(f"special_{name}_numpy_only", _numpy_only(fn), torch_name or f"special.{name}",
            [opdef], samples, **common)


_INF, _NAN = np.inf, np.nan
_unary_rows("i0", BS.i0, np.i0, (-4.0, 4.0), edges=(0.0, _INF, -_INF, _NAN, 40.0))
_unary_rows("i0e", BS.i0e, sps.i0e, (-4.0, 4.0), kinks=(0.0,), edges=(0.0, _INF, 50.0))
_unary_rows("i1", BS.i1, sps.i1, (-4.0, 4.0), edges=(0.0, _INF, -_INF, -35.0))
_unary_rows("i1e", BS.i1e, sps.i1e, (-4.0, 4.0), kinks=(0.0,), edges=(0.0, -_INF, 50.0))
_unary_rows("erfcx", SP.erfcx, sps.erfcx, (-2.0, 4.0), edges=(-_INF, _INF, 30.0, -5.0))
_unary_rows("ndtri", SP.ndtri, sps.ndtri, (0.05, 0.95), edges=(0.0, 1.0, 1e-300, 2.0),
            dtypes=("float32", "float64"))
_unary_rows("log_ndtr", SP.log_ndtr, sps.log_ndtr, (-4.0, 3.0), edges=(-40.0, _INF, -_INF))
_unary_rows("entr", SP.entr, sps.entr, (0.1, 3.0), edges=(0.0, -1.0, _INF), own=False)
_unary_rows("ndtr", SP.ndtr, sps.ndtr, (-3.0, 3.0), own=False)
for _name, _np_name in (("bessel_j0", "j0"), ("bessel_j1", "j1"), ("bessel_y0", "y0"),
                        ("bessel_y1", "y1"), ("modified_bessel_i0", "i0"),
                        ("modified_bessel_i1", "i1"), ("modified_bessel_k0", "k0"),
                        ("modified_bessel_k1", "k1"), ("scaled_modified_bessel_k0", "k0e"),
                        ("scaled_modified_bessel_k1", "k1e")):
    _positive = "y" in _np_name or "k" in _np_name
    _unary_rows(_name, getattr(BS, _name), getattr(sps, _np_name),
                (0.1, 30.0) if _positive else (-30.0, 30.0), differentiable=False,
                edges=(0.0, _INF, -_INF, -1.0, 2.5, 40.0))
# NOTE: torch's airy_ai is off by up to 2.2e-6 between -3.3 and -2.09 (its asymptotic
# expansion starts there); ember's (SciPy's or its own) agree with SciPy to 1e-11.
_unary_rows("airy_ai", BS.airy_ai, lambda x: sps.airy(x)[0], (-9.0, 6.0),
            differentiable=False, edges=(0.0, _INF, -_INF, -2.5, 2.5, 30.0),
            tols={"float64": (1e-7, 3e-6), "float32": (1.3e-6, 3e-6)})
_unary_rows("spherical_bessel_j0", BS.spherical_bessel_j0,
            lambda x: np.where(np.isinf(x), 0.0, np.sinc(x / np.pi)).astype(x.dtype),
            (-10.0, 10.0), own=False, differentiable=False,
            edges=(0.0, 0.25, _INF, -_INF))

row("i0_torch", ember.i0, "i0", [BS.i0], _values, np_ref=np.i0)
row("i0_method", lambda x: x.i0(), None, [BS.i0], _values, np_ref=np.i0)
row("i0_", lambda x: x.clone().i0_(), None, [BS.i0, SH.clone], _values, np_ref=np.i0)


# -- binary functions ------------------------------------------------------------------------
def _pairs(m, a_low=0.5, x_low=0.2):
    return [S("same", m(2, 3, low=a_low), m(2, 3, low=x_low)),
            S("bcast", m(3, low=a_low), m(2, 3, low=x_low))]


row("special_xlog1py", ES.xlog1py, "special.xlog1py", SP.xlog1py.ops,
    lambda m: _pairs(m) + [S("number_first", 2.5, m(3)), S("number_second", m(3), 1.5),
                           S("zeros", m.arr([0.0, 0.0, 1.0]), m.arr([_NAN, -1.0, _INF]),
                             no_gradcheck=_NOT_DIFF)],
    np_ref=lambda x, y: sps.xlog1py(x, y), domain=(0.2, 3.0), dtypes=_FLOATS_INT)
row("special_zeta", ES.zeta, "special.zeta", SP.zeta.ops,
    lambda m: [S("other", C(m(2, 3, low=1.5, high=4.0)), m(2, 3)),
               S("number_first", 3.0, m(3)), S("number_second", C(m(3, low=1.5)), 2.5),
               S("edges", C(m.arr([1.0, 0.5, 2.0, 2.0, 3.0, 2.5])),
                 m.arr([1.0, 1.0, 0.0, -1.0, -1.5, -1.5]), no_gradcheck=_NOT_DIFF)],
    np_ref=lambda x, q: sps.zeta(x, q), domain=(0.3, 3.0),
    skips={"test_forward_ad": "torch has no forward-mode derivative of special_zeta"})
for _name, _op in (("gammainc", SP.igamma), ("gammaincc", SP.igammac)):
    row(f"special_{_name}", getattr(ES, _name), f"special.{_name}", [_op],
        lambda m: [S("other", C(m(2, 3)), m(2, 3)), S("bcast", C(m(3)), m(2, 3)),
                   S("edges", C(m.arr([0.0, 0.0, 1.0, -1.0, _INF, _INF, 1.0])),
                     m.arr([0.0, 1.0, 0.0, 1.0, 1.0, _INF, _INF]), no_gradcheck=_NOT_DIFF)],
        np_ref=getattr(sps, _name), domain=(0.3, 4.0))
    row(f"special_{_name}_numpy_only", _numpy_only(getattr(ES, _name)), f"special.{_name}",
        [_op], lambda m: [S("other", C(m(2, 3)), m(2, 3))], np_ref=getattr(sps, _name),
        domain=(0.3, 6.0))
row("igamma_method", lambda a, x: a.igamma(x), None, [SP.igamma],
    lambda m: [S("other", C(m(3)), m(3))], domain=(0.3, 4.0))
row("igammac_", lambda a, x: a.clone().igammac_(x), None, [SP.igammac],
    lambda m: [S("other", C(m(3)), m(3))], domain=(0.3, 4.0), differentiable=False)
row("special_multigammaln", ES.multigammaln, "special.multigammaln", [SP.mvlgamma],
    lambda m: [S("p1", m(4), 1), S("p3", m(2, 3), 3),
               S("poles", m.arr([0.5, 1.0]), 3, no_gradcheck=_NOT_DIFF)],
    np_ref=lambda x, p: sps.multigammaln(x, p) if np.ndim(x) == 0 else np.vectorize(
        lambda v: sps.multigammaln(v, p) if v > (p - 1) / 2 else np.inf)(x),
    domain=(1.5, 4.0), dtypes=_FLOATS_INT)
row("mvlgamma_method", lambda x, p: x.mvlgamma(p), None, [SP.mvlgamma],
    lambda m: [S("p2", m(3), 2)], domain=(1.5, 4.0))


# -- orthogonal polynomials (not differentiable in torch) --------------------------------------
def _poly_samples(m):
    degrees = np.array([0.0, 1.0, 2.0, 3.0, 7.0, 9.0, 12.0, -1.0, 2.5])
    return [S("grid", m(4, 1, low=-1.2, high=1.2), m.arr(degrees[None, :])),
            S("ends", m.arr([1.0, -1.0, 0.0, 0.5]), 5),
            S("number_x", 0.3, m.arr(degrees))]


for _name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
              "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
              "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
              "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
              "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"):
    row(f"special_{_name}", getattr(ES, _name), f"special.{_name}", [getattr(PL, _name)],
        _poly_samples, dtypes=_FLOATS_INT, differentiable=False)


# -- torch.special's aliases of other ember ops ---------------------------------------------
for _name, _torch in (("expit", "special.expit"), ("exp2", "special.exp2"),
                      ("expm1", "special.expm1"), ("log1p", "special.log1p"),
                      ("sinc", "special.sinc"), ("erf", "special.erf"),
                      ("erfc", "special.erfc"), ("digamma", "special.digamma"),
                      ("psi", "special.psi"), ("gammaln", "special.gammaln")):
    row(f"special_{_name}", getattr(ES, _name), _torch, [], lambda m: [S("vector", m(4, low=0.2))])
row("special_erfinv", ES.erfinv, "special.erfinv", [], lambda m: [S("vector", m(4) / 3)])
row("special_round", ES.round, "special.round", [],
    lambda m: [S("decimals", m(4), decimals=1), S("plain", m(3))],
    skips={"test_gradgradcheck": "round's derivative is 0 and records nothing"})
row("special_logit", ES.logit, "special.logit", [],
    lambda m: [S("eps", m(4, low=0.05, high=0.95), eps=0.1)])
row("special_polygamma", ES.polygamma, "special.polygamma", [],
    lambda m: [S("n2", 2, m(3, low=0.5))])
row("special_softmax", ES.softmax, "special.softmax", [],
    lambda m: [S("dim", m(2, 3), 1), S("dtype", m(3), 0, dtype=None)])
row("special_log_softmax", ES.log_softmax, "special.log_softmax", [],
    lambda m: [S("dim", m(2, 3), 0)])
row("special_logsumexp", ES.logsumexp, "special.logsumexp", [],
    lambda m: [S("keepdim", m(2, 3), 1, True)])
row("special_xlogy", ES.xlogy, "special.xlogy", [],
    lambda m: [S("pair", m(3), m(3, low=0.2)), S("number", 2.0, m(3, low=0.2))])
