"""torch's CPU rejection samplers, draw for draw: gamma (Marsaglia and Tsang, for
``_standard_gamma`` and ``_sample_dirichlet``) and binomial (Hormann's BTRS and geometric
inversion).

torch runs these element after element (``cpu_serial_kernel``), each element taking uniform
doubles and Box-Muller normals from the generator as its rejection loop asks for them. So they
run here as Python loops, in the same order, with torch's arithmetic: ``scalar_t`` steps
rounded to the tensor's dtype (float32 for float tensors), ``accscalar_t`` steps in double, the
C library's math. The draws come from a block drawn ahead of time; at the end the generator is
rewound and advanced by exactly what was used.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math

import numpy as np

from .cpu_generator import CPUGeneratorImpl
from .sampling import doubles

_F32_THIRD = float(np.float32(1.0) / np.float32(3.0))  # torch's 1.0f / 3.0f
_F32_0331 = float(np.float32(0.0331))  # torch's 0.0331f


class _Draws:
    """Uniform doubles and standard normals (torch's double Box-Muller, whose second value
    waits in the generator's cache) from a generator, in torch's order."""

    def __init__(self, gen, expected):
        self.gen = gen
        self.start = CPUGeneratorImpl()
        self.start.clone_state_from(gen)
        self.cached = gen.next_double_normal
        self.block = doubles(gen, max(expected, 16)).tolist()
        self.used = 0

    def uniform(self):
        if self.used == len(self.block):  # rejections ran past the block: draw on
            self.block += doubles(self.gen, len(self.block)).tolist()
        u = self.block[self.used]
        self.used += 1
        return u

    def normal(self):
        if self.cached is not None:
            z, self.cached = self.cached, None
            return z
        u1, u2 = self.uniform(), self.uniform()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self.cached = r * math.sin(theta)
        return r * math.cos(theta)

    def close(self):
        """Leave the generator where torch's would be: ``used`` doubles on, the cache set."""
        self.gen.clone_state_from(self.start)
        doubles(self.gen, self.used)
        self.gen.next_double_normal = self.cached


def _no_rounding(x):
    return x


def _to_float32(x):
    return float(np.float32(x))


def _rounding(dtype):
    """A scalar_t step's rounding: to float32 for float32 tensors, none for float64 (named
    functions: they key the caches of loop constants)."""
    return _no_rounding if dtype == np.float64 else _to_float32


def _serial(values, expected_per_item, generator, item):
    """``item(draws, value)`` for each value in order (torch's cpu_serial_kernel)."""
    draws = _Draws(generator, expected_per_item * len(values))
    try:
        return [item(draws, v) for v in values]
    finally:
        draws.close()


# -- gamma --------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _gamma_constants(alpha, rs):
    """(boost exponent or None, d, c) of one alpha's rejection loop (tensors often repeat an
    alpha)."""
    boost = None
    if alpha < 1.0:  # boost alpha: Gamma(alpha) = Gamma(alpha + 1) * U ** (1 / alpha)
        boost = rs(1.0 / alpha)
        alpha = rs(alpha + 1.0)
    d = rs(alpha - _F32_THIRD)
    return boost, d, 1.0 / math.sqrt(9.0 * d)


def _gamma_one(draws, alpha, rs):
    """torch's ``sample_gamma<scalar_t, double>`` (``rs`` rounds a scalar_t step)."""
    if alpha == 0.0:
        return 0.0
    boost, d, c = _gamma_constants(alpha, rs)
    scale = 1.0 if boost is None else math.pow(1 - draws.uniform(), boost)
    while True:
        while True:
            x = draws.normal()
            y = 1.0 + c * x
            if not y <= 0:
                break
        v = y * y * y
        u = 1 - draws.uniform()
        xx = x * x
        if u < 1.0 - _F32_0331 * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def _nan_safe(f):
    """The C sampler's arithmetic goes on through NaN and inf; Python's math raises."""
    @functools.wraps(f)
    def run(draws, *args):
        try:
            return f(draws, *args)
        except (ValueError, ZeroDivisionError, OverflowError):
            return math.nan
    return run


_gamma_safe = _nan_safe(_gamma_one)


def standard_gamma(gen, alphas, dtype):
    """One Gamma(alpha) sample per alpha (torch's ``_standard_gamma``), at least the dtype's
    tiny (a NaN becomes tiny, as ``std::max`` leaves it)."""
    rs = _rounding(dtype)
    tiny = float(np.finfo(dtype).tiny)
    samples = _serial(alphas.tolist(), 3, gen, lambda dr, a: rs(_gamma_safe(dr, a, rs)))
    return np.array([s if s > tiny else tiny for s in samples], dtype)


def dirichlet(gen, alphas, dtype):
    """torch's ``_sample_dirichlet`` of a (rows, k) array of concentrations: double gammas
    (at least double's tiny) normalised per row, clamped to [tiny, 1 - eps / 2] of dtype."""
    rows, k = alphas.shape
    double_tiny = float(np.finfo(np.float64).tiny)
    gammas = _serial(alphas.astype(np.float64).ravel().tolist(), 3, gen,
                     lambda dr, a: max(double_tiny, _gamma_safe(dr, a, float)))
    out = np.empty((rows, k), dtype)
    tiny = np.finfo(dtype).tiny
    below_one = np.nextafter(dtype.type(1), dtype.type(0))
    for i in range(rows):
        row = gammas[i * k:(i + 1) * k]
        total = _torch_row_sum(row)
        for j, g in enumerate(row):
            with np.errstate(all="ignore"):
                value = dtype.type(g / total)
            out[i, j] = min(below_one, value if value > tiny else tiny)
    return out


# NOTE: torch sums a contiguous double row in 4-lane vectors (SumKernel.cpp's
# vectorized_inner_sum): lanes accumulate 4 vectors apart (a 4-level cascade once there are
# 16 or more groups of 4), the row's tail is summed first, then the lanes are added to it.
_LANES, _ILP, _LEVELS = 4, 4, 4


def _add(a, b):
    return [x + y for x, y in zip(a, b)]


def _cascade(vectors, size):
    """``multi_row_sum``: ``_ILP`` lane-vector sums over ``size`` groups of ``_ILP``."""
    zero = [0.0] * _LANES
    power = max(4, (math.ceil(math.log2(size)) if size > 1 else 0) // _LEVELS)
    step, mask = 1 << power, (1 << power) - 1
    acc = [[zero] * _ILP for _ in range(_LEVELS)]
    i = 0
    while i + step <= size:
        for _ in range(step):
            acc[0] = [_add(a, vectors[i * _ILP + r]) for r, a in enumerate(acc[0])]
            i += 1
        for j in range(1, _LEVELS):
            acc[j] = [_add(a, b) for a, b in zip(acc[j], acc[j - 1])]
            acc[j - 1] = [zero] * _ILP
            if i & (mask << (j * power)):
                break
    for i in range(i, size):
        acc[0] = [_add(a, vectors[i * _ILP + r]) for r, a in enumerate(acc[0])]
    for j in range(1, _LEVELS):
        acc[0] = [_add(a, b) for a, b in zip(acc[0], acc[j])]
    return acc[0]


def _torch_row_sum(row):
    """The sum of a list of doubles, added in the order torch's CPU sum adds them."""
    total = 0.0
    if len(row) < _LANES:
        for v in row:
            total += v
        return total
    n = len(row) // _LANES
    vectors = [row[i * _LANES:(i + 1) * _LANES] for i in range(n)]
    groups = n // _ILP
    partial = _cascade(vectors, groups)
    for i in range(groups * _ILP, n):
        partial[0] = _add(partial[0], vectors[i])
    lanes = partial[0]
    for p in partial[1:]:
        lanes = _add(lanes, p)
    for v in row[n * _LANES:]:
        total += v
    for v in lanes:
        total += v
    return total


# -- binomial -----------------------------------------------------------------------------------
@functools.cache
def _log1pf():
    """The C library's float log1p (torch's inversion sampler calls it on a float prob)."""
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("m")).log1pf
    except (OSError, AttributeError, TypeError):
        return lambda x: float(np.float32(math.log1p(x)))
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return fn


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_tail(k):
    """log(k!) minus Stirling's approximation of it (a table below 10)."""
    if k < 10:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _log(x):
    """The C library's log, which gives -inf at 0 where Python's raises."""
    return math.log(x) if x > 0 else -math.inf


def _inversion(draws, count, prob, rs, is_f32):
    """Successes before the geometric waiting times pass ``count`` (small count * prob)."""
    logprob = _log1pf()(-prob) if is_f32 else math.log1p(-prob)
    geom_sum, num_geom = 0.0, 0.0
    while True:
        geom = _log(draws.uniform()) / logprob
        geom_sum += geom if math.isinf(geom) else math.ceil(geom)
        if geom_sum > count:
            return num_geom
        num_geom = rs(num_geom + 1)


@functools.lru_cache(maxsize=256)
def _btrs_constants(count, prob, is_f32):
    """The constants of one (count, prob) pair's rejection loop (tensors often repeat a pair)."""
    rs = _rounding(np.float32 if is_f32 else np.float64)
    stddev = rs(math.sqrt(rs(rs(count * prob) * rs(1 - prob))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = rs(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    r = rs(prob / rs(1 - prob))
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(rs(rs(count + 1) * prob))
    return b, a, c, v_r, r, alpha, m


def _btrs(draws, count, prob, rs, is_f32):
    """Hormann's transformed rejection with squeeze (count * prob >= 10, prob <= 1/2)."""
    b, a, c, v_r, r, alpha, m = _btrs_constants(count, prob, is_f32)
    while True:
        u = draws.uniform() - 0.5
        v = draws.uniform()
        us = 0.5 - abs(u)
        if us == 0:  # u = -1/2: 2 a / us is inf and k -inf, rejected below
            continue
        k = rs(math.floor((2 * a / us + b) * u + c))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = _log(v * alpha / (a / (us * us) + b))
        upperbound = ((m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
                      + rs(count + 1) * math.log((count - m + 1) / rs(rs(count - k) + 1))
                      + (k + 0.5) * math.log(r * rs(rs(count - k) + 1) / rs(k + 1))
                      + _stirling_tail(m) + _stirling_tail(count - m)
                      - _stirling_tail(k) - _stirling_tail(rs(count - k)))
        if v <= upperbound:
            return k


def _binomial_one(draws, count, prob, rs, is_f32):
    """torch's ``sample_binomial<scalar_t, double>``."""
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        if rs(count * prob) >= 10.0:
            return _btrs(draws, count, prob, rs, is_f32)
        return _inversion(draws, count, prob, rs, is_f32)
    if prob > 0.5:
        qprob = rs(1.0 - prob)
        if rs(count * qprob) >= 10.0:
            return rs(count - _btrs(draws, count, qprob, rs, is_f32))
        return rs(count - _inversion(draws, count, qprob, rs, is_f32))
    return math.nan  # a NaN probability


def binomial(gen, counts, probs, dtype):
    """One Binomial(count, prob) sample per pair (torch's ``binomial``)."""
    rs = _rounding(dtype)
    is_f32 = dtype != np.float64
    samples = _serial(list(zip(counts.tolist(), probs.tolist())), 4, gen,
                      lambda dr, cp: _binomial_one(dr, cp[0], cp[1], rs, is_f32))
    return np.array(samples, dtype)
