"""layer_norm's float32 kernels, rounded as torch's CPU kernels round.

torch computes a float32 layer norm in float32 with its own formulas, and its build fuses
some multiply-adds (FMA): a row's statistics by Welford's algorithm (for rows shorter than a
vector register: one pass, element by element), the output as ``(x - mean) * rstd * w + b``
and the input's gradient as ``a * dy * w + b * x + c``. Where gradients cancel (a row of two
elements normalizes to about +-1 whatever it holds, so its gradient is mostly rounding) only
the same operations in the same order give torch's values: these are they, for rows of fewer
than 8 elements (a vector register's worth on AVX2). Longer rows, where torch's order of
summation depends on the CPU's vector width and the rounding of one element rarely shows,
and other dtypes keep normalization.py's formulas (faster: no float64 temporaries).
"""
from __future__ import annotations

import math

import numpy as np

from .._backend import get_xp

__all__ = ["exact", "row_stats", "forward", "input_grad"]

_SHORT = 8  # torch's statistics are one scalar Welford pass below this row length (AVX2)


def exact(x, axes):
    """Whether ``x``'s layer norm over ``axes`` takes these kernels."""
    return x.dtype == np.float32 and x.size > 0 and math.prod(x.shape[a] for a in axes) < _SHORT


def _rows(x, axes):
    n = math.prod(x.shape[a] for a in axes)
    return x.reshape(-1, n), n


def _fma(p, q, r):
    """p * q + r rounded once, as a fused multiply-add (float32 products are exact in
    float64, so one float64 sum and a rounding to float32 give it but in rare ties)."""
    return (p.astype(np.float64) * q + r).astype(np.float32)


def row_stats(x, axes, eps):
    """(mean, rstd) of each row, kept dims (torch's RowwiseMoments for a short row, then
    1 / sqrt(var + eps)), for ``exact`` inputs."""
    rows, n = _rows(x, axes)
    kept = [1 if a in axes else s for a, s in enumerate(x.shape)]
    f32 = np.float32
    xp = get_xp(x)
    m = xp.zeros(rows.shape[0], f32)
    m2 = xp.zeros(rows.shape[0], f32)
    for j in range(n):  # (Welford, one element of each row at a time)
        xj = rows[:, j]
        delta = xj - m
        m = m + delta / f32(j + 1)
        m2 = m2 + delta * (xj - m)
    # torch then merges the (empty) vector lanes in: a no-op, but for a mean too large to
    # square, which turns both statistics into NaN
    delta = -m
    m2 = m2 + (f32(0) + delta * delta * f32(0) * f32(n))
    m = m + f32(0) * delta
    rstd = f32(1) / xp.sqrt(m2 / f32(n) + f32(eps))
    return m.reshape(kept), rstd.reshape(kept)


def forward(x, m, rstd, weight, bias):
    """torch's ``(x - mean) * rstd * w + b``: the last multiply-add fused (without a weight,
    ``(x - mean) * rstd + b`` is; without a bias, one of +0 is added)."""
    centered = x - m
    if weight is None:
        return centered * rstd if bias is None else _fma(centered, rstd, bias)
    return _fma(centered * rstd, weight, np.float32(0) if bias is None else bias)


def input_grad(dy, x, m, rstd, weight, axes):
    """torch's dX = a * dy * w + b * x + c (a = rstd, b and c from the row sums of dy * x * w
    and dy * w), with its fused multiply-adds."""
    shape = x.shape
    (rows, n), dy_rows = _rows(x, axes), dy.reshape(-1, math.prod(x.shape[a] for a in axes))
    m, a = m.reshape(-1, 1), rstd.reshape(-1, 1)
    w = None if weight is None else weight.reshape(1, n)
    f32 = np.float32
    ds = (dy_rows * rows if w is None else (dy_rows * rows) * w).sum(axis=1, keepdims=True)
    db = (dy_rows if w is None else dy_rows * w).sum(axis=1, keepdims=True)
    scale = f32(1) / f32(n)
    b = _fma(db, m, -ds) * a * a * a * scale
    c = _fma(-b, m, -(db * a * scale))
    ady = a * dy_rows if w is None else (a * dy_rows) * w
    return (_fma(b, rows, ady) + c).reshape(shape)
