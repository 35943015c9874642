"""float32 Box-Muller as torch's AVX2 kernel computes it, for tensors of 16 elements or more.

torch turns each block of 16 uniforms into 16 normals with vector versions of Cephes' float32
``log`` and ``sincos`` (the polynomials of Julien Pommier's ``avx_mathfun``), compiled with
fused multiply-adds. Their results differ from accurate float32 functions in the last bit for a
few percent of inputs, so bit-identical normals need the same polynomials, evaluated step by step
with float32 rounding and single-rounding fused steps.

Each step runs on float64 arrays that hold float32 values: a product of two such values is exact
in a double, so ``y * x + c`` rounds once when the double sum is rounded to float32. That second
rounding can only go wrong when the double sum was inexact and lands exactly halfway between two
floats; such sums are caught as they happen and their elements redone with rationals.

The work is split in chunks that stay in cache, spread over a few threads (NumPy releases the
GIL inside each operation).
"""
from __future__ import annotations

import os
import threading

import numpy as np

from .exact_math import f32, fma32

# Cephes' single-precision coefficients (float32 values, kept as doubles for the fused steps)
_LOG_POLY = [float(f32(c)) for c in (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
    -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)]
_LOG_Q1, _LOG_Q2 = f32(-2.12194440e-4), f32(0.693359375)
_SQRTHF = f32(0.707106781186547524)
_FOUR_OVER_PI = f32(1.27323954473516)
_DP1, _DP2 = f32(-0.78515625), f32(-2.4187564849853515625e-4)  # products with j are exact
_DP3 = float(f32(-3.77489497744594108e-8))
_COS_POLY = [float(f32(c)) for c in (2.443315711809948e-5, -1.388731625493765e-3,
                                     4.166664568298827e-2)]
_SIN_POLY = [float(f32(c)) for c in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)]
_TWO_PI = f32(2.0 * np.pi)
_LOW29, _HALF29 = np.int64(0x1FFFFFFF), np.int64(0x10000000)

_CHUNK = 1 << 14  # pairs per pass: the working arrays stay in cache


class _Steps:
    """Buffers for one chunk of ``m`` pairs, and float32 steps on float64 arrays."""

    def __init__(self, m):
        self.m = m
        self.f = np.empty(m, f32)
        self.g = np.empty(m, f32)
        self.h = np.empty(m, f32)
        self.i = np.empty(m, np.int32)
        self.i2 = np.empty(m, np.int32)
        self.k = np.empty(m, np.int32)
        self.x, self.z, self.y, self.c, self.t = (np.empty(m) for _ in range(5))
        self.low = np.empty(m, np.int64)
        self.mask = np.empty(m, bool)
        self.redo = []  # element indices a double rounding may have touched

    def round(self, v):
        """Round the doubles ``v`` to float32 values, in place."""
        np.copyto(self.f, v, casting="same_kind")
        np.copyto(v, self.f)

    def fused(self, y, x, c):
        """y = fl32(y * x + c), one rounding (``x``, ``c``: double arrays or numbers)."""
        t = self.t
        np.multiply(y, x, out=t)
        np.add(t, c, out=t)
        np.bitwise_and(t.view(np.int64), _LOW29, out=self.low)
        np.equal(self.low, _HALF29, out=self.mask)
        if self.mask.any():
            self._check_halfway(y, x, c)
        np.copyto(self.f, t, casting="same_kind")
        np.copyto(y, self.f)

    def _check_halfway(self, y, x, c):
        """Of the sums that landed halfway between two floats, remember the inexact ones."""
        idx = np.flatnonzero(self.mask)
        p = y[idx] * (x[idx] if np.ndim(x) else x)  # exact
        addend = c[idx] if np.ndim(c) else np.full(len(idx), c)
        s = self.t[idx]
        bb = s - p
        err = (p - (s - bb)) + (addend - bb)  # s + err == p + addend exactly
        if np.any(err != 0):
            self.redo.append(idx[err != 0])


def _log_radius(st, a, out):
    """sqrt(-2 * log(1 - a)) for float32 uniforms ``a``, the log as Cephes' logf computes it.

    NOTE: 1 - a is exact and at least 2**-24, so no zero or denormal reaches the log.
    """
    u = st.g
    np.subtract(f32(1), a, out=u)
    bits = u.view(np.int32)
    mant = st.k.view(f32)  # the mantissa, in [0.5, 1)
    np.bitwise_and(bits, 0x007FFFFF, out=st.k)
    np.bitwise_or(st.k, 0x3F000000, out=st.k)
    small = st.mask
    np.less(mant, _SQRTHF, out=small)
    e_int = st.i  # the exponent, one less below sqrt(1/2)
    np.right_shift(bits, 23, out=e_int)
    np.subtract(e_int, small, out=e_int)
    np.subtract(e_int, 126, out=e_int)
    e = st.h
    np.copyto(e, e_int, casting="unsafe")
    # x = 2m - 1 below sqrt(1/2), else m - 1 (both exact); the mask selects bits, not branches
    select = st.i
    np.copyto(select, small, casting="unsafe")
    np.negative(select, out=select)  # all ones where small
    np.bitwise_and(select, st.k, out=select)
    np.subtract(mant, f32(1), out=u)
    np.add(u, select.view(f32), out=u)
    x, z, y, c = st.x, st.z, st.y, st.c
    np.copyto(x, u)  # u keeps x as float32 too
    np.multiply(u, u, out=st.f)
    np.copyto(z, st.f)
    y.fill(_LOG_POLY[0])
    for coefficient in _LOG_POLY[1:]:
        st.fused(y, x, coefficient)
    np.multiply(y, x, out=y)
    st.round(y)
    np.multiply(e, _LOG_Q1, out=st.f)
    np.copyto(c, st.f)
    st.fused(y, z, c)
    # the rest in float32: z / 2 and e * Q2 (a small integer times 9 bits) are exact
    np.copyto(out, y, casting="same_kind")
    np.multiply(z, 0.5, out=c)
    np.copyto(st.f, c, casting="same_kind")
    np.subtract(out, st.f, out=out)
    np.add(out, u, out=out)
    np.multiply(e, _LOG_Q2, out=st.f)
    np.add(out, st.f, out=out)
    np.multiply(out, f32(-2), out=out)
    np.sqrt(out, out=out)


def _sin_cos(st, b, sin_out, cos_out):
    """Cephes' sincosf of 2*pi*b for float32 uniforms ``b`` in [0, 1)."""
    theta = st.g
    np.multiply(b, _TWO_PI, out=theta)
    j = st.i
    np.multiply(theta, _FOUR_OVER_PI, out=st.h)
    np.copyto(j, st.h, casting="unsafe")  # truncation, theta >= 0
    np.add(j, 1, out=j)
    np.bitwise_and(j, ~1, out=j)
    jf = st.h
    np.copyto(jf, j, casting="unsafe")
    # theta - j * pi / 4 in three pieces
    np.multiply(jf, _DP1, out=st.f)
    np.add(theta, st.f, out=theta)
    np.multiply(jf, _DP2, out=st.f)
    np.add(theta, st.f, out=theta)
    x, z, y = st.x, st.z, st.y
    np.copyto(x, jf)
    np.copyto(y, theta)
    st.fused(x, _DP3, y)
    np.multiply(x, x, out=z)
    st.round(z)
    c = st.c
    c.fill(_COS_POLY[0])
    st.fused(c, z, _COS_POLY[1])
    st.fused(c, z, _COS_POLY[2])
    np.multiply(c, z, out=c)
    st.round(c)
    np.multiply(z, -0.5, out=y)  # exact
    st.fused(c, z, y)
    np.copyto(cos_out, c, casting="same_kind")
    np.add(cos_out, f32(1), out=cos_out)
    y.fill(_SIN_POLY[0])
    st.fused(y, z, _SIN_POLY[1])
    st.fused(y, z, _SIN_POLY[2])
    np.multiply(y, z, out=y)
    st.round(y)
    st.fused(y, x, x)
    np.copyto(sin_out, y, casting="same_kind")
    # octants 1, 2, 5, 6 swap the two polynomials (with bit masks: no branch per element);
    # the signs come from the octant too
    sin_bits, cos_bits, swap = sin_out.view(np.int32), cos_out.view(np.int32), st.k
    np.bitwise_and(j, 2, out=swap)
    np.right_shift(swap, 1, out=swap)
    np.negative(swap, out=swap)  # all ones where the octant swaps
    np.bitwise_xor(sin_bits, cos_bits, out=st.i2)
    np.bitwise_and(st.i2, swap, out=st.i2)
    np.bitwise_xor(sin_bits, st.i2, out=sin_bits)
    np.bitwise_xor(cos_bits, st.i2, out=cos_bits)
    np.bitwise_and(j, 4, out=st.k)
    np.left_shift(st.k, 29, out=st.k)
    np.bitwise_xor(sin_bits, st.k, out=sin_bits)
    np.subtract(j, 2, out=st.k)
    np.invert(st.k, out=st.k)
    np.bitwise_and(st.k, 4, out=st.k)
    np.left_shift(st.k, 29, out=st.k)
    np.bitwise_xor(cos_bits, st.k, out=cos_bits)


def _chunk(st, u, mean, std, out):
    """Normals for whole blocks: float32 uniforms ``u`` (n, 16) -> ``out`` (n, 16)."""
    first = np.ascontiguousarray(u[:, :8]).ravel()
    second = np.ascontiguousarray(u[:, 8:]).ravel()
    radius = np.empty(len(first), f32)
    sin = np.empty(len(first), f32)
    cos = np.empty(len(first), f32)
    st.redo = []
    _log_radius(st, first, radius)
    _sin_cos(st, second, sin, cos)
    if st.redo:  # redo the few elements a double rounding touched, one rational step at a time
        idx = np.unique(np.concatenate(st.redo))
        exact = _Exact(len(idx))
        r, s, c = (np.empty(len(idx), f32) for _ in range(3))
        _log_radius(exact, first[idx], r)
        _sin_cos(exact, second[idx], s, c)
        radius[idx], sin[idx], cos[idx] = r, s, c
    np.multiply(radius, cos, out=cos)
    np.multiply(radius, sin, out=sin)
    if not (mean == 0 and std == 1):
        for n in (cos, sin):
            _shift(st, n, std, mean)
    out[:, :8], out[:, 8:] = cos.reshape(-1, 8), sin.reshape(-1, 8)


def _shift(st, values, std, mean):
    """values = fma(values, std, mean) in float32, in place."""
    st.redo = []
    y = st.y
    np.copyto(y, values)
    st.fused(y, float(std), float(mean))
    if st.redo:
        idx = np.concatenate(st.redo)
        exact = fma32(values[idx], std, mean)
    np.copyto(values, y, casting="same_kind")
    if st.redo:
        values[idx] = exact


class _Exact(_Steps):
    """The same steps with every fused one done with rationals (for a few elements)."""

    def fused(self, y, x, c):
        y[...] = fma32(y.astype(f32), np.asarray(x, f32), np.asarray(c, f32))


_local = threading.local()
_pool = []  # the thread pool, made on first use


def _forget_pool():
    # NOTE: a forked child (a DataLoader worker) has none of the parent's threads: it makes
    # its own pool if it needs one
    _pool.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _steps(m):
    st = getattr(_local, "steps", None)
    if st is None or st.m != m:
        st = _local.steps = _Steps(m)
    return st


def _workers():
    return max(1, min(os.cpu_count() or 1, 8))


def normal_blocks(u, mean, std):
    """torch's float32 normals for uniforms ``u`` (float32, length a multiple of 16)."""
    mean, std = f32(mean), f32(std)
    u = u.reshape(-1, 16)
    out = np.empty_like(u)
    step = _CHUNK // 8
    starts = range(0, len(u), step)

    def run(start):
        block = u[start:start + step]
        _chunk(_steps(block.shape[0] * 8), block, mean, std, out[start:start + step])

    if len(starts) > 1 and _workers() > 1:
        if not _pool:
            from concurrent.futures import ThreadPoolExecutor
            _pool.append(ThreadPoolExecutor(_workers(), thread_name_prefix="ember-randn"))
        list(_pool[0].map(run, starts))
    else:
        for start in starts:
            run(start)
    return out.ravel()
