"""Bessel and Airy functions: i0, i0e, i1, i1e (differentiable, as in torch) and
torch.special's bessel_j0/j1/y0/y1, modified_bessel_i0/i1/k0/k1, the scaled K's,
spherical_bessel_j0 and airy_ai (whose results torch never differentiates: they do not
require grad).

Kernels use SciPy's special functions (or CuPy's twin) when importable, else ember's own
(``special_numpy``); either way values at infinities and outside the domain are torch's.
"""
from __future__ import annotations

__all__ = ["i0"]

import numpy as np

from .._backend import get_xp
from .._tensor import Tensor
from . import special_numpy as SN
from .pointwise import abs as abs_
from .pointwise import reciprocal, where
from .registry import FLOAT, op
from .special import special_library
from .unary import sgn


def _compute(x, name, own, fix=None):
    """``library.<name>(x)`` (SciPy's, else ``own`` on float64), then torch's edge values
    (``fix(x, out)``), in ``x``'s dtype. ``name`` may be a function of the library instead."""
    xp = get_xp(x)
    sp = special_library(x)
    fn = None if sp is None else name(sp) if callable(name) else getattr(sp, name, None)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):  # (the cast too: a float32 result may overflow to inf)
        out = fn(x64) if fn is not None else own(x64)
        if fix is not None:
            out = fix(x64, out)
        return xp.asarray(out).astype(x.dtype, copy=False)


def _nan_at_inf(x, out):
    return get_xp(x).where(get_xp(x).isinf(x), get_xp(x).nan, out)


def _zero_at_inf(x, out, odd=False):
    """The scaled I's vanish at both infinities, with the sign of x for the odd one (i1e);
    SciPy gives that, CuPy's kernels NaN."""
    xp = get_xp(x)
    zero = xp.zeros_like(out)
    return xp.where(xp.isinf(x), xp.copysign(zero, x) if odd else zero, out)


def _k_edges(x, out):
    xp = get_xp(x)
    return xp.where(x == xp.inf, 0.0, xp.where(x < 0, xp.nan, out))


# -- differentiable: i0, i0e, i1, i1e ---------------------------------------------------------
@op("i0", elementwise=True, promote=FLOAT, method=True, inplace=True)
def i0(self):
    """The modified Bessel function of the first kind, order 0."""
    return _compute(self, "i0", lambda x: SN.bessel_i_scaled(x, 0) * get_xp(x).exp(
        get_xp(x).abs(x)), _nan_at_inf)


@i0.grad("self")
def _(grad, self):
    return grad * i1(self)


@op("special_i0e", elementwise=True, promote=FLOAT, node="SpecialI0EBackward0")
def i0e(self):
    """``exp(-|x|) i0(x)``."""
    return _compute(self, "i0e", lambda x: SN.bessel_i_scaled(x, 0), _zero_at_inf)


@i0e.grad("self")
def _(grad, self, result):
    return grad * (i1e(self) - sgn(self) * result)


@op("special_i1", elementwise=True, promote=FLOAT)
def i1(self):
    """The modified Bessel function of the first kind, order 1."""
    return _compute(self, "i1", lambda x: SN.bessel_i_scaled(x, 1) * get_xp(x).exp(
        get_xp(x).abs(x)), _nan_at_inf)


def _tiny_guard(self, value_at_zero, formula):
    """torch's i1 / i1e backward: ``formula(safe_self)`` away from 0, ``value_at_zero`` near
    it (|x| <= eps), with 0 swapped for eps inside the formula so that it stays finite."""
    eps = float(np.finfo((self._data if isinstance(self, Tensor) else self).dtype).eps)
    not_tiny = abs_(self) > eps
    safe = where(not_tiny, self, eps)
    return where(not_tiny, formula(safe), value_at_zero)


@i1.grad("self")
def _(grad, self, result):
    return grad * _tiny_guard(self, 0.5, lambda s: i0(s) - result * reciprocal(s))


@op("special_i1e", elementwise=True, promote=FLOAT, node="SpecialI1EBackward0")
def i1e(self):
    """``exp(-|x|) i1(x)``."""
    return _compute(self, "i1e", lambda x: SN.bessel_i_scaled(x, 1),
                    lambda x, out: _zero_at_inf(x, out, odd=True))


@i1e.grad("self")
def _(grad, self, result):
    return grad * _tiny_guard(self, 0.5,
                              lambda s: i0e(s) - result * (sgn(s) + reciprocal(s)))


# -- torch.special's non-differentiable Bessel family ----------------------------------------
def _bessel_op(name, scipy_name, own, fix):
    def kernel(self):
        return _compute(self, scipy_name, own, fix)
    kernel.__name__ = name
    kernel.__doc__ = f"torch.special.{name[8:]}."
    return op(name, elementwise=True, promote=FLOAT, differentiable=False)(kernel)


bessel_j0 = _bessel_op("special_bessel_j0", "j0", lambda x: SN.bessel_j(x, 0), _nan_at_inf)
bessel_j1 = _bessel_op("special_bessel_j1", "j1", lambda x: SN.bessel_j(x, 1), _nan_at_inf)
bessel_y0 = _bessel_op("special_bessel_y0", "y0", lambda x: SN.bessel_y(x, 0), _nan_at_inf)
bessel_y1 = _bessel_op("special_bessel_y1", "y1", lambda x: SN.bessel_y(x, 1), _nan_at_inf)
modified_bessel_i0 = _bessel_op(
    "special_modified_bessel_i0", "i0",
    lambda x: SN.bessel_i_scaled(x, 0) * get_xp(x).exp(get_xp(x).abs(x)), _nan_at_inf)
modified_bessel_i1 = _bessel_op(
    "special_modified_bessel_i1", "i1",
    lambda x: SN.bessel_i_scaled(x, 1) * get_xp(x).exp(get_xp(x).abs(x)), _nan_at_inf)
modified_bessel_k0 = _bessel_op(
    "special_modified_bessel_k0", "k0",
    lambda x: SN.bessel_k_scaled(x, 0) * get_xp(x).exp(-x), _k_edges)
modified_bessel_k1 = _bessel_op(
    "special_modified_bessel_k1", "k1",
    lambda x: SN.bessel_k_scaled(x, 1) * get_xp(x).exp(-x), _k_edges)
scaled_modified_bessel_k0 = _bessel_op("special_scaled_modified_bessel_k0", "k0e",
                                       lambda x: SN.bessel_k_scaled(x, 0), _k_edges)
scaled_modified_bessel_k1 = _bessel_op("special_scaled_modified_bessel_k1", "k1e",
                                       lambda x: SN.bessel_k_scaled(x, 1), _k_edges)


def _airy_edges(x, out):
    return get_xp(x).where(get_xp(x).isinf(x), get_xp(x).nan, out)


def _scipy_airy_ai(sp):
    airy = getattr(sp, "airy", None)
    return None if airy is None else (lambda x: airy(x)[0])


airy_ai = _bessel_op("special_airy_ai", _scipy_airy_ai, SN.airy_ai, _airy_edges)


@op("special_spherical_bessel_j0", elementwise=True, promote=FLOAT, differentiable=False)
def spherical_bessel_j0(self):
    """``sin(x) / x`` (1 at 0, 0 at the infinities)."""
    xp = get_xp(self)
    x = self.astype(np.float64)
    with np.errstate(all="ignore"):  # (x * x overflows far from 0, where it is not used)
        x2 = x * x
        # torch's Taylor polynomial below |x| = 0.5, where sin(x) / x loses digits
        near = 1 + x2 * (-1 / 6 + x2 * (1 / 120 + x2 * (-1 / 5040 + x2 * (
            1 / 362880 + x2 * (-1 / 39916800 + x2 * (1 / 6227020800))))))
        far = xp.sin(x) / x
    out = xp.where(xp.abs(x) < 0.5, near, far)
    return xp.where(xp.isinf(x), 0.0, out).astype(self.dtype, copy=False)

