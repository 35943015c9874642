"""Floating-point operations as torch's compiled CPU kernels perform them, bit for bit.

Two things in torch's kernels are not plain NumPy arithmetic:

* fused multiply-adds: torch's kernels are built for AVX2/AVX-512 with FMA contraction, so
  ``x * (to - from) + from`` and ``val * std + mean`` round once. ``fma32``/``fma64`` give that
  single rounding (exactly, with a rational fallback for the rare double-rounding cases).
* libm: double-precision ``log``, ``log1p``, ``exp``, ``sin``, ``cos``, ``tan`` come from the C
  library, whose results differ from NumPy's own implementations in the last bit now and then
  (``libm.py`` gives the C library's bits over arrays); ``settle`` uses NumPy where the result
  is then rounded to a narrower type and only asks the C library about the values that sit too
  close to a rounding boundary to be decided by NumPy.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

f32, f64 = np.float32, np.float64

# NumPy's transcendental functions are within a few units in the last place of the C library's;
# a double whose float32 rounding stays the same across this relative margin is decided.
_MARGIN = 2.0 ** -40


def _exact_round(a, b, c, dtype):
    """``a * b + c`` rounded once to ``dtype`` (Python rationals; for the rare hard cases)."""
    out = np.empty(len(a), dtype)
    for i, (x, y, z) in enumerate(zip(a.tolist(), b.tolist(), c.tolist())):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        if dtype == f32:
            out[i] = _fraction_to_f32(exact)
        else:
            out[i] = float(exact)  # Fraction -> float rounds to nearest, ties to even
    return out


def _fraction_to_f32(q):
    """A rational rounded to the nearest float32 (ties to even), without double rounding."""
    d = float(q)  # nearest double
    r = f32(d)
    err = q - Fraction(float(r))
    if err == 0:
        return r
    up = np.nextafter(r, f32(np.inf)) if err > 0 else np.nextafter(r, f32(-np.inf))
    other = abs(q - Fraction(float(up)))
    if other < abs(err) or (other == abs(err) and int(up.view(np.int32)) % 2 == 0):
        return up
    return r


def fma32(a, b, c):
    """float32 ``a * b + c`` with one rounding (arrays or scalars of float32 values)."""
    a, b, c = (np.asarray(v, f32) for v in (a, b, c))
    s = np.multiply(a, b, dtype=f64)  # exact: 24 + 24 bits
    if s.shape == np.broadcast_shapes(s.shape, c.shape):
        np.add(s, c, out=s)
    else:
        s = np.add(s, c, dtype=f64)
    out = s.astype(f32)
    # NOTE: rounding the double sum to float32 is a second rounding; it can only go wrong when
    # the double lands exactly halfway between two floats.
    tie = (s.view(np.int64) & 0x1FFFFFFF) == 0x10000000
    if tie.any():
        a, b, c = np.broadcast_arrays(a, b, c)
        out[tie] = _exact_round(a[tie], b[tie], c[tie], f32)
    return out


def _two_product(a, b):
    """p + e == a * b exactly (Dekker's splitting; no hardware FMA in NumPy)."""
    p = a * b
    split = 134217729.0  # 2**27 + 1
    t = a * split
    ah = t - (t - a)
    al = a - ah
    t = b * split
    bh = t - (t - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def fma64(a, b, c):
    """float64 ``a * b + c`` with one rounding."""
    a, b, c = (np.asarray(v, f64) for v in (a, b, c))
    p, e = _two_product(a, b)
    s = p + c
    bb = s - p
    t = (p - (s - bb)) + (c - bb)  # s + t == p + c exactly
    w = t + e
    r = s + w
    # where nothing is left to add, s is the sum, the sign of a zero included (s + 0.0 would
    # turn -0.0 into 0.0)
    np.copyto(r, s, where=(w == 0))
    # r is the correctly rounded sum unless s + w fell exactly halfway between two doubles
    # and w was itself rounded (where the product is exact, e == 0, w is exact, and the tie
    # is the exact value's, which r breaks to even as it should)
    ulp = np.spacing(np.abs(r))
    hard = ((np.abs((s - r) + w) == ulp / 2) & (e != 0)) | ~np.isfinite(r)
    if hard.any():
        a, b, c = np.broadcast_arrays(a, b, c)
        finite = hard & np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
        r[finite] = _exact_round(a[finite], b[finite], c[finite], f64)
    return r


def complex_multiply_is_fused(dtype, sizes):
    """Whether NumPy's multiply of ``dtype`` (complex) arrays of each of ``sizes`` rounds the
    real part once, ``fma(a.re, b.re, -(a.im * b.im))``, as its SIMD loops do on x86 with FMA:
    checked with ``b.im == 1`` on values where a separate rounding of the product shows."""
    real = np.dtype(dtype).type(0).real.dtype
    fma = fma32 if real == f32 else fma64
    rng = np.random.default_rng(12345)
    for size in sizes:
        y, x, c = (rng.standard_normal(size).astype(real) for _ in range(3))
        z = np.empty(size, dtype)
        z.real, z.imag = y, -c
        w = np.empty(size, dtype)
        w.real, w.imag = x, 1
        if not np.array_equal(np.multiply(z, w, out=z).real, fma(y, x, c)):
            return False
    return True


def undecided(values, dtype):
    """Where rounding ``values`` (doubles) to ``dtype`` may depend on their last bits."""
    if dtype == f64:
        return np.ones(values.shape, bool)
    lo = values * (1 - _MARGIN)
    hi = values * (1 + _MARGIN)
    if dtype.kind == "f":
        return lo.astype(dtype) != hi.astype(dtype)
    return np.ceil(lo) != np.ceil(hi)  # integers made with ceil (geometric)


def settle(values, exact, dtype):
    """``values`` (doubles computed with NumPy) made exact where ``dtype`` needs it:
    ``exact(mask)`` recomputes the masked elements through the C library."""
    with np.errstate(all="ignore"):
        redo = undecided(values, np.dtype(dtype)) & np.isfinite(values)
    if redo.any():
        values = values.copy()
        values[redo] = exact(redo)
    return values


def to_dtype(values, dtype):
    """Cast doubles as torch's ``static_cast<scalar_t>(double)`` does (half goes via float)."""
    dtype = np.dtype(dtype)
    if dtype == np.float16 or dtype.kind == "V":  # (bfloat16, also through float)
        return values.astype(f32).astype(dtype)
    return values.astype(dtype)
