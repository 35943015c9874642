"""The C library's double-precision functions (``log``, ``sin``, ...) over arrays, bit for bit.

torch's double samplers call the C library one value at a time; Python's ``math`` module calls
the same library, so ``math`` is always right, at about a tenth of a microsecond a value. Two
faster routes are taken where they are shown to give the same bits:

* NumPy's own ufunc, where it calls the C library itself (as NumPy's ``sin`` and ``cos`` do on
  many builds, while its ``log`` and ``exp`` often have SIMD code of their own). Each function
  is compared with ``math`` once, on a few thousand arguments; a different implementation
  differs from the C library on a sizeable share of arguments and so never passes.
* For ``log``, a close estimate of the exact value: the C library's ``log`` is within 0.52 units
  in the last place of it (glibc and musl; their correctly rounded predecessors too), so wherever
  the estimate is farther than 1/32 unit from a halfway point between two doubles, the double
  nearest to it is the C library's answer; the few others (about one in sixteen) are asked of
  ``math``. The estimate is a double-double from NumPy's SIMD arithmetic (``table_log.py``,
  within about 2**-61 of the value) where NumPy's complex multiply is fused, else the
  extended-precision ``logl`` (where ``long double`` has a 64-bit mantissa, as on x86 Linux),
  some three times slower. Each route, too, is compared with ``math`` once before it is trusted.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import _threads

_HALFWAY_MARGIN = 1 / 32  # units in the last place: 0.52 - 0.5 and logl's error, with room
# errors below 0.5 / this units in the last place (a little less than 0.5 - the margin) are safe
_UNSURE_SCALE = 0.5 / (0.5 - _HALFWAY_MARGIN) * 1.01
_PROBES = 4096
_MIN_PIECE = 1 << 15  # values of log per thread, at the least


def libm(name, x):
    """The C library's double-precision ``name`` of each element of ``x``."""
    x = np.asarray(x, np.float64)
    fn = elementwise(name)
    if fn is None:
        return _one_by_one(name, x)
    # large arrays in pieces on the intra-op threads (NumPy lets go of the GIL in its loops)
    return _threads.map_pieces(fn, x.ravel(), _MIN_PIECE).reshape(x.shape)


def elementwise(name):
    """The fast route to the C library's ``name`` on this machine, as a function of a 1-D
    float64 array (on the calling thread), or None where only ``math`` gives its bits."""
    if _numpy_agrees(name):
        return functools.partial(_numpy_function, getattr(np, name))
    if name == "log" and _table_log_agrees():
        return _log_from_table
    if name == "log" and _extended_log_agrees():
        return _log_from_extended
    return None


def _numpy_function(ufunc, x):
    with np.errstate(all="ignore"):
        return ufunc(x)


def _one_by_one(name, x):
    fn = getattr(math, name)
    return np.fromiter(map(fn, x.ravel().tolist()), np.float64, x.size).reshape(x.shape)


def _probe_arguments(name):
    """Arguments in the ranges the samplers use, and across each function's domain."""
    rng = np.random.default_rng(20240607)
    u = (rng.integers(0, 1 << 53, _PROBES) * 2.0 ** -53)
    wide = rng.uniform(-1, 1, _PROBES)
    if name == "log":
        return np.concatenate([1 - u, np.exp2(wide * 1000), u[:64] * 2.0 ** -1060])
    if name == "log1p":
        return np.concatenate([-u, np.expm1(wide * 30)])
    if name == "exp":
        return np.concatenate([wide * 700, wide * 2.0])
    if name == "tan":
        return np.concatenate([np.pi * (u - 0.5), wide * 1e4])
    return np.concatenate([2 * np.pi * u, wide * 1e5])  # sin, cos


@functools.cache
def _numpy_agrees(name) -> bool:
    x = _probe_arguments(name)
    with np.errstate(all="ignore"):
        fast = getattr(np, name)(x)
    return np.array_equal(fast.view(np.int64), _one_by_one(name, x).view(np.int64))


@functools.cache
def _extended_log_agrees() -> bool:
    if np.finfo(np.longdouble).nmant < 63:
        return False
    x = _probe_arguments("log")
    return np.array_equal(_log_from_extended(x).view(np.int64),
                          _one_by_one("log", x).view(np.int64))


@functools.cache
def _table_log_agrees() -> bool:
    from . import table_log
    if not table_log.fused_complex_multiply():
        return False
    x = _probe_arguments("log")
    return np.array_equal(_log_from_table(x).view(np.int64),
                          _one_by_one("log", x).view(np.int64))


def _log_from_table(x):
    from . import table_log
    out, error = table_log.log_parts(x)
    unsure = _unsure(out, error)
    odd = ~table_log.normal_positive(x)  # zero, negative, subnormal, infinite or NaN
    if odd.any():
        unsure &= ~odd
        with np.errstate(all="ignore"):
            out[odd] = np.log(x[odd])  # -inf, NaN, inf: the C library's too
        subnormal = odd & (x > 0) & (x < np.inf)
        unsure |= subnormal
    if unsure.any():
        out[unsure] = _one_by_one("log", x[unsure])
    return out


def _log_from_extended(x):
    with np.errstate(all="ignore"):
        wide = np.log(x.astype(np.longdouble))
        out = wide.astype(np.float64)
        # the rounding error: exact in long double, a few bits as a double
        unsure = _unsure(out, (wide - out).astype(np.float64))
    if unsure.any():
        out[unsure] = _one_by_one("log", x[unsure])
    return out


def _unsure(out, error):
    """Where the estimate ``out + error`` of a value lies too close to a halfway point between
    two doubles to say which of them the C library returns (``error`` is overwritten)."""
    with np.errstate(all="ignore"):
        # the error scaled so that it moves ``out`` to a neighbour exactly when it is not
        # safely within the margin: the sum rounds back to ``out`` only while |error| <
        # 0.5 / _UNSURE_SCALE units in the last place on its side (a power of two has the
        # closer neighbour below, and so the stricter bound there, as it should)
        error *= _UNSURE_SCALE
        error += out
        error -= out  # zero where the sum rounded back; NaN for infinite or NaN results
        return np.abs(error, out=error) > 0
