"""linspace's values as torch's CPU kernel computes them, bit for bit.

The kernel counts the first half of the values up from ``start`` and the rest down from
``end``: ``start + step * i`` and ``end - step * (steps - 1 - i)``, with ``step`` computed in
the result's own precision. Its compiled multiply-add rounds once (a fused multiply-add), which
is emulated here in a wider type: float64 for float32 results, NumPy's long double for float64
(exact on x86's 80-bit long double; where long double is float64 the product is rounded first
and a value can differ from torch's in its last bit). float16 rounds after each operation, as
torch's Half arithmetic does. Integer results use a float64 step and truncate each value.
Other dtypes (complex, bfloat16, bool) fall back to NumPy's linspace.
"""
from __future__ import annotations

import numpy as np


def _counted_from_both_ends(start, end, step, steps, wide):
    """``start + step*i`` (first half) and ``end - step*(steps-1-i)`` in one rounding each."""
    i = np.arange(steps)
    up = wide(start) + wide(step) * i.astype(wide)
    down = wide(end) - wide(step) * (steps - 1 - i).astype(wide)
    return np.where(i < steps // 2, up, down)


def _float32(start, end, steps):
    f = np.float32
    s, e = f(start), f(end)
    step = f(f(e - s) / f(steps - 1))
    return _counted_from_both_ends(s, e, step, steps, np.float64).astype(f)


def _float64(start, end, steps):
    step = (float(end) - float(start)) / (steps - 1)
    return _counted_from_both_ends(start, end, step, steps, np.longdouble).astype(np.float64)


def _float16(start, end, steps):
    h = np.float16
    s, e = h(start), h(end)
    step = h(h(e - s) / h(steps - 1))
    i = np.arange(steps)
    up = s + (step * i.astype(h)).astype(h)
    down = e - (step * (steps - 1 - i).astype(h)).astype(h)
    return np.where(i < steps // 2, up, down).astype(h)


def _integer(start, end, steps, np_dtype):
    s, e = int(start), int(end)  # torch converts the ends to the integer type first
    step = (float(e) - float(s)) / (steps - 1)
    values = _counted_from_both_ends(s, e, step, steps, np.longdouble).astype(np.float64)
    return np.trunc(values).astype(np_dtype)


def linspace_values(start, end, steps: int, np_dtype) -> np.ndarray:
    """The ``steps`` values of ``linspace(start, end, steps)`` in ``np_dtype``, as torch's."""
    np_dtype = np.dtype(np_dtype)
    if steps <= 1:  # torch fills a single value with start
        return np.full(steps, start).astype(np_dtype)
    if np_dtype == np.float32:
        return _float32(start, end, steps)
    if np_dtype == np.float64:
        return _float64(start, end, steps)
    if np_dtype == np.float16:
        return _float16(start, end, steps)
    if np_dtype.kind in "iu":
        return _integer(start, end, steps, np_dtype)
    return np.linspace(start, end, steps).astype(np_dtype)
