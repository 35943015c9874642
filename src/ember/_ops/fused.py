"""``x * y + z`` rounded once, as torch's CPU kernels compute it with a fused multiply-add.

torch's vectorized add/sub with ``alpha`` and addcmul run ``Vectorized::fmadd``: the product
is not rounded before the sum. Two NumPy operations round twice and differ from torch by an
ulp in about one element in ten, which every optimizer step then carries forward.

float32 (and the half types, which torch computes in float32): the product of two float32
numbers is exact in float64, so ``z + x*y`` in float64 is one rounding away from the exact
value; rounding that float64 sum "to odd" makes the final rounding to float32 the correct one
(rounding twice to nearest would differ where the float64 sum lands on a float32 midpoint).
float64: the product is split exactly (Dekker's TwoProduct) and summed with Boldo and
Melquiond's round-to-odd emulation of an fma.

NumPy has no fma ufunc; these are a few array passes each, paid only by the callers where
torch fuses (``alpha != 1``, addcmul).
"""
from __future__ import annotations

import numpy as np

from .._backend import get_xp

_F32, _F64, _F16 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16)
_U64 = np.dtype(np.uint64)
# The float64 bits below float32's mantissa, and those of a float32 midpoint.
_BELOW_F32 = np.uint64((1 << 29) - 1)
_F32_MIDPOINT = np.uint64(1 << 28)
_EXPONENT = np.uint64(0x7FF << 52)
# float64 exponent bits of float32's smallest normal: below it float32's midpoints move up
_F32_NORMAL = np.uint64((1023 - 126) << 52)
_SPLITTER = float(2 ** 27 + 1)  # Veltkamp's constant for float64


def fused_multiply_add(x, y, z, dtype=None):
    """``x * y + z`` with one rounding to ``dtype`` (by default the float dtype of the
    operands: float16, float32 or float64; float16 through float32, as torch's kernels
    compute it). A number operand is used as it is: cast it as torch casts its Scalar."""
    dtype = np.result_type(x, y, z) if dtype is None else np.dtype(dtype)
    if dtype == _F64:
        return _fma_f64(x, y, z)
    out = _fma_f32(*(_as_f32(v) for v in (x, y, z)))
    return out if dtype == _F32 else out.astype(dtype)


def add_scaled(base, scaled, alpha):
    """``base + alpha * scaled`` for arrays, as torch's ``add(base, scaled, alpha=alpha)``
    rounds it: float16/32/64 fused, ``alpha`` cast to their dtype; other dtypes (complex,
    bfloat16 storage) multiply, then add."""
    dtype = np.result_type(base, scaled)
    if alpha == 1 or dtype not in (_F16, _F32, _F64):
        return base + scaled if alpha == 1 else base + alpha * scaled
    return fused_multiply_add(scaled, float(np.asarray(alpha, dtype=dtype)), base)


def add_product(base, tensor1, tensor2, value):
    """``base + value * tensor1 * tensor2`` for arrays, as torch's addcmul rounds it:
    fmadd(value * tensor1, tensor2, base), ``value`` in the dtype the kernel computes in
    (float32 for float16); other dtypes multiply, then add."""
    dtype = np.result_type(base, tensor1, tensor2)
    if dtype not in (_F16, _F32, _F64):
        return base + value * tensor1 * tensor2
    wide = _F32 if dtype == _F16 else dtype
    scaled = tensor1.astype(wide, copy=False) * wide.type(value)
    return fused_multiply_add(scaled, tensor2, base, dtype)


def _as_f32(v):
    return v.astype(_F32) if getattr(v, "dtype", _F32) != _F32 else v


def _fma_f32(x, y, z):
    xp = get_xp(x, y, z)
    x, y = (v if hasattr(v, "dtype") else _F64.type(v) for v in (x, y))
    total = xp.asarray(xp.multiply(x, y, dtype=_F64))  # exact: 24 + 24 bits
    z = z.astype(_F64) if hasattr(z, "astype") else float(z)
    if total.shape == np.broadcast_shapes(total.shape, getattr(z, "shape", ())):
        xp.add(total, z, out=total)  # (no second temporary)
    else:
        total = total + z
    return _rounded_to_odd(total, x, y, z, xp).astype(_F32)


def _rounded_to_odd(total, x, y, z, xp):
    """``total`` (= fl(x*y + z), the product exact) where it could round to float32
    differently from the exact value: on a float32 midpoint, or in float32's subnormal range,
    the inexact ones move to their odd neighbour so that rounding to float32 is decided by
    the exact sum. (In place: ``total`` is the caller's own temporary.)"""
    bits = total.view(_U64)
    part = xp.asarray(bits & _BELOW_F32)  # (an array even for a 0-d total)
    suspect = part == _F32_MIDPOINT
    xp.bitwise_and(bits, _EXPONENT, out=part)
    suspect |= part < _F32_NORMAL
    if not suspect.any():
        return total
    x, y, z = (xp.broadcast_to(xp.asarray(v, dtype=_F64), total.shape)[suspect]
               for v in (x, y, z))
    total[suspect] = _odd_sum(total[suspect], x * y, z, xp)
    return total


def _two_sum_error(total, a, b):
    """The exact ``a + b - total`` for ``total = fl(a + b)`` (Knuth's TwoSum)."""
    b_part = total - a
    return (a - (total - b_part)) + (b - b_part)


def _odd_sum(total, a, b, xp):
    """``a + b`` rounded to odd: an inexact sum takes, of its two float64 neighbours, the one
    with an odd last bit."""
    error = _two_sum_error(total, a, b)
    even = (total.view(_U64) & np.uint64(1)) == 0
    move = (error != 0) & even & xp.isfinite(total)
    return xp.where(move, xp.nextafter(total, xp.where(error > 0, xp.inf, -xp.inf)), total)


def _split(v):
    """``v`` as high + low halves of 26 bits each (Veltkamp)."""
    c = _SPLITTER * v
    high = c - (c - v)
    return high, v - high


def _fma_f64(x, y, z):
    xp = get_xp(x, y, z)
    product = x * y
    # Dekker's TwoProduct: product + product_error == x * y exactly
    (xh, xl), (yh, yl) = _split(x), _split(y)
    product_error = ((xh * yh - product) + xh * yl + xl * yh) + xl * yl
    high = xp.asarray(product + z)
    high_error = _two_sum_error(high, product, z)
    low = _odd_sum(xp.asarray(high_error + product_error), high_error, product_error, xp)
    out = high + low
    # (the splitting overflows near float64's range: there, the plain result, as computed)
    return xp.where(xp.isfinite(out), out, product + z)
