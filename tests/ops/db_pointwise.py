"""Op table rows for the pointwise families: unary maths, special functions, binary and
ternary ops, clamping, logical and bitwise ops (ember._ops.unary, special, binary, logical).

Samples cover scalars, vectors, matrices, broadcasting, 0-dim and empty tensors, each op's
domain, and int/bool inputs (promoted to the default dtype by float-valued ops).
"""
from __future__ import annotations

import numpy as np
import scipy.special as sps

import ember
from ember._ops import binary as BI
from ember._ops import logical as LG
from ember._ops import pointwise as PW
from ember._ops import shape as SH
from ember._ops import special as SP
from ember._ops import unary as UN

from .op_db import C, S, binary, inplace_binary, inplace_unary, method, row, unary

FLOAT_INT = ("float32", "float64", "float16", "int64", "bool")
_NOT_DIFF = "not differentiable here"


def _with(m, extra):
    return unary(m) + (extra(m) if extra else [])


def _unary_family(name, mod, np_fn, domain=(-2.0, 2.0), kinks=(), dtypes=FLOAT_INT,
                  extra=None, inplace=True, aliases=(), tols=None, opdef=None,
                  inplace_opdef=None, **kw):
    """Rows for ``ember.<name>``, ``x.<name>()``, ``x.<name>_()`` and torch's aliases."""
    d = opdef or getattr(mod, name)
    common = {"np_ref": lambda x, *a, **k: np_fn(x), "domain": domain, "kinks": kinks,
              "tols": tols or {}, **kw}
    row(name, getattr(ember, name), name, [d], lambda m: _with(m, extra), dtypes=dtypes,
        **common)
    row(f"{name}_method", method(name), None, [d], unary, **common)
    # torch has no derivative for some in-place variants (asinh_): forward and names only.
    di = {} if inplace_opdef is None else {"differentiable": False}
    if inplace:
        row(f"{name}_", lambda x: getattr(x.clone(), name + "_")(), None,
            [inplace_opdef or d, SH.clone], inplace_unary, dtypes=("float32", "float64", "int64"),
            **di, **common)
    for alias in aliases:
        row(alias, getattr(ember, alias), alias, [d], unary, **common)
        row(f"{alias}_method", method(alias), None, [d], unary, **common)
        row(f"{alias}_", lambda x, a=alias: getattr(x.clone(), a + "_")(), None,
            [inplace_opdef or d, SH.clone], inplace_unary, **di, **common)


def _edges(*values):
    return lambda m: [S("edges", m.arr(list(values)), no_gradcheck=_NOT_DIFF)] if m.floating \
        else []


_INF = np.inf
# -- unary maths -------------------------------------------------------------------------------
_unary_family("sgn", UN, np.sign, kinks=(0.0,),
              dtypes=("float32", "float64", "float16", "int64", "int32", "bool"),
              extra=_edges(0.0, -0.0, _INF, -_INF))
_unary_family("deg2rad", UN, np.deg2rad, extra=_edges(-_INF, _INF, 1e30))
_unary_family("rad2deg", UN, np.rad2deg, extra=_edges(-_INF, _INF, 1e30))
_unary_family("exp2", UN, np.exp2, extra=_edges(-_INF, _INF, 100.0))
_unary_family("expm1", UN, np.expm1, extra=_edges(-_INF, 1e-10, -1e-10))
_unary_family("log2", UN, np.log2, domain=(0.1, 3.0), extra=_edges(0.0, -1.0, _INF))
_unary_family("log10", UN, np.log10, domain=(0.1, 3.0), extra=_edges(0.0, -1.0, _INF))
_unary_family("log1p", UN, np.log1p, domain=(-0.9, 2.0), extra=_edges(-1.0, -2.0, 1e-10))
_unary_family("rsqrt", UN, lambda x: 1 / np.sqrt(x), domain=(0.1, 3.0),
              extra=_edges(0.0, -1.0, _INF))
_unary_family("tan", UN, np.tan, domain=(-1.2, 1.2))
_unary_family("asin", UN, np.arcsin, domain=(-0.9, 0.9), aliases=("arcsin",),
              dtypes=("float32", "float64", "float16", "bool"), extra=_edges(1.0, -1.0, 1.5))
_unary_family("acos", UN, np.arccos, domain=(-0.9, 0.9), aliases=("arccos",),
              dtypes=("float32", "float64", "float16", "bool"), extra=_edges(1.0, -1.0, 1.5))
_unary_family("atan", UN, np.arctan, aliases=("arctan",), extra=_edges(_INF, -_INF))
_unary_family("sinh", UN, np.sinh)
_unary_family("cosh", UN, np.cosh)
_unary_family("asinh", UN, np.arcsinh, aliases=("arcsinh",), inplace_opdef=UN.asinh_inplace)
_unary_family("acosh", UN, np.arccosh, domain=(1.1, 3.0), aliases=("arccosh",),
              inplace_opdef=UN.acosh_inplace,
              extra=_edges(1.0, 0.5, _INF))
_unary_family("atanh", UN, np.arctanh, domain=(-0.9, 0.9), aliases=("arctanh",),
              inplace_opdef=UN.atanh_inplace,
              dtypes=("float32", "float64", "float16", "bool"), extra=_edges(1.0, -1.0, 2.0))
_unary_family("sinc", UN, np.sinc, extra=lambda m: [S(
    "zero", m.arr([0.0, 1.0, -2.0, 0.5]),
    no_gradcheck="torch's sinc_backward (which ember follows) has a NaN second derivative at "
                 "0: the masked branch divides 0 by 0")])
_unary_family("frac", UN, lambda x: x - np.trunc(x), kinks=(-2.0, -1.0, 0.0, 1.0, 2.0),
              dtypes=("float32", "float64", "float16", "int64", "bool"))
for _name, _np in (("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc),
                   ("round", np.round)):
    _unary_family(_name, UN, _np, kinks=(-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0),
                  opdef=UN._round if _name == "round" else None,
                  dtypes=("float32", "float64", "float16", "int64", "int32", "bool"),
                  extra=lambda m: [S("halves", m.arr([0.5, 1.5, 2.5, -0.5, -2.5]),
                                     no_gradcheck=_NOT_DIFF)] if m.floating else [])
_unary_family("fix", UN, np.trunc, kinks=(-2.0, -1.0, 0.0, 1.0, 2.0),
              dtypes=("float32", "float64", "int64", "bool"))


def _logit_samples(m):
    out = [S("eps", m(2, 3, low=0.0, high=1.0, kinks=(0.1, 0.9)), eps=0.1),
           S("eps_small", m(5), eps=1e-6)]
    if m.floating:
        out.append(S("edges", m.arr([0.0, 1.0, -0.5, 1.5]), no_gradcheck=_NOT_DIFF))
        out.append(S("edges_eps", m.arr([0.0, 1.0, -0.5, 1.5]), eps=0.25,
                     no_gradcheck=_NOT_DIFF))
    return out


def _np_logit(x, eps=None):
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


row("logit", ember.logit, "logit", [UN.logit], lambda m: unary(m) + _logit_samples(m),
    np_ref=_np_logit,
    domain=(0.05, 0.95), dtypes=("float32", "float64", "float16", "bool"))
row("logit_method", method("logit"), None, [UN.logit], _logit_samples, domain=(0.05, 0.95))
row("logit_", lambda x, **k: x.clone().logit_(**k), None, [UN.logit, SH.clone],
    _logit_samples, domain=(0.05, 0.95))


def _round_decimals_samples(m):
    big = m(2, 3, low=-50.0, high=50.0) if m.floating else m(2, 3)
    return [S("dec1", m(2, 3), decimals=1), S("dec2", m(5), decimals=2),
            S("dec_neg", big, decimals=-1), S("dec0", m(3), decimals=0),
            S("scalar", m(), decimals=3), S("empty", m(0, 2), decimals=1)]


row("round_decimals", ember.round, "round", [UN.round_decimals], _round_decimals_samples,
    np_ref=lambda x, decimals: np.round(x, decimals),
    dtypes=("float32", "float64", "int64"))
row("round_decimals_", lambda x, **k: x.clone().round_(**k), None,
    [UN.round_decimals, SH.clone], _round_decimals_samples,
    np_ref=lambda x, decimals: np.round(x, decimals))


def _nan_to_num_samples(m):
    out = unary(m)
    if m.floating:
        v = m.arr([np.nan, _INF, -_INF, 1.0, -2.0])
        out += [S("specials", v), S("replace", v, nan=1.5, posinf=2.0, neginf=-3.0),
                S("replace_kw", v, posinf=100.0)]
    return out


row("nan_to_num", ember.nan_to_num, "nan_to_num", [UN.nan_to_num], _nan_to_num_samples,
    np_ref=np.nan_to_num, dtypes=("float32", "float64", "float16", "int64", "bool"))
row("nan_to_num_", lambda x, **k: x.clone().nan_to_num_(**k), None,
    [UN.nan_to_num, SH.clone], _nan_to_num_samples, np_ref=np.nan_to_num)
row("positive", ember.positive, "positive", [], unary, np_ref=lambda x: x,
    dtypes=("float32", "float64", "int64", "bool"))
row("pos_operator", lambda x: +x, None, [], unary, np_ref=lambda x: x,
    dtypes=("float32", "int64", "bool"))
row("square", ember.square, "square", [PW.pow_scalar], unary, np_ref=np.square,
    dtypes=("float32", "float64", "int64", "bool"))
row("square_", lambda x: x.clone().square_(), None, [PW.pow_scalar, SH.clone],
    inplace_unary, np_ref=np.square, dtypes=("float32", "float64", "int64"))


def _predicate_samples(m):
    out = unary(m)
    if m.floating:
        out.append(S("specials", m.arr([np.nan, _INF, -_INF, 0.0, -1.5])))
    return out


for _name, _np in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                   ("isposinf", np.isposinf), ("isneginf", np.isneginf),
                   ("isreal", np.isreal)):
    row(_name, getattr(ember, _name), _name, [getattr(UN, _name)], _predicate_samples,
        np_ref=_np, dtypes=("float32", "float64", "float16", "int64", "bool"),
        differentiable=False)
    row(f"{_name}_method", method(_name), None, [getattr(UN, _name)], _predicate_samples,
        np_ref=_np, dtypes=("float32", "int64"), differentiable=False)

# -- special functions ---------------------------------------------------------------------------


def _numpy_only(fn):
    """``fn`` with scipy switched off: the NumPy-only kernels run."""
    def call(*args, **kwargs):
        saved = list(SP._SCIPY)
        SP._SCIPY[:] = [None]
        try:
            return fn(*args, **kwargs)
        finally:
            SP._SCIPY[:] = saved
    return call


def _special_family(name, np_fn, domain, extra=None, dtypes=FLOAT_INT):
    _unary_family(name, SP, np_fn, domain=domain, extra=extra, dtypes=dtypes)
    row(f"{name}_numpy_only", _numpy_only(getattr(ember, name)), name, [getattr(SP, name)],
        lambda m: _with(m, extra), np_ref=lambda x: np_fn(x), domain=domain, dtypes=dtypes)


_special_family("erf", sps.erf, (-2.5, 2.5), extra=_edges(_INF, -_INF, 0.0, 6.0))
_special_family("erfc", sps.erfc, (-2.5, 2.5), extra=_edges(_INF, -_INF, 0.0, 10.0))
_special_family("erfinv", sps.erfinv, (-0.9, 0.9), dtypes=("float32", "float64", "float16",
                                                            "bool"),
                extra=_edges(1.0, -1.0, 1.5, 0.0, 0.999999))
_special_family("lgamma", sps.gammaln, (0.1, 4.0),
                extra=lambda m: [S("negative", m.arr([-0.5, -1.5, -2.25]))] + _edges(
                    0.0, -0.0, 1e-30)(m) if m.floating else [])
_special_family("digamma", sps.psi, (0.1, 4.0),
                extra=lambda m: [S("negative", m.arr([-0.5, -1.5, -2.25]))] + _edges(
                    0.0, -0.0, 1e-30)(m) if m.floating else [])
# Poles and infinities: values only (torch's trigamma gives artifacts like 7e32 at -1).
for _name, _d in (("lgamma", SP.lgamma), ("digamma", SP.digamma)):
    for _suffix, _fn in (("", getattr(ember, _name)), ("_numpy_only",
                                                       _numpy_only(getattr(ember, _name)))):
        row(f"{_name}_poles{_suffix}", _fn, _name, [_d],
            lambda m: [S("poles", m.arr([0.0, -0.0, -1.0, -2.0, _INF, -_INF, np.nan]))],
            differentiable=False)


def _polygamma_samples(m):
    return [S("n1", 1, m(2, 3)), S("n2", 2, m(5)), S("n3", 3, m()), S("n0", 0, m(4)),
            S("empty", 1, m(0, 2))]


row("polygamma", ember.polygamma, "polygamma", [SP._polygamma], _polygamma_samples,
    np_ref=sps.polygamma, domain=(0.5, 3.0), dtypes=("float32", "float64", "int64", "bool"),
    tols={"float32": (1e-5, 1e-5)})
row("polygamma_numpy_only", _numpy_only(ember.polygamma), "polygamma", [SP._polygamma],
    _polygamma_samples, np_ref=sps.polygamma, domain=(0.5, 3.0),
    tols={"float32": (1e-5, 1e-5)})
row("polygamma_method", lambda n, x: x.polygamma(n), lambda torch: lambda n, x: x.polygamma(n),
    [SP._polygamma], _polygamma_samples, np_ref=sps.polygamma, domain=(0.5, 3.0))
row("polygamma_", lambda n, x: x.clone().polygamma_(n),
    lambda torch: lambda n, x: x.clone().polygamma_(n),
    [SP._polygamma_inplace, SP._polygamma, SH.clone],
    _polygamma_samples, np_ref=sps.polygamma, domain=(0.5, 3.0))

# -- division with rounding, remainders ------------------------------------------------------------


def _mode_samples(mode):
    def samples(m):
        return [S(f"{s.name}", *s.args, rounding_mode=mode) for s in binary(m)] + [
            S("negative", m.arr([-3, 3, -3, 3, 7]), m.arr([2, -2, -2, 2, 3]),
              rounding_mode=mode, no_gradcheck=_NOT_DIFF)]
    return samples


_DIVIDES = ("float32", "float64", "float16", "int64", "int32", "uint8", "bool")
for _mode in ("trunc", "floor"):
    row(f"div_{_mode}", ember.div, "div", [BI.div_mode], _mode_samples(_mode),
        np_ref=lambda a, b, rounding_mode: (np.trunc(a / b) if rounding_mode == "trunc"
                                            else np.floor(a / b)).astype(np.result_type(a, b)),
        dtypes=_DIVIDES, kinks=(0.0,))
    row(f"div_{_mode}_method", lambda a, b, **k: a.div(b, **k), None, [BI.div_mode],
        _mode_samples(_mode), kinks=(0.0,))
    row(f"divide_{_mode}_", lambda a, b, **k: a.clone().divide_(b, **k), None,
        [BI.div_mode, SH.clone],
        lambda m, md=_mode: [S(s.name, *s.args, rounding_mode=md) for s in inplace_binary(m)],
        kinks=(0.0,), dtypes=("float32", "float64", "int64"))
row("div_true_kw", lambda a, b: ember.div(a, b, rounding_mode=None),
    lambda torch: lambda a, b: torch.div(a, b, rounding_mode=None), [PW.div], binary,
    np_ref=lambda a, b: a / b, kinks=(0.0,))

row("floor_divide", ember.floor_divide, "floor_divide", [BI.floor_divide], binary,
    np_ref=np.floor_divide, dtypes=_DIVIDES, kinks=(0.0,), differentiable=False,
    promotion=True)
row("floordiv_operator", lambda a, b: a // b, None, [BI.floor_divide], binary,
    np_ref=np.floor_divide, dtypes=("float32", "float64", "int64"), kinks=(0.0,),
    differentiable=False)
row("rfloordiv_operator", lambda x: 7 // x, None, [BI.floor_divide], unary,
    np_ref=lambda x: np.floor_divide(7, x), dtypes=("float32", "int64"), kinks=(0.0,),
    differentiable=False)


def _ifloordiv(a, b):
    a = a.clone()
    a //= b
    return a


row("ifloordiv", _ifloordiv, None, [BI.floor_divide_, SH.clone], inplace_binary,
    np_ref=np.floor_divide, dtypes=("float32", "int64"), kinks=(0.0,), differentiable=False)


def _mod_samples(m):
    out = binary(m, scalar=None)
    out.append(S("signs", m.arr([-3, 3, -3, 3, 7]), m.arr([2, -2, -2, 2, 3]),
                 no_gradcheck="integer quotients: the gradient jumps"))
    return out


def _mod_scalar_samples(m):
    return [S("float", m(2, 3), 1.5), S("negative", m(5), -0.75), S("int", m(2, 3), 2),
            S("scalar", m(), 1.25), S("empty_scalar", m(0, 3), 1.5)]


_MODS = ("float32", "float64", "float16", "int64", "int32", "bool")
for _name, _np, _tensor, _scalar in (("remainder", np.remainder, BI._remainder_tensor,
                                      BI._remainder_scalar),
                                     ("fmod", np.fmod, BI._fmod_tensor, BI._fmod_scalar)):
    row(_name, getattr(ember, _name), _name, [_tensor], _mod_samples, np_ref=_np,
        dtypes=_MODS, kinks=(0.0,), promotion=True)
    row(f"{_name}_scalar", getattr(ember, _name), _name, [_scalar], _mod_scalar_samples,
        np_ref=_np, dtypes=_MODS, kinks=(0.0,))
    row(f"{_name}_method", method(_name), None, [_tensor, _scalar],
        lambda m: _mod_samples(m) + _mod_scalar_samples(m), np_ref=_np, kinks=(0.0,))
    row(f"{_name}_", lambda a, b, n=_name: getattr(a.clone(), n + "_")(b), None,
        [_tensor, _scalar, SH.clone],
        lambda m: inplace_binary(m, scalar=None) + _mod_scalar_samples(m)[:3],
        np_ref=_np, kinks=(0.0,), dtypes=("float32", "float64", "int64"))
row("mod_operator", lambda a, b: a % b, None, [BI._remainder_tensor, BI._remainder_scalar],
    lambda m: _mod_samples(m) + _mod_scalar_samples(m), np_ref=np.remainder,
    dtypes=("float32", "float64", "int64"), kinks=(0.0,))
row("rmod_operator", lambda x: 5 % x, None, [BI._rremainder], unary,
    np_ref=lambda x: np.remainder(5, x), dtypes=("float32", "int64"), kinks=(0.0,),
    differentiable=False)
row("rremainder", lambda x: ember.remainder(2.5, x), lambda torch: lambda x: torch.remainder(
    2.5, x), [BI._rremainder], unary, np_ref=lambda x: np.remainder(2.5, x),
    dtypes=("float32", "int64", "bool"), kinks=(0.0,), differentiable=False)


def _imod(a, b):
    a = a.clone()
    a %= b
    return a


row("imod", _imod, None, [BI._remainder_tensor, BI._remainder_scalar, SH.clone],
    lambda m: inplace_binary(m, scalar=1.5), np_ref=np.remainder,
    dtypes=("float32", "float64", "int64"), kinks=(0.0,))

# -- powers ----------------------------------------------------------------------------------------


def _float_power_samples(m):
    pos = {"low": 0.5, "high": 2.0}
    return [S("tensor", m(2, 3, **pos), m(2, 3)), S("bcast", m(2, 3, **pos), m(3)),
            S("py_float", m(5, **pos), 1.5), S("py_int", m(2, 3, **pos), 2),
            S("py_neg", m(4, **pos), -1), S("base", 2.5, m(2, 3)), S("base_int", 3, m(4)),
            S("0dim", m(**pos), m(2, 2)), S("empty", m(0, 3, **pos), 2)]


_FP_DEFS = [PW.pow_scalar, PW.pow_tensor, PW.pow_scalar_base, SH.to_copy]
row("float_power", ember.float_power, "float_power", _FP_DEFS, _float_power_samples,
    np_ref=lambda a, b: np.power(np.asarray(a, np.float64), np.asarray(b, np.float64)),
    dtypes=("float32", "float64", "int64", "bool"))
row("float_power_method", lambda a, b: a.float_power(b) if isinstance(a, ember.Tensor)
    else ember.float_power(a, b), lambda torch: lambda a, b: a.float_power(b)
    if isinstance(a, torch.Tensor) else torch.float_power(a, b), _FP_DEFS,
    _float_power_samples)
row("float_power_", lambda a, b: a.clone().float_power_(b), None,
    [PW.pow_scalar, PW.pow_tensor, SH.clone],
    lambda m: [S("py", m(2, 3, low=0.5, high=2.0), 1.5), S("tensor", m(3, low=0.5), m(3))],
    dtypes=("float64",))

# -- two-argument maths ---------------------------------------------------------------------------


def _pair_samples(m):
    return binary(m, scalar=None)  # torch wants a tensor other (tested in the error table)


_PAIR_DTYPES = ("float32", "float64", "float16", "int64", "bool")
row("atan2", ember.atan2, "atan2", [BI.atan2], _pair_samples, np_ref=np.arctan2,
    dtypes=_PAIR_DTYPES, kinks=(0.0,), promotion=True)
row("arctan2", ember.arctan2, "arctan2", [BI.atan2], _pair_samples, np_ref=np.arctan2,
    kinks=(0.0,))
row("atan2_method", method("atan2"), None, [BI.atan2], _pair_samples, np_ref=np.arctan2,
    kinks=(0.0,))
for _name in ("atan2_", "arctan2_"):
    row(_name, lambda a, b, n=_name: getattr(a.clone(), n)(b), None, [BI.atan2, SH.clone],
        lambda m: inplace_binary(m, scalar=None), np_ref=np.arctan2, kinks=(0.0,),
        dtypes=("float32", "float64", "int64"))


def _fminmax_samples(m):
    out = binary(m, scalar=None)
    if m.floating:
        out += [S("ties", m.arr([1.0, 2.0, -3.0]), m.arr([1.0, 0.0, -3.0]),
                  no_gradcheck="not differentiable at ties"),
                S("nan", m.arr([1.0, np.nan, np.nan, 0.0]), m.arr([np.nan, 2.0, np.nan, 1.0]),
                  no_gradcheck="NaN")]
    return out


for _name, _np in (("fmax", np.fmax), ("fmin", np.fmin)):
    row(_name, getattr(ember, _name), _name, [getattr(BI, _name)], _fminmax_samples,
        np_ref=_np, dtypes=("float32", "float64", "float16", "int64", "bool"), promotion=True)
    row(f"{_name}_method", method(_name), None, [getattr(BI, _name)], _fminmax_samples,
        np_ref=_np)

for _name, _np, _inplace in (("hypot", np.hypot, True), ("logaddexp", np.logaddexp, False),
                             ("logaddexp2", np.logaddexp2, False)):
    row(_name, getattr(ember, _name), _name, [getattr(BI, _name)], _pair_samples,
        np_ref=_np, dtypes=_PAIR_DTYPES, promotion=True, kinks=(0.0,) if _inplace else ())
    row(f"{_name}_method", method(_name), None, [getattr(BI, _name)], _pair_samples,
        np_ref=_np, kinks=(0.0,) if _inplace else ())
    if _inplace:
        row(f"{_name}_", lambda a, b, n=_name: getattr(a.clone(), n + "_")(b), None,
            [getattr(BI, _name), SH.clone], lambda m: inplace_binary(m, scalar=None),
            np_ref=_np, kinks=(0.0,), dtypes=("float32", "float64", "int64"))
row("logaddexp_large", ember.logaddexp, "logaddexp", [BI.logaddexp],
    lambda m: [S("large", m.arr([1000.0, -1000.0, _INF, -_INF]),
                 m.arr([1000.0, 5.0, _INF, -_INF]), no_gradcheck="infinities")],
    np_ref=np.logaddexp)


def _copysign_samples(m):
    out = binary(m, scalar=-2.0)
    out += [S("py_int", m(2, 3), 3), S("py_neg_zero", m(4), -0.0)]
    if m.floating:
        out.append(S("zeros", m.arr([0.0, -0.0, 1.0, -1.0]), m.arr([-1.0, 1.0, -0.0, 0.0]),
                     no_gradcheck="sign changes at zero"))
    return out


row("copysign", ember.copysign, "copysign", [BI._copysign_tensor, BI._copysign_scalar],
    _copysign_samples, np_ref=np.copysign, dtypes=_PAIR_DTYPES, kinks=(0.0,),
    promotion=True)
row("copysign_method", method("copysign"), None, [BI._copysign_tensor, BI._copysign_scalar],
    _copysign_samples, np_ref=np.copysign, kinks=(0.0,))
row("copysign_", lambda a, b: a.clone().copysign_(b), None,
    [BI._copysign_tensor, BI._copysign_scalar, SH.clone],
    lambda m: inplace_binary(m, scalar=-1.5), np_ref=np.copysign, kinks=(0.0,),
    dtypes=("float32", "float64", "int64"))



def _np_ldexp(x, e):
    e = np.asarray(e)
    if e.dtype.kind in "iu":
        return np.ldexp(x, e.astype(np.int32))
    return x * np.exp2(e)


def _ldexp_samples(m):
    """Integer exponents (torch's exact kernel for floating inputs) and floating ones (its
    composition self * pow(2, other))."""
    exps = lambda *shape: m.idx(*shape, high=6)  # noqa: E731  (see the row of negative ones)
    return [S("int_same", m(2, 3), exps(2, 3)), S("int_bcast", m(2, 1), exps(3)),
            S("int_0dim_exp", m(2, 3), np.asarray(3, np.int64)),
            S("int_0dim_self", m(), exps(4)), S("int_empty", m(0, 3), exps(3)),
            S("int_int32", m(4), np.asarray([1, 2, 3, 0], np.int32)),
            S("float_same", m(2, 3), m(2, 3)), S("float_bcast", m(2, 3), m(3)),
            S("float_0dim_exp", m(2, 3), m())]


def _ldexp_negative_samples(m):
    out = [S("negative", m(2, 3), np.asarray([-1, -3, 2], np.int64))]
    if m.floating:  # (results out of 2 ** e's float range: C's ldexp is exact there)
        tiny, big = (1e-300, 1030) if m.dtype == "float64" else (1e-20, 130)
        out.append(S("range", m.arr([1e-30, 1.0, 3.0, tiny]),
                     np.asarray([200, -149, -150, big], np.int64),
                     no_gradcheck="the derivative, 2 ** e, overflows"))
    return out


row("ldexp", ember.ldexp, "ldexp", [BI.ldexp], _ldexp_samples, np_ref=_np_ldexp,
    dtypes=("float32", "float64", "int64"), promotion=True)
row("ldexp_method", method("ldexp"), None, [BI.ldexp],
    lambda m: [S("int", m(2, 3), m.idx(3, high=5)), S("float", m(2, 3), m(2, 3))],
    np_ref=_np_ldexp)
row("ldexp_", lambda a, b: a.clone().ldexp_(b), None, [BI.ldexp, SH.clone],
    lambda m: [S("int", m(2, 3), m.idx(3, high=5)), S("float", m(2, 3), m(2, 3)),
               S("float64_exp", m(2, 3), m(3, dtype="float64"))],
    np_ref=_np_ldexp)
# torch's gradient of ldexp(x, e) for a negative integer e is 0 (its formula takes 2 ** e with
# an integer pow): ember's is 2 ** e, which gradcheck checks here
row("ldexp_negative_exponents", ember.ldexp, "ldexp", [BI.ldexp], _ldexp_negative_samples,
    np_ref=_np_ldexp,
    skips={t: "torch's gradient is 0 for negative integer exponents" for t in (
        "test_grad_vs_torch", "test_gradgrad_vs_torch")})


def _np_xlogy(x, y):
    return sps.xlogy(np.asarray(x, np.float64), np.asarray(y, np.float64))


def _xlogy_samples(m):
    pos = {"low": 0.2, "high": 2.0}
    out = [S("same", m(2, 3), m(2, 3, **pos)), S("bcast", m(2, 1), m(1, 3, **pos)),
           S("0dim", m(), m(3, **pos)), S("empty", m(0, 3), m(3, **pos)),
           S("py_self", 1.5, m(2, 3, **pos)), S("py_other", m(2, 3), 2.5),
           S("py_int_other", m(4), 3), S("py_zero_self", 0, m(3, **pos))]
    if m.floating:
        out.append(S("zeros", m.arr([0.0, 0.0, 1.0, 2.0, 0.0]),
                     m.arr([0.0, np.nan, 0.0, 1.5, 1.0]), no_gradcheck="log at 0"))
    return out


_XLOGY_DEFS = [BI._xlogy_tensor, BI._xlogy_scalar_self, BI._xlogy_scalar_other]
row("xlogy", ember.xlogy, "xlogy", _XLOGY_DEFS, _xlogy_samples, np_ref=_np_xlogy,
    dtypes=("float32", "float64", "int64", "bool"), promotion=True)
row("xlogy_method", lambda a, b: a.xlogy(b) if isinstance(a, ember.Tensor)
    else ember.xlogy(a, b), lambda torch: lambda a, b: a.xlogy(b)
    if isinstance(a, torch.Tensor) else torch.xlogy(a, b), _XLOGY_DEFS, _xlogy_samples,
    np_ref=_np_xlogy)
row("xlogy_", lambda a, b: a.clone().xlogy_(b), None,
    [BI._xlogy_tensor, BI._xlogy_scalar_other, SH.clone],
    lambda m: [S("tensor", m(2, 3), m(2, 3, low=0.2)), S("bcast", m(2, 3), m(3, low=0.2)),
               S("py", m(2, 3), 2.5)], np_ref=_np_xlogy, dtypes=("float32", "float64",
                                                                 "int64"))

# -- interpolation and fused multiply-add -----------------------------------------------------


def _lerp_samples(m):
    out = [S("scalar_w", m(2, 3), m(2, 3), 0.3), S("big_w", m(5), m(5), 0.75),
           S("neg_w", m(2, 3), m(3), -0.5), S("w_int", m(4), m(4), 2),
           S("tensor_w", m(2, 3), m(2, 3), m(2, 3)), S("bcast_w", m(2, 3), m(2, 1), m(3)),
           S("0dim_w", m(3), m(3), m()), S("empty", m(0, 3), m(3), 0.5)]
    if m.floating:
        out.append(S("w64_0dim", m(3), m(3), m(dtype="float64")))
    return out


def _np_lerp(a, b, w):
    return a + w * (b - a)


row("lerp", ember.lerp, "lerp", [BI._lerp_scalar, BI._lerp_tensor], _lerp_samples,
    np_ref=_np_lerp, dtypes=("float32", "float64", "float16", "int64"))
row("lerp_method", method("lerp"), None, [BI._lerp_scalar, BI._lerp_tensor], _lerp_samples,
    np_ref=_np_lerp)
row("lerp_", lambda a, b, w: a.clone().lerp_(b, w), None,
    [BI._lerp_scalar, BI._lerp_tensor, SH.clone],
    lambda m: [S("scalar_w", m(2, 3), m(2, 3), 0.3), S("tensor_w", m(2, 3), m(3), m(2, 3)),
               S("bcast", m(2, 3), m(3), 0.8)], np_ref=_np_lerp,
    dtypes=("float32", "float64", "int64"))


def _addc_samples(m):
    t2 = {"kinks": (0.0,)}
    return [S("same", m(2, 3), m(2, 3), m(2, 3, **t2)),
            S("bcast", m(2, 3), m(3), m(2, 1, **t2)),
            S("value", m(2, 3), m(2, 3), m(2, 3, **t2), value=2.5),
            S("value_int", m(4), m(4), m(4, **t2), value=-2),
            S("0dim", m(), m(3), m(**t2)), S("empty", m(0, 3), m(3), m(3, **t2)),
            S("mixed", m(3), C(m(3, dtype="int64")), m(3, **t2))]


for _name, _np in (("addcmul", lambda s, a, b, value=1: s + value * a * b),
                   ("addcdiv", lambda s, a, b, value=1: s + value * a / b)):
    _d = getattr(BI, _name)
    row(_name, getattr(ember, _name), _name, [_d], _addc_samples, np_ref=_np,
        dtypes=("float32", "float64", "float16", "int64", "bool"))
    row(f"{_name}_method", method(_name), None, [_d], _addc_samples, np_ref=_np)
    row(f"{_name}_", lambda s, a, b, n=_name, **k: getattr(s.clone(), n + "_")(a, b, **k),
        None, [_d, SH.clone], lambda m: [x for x in _addc_samples(m)
                                         if x.name not in ("0dim", "empty")],
        np_ref=_np, dtypes=("float32", "float64", "int64"))

# -- clamping ------------------------------------------------------------------------------------


def _clamp_tensor_samples(m):
    return [S("both", m(2, 3), m(2, 3, high=0.0), m(2, 3, low=0.0)),
            S("min_only", m(5), min=m(5)), S("max_only", m(2, 3), max=m(3)),
            S("bcast", m(2, 3), m(2, 1, high=-0.5), m(3, low=0.5)),
            S("min_gt_max", m(4), m(4, low=0.5), m(4, high=-0.5)),
            S("0dim_bounds", m(2, 3), m(high=-0.5), m(low=0.5)),
            S("empty", m(0, 3), m(3), None)]


def _np_clamp(x, min=None, max=None):
    lo = -np.inf if min is None else min
    hi = np.inf if max is None else max
    return np.minimum(np.maximum(x, lo), hi)


row("clamp_tensor", ember.clamp, "clamp", [UN.clamp_tensor], _clamp_tensor_samples,
    np_ref=_np_clamp, dtypes=("float32", "float64", "int64", "bool"))
row("clamp_tensor_method", method("clamp"), None, [UN.clamp_tensor], _clamp_tensor_samples,
    np_ref=_np_clamp)
row("clamp_tensor_", lambda x, *a, **k: x.clone().clamp_(*a, **k), None,
    [UN.clamp_tensor, SH.clone], _clamp_tensor_samples, np_ref=_np_clamp,
    dtypes=("float32", "float64", "int64"))
row("clip_tensor", ember.clip, "clip", [UN.clamp_tensor], _clamp_tensor_samples,
    np_ref=_np_clamp)
row("clamp_mixed_dtypes", ember.clamp, "clamp", [UN.clamp_tensor],
    lambda m: [S("int_float", m(4, dtype="int64"), m(4, dtype="float32")),
               S("float_int", m(4, dtype="float32"), None, m(4, dtype="int64")),
               S("f32_0dim_f64", m(4, dtype="float32"), m(dtype="float64"))],
    np_ref=_np_clamp, dtypes=("float64",), differentiable=False)
row("clamp_int_scalars", ember.clamp, "clamp", [UN.clamp_scalar],
    lambda m: [S("float_bounds", m(2, 3), -0.5, 1.5), S("int_bounds", m(5), -1, 1),
               S("bool_tensor", m(4, dtype="bool"), 0, 1)],
    np_ref=_np_clamp, dtypes=("int64", "int32", "uint8"), differentiable=False)


def _clamp_one_samples(m):
    return [S("py_float", m(2, 3), 0.25), S("py_int", m(5), 1), S("tensor", m(2, 3), m(2, 3)),
            S("bcast", m(2, 3), m(3)), S("0dim", m(3), m()), S("empty", m(0, 2), 0.5)]


for _name, _np, _scalar, _tensor in (("clamp_min", np.maximum, UN._clamp_min_scalar,
                                      UN._clamp_min_tensor),
                                     ("clamp_max", np.minimum, UN._clamp_max_scalar,
                                      UN._clamp_max_tensor)):
    row(_name, getattr(ember, _name), _name, [_scalar, _tensor], _clamp_one_samples,
        np_ref=_np, dtypes=("float32", "float64", "int64"), kinks=(0.25, 1.0))
    row(f"{_name}_method", method(_name), None, [_scalar, _tensor], _clamp_one_samples,
        np_ref=_np, kinks=(0.25, 1.0))
    row(f"{_name}_", lambda x, b, n=_name: getattr(x.clone(), n + "_")(b), None,
        [_scalar, _tensor, SH.clone], _clamp_one_samples, np_ref=_np, kinks=(0.25, 1.0),
        dtypes=("float32", "float64", "int64"))

# -- logical and bitwise -------------------------------------------------------------------------


def _logical_samples(m):
    out = binary(m, scalar=None)
    out.append(S("zeros", m.arr([0, 1, 0, 2]), m.arr([0, 0, 3, 1])))
    return out


for _name, _np in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                   ("logical_xor", np.logical_xor)):
    _d = getattr(LG, _name)
    row(_name, getattr(ember, _name), _name, [_d], _logical_samples, np_ref=_np,
        dtypes=("float32", "float64", "int64", "uint8", "bool"), differentiable=False,
        promotion=True)
    row(f"{_name}_method", method(_name), None, [_d], _logical_samples, np_ref=_np,
        dtypes=("float32", "bool"), differentiable=False)
    row(f"{_name}_", lambda a, b, n=_name: getattr(a.clone(), n + "_")(b), None,
        [_d, SH.clone], lambda m: inplace_binary(m, scalar=None),
        np_ref=lambda a, b, f=_np: f(a, b).astype(a.dtype),
        dtypes=("float32", "int64", "bool"), differentiable=False)


def _shift_samples(m):
    amounts = m.arr([0, 1, 3, 7, 8, 31, 63, 64, 70, -1], dtype="int64")
    values = m.arr([1, -1, 5, -128, 3, 1, 1, -8, -8, 4])
    return [S("tensor", m(2, 3), m(2, 3, low=0, high=3)), S("bcast", m(2, 3), m(3, low=0)),
            S("py_int", m(2, 3), 2), S("0dim", m(3), m(low=0)),
            S("wide", values, C(amounts)), S("empty", m(0, 3), 1)]


for _name, _np, _dunder in (("bitwise_left_shift", np.left_shift, "__lshift__"),
                            ("bitwise_right_shift", np.right_shift, "__rshift__")):
    _d = getattr(LG, _name)
    row(_name, getattr(ember, _name), _name, [_d], _shift_samples,
        dtypes=("int64", "int32", "uint8", "bool", "float32"), domain=(-5, 5),
        differentiable=False)
    row(f"{_name}_operator", method(_dunder), None, [_d], _shift_samples,
        dtypes=("int64", "uint8", "bool"), domain=(-5, 5), differentiable=False)
    row(f"{_name}_", lambda a, b, n=_name: getattr(a.clone(), n + "_")(b), None,
        [_d, SH.clone], lambda m: [S("tensor", m(2, 3), m(2, 3, low=0, high=3)),
                                   S("py_int", m(3), 2)],
        dtypes=("int64", "int32"), domain=(-5, 5), differentiable=False)
row("rlshift_operator", lambda x: 3 << x, None, [LG.bitwise_left_shift],
    lambda m: [S("vector", m(5, low=0, high=4))], np_ref=lambda x: np.left_shift(3, x),
    dtypes=("int64",), differentiable=False)
row("rrshift_operator", lambda x: 64 >> x, None, [LG.bitwise_right_shift],
    lambda m: [S("vector", m(5, low=0, high=4))], np_ref=lambda x: np.right_shift(64, x),
    dtypes=("int64",), differentiable=False)


def _iop(op_name):
    def f(a, b):
        a = a.clone()
        return getattr(a, op_name)(b)
    f.__name__ = op_name
    return f


for _iname, _d in (("__iand__", LG.bitwise_and), ("__ior__", LG.bitwise_or),
                   ("__ixor__", LG.bitwise_xor), ("__ilshift__", LG.bitwise_left_shift),
                   ("__irshift__", LG.bitwise_right_shift)):
    row(f"inplace{_iname.strip('_')}", _iop(_iname), None, [_d, SH.clone],
        lambda m: [S("tensor", m(2, 3), m(2, 3, low=0, high=3)), S("py_int", m(3), 1)],
        dtypes=("int64", "int32"), domain=(-5, 5), differentiable=False)
row("bitwise_not_", lambda x: x.clone().bitwise_not_(), None, [LG.bitwise_not, SH.clone],
    inplace_unary, np_ref=np.invert, dtypes=("int64", "bool"), differentiable=False,
    domain=(-5, 5))
row("bitwise_and_", lambda a, b: a.clone().bitwise_and_(b), None, [LG.bitwise_and, SH.clone],
    lambda m: inplace_binary(m, scalar=None), np_ref=np.bitwise_and,
    dtypes=("int64", "bool"), differentiable=False, domain=(-5, 5))
