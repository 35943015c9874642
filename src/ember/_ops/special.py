"""Special functions: erf, erfc, erfinv, lgamma, digamma, polygamma.

NumPy has none of them. ember uses ``scipy.special`` when it can be imported (an optional
extra) and otherwise falls back on NumPy-only kernels accurate to float64 rounding: math.erf,
math.erfc and math.lgamma element by element, Newton-refined erfinv, and digamma/polygamma by
recurrence plus asymptotic series (the Hurwitz zeta function as in Cephes, which torch uses).
Kernels compute in float64 and round to the input's dtype.
"""
from __future__ import annotations

__all__ = ['digamma', 'erf', 'erfc', 'erfinv', 'igamma', 'igammac', 'lgamma', 'mvlgamma',
           'polygamma']

import math

import numpy as np

from .. import _dtype as D
from .._backend import as_array, get_xp, special_functions
from .._tensor import Tensor
from . import special_numpy as SN
from .binary import at_or_below, binary_with_scalars
from .pointwise import exp, log, masked_fill, mul_scalar, no_forward_ad, no_kernel, refuse
from .registry import FLOAT, op

_SCIPY: list = []  # [scipy.special or None], looked up once


def scipy_special():
    """``scipy.special`` when it is importable, else None (ember then uses NumPy only)."""
    if not _SCIPY:
        try:
            import scipy.special as sp
        except ImportError:
            sp = None
        _SCIPY.append(sp)
    return _SCIPY[0]


def special_library(x):
    """The special functions for ``x``'s arrays: the one lookup every kernel here makes
    (scipy.special on the CPU, None without SciPy; on a GPU cupyx.scipy.special)."""
    return scipy_special() if type(x) is np.ndarray else special_functions(x)


def _elementwise(fn):
    """A float64 array function from a Python float function (math.erf, ...)."""
    vec = np.frompyfunc(fn, 1, 1)
    return lambda x: np.asarray(vec(x), dtype=np.float64)


def _lgamma1(v):
    try:
        return math.lgamma(v)
    except ValueError:  # the poles 0, -1, -2, ...: torch gives +inf
        return math.inf


# -- NumPy-only kernels (float64 in, float64 out) ------------------------------------------------
_erf_np = _elementwise(math.erf)
_erfc_np = _elementwise(math.erfc)
_lgamma_np = _elementwise(_lgamma1)


def _erfinv_np(y):
    """Inverse error function: Giles' single-precision approximation, then Newton steps."""
    with np.errstate(all="ignore"):
        a = np.abs(y)
        w = -np.log((1 - a) * (1 + a))
        p_small = _horner(w - 2.5, (2.81022636e-08, 3.43273939e-07, -3.5233877e-06,
                                    -4.39150654e-06, 0.00021858087, -0.00125372503,
                                    -0.00417768164, 0.246640727, 1.50140941))
        p_large = _horner(np.sqrt(w) - 3, (-0.000200214257, 0.000100950558, 0.00134934322,
                                           -0.00367342844, 0.00573950773, -0.0076224613,
                                           0.00943887047, 1.00167406, 2.83297682))
        x = np.where(w < 5, p_small, p_large) * a
        # NOTE: near |y| = 1 erf saturates: Newton there solves log erfc(x) = log(1 - |y|)
        # (1 - |y| is exact, and the log makes the far tail nearly linear in x).
        tail = a > 0.5
        log_c = np.log(1 - a)
        for _ in range(4):
            slope = 2 / math.sqrt(math.pi) * np.exp(-x * x)
            ec = _erfc_np(x)
            step = np.where(tail, (log_c - np.log(ec)) * ec, _erf_np(x) - a) / slope
            x = np.where(np.isfinite(step), x - step, x)
        x = np.copysign(x, y)
    x = np.where(a == 1, np.copysign(np.inf, y), x)
    return np.where(a > 1, np.nan, x)


def _horner(x, coeffs):
    p = np.full_like(x, coeffs[0])
    for c in coeffs[1:]:
        p = c + p * x
    return p


def _digamma_np(x):
    """psi(x): reflection for x < 0, recurrence up to x >= 10, then the asymptotic series."""
    with np.errstate(all="ignore"):
        neg = x < 0
        # NOTE: reduce x mod 1 before tan(pi x): pi * x loses digits for large |x|.
        refl = np.where(neg, math.pi / np.tan(math.pi * (x - np.floor(x))), 0.0)
        y = np.where(neg, 1 - x, x)
        acc = np.zeros_like(y)
        while True:
            low = y < 10
            if not low.any():
                break
            acc -= np.where(low, 1 / y, 0)
            y = np.where(low, y + 1, y)
        iy2 = 1 / (y * y)
        series = iy2 * _horner(iy2, (-1 / 132, 1 / 240, -1 / 252, 1 / 120, -1 / 12))
        out = np.log(y) - 0.5 / y + series + acc - refl
    # torch: psi(+-0) = -+inf, nan at negative integers and -inf.
    out = np.where(x == 0, np.copysign(np.inf, -x), out)
    out = np.where(neg & (x == np.floor(x)), np.nan, out)
    return np.where(np.isnan(x), np.nan, out)


# Cephes' Euler-Maclaurin coefficients for the Hurwitz zeta function (ATen's zeta uses them).
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)


def _zeta_np(s, q):
    """Hurwitz zeta sum_k (q + k) ** -s for s > 1 (direct sum until q + k > 9, then E-M)."""
    with np.errstate(all="ignore"):
        total = q ** -s
        a = q.copy()
        b = np.zeros_like(q)
        i = 0
        while True:
            active = (i < 9) | (a <= 9)
            if not np.any(active):
                break
            a = np.where(active, a + 1, a)
            b = np.where(active, a ** -s, b)
            total = np.where(active, total + b, total)
            i += 1
        w = a
        total = total + b * w / (s - 1) - 0.5 * b
        fac, k = 1.0, 0.0
        for coeff in _ZETA_A:
            fac *= s + k
            b = b / w
            total = total + fac * b / coeff
            k += 1
            fac *= s + k
            b = b / w
            k += 1
    total = np.where(q == np.inf, 0.0, total)
    return np.where((q <= 0) & (q == np.floor(q)), np.inf, total)


def _polygamma_np(n, x):
    if n == 0:
        return _digamma_np(x)
    sign = 1.0 if n % 2 else -1.0
    return sign * math.factorial(n) * _zeta_np(n + 1.0, x)


# -- dispatch: scipy when present, else the NumPy kernels -------------------------------------
def _special(x, scipy_fn, numpy_fn):
    sp = special_library(x)
    with np.errstate(all="ignore"):
        out = scipy_fn(sp, x) if sp is not None else numpy_fn(x.astype(np.float64))
    return as_array(out).astype(x.dtype, copy=False)


@op("erf", elementwise=True, promote=FLOAT, method=True, inplace=True,
    check=refuse("c", no_kernel("erf_vml_cpu")))
def erf(self):
    return _special(self, lambda sp, x: sp.erf(x), _erf_np)


@erf.grad("self")
def _(grad, self):
    return mul_scalar(exp(-(self ** 2)), 2 / math.sqrt(math.pi)) * grad


@op("erfc", elementwise=True, promote=FLOAT, method=True, inplace=True)
def erfc(self):
    return _special(self, lambda sp, x: sp.erfc(x), _erfc_np)


@erfc.grad("self")
def _(grad, self):
    return mul_scalar(exp(-(self ** 2)), -2 / math.sqrt(math.pi)) * grad


@op("erfinv", elementwise=True, promote=FLOAT, method=True, inplace=True,
    check=refuse("c", no_kernel("erfinv_vml_cpu")))
def erfinv(self):
    xp = get_xp(self)
    out = xp.where(self == 0, self, _special(self, lambda sp, x: sp.erfinv(x), _erfinv_np))
    if out.dtype == np.float32:  # torch's float32 NaN outside [-1, 1] has its sign bit set
        out = xp.where(xp.abs(self) > 1, -np.nan, out)
    return out  # (and -0.0 at -0.0)


@erfinv.grad("self")
def _(grad, self):
    # (torch saves the input and computes erfinv again: an in-place change of the result
    # leaves backward alone)
    return mul_scalar(exp(erfinv(self) ** 2), math.sqrt(math.pi) / 2) * grad


@op("lgamma", elementwise=True, promote=FLOAT, method=True, inplace=True,
    check=refuse("c", no_kernel("lgamma_vml_cpu")))
def lgamma(self):
    # NOTE: scipy's gammaln(-inf) is -inf; torch (and math.lgamma) give +inf.
    return _special(self, lambda sp, x: get_xp(x).where(x == -np.inf, np.inf, sp.gammaln(x)),
                    _lgamma_np)


@lgamma.grad("self")
def _(grad, self):
    return grad * digamma(self)


@op("digamma", elementwise=True, promote=FLOAT, method=True, inplace=True,
    check=refuse("c", no_kernel("digamma")))
def digamma(self):
    return _special(self, lambda sp, x: sp.psi(x), _digamma_np)


@digamma.grad("self")
def _(grad, self):
    return grad * _polygamma(self, 1)


@op("polygamma", elementwise=True, promote=FLOAT)
def _polygamma(self, n):
    # NOTE: n goes in as an array of x's kind: CuPy's polygamma compares ``n == 0`` and
    # needs an array there (a Python int gives a bool and fails).
    out = _special(self, lambda sp, x: sp.polygamma(get_xp(x).asarray(n), x),
                   lambda x: _polygamma_np(n, x))
    return _trigamma_at_poles(self, out) if n == 1 else out


def _trigamma_at_poles(x, out):
    """``out`` with torch's trigamma where ``x`` is a pole (0, a negative integer, -inf).

    torch's formula reflects ``x < 0.5`` through ``pi**2 / sin(pi x)**2``, computed in x's
    dtype (float16 in float32): at a negative integer, ``sin(pi x)`` of the rounded pi is
    tiny but not 0, which gives a large finite number (6.58e32 at -1 in float64, 1.29e15 in
    float32); -inf gives NaN.
    """
    xp = get_xp(x)
    pole = (x <= 0) & (x == xp.floor(x))
    if not pole.any():
        return out
    if x.dtype.itemsize < 4:
        x = x.astype(np.float32)
    pi = x.dtype.type(math.pi)
    with np.errstate(all="ignore"):
        s = xp.sin(pi * x)
        result = -(pi * pi) / (s * s)
        y = 1 - x
        for _ in range(6):
            result = result + 1 / (y * y)
            y = y + 1
        ixx = 1 / (y * y)
        result = result + (1 + 1 / (2 * y) + ixx * (1 / 6 - ixx * (1 / 30 - ixx / 42))) / y
        return xp.where(pole, -result, out).astype(out.dtype, copy=False)  # (may overflow)


@_polygamma.grad("self")
def _(grad, self, n):
    return grad * _polygamma(self, n + 1)


def _check_n(n):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")


def polygamma(n, input):
    """The ``n``-th derivative of the digamma function (``n`` = 0 is digamma itself)."""
    _check_n(n)
    return _polygamma(input, n)


def _polygamma_method(self, n):
    _check_n(n)
    return _polygamma(self, n)


@op("polygamma", elementwise=True, node="PolygammaBackward1", promote=FLOAT)
def _polygamma_inplace(self, n):
    """``Tensor.polygamma_`` (torch names its node apart from the out-of-place one)."""
    return _polygamma.kernel(self, n)


@_polygamma_inplace.grad("self")
def _(grad, self, n):
    return grad * _polygamma(self, n + 1)


def _polygamma_(self, n):
    _check_n(n)
    return _polygamma_inplace.inplace(self, n)


Tensor.polygamma = _polygamma_method
Tensor.polygamma_ = _polygamma_


# -- error function relatives: erfcx, ndtr, ndtri, log_ndtr ---------------------------------------
@op("special_erfcx", elementwise=True, promote=FLOAT)
def erfcx(self):
    """The scaled complementary error function ``exp(x^2) erfc(x)``."""
    return _special(self, lambda sp, x: sp.erfcx(x), lambda x: SN.erfcx(x, _erfc_np))


@erfcx.grad("self")
def _(grad, self, result):
    return (2 * self * result - 2 / math.sqrt(math.pi)) * grad


@op("special_ndtr", elementwise=True, promote=FLOAT, node="MulBackward1")
def ndtr(self):
    """The standard normal CDF ``(1 + erf(x / sqrt(2))) / 2``.

    NOTE: torch composes it (erf, then ops with Python numbers): its result's node is the
    last of them, MulBackward1, whose name this node takes.
    """
    return (1 + erf.kernel(self * (1 / math.sqrt(2)))) * 0.5


@ndtr.grad("self")
def _(grad, self):
    return grad * (1 / math.sqrt(2 * math.pi)) * exp(self * self * -0.5)


@op("special_ndtri", elementwise=True, promote=FLOAT)
def ndtri(self):
    """The inverse of the standard normal CDF."""
    return _special(self, lambda sp, x: sp.ndtri(x),
                    lambda y: -math.sqrt(2) * SN.erfcinv(2 * y, _erfc_np, _erfinv_np))


@ndtri.grad("self")
def _(grad, result):
    return grad * math.sqrt(2 * math.pi) * exp(result * result * 0.5)


@op("special_log_ndtr", elementwise=True, promote=FLOAT)
def log_ndtr(self):
    """``log(ndtr(x))``, accurate far in the left tail."""
    def own(x):
        t = x / math.sqrt(2)
        xp = get_xp(x)
        with np.errstate(all="ignore"):
            left = xp.log(SN.erfcx(-t, _erfc_np) / 2) - t * t
            return xp.where(x < -1, left, xp.log1p(-_erfc_np(t) / 2))
    return _special(self, lambda sp, x: sp.log_ndtr(x), own)


@log_ndtr.grad("self")
def _(grad, self, result):
    return grad / math.sqrt(2 * math.pi) * exp(-(result + self * self / 2))


# -- entropy, xlog1py --------------------------------------------------------------------------
@op("special_entr", elementwise=True, promote=FLOAT, quiet=True)
def entr(self):
    """``-x log(x)`` for x > 0, 0 at 0, -inf below (NaN stays NaN)."""
    xp = get_xp(self)
    out = xp.where(self > 0, -self * xp.log(xp.where(self > 0, self, 1)), -xp.inf)
    out = xp.where(self == 0, 0, out)
    return xp.where(xp.isnan(self), self, out).astype(self.dtype, copy=False)


@entr.grad("self")
def _(grad, self):
    return grad * -(1 + log(self))


def _xlog1py(x, y):
    # NOTE: torch: nan where y is nan, else 0 where x == 0, else x log1p(y).
    xp = get_xp(x, y)
    with np.errstate(all="ignore"):
        out = xp.where(x == 0, 0, x * xp.log1p(y))
    return xp.where(xp.isnan(y), xp.nan, out).astype(out.dtype, copy=False)


def _xlog1py_grad_self(grad, self, other):
    # NOTE: torch's formula, as xlogy's: log1p(other) scaled by grad, 0 only where self == 0
    # and other <= -1 (at self == 0 the derivative is log1p(other), not 0)
    return masked_fill(xlog1py(grad, other), (self == 0) & at_or_below(other, -1), 0.0)


def _xlog1py_grad_other(grad, self, other):
    return grad * self / (other + 1)


def _zeta_kernel(x, q):
    """The Hurwitz zeta function with torch's domain rules."""
    xp = get_xp(x, q)
    out = _special(x * 0 + q, lambda sp, qq: sp.zeta(x, qq), lambda qq: _zeta_np(
        (x + qq * 0).astype(np.float64), qq))
    integer_q = (q <= 0) & (q == xp.floor(q))
    out = xp.where((q <= 0) & (x != xp.floor(x)), xp.nan, out)
    out = xp.where(integer_q | (x == 1), xp.inf, out)
    return xp.where(x < 1, xp.nan, out).astype(out.dtype, copy=False)


def _zeta_grad_self(grad, self, other):
    raise NotImplementedError("the derivative for 'zeta' is not implemented.")


def _zeta_grad_other(grad, self, other):
    return grad * -self * zeta(self + 1.0, other)


xlog1py = binary_with_scalars("special_xlog1py", "SpecialXlog1PyBackward", _xlog1py,
                              _xlog1py_grad_self, _xlog1py_grad_other)
zeta = binary_with_scalars("special_zeta", "SpecialZetaBackward", _zeta_kernel,
                           _zeta_grad_self, _zeta_grad_other)
_xlog1py_tensor, _xlog1py_number_first, _xlog1py_number_second = xlog1py.ops
_zeta_tensor, _zeta_number_first, _zeta_number_second = zeta.ops
for _zeta_op in zeta.ops:  # (torch has no forward-mode formula for either argument)
    _zeta_op.jvp("self", "other")(no_forward_ad("special_zeta"))


# -- incomplete gamma functions, multivariate log-gamma ------------------------------------
def _igamma_check(self, other):
    for t in (self, other):
        if isinstance(t, Tensor) and t._data.dtype.kind not in "fc":
            raise NotImplementedError(f'"igamma_cpu" not implemented for '
                                      f"'{D._BY_NP[t._data.dtype].scalar_name}'")


def _igammac_check(self, other):
    for t in (self, other):
        if isinstance(t, Tensor) and t._data.dtype.kind not in "fc":
            raise NotImplementedError(f'"igammac_cpu" not implemented for '
                                      f"'{D._BY_NP[t._data.dtype].scalar_name}'")


def _regularized_gamma(a, x, upper):
    """P(a, x) (``upper=False``) or Q(a, x), with torch's values at the domain's edges."""
    xp = get_xp(a, x)
    a, x = xp.broadcast_arrays(a, x)
    sp = special_library(a)
    with np.errstate(all="ignore"):
        a64, x64 = a.astype(np.float64), x.astype(np.float64)
        if sp is not None:
            out = (sp.gammaincc if upper else sp.gammainc)(a64, x64)
        else:
            inside = (a64 > 0) & (x64 > 0) & xp.isfinite(a64) & xp.isfinite(x64)
            safe_a, safe_x = xp.where(inside, a64, 1.0), xp.where(inside, x64, 1.0)
            out = SN.igamma_pair(safe_a, safe_x, _lgamma_np)[1 if upper else 0]
    low, high = (1.0, 0.0) if upper else (0.0, 1.0)  # the values at x = 0 and x = inf
    out = xp.where(xp.isinf(x64), high, out)
    out = xp.where(xp.isinf(a64), xp.where(xp.isinf(x64), xp.nan, low), out)
    out = xp.where(x64 == 0, low, out)
    out = xp.where(a64 == 0, xp.where(x64 > 0, high, xp.nan), out)
    out = xp.where((a64 < 0) | (x64 < 0) | xp.isnan(a64) | xp.isnan(x64), xp.nan, out)
    return out.astype(a.dtype, copy=False)


@op("igamma", elementwise=True, tensors=2, method=True, inplace=True, check=_igamma_check)
def igamma(self, other):
    """The regularized lower incomplete gamma function P(self, other)."""
    return _regularized_gamma(self, other, False)


igamma.jvp("self", "other")(no_forward_ad("igamma"))


@igamma.grad("self")
def _(grad, self, other):
    raise NotImplementedError("the derivative for 'igamma: input' is not implemented.")


@igamma.grad("other")
def _(grad, self, other):
    return grad * exp((self - 1) * log(other) - other - lgamma(self))


@op("igammac", elementwise=True, tensors=2, method=True, inplace=True, check=_igammac_check)
def igammac(self, other):
    """The regularized upper incomplete gamma function Q(self, other)."""
    return _regularized_gamma(self, other, True)


igammac.jvp("self", "other")(no_forward_ad("igammac"))


@igammac.grad("self")
def _(grad, self, other):
    raise NotImplementedError("the derivative for 'igammac: input' is not implemented.")


@igammac.grad("other")
def _(grad, self, other):
    return -grad * exp((self - 1) * log(other) - other - lgamma(self))


def _mvlgamma_terms(x, p):
    """``x - i / 2`` for i < p, along a new last dim."""
    xp = get_xp(x)
    return x[..., None] - xp.arange(p, dtype=x.dtype) / 2


def _check_mvlgamma(self, p):
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")


@op("mvlgamma", elementwise=True, promote=FLOAT, method=True, inplace=True,
    check=_check_mvlgamma, own_layout=True)
def mvlgamma(self, p):
    """The multivariate log-gamma function of dimension ``p``."""
    terms = lgamma.kernel(_mvlgamma_terms(self, p))
    out = (terms.sum(-1) + p * (p - 1) / 4 * math.log(math.pi)).astype(self.dtype, copy=False)
    return get_xp(out).ascontiguousarray(out)  # (torch's sum: contiguous whatever the input's)


@mvlgamma.grad("self")
def _(grad, self, p):
    return grad * sum(digamma(self - i / 2) for i in range(p))


# torch's special_ndtr is composed of ops, the first of which (x * M_SQRT1_2) wraps a number
ndtr.wraps_number = True
