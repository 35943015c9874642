"""Orthogonal polynomials of torch.special: Chebyshev T, U, V, W (and shifted to [0, 1]),
Hermite H and He, Laguerre L and Legendre P, of degree ``n`` (a tensor or a number).

As in torch: the degree is truncated to an integer (a negative one gives 0), the values at
the interval's ends are exact, Chebyshev polynomials of higher degree inside their interval
use their trigonometric forms, everything else the three-term recurrence, computed in the
result dtype. torch does not differentiate them: their results do not require grad.
"""
from __future__ import annotations

__all__: list[str] = []

import numpy as np

from .._backend import get_xp
from .registry import FLOAT, op


def _degree(n, xp):
    """torch's int64 cast of a floating degree (NaN and infinities count as negative)."""
    n = xp.where(xp.isfinite(n), n, -1)
    return xp.trunc(n).astype(xp.int64)


def _recurrence(x, n, first, step, start=2):
    """p_0 = 1, p_1 = ``first``, p_k = ``step(k, p_{k-1}, p_{k-2})`` up to k = n, per element
    (each element stops at its own degree)."""
    xp = get_xp(x)
    p, q = xp.ones_like(x), first + 0 * x
    out = xp.where(n == 0, p, q)
    top = int(n.max()) if n.size else 0
    for k in range(start, top + 1):
        r = step(k, q, p)
        live = k <= n
        out = xp.where(live, r, out)
        p, q = q, r
        if not bool(xp.any(live & ~xp.isnan(r))):
            break
    return out


def _polynomial(name, fill):
    """Declare ``special_<name>``: ``fill(x, n, xp)`` computes it for integer degrees n >= 0."""
    def kernel(x, n):
        xp = get_xp(x, n)
        dt = x.dtype if hasattr(x, "dtype") else n.dtype  # (a Python number takes the other's)
        x, n = xp.broadcast_arrays(xp.asarray(x, dt), xp.asarray(n, dt))
        deg = _degree(n, xp)
        with np.errstate(all="ignore"):
            out = fill(x, xp.maximum(deg, 0), xp)
        return xp.where(deg < 0, 0, out).astype(x.dtype, copy=False)
    kernel.__name__ = name
    return op(f"special_{name}", tensors=2, promote=FLOAT, differentiable=False, quiet=True,
              elementwise=True)(kernel)


def _ends(x, xp, at_plus, at_minus, body):
    """``at_plus`` where x == 1, ``at_minus`` where x == -1, ``body`` elsewhere."""
    return xp.where(x == 1, at_plus, xp.where(x == -1, at_minus, body))


def _odd(n):
    return n % 2 == 1


def _chebyshev(kind, shifted):
    """Chebyshev polynomials of the four kinds, on [-1, 1] or (shifted) on [0, 1]."""
    trig_from = {"t": 6, "u": 8, "v": 8, "w": 8}[kind] if not shifted else \
        {"t": 6, "u": 6, "v": 6, "w": 4}[kind]

    def fill(x, n, xp):
        y = x + x - 1 if shifted else x
        two_y = y + y
        first = {"t": y, "u": two_y, "v": two_y - 1, "w": two_y + 1}[kind]
        rec = _recurrence(y, n, first, lambda k, q, p: two_y * q - p)
        sign = xp.where(_odd(n), -1.0, 1.0)
        theta = xp.arccos(xp.clip(y, -1, 1))
        m = n.astype(x.dtype)
        if kind == "t":
            trig, plus, minus = xp.cos(m * theta), 1.0, sign
        elif kind == "u":
            s = xp.sin(theta)
            trig = xp.where(s != 0, xp.sin((m + 1) * theta) / s,
                            (m + 1) * xp.cos((m + 1) * theta) / y)
            plus, minus = m + 1, sign * (m + 1)
        elif kind == "v":
            half = theta / 2
            trig = xp.where(xp.sin(half) != 1, xp.cos((m + 0.5) * theta) / xp.cos(half),
                            sign * (m + m + 1))
            plus, minus = 1.0, sign * (m + m + 1)
        else:
            half = theta / 2
            at_zero = sign if shifted else xp.where(y > 0, m + m + 1, sign)
            trig = xp.where(xp.cos(half) != 1, xp.sin((m + 0.5) * theta) / xp.sin(half),
                            at_zero)
            plus, minus = m + m + 1, sign
        inside = (n > trig_from) & (xp.abs(y) < 1)
        body = xp.where(inside, trig, rec)
        if shifted:  # torch tests x itself against 1 and 0
            return xp.where(x == 1, plus, xp.where(x == 0, minus, body))
        return _ends(x, xp, plus, minus, body)
    return fill


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", _chebyshev("t", False))
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", _chebyshev("u", False))
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", _chebyshev("v", False))
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", _chebyshev("w", False))
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t",
                                             _chebyshev("t", True))
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u",
                                             _chebyshev("u", True))
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v",
                                             _chebyshev("v", True))
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w",
                                             _chebyshev("w", True))

# NOTE: torch gives NaN above these Hermite degrees (the recurrence overflows anyway).
_HERMITE_LIMIT = {"float32": 128, "float64": 512}


def _hermite(physicists):
    def fill(x, n, xp):
        if physicists:  # H_{m+1} = 2x H_m - 2m H_{m-1}
            out = _recurrence(x, n, x + x, lambda k, q, p: (x + x) * q - (2 * k - 2) * p)
        else:  # He_{m+1} = x He_m - m He_{m-1}
            out = _recurrence(x, n, x, lambda k, q, p: x * q - (k - 1) * p)
        limit = _HERMITE_LIMIT.get(x.dtype.name, 1024)
        return xp.where(n > limit, xp.nan, out)
    return fill


hermite_polynomial_h = _polynomial("hermite_polynomial_h", _hermite(True))
hermite_polynomial_he = _polynomial("hermite_polynomial_he", _hermite(False))


def _laguerre(x, n, xp):
    out = _recurrence(x, n, 1 - x, lambda k, q, p: ((2 * k - 1 - x) * q - (k - 1) * p) / k)
    return xp.where(x == 0, 1.0, out)


def _legendre(x, n, xp):
    out = _recurrence(x, n, x, lambda k, q, p: ((2 * k - 1) * x * q - (k - 1) * p) / k)
    sign = xp.where(_odd(n), -1.0, 1.0)
    return _ends(x, xp, 1.0, sign, out)


laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", _laguerre)
legendre_polynomial_p = _polynomial("legendre_polynomial_p", _legendre)
