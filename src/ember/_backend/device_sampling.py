"""The samplers of a GPU tensor's random draws, drawn on its GPU (see ``random.py``).

Each function stands for the CPU kernel of the same name (``ember._random.sampling``,
``discrete``, ``rejection``): it takes the ``DeviceRandom`` re-seeded for this draw where the
CPU kernel takes the CPU generator, the same other arguments, and returns the values as an
array on the device. The transforms are torch's CUDA kernels' (uniforms and normals computed
in float32 for float32 and float16 tensors, in double for double ones; a uniform that rounds
up to ``high`` becomes ``low``), drawn from cuRAND, so the distributions are torch's and the
values are not.
"""
from __future__ import annotations

import math

import numpy

from .._random.sampling import _from_int64  # (the CPU kernels' cast: astype only)

f32, f64, i64 = numpy.dtype(numpy.float32), numpy.dtype(numpy.float64), numpy.dtype(numpy.int64)


def _math_type(dtype):
    """The type torch's CUDA kernels compute a ``dtype`` sample in."""
    return f64 if dtype == f64 else f32


# -- continuous -----------------------------------------------------------------------------------
def uniform(rs, n, dtype, low, high):
    mt = _math_type(dtype)
    lo, hi = mt.type(low), mt.type(high)
    values = (rs.uniform(n, mt) * (hi - lo) + lo).astype(dtype, copy=False)
    return rs.xp.where(values == dtype.type(high), dtype.type(low), values)


def rrelu_slopes(rs, n, dtype, low, high):
    mt = _math_type(dtype)
    low, high = float(mt.type(low)), float(mt.type(high))
    return (rs.uniform(n, f64) * (high - low) + low).astype(mt).astype(dtype)


def normal(rs, n, dtype, mean, std, contiguous):
    mt = _math_type(dtype)
    return (rs.normal(n, mt) * mt.type(std) + mt.type(mean)).astype(dtype, copy=False)


def log_normal(rs, n, dtype, mean, std):
    mt = _math_type(dtype)
    return rs.xp.exp(rs.normal(n, mt) * mt.type(std) + mt.type(mean)).astype(dtype,
                                                                               copy=False)


def _open_uniform(rs, n, mt):
    """Uniforms in (0, 1], as cuRAND hands them to torch's kernels."""
    return 1 - rs.uniform(n, mt)


def exponential(rs, n, dtype, lambd):
    mt = _math_type(dtype)
    return (-rs.xp.log(_open_uniform(rs, n, mt)) / mt.type(lambd)).astype(dtype, copy=False)


def geometric(rs, n, dtype, p):
    u = _open_uniform(rs, n, f64)
    return rs.xp.ceil(rs.xp.log(u) / math.log1p(-p)).astype(dtype)


def cauchy(rs, n, dtype, median, sigma):
    mt = _math_type(dtype)
    angle = math.pi * (rs.uniform(n, mt) - mt.type(0.5))
    return (mt.type(median) + mt.type(sigma) * rs.xp.tan(angle)).astype(dtype, copy=False)


# -- bernoulli ------------------------------------------------------------------------------------
def bernoulli_scalar(rs, n, dtype, p):
    return (rs.uniform(n, f64) < p).astype(dtype)


def bernoulli_tensor(rs, p, dtype):
    """``p``: each element's probability, broadcast to the output and flattened."""
    mt = _math_type(dtype)  # (torch's CUDA kernel casts p to double for double outputs only)
    return (rs.uniform(p.size, mt) < p.astype(mt, copy=False)).astype(dtype)


# -- integers -------------------------------------------------------------------------------------
def random_from_to(rs, n, dtype, span, low):
    return _from_int64(rs.integers(low, low + span, n), dtype)


def random_full_64(rs, n, dtype):
    return _from_int64(rs.integers(-(1 << 63), 1 << 63, n), dtype)


def _default_span(dtype):
    """``random_()`` without bounds draws from [0, span): up to 2**digits for floats, the
    largest value for integers."""
    if dtype == numpy.bool_:
        return 2
    if dtype.kind == "f":
        return (1 << (numpy.finfo(dtype).nmant + 1)) + 1
    return int(numpy.iinfo(dtype).max) + 1


def random_default(rs, n, dtype):
    return _from_int64(rs.integers(0, _default_span(dtype), n), dtype)


def randperm(rs, n):
    return rs.permutation(n).astype(i64, copy=False)


# -- discrete distributions of tensors --------------------------------------------------------------
def multinomial(rs, probs, num_samples, replacement):
    """Category indices (int64, shape ``probs.shape[:-1] + (num_samples,)``): with
    replacement by a binary search of uniforms in each row's normalised running sum, without
    by the exponential race (the ``num_samples`` smallest ``E / p``, E exponential)."""
    xp = rs.xp
    k = probs.shape[-1]
    p = probs.reshape(-1, k).astype(f64)
    rows = p.shape[0]
    if replacement:
        cdf = xp.cumsum(p, axis=1)
        cdf /= cdf[:, -1:]  # (trailing categories of weight 0 share the last value, 1)
        picked = _search(xp, cdf, rs.uniform(rows * num_samples, f64).reshape(rows, num_samples))
    else:
        with numpy.errstate(divide="ignore"):
            keys = -xp.log(_open_uniform(rs, rows * k, f64)).reshape(rows, k) / p
        picked = xp.argsort(keys, axis=1)[:, :num_samples]
    return picked.astype(i64, copy=False).reshape(probs.shape[:-1] + (num_samples,))


def _search(xp, cdf, u):
    """For each row's ``u``, the first index whose ``cdf`` value exceeds it."""
    lo = xp.zeros(u.shape, i64)
    hi = xp.full(u.shape, cdf.shape[1] - 1, i64)
    for _ in range(int(cdf.shape[1]).bit_length()):
        mid = (lo + hi) // 2
        right = xp.take_along_axis(cdf, mid, axis=1) <= u
        lo = xp.where(right, mid + 1, lo)
        hi = xp.where(right, hi, mid)
    return xp.minimum(lo, cdf.shape[1] - 1)


def poisson(rs, rates):
    return rs.poisson(rates.astype(f64, copy=False))


def _gammas(rs, alphas, floor):
    """Gamma(alpha) doubles, at least ``floor``; alphas that are not positive (and NaN) give
    ``floor``, infinite ones inf, as torch's sampler does (CuPy's would not return)."""
    xp = rs.xp
    alphas = alphas.astype(f64, copy=False)
    drawable = (alphas > 0) & xp.isfinite(alphas)
    g = rs.standard_gamma(xp.where(drawable, alphas, 1.0))
    g = xp.where(drawable & (g > floor), g, floor)
    return xp.where(xp.isposinf(alphas), numpy.inf, g)


def standard_gamma(rs, alphas, dtype):
    tiny = dtype.type(numpy.finfo(dtype).tiny)
    g = _gammas(rs, alphas, 0.0).astype(dtype)
    return rs.xp.where(g > tiny, g, tiny)


def dirichlet(rs, alphas, dtype):
    """Double gammas (at least double's tiny) normalised per row of the (rows, k) ``alphas``,
    clamped to [tiny, 1 - eps / 2] of ``dtype``."""
    xp = rs.xp
    g = _gammas(rs, alphas, float(numpy.finfo(f64).tiny))
    with numpy.errstate(invalid="ignore"):
        value = (g / g.sum(axis=1, keepdims=True)).astype(dtype)
    tiny = dtype.type(numpy.finfo(dtype).tiny)
    below_one = numpy.nextafter(dtype.type(1), dtype.type(0))
    return xp.minimum(below_one, xp.where(value > tiny, value, tiny))


def binomial(rs, counts, probs, dtype):
    """One sample per (count, prob) pair: 0 for a count or probability of 0 or less, the
    count for a probability of 1 or more, NaN for a NaN probability, else a draw."""
    xp = rs.xp
    zero = (counts <= 0) | (probs <= 0)
    whole = probs >= 1
    unknown = xp.isnan(probs)
    drawable = ~(zero | whole | unknown) & xp.isfinite(counts)
    draws = rs.binomial(xp.where(drawable, counts, 0).astype(i64),
                        xp.where(drawable, probs, 0.5).astype(f64)).astype(dtype)
    out = xp.where(zero, 0, xp.where(whole, counts, xp.where(unknown, numpy.nan, draws)))
    return out.astype(dtype, copy=False)
