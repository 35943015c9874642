"""Special functions without SciPy: kernels built from convergent series, asymptotic
expansions and exponentially convergent quadratures, accurate to about 1e-14 (relative, or
absolute near a function's zeros) in float64.

They take and return float64 arrays of any array module (``get_xp``); ``special.py`` and
``bessel.py`` call them when ``scipy.special`` (or CuPy's twin) cannot be imported.

- Bessel I0, I1: the power series (positive terms) up to 30, Hankel's expansion beyond.
- Bessel K0, K1 (and K_nu for Airy): the series with logarithms below 2, above it the
  trapezoidal rule on ``K_nu(x) = int_0^inf exp(-x cosh t) cosh(nu t) dt`` (an even, analytic
  integrand decaying doubly exponentially, for which the rule converges exponentially).
- Bessel J, Y: the series below 2 (Y) or the periodic trapezoidal rule (J0, J1), Bessel's
  and Schlaefli's integrals by Gauss-Legendre between 2 and 25, Hankel's expansions beyond.
- Airy Ai: its Maclaurin series for |x| <= 2.08, then K_{1/3} (x > 0) or J_{+-1/3} (x < 0).
- erfcx: exp(x^2) erfc(x) below 2, its continued fraction above; ndtri by Newton's method on
  log erfc; the regularized incomplete gamma functions by their series and continued fraction.
"""
from __future__ import annotations

import math

import numpy as np

from .._backend import get_xp

_EULER = 0.57721566490153286061
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(64)  # on [-1, 1]
_LOW, _HIGH = 2.0, 25.0  # where the quadratures take over from series / hand over to Hankel


def _pick(xp, x, mask, fn, out):
    """``out[mask] = fn(x[mask])`` (out is modified and returned)."""
    if bool(mask.any()):
        out[mask] = fn(x[mask])
    return out


# -- modified Bessel functions I ------------------------------------------------------------------
def _i_series_scaled(x, nu):
    """exp(-|x|) I_nu(|x|) by the power series (all terms positive)."""
    xp = get_xp(x)
    ax = xp.abs(x)
    q = ax * ax / 4
    term = (ax / 2) ** nu / math.gamma(nu + 1)
    total = term.copy()
    for k in range(1, 120):
        term = term * q / (k * (k + nu))
        total = total + term
    return total * xp.exp(-ax)


def _hankel_terms(nu, n):
    """Coefficients a_k(nu) = prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (8 j) of Hankel's series."""
    out, a = [1.0], 1.0
    for j in range(1, n):
        a *= (4 * nu * nu - (2 * j - 1) ** 2) / (8 * j)
        out.append(a)
    return out


def _i_asymptotic_scaled(x, nu):
    """exp(-x) I_nu(x) ~ sum (-1)^k a_k / x^k / sqrt(2 pi x) for large x > 0."""
    total = 0.0
    for k, a in enumerate(_hankel_terms(nu, 40)):
        total = total + (-1) ** k * a / x ** k
    return total / get_xp(x).sqrt(2 * math.pi * x)


def bessel_i_scaled(x, nu):
    """exp(-|x|) I_nu(x) for nu = 0 or 1 (odd in x for nu = 1)."""
    xp = get_xp(x)
    ax = xp.abs(x)
    out = xp.zeros_like(ax)
    small = ax <= 30
    out = _pick(xp, ax, small, lambda v: _i_series_scaled(v, nu), out)
    out = _pick(xp, ax, ~small & xp.isfinite(ax), lambda v: _i_asymptotic_scaled(v, nu), out)
    out = xp.where(xp.isnan(x), x, out)
    return out * xp.sign(x) if nu == 1 else out


# -- modified Bessel functions K --------------------------------------------------------------
def _k_series(x, nu):
    """K_0 or K_1 for small x > 0 (A&S 9.6.13 and 9.6.11)."""
    xp = get_xp(x)
    q = x * x / 4
    log_half = xp.log(x / 2)
    if nu == 0:
        term, harmonic = xp.ones_like(x), 0.0
        total = -(log_half + _EULER) * term
        for k in range(1, 40):
            term = term * q / (k * k)
            harmonic += 1.0 / k
            total = total + term * (harmonic - log_half - _EULER)
        return total
    # K1 = 1/x + ln(x/2) I1(x) - (x/4) sum (psi(k+1) + psi(k+2)) q^k / (k! (k+1)!)
    i1 = _i_series_scaled(x, 1) * xp.exp(x)
    term, psi1 = xp.ones_like(x), -_EULER
    total = (psi1 + psi1 + 1.0) * term
    for k in range(1, 40):
        term = term * q / (k * (k + 1))
        psi1 += 1.0 / k
        total = total + term * (psi1 + psi1 + 1.0 / (k + 1))
    return 1 / x + log_half * i1 - x / 4 * total


def bessel_k_scaled_large(x, nu):
    """exp(x) K_nu(x) for x >= 2: the trapezoidal rule (step 1/16, to where the integrand has
    fallen below e^-40) up to 30, Hankel's expansion sqrt(pi / 2x) sum a_k / x^k beyond."""
    xp = get_xp(x)
    out = xp.empty_like(x)

    def quadrature(v):
        h = 1.0 / 16
        top = float(np.arccosh(1 + 40.0 / float(xp.min(v))))
        t = xp.arange(0.0, top + h, h)
        f = xp.exp(-v[..., None] * (xp.cosh(t) - 1)) * xp.cosh(nu * t)
        return h * (f.sum(-1) - f[..., 0] / 2)

    def hankel(v):
        total = 0.0
        for k, a in enumerate(_hankel_terms(nu, 40)):
            total = total + a / v ** k
        return total * xp.sqrt(math.pi / (2 * v))
    out = _pick(xp, x, x <= 30, quadrature, out)
    return _pick(xp, x, x > 30, hankel, out)


def bessel_k_scaled(x, nu):
    """exp(x) K_nu(x) for nu = 0 or 1 (NaN for x < 0, inf at 0)."""
    xp = get_xp(x)
    out = xp.full(x.shape, xp.nan)
    small = (x > 0) & (x < _LOW)
    out = _pick(xp, x, small, lambda v: _k_series(v, nu) * xp.exp(v), out)
    big = (x >= _LOW) & xp.isfinite(x)
    out = _pick(xp, x, big, lambda v: bessel_k_scaled_large(v, nu), out)
    out = xp.where(x == 0, xp.inf, out)
    return xp.where(x == xp.inf, 0.0, out)


# -- Bessel functions J and Y -------------------------------------------------------------------
def _gauss(x, lo, hi, integrand):
    """Gauss-Legendre (64 nodes) of ``integrand(x[..., None], t)`` over t in [lo, hi]; ``hi``
    is a number or an array shaped like ``x``."""
    xp = get_xp(x)
    nodes, weights = xp.asarray(_NODES), xp.asarray(_WEIGHTS)
    half = (hi - lo) / 2
    t = lo + (half[..., None] if isinstance(half, xp.ndarray) else half) * (nodes + 1)
    return (integrand(x[..., None], t) * weights).sum(-1) * half


def bessel_jy_integral(x, nu):
    """(J_nu(x), Y_nu(x)) for 2 <= x <= 25 and real nu, from Bessel's and Schlaefli's
    integrals (Gauss-Legendre on [0, pi] and on [0, asinh(45 / x)])."""
    xp = get_xp(x)
    c, s = math.cos(nu * math.pi), math.sin(nu * math.pi)
    j1 = _gauss(x, 0.0, math.pi, lambda z, t: xp.cos(nu * t - z * xp.sin(t))) / math.pi
    y1 = _gauss(x, 0.0, math.pi, lambda z, t: xp.sin(z * xp.sin(t) - nu * t)) / math.pi
    top = xp.arcsinh(45.0 / x)
    tail_j = _gauss(x, 0.0, top, lambda z, t: xp.exp(-z * xp.sinh(t) - nu * t))
    tail_y = _gauss(x, 0.0, top, lambda z, t: (xp.exp(nu * t) + c * xp.exp(-nu * t))
                    * xp.exp(-z * xp.sinh(t)))
    return j1 - s / math.pi * tail_j, y1 - tail_y / math.pi


def bessel_jy_asymptotic(x, nu):
    """(J_nu(x), Y_nu(x)) for x > 25 by Hankel's expansions."""
    xp = get_xp(x)
    a = _hankel_terms(nu, 48)
    p = q = 0.0
    for k in range(0, 48, 2):
        sign = (-1) ** (k // 2)
        p = p + sign * a[k] / x ** k
        if k + 1 < len(a):
            q = q + sign * a[k + 1] / x ** (k + 1)
    chi = x - (nu / 2 + 0.25) * math.pi
    scale = xp.sqrt(2 / (math.pi * x))
    return scale * (p * xp.cos(chi) - q * xp.sin(chi)), scale * (p * xp.sin(chi) + q * xp.cos(chi))


def _j_trapezoid(x, n):
    """J_n(x) = mean over a period of cos(n t - x sin t): exact to rounding for |x| <= 25."""
    xp = get_xp(x)
    t = xp.arange(64) * (2 * math.pi / 64)
    return xp.cos(n * t - x[..., None] * xp.sin(t)).mean(-1)


def _y_series(x, n):
    """Y_0 or Y_1 for 0 < x < 2 (A&S 9.1.13 and 9.1.11)."""
    xp = get_xp(x)
    q = x * x / 4
    log_half = xp.log(x / 2)
    jn = _j_trapezoid(x, n)
    if n == 0:
        term, harmonic, total = xp.ones_like(x), 0.0, xp.zeros_like(x)
        for k in range(1, 30):
            term = -term * q / (k * k)
            harmonic += 1.0 / k
            total = total - term * harmonic
        return 2 / math.pi * ((log_half + _EULER) * jn + total)
    term, psi1 = xp.ones_like(x), -_EULER
    total = (psi1 + psi1 + 1.0) * term
    for k in range(1, 30):
        term = -term * q / (k * (k + 1))
        psi1 += 1.0 / k
        total = total + term * (psi1 + psi1 + 1.0 / (k + 1))
    return -2 / (math.pi * x) + 2 / math.pi * log_half * jn - x / (2 * math.pi) * total


def bessel_j(x, n):
    """J_0 or J_1 (even / odd in x)."""
    xp = get_xp(x)
    ax = xp.abs(x)
    out = xp.full(x.shape, xp.nan)
    near = ax <= _HIGH
    out = _pick(xp, ax, near, lambda v: _j_trapezoid(v, n), out)
    far = (ax > _HIGH) & xp.isfinite(ax)
    out = _pick(xp, ax, far, lambda v: bessel_jy_asymptotic(v, n)[0], out)
    return out * xp.sign(x) if n == 1 else out


def bessel_y(x, n):
    """Y_0 or Y_1 (NaN for x < 0, -inf at 0)."""
    xp = get_xp(x)
    out = xp.full(x.shape, xp.nan)
    out = _pick(xp, x, (x > 0) & (x < _LOW), lambda v: _y_series(v, n), out)
    out = _pick(xp, x, (x >= _LOW) & (x <= _HIGH), lambda v: bessel_jy_integral(v, n)[1], out)
    out = _pick(xp, x, (x > _HIGH) & xp.isfinite(x), lambda v: bessel_jy_asymptotic(v, n)[1],
                out)
    return xp.where(x == 0, -xp.inf, out)


# -- Airy Ai -------------------------------------------------------------------------------------
_AI0, _AIP0 = 0.355028053887817239260, -0.258819403792806798405  # Ai(0), Ai'(0)


def _airy_series(x):
    xp = get_xp(x)
    x3 = x ** 3
    f, g = xp.ones_like(x), x.copy()
    tf, tg = xp.ones_like(x), x.copy()
    for k in range(1, 40):
        tf = tf * x3 / ((3 * k - 1) * (3 * k))
        tg = tg * x3 / ((3 * k) * (3 * k + 1))
        f, g = f + tf, g + tg
    return _AI0 * f + _AIP0 * g


def _airy_positive(x):
    zeta = 2.0 / 3.0 * x ** 1.5
    xp = get_xp(x)
    return xp.sqrt(x / 3) / math.pi * bessel_k_scaled_large(zeta, 1 / 3) * xp.exp(-zeta)


def _airy_negative(x):
    """Ai(x) for x < -2.08: (sqrt(|x|) / 3) (J_{1/3}(zeta) + J_{-1/3}(zeta))."""
    xp = get_xp(x)
    ax = -x
    zeta = 2.0 / 3.0 * ax ** 1.5
    out = xp.empty_like(x)
    mid = zeta <= _HIGH

    def both(z, pick):
        return pick(z, 1 / 3) + pick(z, -1 / 3)
    out = _pick(xp, zeta, mid, lambda z: both(z, lambda v, nu: bessel_jy_integral(v, nu)[0]),
                out)
    out = _pick(xp, zeta, ~mid, lambda z: both(z, lambda v, nu: bessel_jy_asymptotic(v, nu)[0]),
                out)
    return xp.sqrt(ax) / 3 * out


def airy_ai(x):
    xp = get_xp(x)
    out = xp.full(x.shape, xp.nan)
    edge = 2.0801  # |x| where zeta = 2
    out = _pick(xp, x, xp.abs(x) <= edge, _airy_series, out)
    out = _pick(xp, x, (x > edge) & (x < 110) & xp.isfinite(x), _airy_positive, out)
    out = xp.where((x >= 110) & xp.isfinite(x), 0.0, out)
    return _pick(xp, x, (x < -edge) & xp.isfinite(x), _airy_negative, out)


# -- error function relatives ------------------------------------------------------------------
def erfcx(x, erfc):
    """exp(x^2) erfc(x); ``erfc`` is an elementwise float64 erfc."""
    xp = get_xp(x)
    ax = xp.abs(x)
    out = xp.empty_like(x)
    near = ax < 2
    out = _pick(xp, ax, near, lambda v: xp.exp(v * v) * erfc(v), out)
    out = _pick(xp, ax, ~near, _erfcx_fraction, out)
    # erfcx(-x) = 2 exp(x^2) - erfcx(x)
    with np.errstate(over="ignore"):
        neg = 2 * xp.exp(x * x) - out
    out = xp.where(x < 0, neg, out)
    return xp.where(xp.isnan(x), x, out)


def _erfcx_fraction(x):
    """erfcx(x) for x >= 2: 1 / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))."""
    xp = get_xp(x)
    tail = xp.zeros_like(x)
    for k in range(80, 0, -1):
        tail = (k / 2) / (x + tail)
    return xp.where(xp.isinf(x), 0.0, 1 / math.sqrt(math.pi) / (x + tail))


def erfcinv(c, erfc, erfinv):
    """x with erfc(x) = c for c in (0, 2): Newton's method on log erfc from erfinv(1 - c)."""
    xp = get_xp(c)
    with np.errstate(all="ignore"):
        tail = c < 0.5  # erfinv(1 - c) has lost c's digits there: refine in log space
        log_c = xp.log(c)
        # (far in the tail 1 - c is 1: start from erfc(x) ~ exp(-x^2) there)
        x = xp.where(c < 1e-8, xp.sqrt(-log_c), erfinv(1 - c))
        for _ in range(8):
            ec = erfc(x)
            slope = 2 / math.sqrt(math.pi) * xp.exp(-x * x)
            step = xp.where(tail, (xp.log(ec) - log_c) * ec, ec - c) / slope
            x = xp.where(xp.isfinite(step), x + step, x)
    x = xp.where(c == 0, xp.inf, xp.where(c == 2, -xp.inf, x))
    return xp.where((c < 0) | (c > 2), xp.nan, x)


# -- regularized incomplete gamma functions -------------------------------------------------
def igamma_pair(a, x, lgamma):
    """(P(a, x), Q(a, x)) for a > 0, x > 0: the series for x < a + 1, else the continued
    fraction (modified Lentz), each carrying the prefactor x^a e^-x / Gamma(a)."""
    xp = get_xp(a, x)
    with np.errstate(all="ignore"):
        log_pre = a * xp.log(x) - x - lgamma(a)
        use_series = x < a + 1
        # series: P = pre / a * sum_n x^n / ((a+1)...(a+n))
        term = xp.ones_like(x)
        total = term.copy()
        ap = a.copy()
        for _ in range(4000):
            ap = ap + 1
            term = term * x / ap
            total = total + term
            if not bool(xp.any(use_series & (term > total * 1e-17))):
                break
        p_series = xp.exp(log_pre - xp.log(a)) * total
        # continued fraction for Q
        tiny = 1e-300
        b = x + 1 - a
        c = xp.full_like(x, 1 / tiny)
        d = 1 / xp.where(b == 0, tiny, b)
        h = d.copy()
        for i in range(1, 4000):
            an = -i * (i - a)
            b = b + 2
            d = an * d + b
            d = xp.where(xp.abs(d) < tiny, tiny, d)
            c = b + an / c
            c = xp.where(xp.abs(c) < tiny, tiny, c)
            d = 1 / d
            delta = d * c
            h = h * delta
            if not bool(xp.any(~use_series & (xp.abs(delta - 1) > 1e-16))):
                break
        q_fraction = xp.exp(log_pre) * h
    p = xp.where(use_series, p_series, 1 - q_fraction)
    q = xp.where(use_series, 1 - p_series, q_fraction)
    return p, q
