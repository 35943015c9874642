"""The natural log of doubles to about 2**-61 of its value, from NumPy's SIMD arithmetic.

``libm.py`` needs the exact value of ``log(x)`` closely enough to tell which double the C library
returns (the nearest one, unless the value lies within 0.02 units in the last place of a
halfway point). The extended-precision ``logl`` gives that, but at some 50 ns a value; this
module gets the same closeness at a fraction of that cost, as a double-double ``(hi, lo)``.

The method is the C library's own (a table of reciprocals, as in glibc's ``log``):
``x = 2**k * z`` with ``z`` in [0.6875, 1.375); ``c`` the reciprocal of one of 128 subintervals'
centres, kept to 8 significant bits so that ``r = z * c - 1`` is exact when computed with one
rounding (a fused multiply-add: here the real part of a complex128 product, which NumPy's SIMD
loops compute as ``fma(a.re, b.re, -(a.im * b.im))``); then

    log(x) = k * ln2 + (-log(c)) + log1p(r),   |r| < 2**-7,

with ``ln2`` and ``-log(c)`` as two doubles each (the high parts with trailing zeros, so that
``k * ln2_hi - log(c)_hi`` is exact), ``r**2`` split exactly with another fused step, and the
Taylor series of ``log1p`` to ``r**9``, whose remainder is below 2**-61 of the result also where
``c == 1`` (next to ``x == 1``, where the result is ``r`` itself). The sums that carry the
rounding errors are exact (two-sum).
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from .exact_math import complex_multiply_is_fused

_OFFSET = 0x3FE6000000000000  # the bits of 0.6875: z in [0.6875, 1.375)
_TABLE_BITS = 7
_RECIPROCAL_BITS = 8  # z * c then has at most 53 + 8 bits below r's leading one
_HIGH_QUANTUM = 2.0 ** -42  # ln2_hi, log(c)_hi: multiples of this; k * ln2_hi is exact
_EXPONENT_MASK = np.int64(-(1 << 52))  # the bits above the mantissa
_OFFSET_BITS = np.int64(_OFFSET)
_INDEX_SHIFT, _EXPONENT_SHIFT = np.int64(52 - _TABLE_BITS), np.int64(52)
_INDEX_MASK = np.int64((1 << _TABLE_BITS) - 1)
_LOG1P_TAIL = [(-1) ** (n + 1) / n for n in range(9, 2, -1)]  # r**9/9 ... r**3/3, for Horner
_SMALLEST_NORMAL = 2.0 ** -1022
_DIGITS = 60


@functools.cache
def fused_complex_multiply() -> bool:
    """Whether NumPy's complex128 multiply rounds its real part once (see
    ``exact_math.complex_multiply_is_fused``). Arrays of one element take a scalar path that
    may round twice: ``log_parts`` never multiplies such arrays."""
    return complex_multiply_is_fused(np.complex128, (2, 3, 8, 13, 64, 1000))


def _ln(value):
    """log(value) of a float, to 60 digits (Python's decimal module)."""
    from decimal import Context, Decimal
    return Context(prec=_DIGITS).ln(Decimal(value))


def _split(exact):
    """A 60-digit Decimal as (hi, lo): hi a multiple of the high quantum, lo the nearest double
    to the rest."""
    from decimal import Decimal
    hi = float(round(exact / Decimal(_HIGH_QUANTUM))) * _HIGH_QUANTUM
    return hi, float(exact - Decimal(hi))


def _reciprocal(lo, hi):
    """c for z in [lo, hi): 1 where the subinterval touches 1 (so that r = z - 1 there), else
    the subinterval centre's reciprocal to 8 significant bits."""
    if lo <= 1.0 <= hi:
        return 1.0
    m, e = np.frexp(2.0 / (lo + hi))
    return float(np.ldexp(np.round(np.ldexp(m, _RECIPROCAL_BITS)), e - _RECIPROCAL_BITS))


@functools.cache
def tables():
    """For the 128 subintervals: ``c + 1j`` (complex, the operand of the fused step) and
    ``log(1/c)`` as ``hi + 1j * lo``; and (ln2_hi, ln2_lo)."""
    n = 1 << _TABLE_BITS
    step = 1 << (52 - _TABLE_BITS)
    bounds = np.array([_OFFSET + i * step for i in range(n + 1)], np.int64).view(np.float64)
    c = [_reciprocal(bounds[i], bounds[i + 1]) for i in range(n)]
    logs = [_split(-_ln(v)) for v in c]
    return (np.array([complex(v, 1) for v in c]), np.array([complex(*parts) for parts in logs]),
            _split(_ln(2.0)))


class _Work:
    """Working arrays for pieces of up to ``m`` values (one set per thread, kept for its next
    call: a fresh large array costs a page fault per 4 KiB on first use)."""

    def __init__(self, m):
        self.m = m
        self.t, self.index = np.empty(m, np.int64), np.empty(m, np.intp)
        self.k, self.r, self.r2, self.tail, self.s, self.back = (np.empty(m) for _ in range(6))
        self.a, self.b, self.log_c = (np.empty(m, np.complex128) for _ in range(3))
        self.b.imag = 1

    def sized(self, n):
        """Views of the first ``n`` elements of each array."""
        view = object.__new__(_Work)
        view.__dict__.update({name: value[:n] for name, value in self.__dict__.items()
                              if isinstance(value, np.ndarray)})
        return view


_PIECE = 1 << 14  # values per piece: the working arrays (1 MiB) stay in cache
_local = threading.local()


def _work():
    w = getattr(_local, "work", None)
    if w is None:
        w = _local.work = _Work(_PIECE)
    return w


def log_parts(x):
    """(hi, lo): log(x) ~ hi + lo (|lo| at most half a unit in the last place of hi), to about
    2**-61 of its value, for finite, positive, normal doubles ``x`` (1-D); other elements give
    meaningless parts."""
    x = np.ascontiguousarray(x, np.float64)
    if len(x) == 1:  # (pieces of at least two: see fused_complex_multiply)
        hi, lo = log_parts(np.append(x, 1.0))
        return hi[:1], lo[:1]
    hi, lo = np.empty(len(x)), np.empty(len(x))
    work = _work()
    for start in range(0, len(x), _PIECE):
        end = min(start + _PIECE, len(x))
        part = slice(min(start, end - 2), end)  # a last piece of one redoes the one before
        piece = x[part]
        w = work if len(piece) == _PIECE else work.sized(len(piece))
        _log_piece(w, piece, hi[part], lo[part])
    return hi, lo


def _log_piece(w, x, hi, lo):
    """log_parts of one piece, into ``hi`` and ``lo``."""
    c, log_c, (ln2_hi, ln2_lo) = tables()
    bits, t, index, k, r, r2, tail = x.view(np.int64), w.t, w.index, w.k, w.r, w.r2, w.tail
    np.subtract(bits, _OFFSET_BITS, out=t)
    np.right_shift(t, _INDEX_SHIFT, out=index)
    np.bitwise_and(index, _INDEX_MASK, out=index)
    np.right_shift(t, _EXPONENT_SHIFT, out=tail.view(np.int64))
    np.copyto(k, tail.view(np.int64), casting="unsafe")  # the exponent k, as a double
    # a = (z, 1), b = (c, 1): the real part of a * b is fma(z, c, -1) = r, exactly
    a, b = w.a, w.b
    a.imag = 1
    np.bitwise_and(t, _EXPONENT_MASK, out=t)
    np.subtract(bits, t, out=a.real.view(np.int64))  # z = x / 2**k
    np.take(c, index, out=b)
    np.multiply(a, b, out=a)
    np.copyto(r, a.real)
    # r**2 = r2 + r2_low exactly: a = (r, r2), b = (r, 1) give fma(r, r, -r2)
    np.multiply(r, r, out=r2)
    a.imag = r2
    b.real = r
    np.multiply(a, b, out=a)
    # the series' tail, r**3 (1/3 - r/4 + ... + r**6/9), less half the low part of r**2
    tail.fill(_LOG1P_TAIL[0])
    for coefficient in _LOG1P_TAIL[1:]:
        np.multiply(tail, r, out=tail)
        np.add(tail, coefficient, out=tail)
    np.multiply(tail, r, out=tail)
    np.multiply(tail, r2, out=tail)
    r2_low = w.back
    np.multiply(a.real, -0.5, out=r2_low)
    np.add(tail, r2_low, out=tail)
    # high parts: k ln2_hi + log(1/c)_hi (exact), + r (two-sum), - r2 / 2 (fast two-sum)
    np.take(log_c, index, out=w.log_c)
    big, s, back = hi, w.s, w.back
    np.multiply(k, ln2_hi, out=big)
    np.add(big, w.log_c.real, out=big)
    np.add(big, r, out=s)
    np.subtract(s, r, out=back)
    np.subtract(big, back, out=big)
    np.subtract(s, back, out=back)
    np.subtract(r, back, out=back)
    error = lo
    np.add(big, back, out=error)  # the two-sum's rounding error
    half_r2 = np.multiply(r2, -0.5, out=r2)
    _fast_two_sum(s, half_r2, hi, s)
    np.add(error, s, out=error)
    # low parts: the rounding errors, k ln2_lo, log(1/c)_lo and the tail
    np.multiply(k, ln2_lo, out=k)
    np.add(error, k, out=error)
    np.add(error, w.log_c.imag, out=error)
    np.add(error, tail, out=error)
    # hi + lo as the nearest double and the rest
    _fast_two_sum(hi, error, s, error)
    np.copyto(hi, s)


def _fast_two_sum(a, b, total, rest):
    """``total`` = fl(a + b) and ``rest`` = a + b - total exactly, for |a| >= |b| (Dekker's
    fast two-sum); ``a`` is overwritten, ``rest`` may be ``a`` or ``b``."""
    np.add(a, b, out=total)
    np.subtract(total, a, out=a)
    np.subtract(b, a, out=rest)


def normal_positive(x):
    """Where ``log_parts`` applies."""
    return (x >= _SMALLEST_NORMAL) & (x < np.inf)
