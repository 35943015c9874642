"""torch's CPU sampling kernels: raw words from the generator turned into each distribution.

Every function takes a ``CPUGeneratorImpl`` and a count ``n`` and returns ``n`` values (a 1-D
NumPy array) in the order torch's kernel writes them, which is the output tensor's memory order
(see ``order.py``). The transforms are torch's (``TransformationHelper.h`` and the CPU kernels
in ``DistributionTemplates.h``): 24 random bits for float uniforms, 53 for doubles, ``%`` for
integers, Box-Muller for normals (one pair per two elements, the second one cached across calls
for small or strided tensors; blocks of 16 for contiguous tensors of 16 elements or more).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import _threads

from . import cephes
from .._cpu_capability import cephes_normals, fused_multiply_add
from .exact_math import f32, f64, fma32, fma64, settle, to_dtype
from .libm import elementwise, libm

_MASK24 = (1 << 24) - 1
_MASK53 = np.uint64((1 << 53) - 1)
_FEW_DOUBLES = 32
_TWO_PI = 2.0 * math.pi


# -- uniforms -------------------------------------------------------------------------------------
def floats(gen, n):
    """float32 uniforms in [0, 1): the low 24 bits of one word each."""
    words = gen.random(n)
    np.bitwise_and(words, _MASK24, out=words)
    out = words.astype(f32)
    out *= f32(2.0 ** -24)
    return out


def doubles(gen, n):
    """float64 uniforms in [0, 1): the low 53 bits of two words each."""
    if n <= _FEW_DOUBLES:  # (Python's integers cost less than NumPy's calls here)
        w = gen.random(2 * n).tolist()
        return np.array([((hi & 0x1FFFFF) << 32 | lo) * 2.0 ** -53
                         for hi, lo in zip(w[0::2], w[1::2])], f64)
    bits = np.bitwise_and(gen.random64(n), _MASK53)
    out = bits.astype(f64)
    out *= 2.0 ** -53
    return out


def _scale(x, width, low, exact_fma):
    """``x * width + low`` as torch's kernel rounds it."""
    if width == 1 and low == 0:
        return x
    if fused_multiply_add():
        return exact_fma(x, width, low)
    return x * width + low


def uniform(gen, n, dtype, low, high):
    """``uniform_(low, high)``: float math for float32/float16 (in float32), double for float64;
    a value that rounds up to ``high`` becomes ``low``."""
    if dtype == f64:
        values = _scale(doubles(gen, n), f64(high) - f64(low), f64(low), fma64)
    else:
        lo, hi = f32(low), f32(high)
        values = _scale(floats(gen, n), hi - lo, lo, fma32).astype(dtype, copy=False)
    if low == 0 and high == 1 and dtype in (f32, f64):  # (the uniforms are below 1 there)
        return values
    top = to_dtype(np.array(high, f64), dtype)
    values[values == top] = to_dtype(np.array(low, f64), dtype)
    return values


def rrelu_slopes(gen, n, dtype, low, high):
    """RReLU's slopes for ``n`` non-positive inputs: uniform doubles on [low, high) (rounded
    twice: torch's activation kernels are built without FMA), in the op's math type."""
    math_type = f64 if dtype == f64 else f32
    low, high = float(math_type(low)), float(math_type(high))
    return (doubles(gen, n) * (high - low) + low).astype(math_type).astype(dtype)


# -- normals ------------------------------------------------------------------------------------
def normal(gen, n, dtype, mean, std, contiguous):
    """``normal_(mean, std)``: blocks of 16 for contiguous tensors of 16 elements or more,
    otherwise one double Box-Muller value at a time (using and refilling the cache)."""
    if n >= 16 and contiguous:
        return _normal_blocks(gen, n, dtype, mean, std)
    pairs = _Pairs(gen, n)
    shift = _shift_function(mean, std)
    if n <= _FEW:
        return to_dtype(shift(pairs.exact_all(), std, mean), dtype)
    values = settle(shift(pairs.approx(), std, mean),
                    lambda mask: shift(pairs.exact(mask), std, mean), dtype)
    return to_dtype(values, dtype)


# below this many values, the one-at-a-time normals are computed value by value through
# ``math`` (the C library's bits at once) rather than with NumPy on tiny arrays, then settled
_FEW = 128


def _shift_function(mean, std):
    """``z * std + mean`` as torch's kernel rounds it (one rounding where it fuses)."""
    if std == 1:  # fma(z, 1, mean): z + mean rounded once, the sum itself
        return lambda z, s, m: z + m
    return fma64 if fused_multiply_add() else (lambda z, s, m: z * s + m)


def log_normal(gen, n, dtype, mean, std):
    """``log_normal_``: exp of the one-at-a-time normals (double), cast."""
    pairs = _Pairs(gen, n)
    shift = _shift_function(mean, std)
    if n <= _FEW:
        return to_dtype(libm("exp", shift(pairs.exact_all(), std, mean)), dtype)
    with np.errstate(over="ignore"):
        approx = np.exp(shift(pairs.approx(), std, mean))
    values = settle(approx, lambda mask: libm("exp", shift(pairs.exact(mask), std, mean)),
                    dtype)
    return to_dtype(values, dtype)


class _Pairs:
    """Standard normals drawn one at a time with torch's double Box-Muller: the cached value
    first, then cos, sin of each new pair; an unused sin is cached for the next call."""

    def __init__(self, gen, n):
        self.cached = gen.next_double_normal if n else None
        if self.cached is not None:
            gen.next_double_normal = None
        self.fresh = n - (self.cached is not None)
        npairs = (self.fresh + 1) // 2
        u = doubles(gen, 2 * npairs).reshape(npairs, 2)
        self.theta = _TWO_PI * u[:, 0]
        self.radius_arg = -u[:, 1]  # radius = sqrt(-2 * log1p(-u2))
        if self.fresh % 2:
            gen.next_double_normal = _pair(self.theta[-1], self.radius_arg[-1])[1]

    def _lay_out(self, cos, sin):
        seq = np.stack([cos, sin], 1).ravel()[:self.fresh]
        return seq if self.cached is None else np.concatenate([[self.cached], seq])

    def approx(self):
        with np.errstate(divide="ignore"):
            r = np.sqrt(-2.0 * np.log1p(self.radius_arg))
        return self._lay_out(r * np.cos(self.theta), r * np.sin(self.theta))

    def _exact_pairs(self, idx):
        r = np.sqrt(-2.0 * libm("log1p", self.radius_arg[idx]))
        return r * libm("cos", self.theta[idx]), r * libm("sin", self.theta[idx])

    def exact_all(self):
        """Every value, exactly (value by value: for few values)."""
        seq = [] if self.cached is None else [self.cached]
        for theta, arg in zip(self.theta.tolist(), self.radius_arg.tolist()):
            seq += _pair(theta, arg)
        return np.array(seq[:len(seq) - self.fresh % 2], f64)

    def exact(self, mask):
        """The exact values at the positions ``mask`` selects."""
        pos = np.flatnonzero(mask) - (self.cached is not None)
        out = np.empty(len(pos))
        out[pos < 0] = self.cached if self.cached is not None else 0.0
        ok = pos >= 0
        cos, sin = self._exact_pairs(pos[ok] // 2)
        out[ok] = np.where(pos[ok] % 2 == 0, cos, sin)
        return out


def _pair(theta, radius_arg):
    """(cos, sin) normals of one pair, through ``math`` (the C library's functions)."""
    r = math.sqrt(-2.0 * math.log1p(radius_arg))
    return r * math.cos(theta), r * math.sin(theta)


def _normal_blocks(gen, n, dtype, mean, std):
    full = n - n % 16
    out = np.empty(n, f64 if dtype == f64 else f32)
    # float and double fill the whole tensor with uniforms first; half and bfloat16 draw
    # block by block
    _blocks(gen, full, full if dtype.itemsize == 2 else n, dtype, mean, std, out[:full])
    if full != n:  # torch redraws 16 uniforms for the last 16 elements
        _blocks(gen, 16, 16, dtype, mean, std, out[n - 16:])
    return out.astype(dtype, copy=False)


def _blocks(gen, count, drawn, dtype, mean, std, out):
    """Normals for the first ``count`` (a multiple of 16) of ``drawn`` uniforms drawn now,
    written into ``out`` (contiguous, ``count`` elements)."""
    if dtype == f64:
        _double_blocks(doubles(gen, drawn)[:count], mean, std, out)
        return
    _float_blocks(gen, count, mean, std, out)
    gen.random(drawn - count)


_DOUBLE_ROWS = 2048  # blocks per piece of the double kernel: its arrays (1 MiB) stay in cache


def _double_blocks(u, mean, std, out):
    """float64 blocks into ``out``: the C library's log, cos and sin, then fma(value, std,
    mean). In pieces that stay in cache, on the intra-op threads."""
    halves = u.reshape(-1, 16).view("V64").T  # (2, rows): the first and last eight of each block
    into = out.reshape(-1, 16).view("V64").T
    log, cos, sin = (elementwise(name) or functools.partial(libm, name)
                     for name in ("log", "cos", "sin"))

    def rows(lo, hi):
        for start in range(lo, hi, _DOUBLE_ROWS):
            end = min(start + _DOUBLE_ROWS, hi)
            work = np.empty((2, (end - start) * 8))
            np.copyto(work.view("V64").reshape(2, -1), halves[:, start:end])
            first, second = work
            np.subtract(1, first, out=first)
            radius = log(first)
            radius *= -2
            np.sqrt(radius, out=radius)
            np.multiply(second, _TWO_PI, out=second)
            np.multiply(radius, cos(second), out=first)
            np.multiply(radius, sin(second), out=second)
            if not (mean == 0 and std == 1):
                work = fma64(work, f64(std), f64(mean))
            np.copyto(into[:, start:end], work.view("V64").reshape(2, -1))

    _threads.run_pieces(rows, halves.shape[1], _DOUBLE_ROWS)


def _float_blocks(gen, count, mean, std, out):
    """float32 normals for ``count`` (a multiple of 16) words drawn now, into ``out``."""
    if cephes_normals():
        cephes.normals(gen.random, count, mean, std, out)
        return
    u = floats(gen, count)
    # NOTE: builds without AVX2 use the C library's float log/cos/sin; computed here in double
    # and rounded, which can differ from those in the last bit.
    u = u.reshape(-1, 16)
    radius = np.sqrt(f32(-2) * np.log(f32(1) - u[:, :8]).astype(f32))
    theta = (_TWO_PI * u[:, 8:].astype(f64)).astype(f32)
    values = np.empty_like(u)
    values[:, :8] = radius * np.cos(theta.astype(f64)).astype(f32)
    values[:, 8:] = radius * np.sin(theta.astype(f64)).astype(f32)
    out[:] = fma32(values, std, mean).ravel()


# -- continuous distributions of one uniform double ----------------------------------------------
def exponential(gen, n, dtype, lambd):
    u = doubles(gen, n)
    scale = -1.0 / lambd
    values = settle(scale * np.log1p(-u), lambda m: scale * libm("log1p", -u[m]), dtype)
    return to_dtype(values, dtype)


def geometric(gen, n, dtype, p):
    u = doubles(gen, n)
    denominator = math.log1p(-p)
    with np.errstate(divide="ignore"):
        ratio = settle(np.log(u) / denominator,
                       lambda m: libm("log", u[m]) / denominator, np.dtype(np.int64))
    return to_dtype(np.ceil(ratio), dtype)


def cauchy(gen, n, dtype, median, sigma):
    u = doubles(gen, n)
    angle = math.pi * (u - 0.5)
    shift = fma64 if fused_multiply_add() else (lambda s, t, m: s * t + m)
    values = settle(shift(sigma, np.tan(angle), median),
                    lambda m: shift(sigma, libm("tan", angle[m]), median), dtype)
    return to_dtype(values, dtype)


# -- bernoulli ------------------------------------------------------------------------------------
def bernoulli_scalar(gen, n, dtype, p):
    """1 where a uniform double falls below ``p``."""
    return (doubles(gen, n) < p).astype(dtype)


def bernoulli_tensor(gen, p, dtype):
    """1 where a uniform falls below each ``p`` (double uniforms for double ``p``, float ones
    otherwise); ``p`` is already in the output's memory order."""
    if p.dtype == f64:
        draws = doubles(gen, p.size) < p
    else:
        draws = floats(gen, p.size) < p.astype(f32)
    return draws.astype(dtype)


# -- integers -----------------------------------------------------------------------------------
def random_from_to(gen, n, dtype, span, low):
    """Integers ``low + (word % span)``: one word each, two when ``span`` needs 28 bits or more
    (torch allows the small skew of ``%`` below that)."""
    if span >= 1 << 28:
        raw = gen.random64(n) % np.uint64(span)
        values = (raw + np.uint64(low & 0xFFFFFFFFFFFFFFFF)).view(np.int64)  # wraps as torch's
    else:
        words = gen.random(n)
        np.remainder(words, np.uint32(span), out=words)
        values = words.astype(np.int64)
        values += low
    return _from_int64(values, dtype)


def random_full_64(gen, n, dtype):
    """The whole int64 range: two words as one signed value."""
    return _from_int64(gen.random64(n).view(np.int64), dtype)


# ``random_()`` without bounds: [0, 2**digits] for floats, [0, max] for integers
_DEFAULT_SPAN = {"bool": 2, "uint8": 256, "int8": 128, "int16": 1 << 15, "int32": 1 << 31,
                 "int64": 1 << 63, "float16": (1 << 11) + 1, "float32": (1 << 24) + 1,
                 "float64": (1 << 53) + 1}


def random_default(gen, n, dtype):
    span = _DEFAULT_SPAN[dtype.name]
    if dtype.name == "bool":
        return (gen.random(n) & 1).astype(bool)
    if dtype.name in ("int64", "float64"):
        raw = gen.random64(n) % np.uint64(span)
    else:
        raw = gen.random(n).astype(np.uint64) % np.uint64(span)
    return raw.astype(dtype)


def _from_int64(values, dtype):
    """``static_cast<scalar_t>(int64_t)``: nonzero for bool, through float for half."""
    if dtype == np.bool_:
        return values != 0
    if dtype == np.float16:
        return values.astype(f32).astype(dtype)
    return values.astype(dtype, copy=False)
