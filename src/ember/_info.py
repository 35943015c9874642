"""``ember.finfo`` and ``ember.iinfo``: the numeric limits of a dtype, as torch reports them."""
from __future__ import annotations

import math

import numpy as np

from . import _dtype as D

__all__ = ["finfo", "iinfo"]


def _g(x):
    return f"{x:g}" if abs(x) >= 1e-4 or x == 0 else f"{x:.6g}"


class finfo:
    """Machine limits of a floating point dtype (the default dtype when none is given)."""

    def __init__(self, type=None):  # noqa: A002 - torch's name
        dt = D.get_default_dtype() if type is None else type
        if dt.category not in (D.FLOATING, D.COMPLEX):
            raise TypeError(f"torch.finfo() requires a floating point input type. Use "
                            f"torch.iinfo to handle '{dt.name.capitalize()}'")
        real = dt.to_real() if dt.category == D.COMPLEX else dt
        info = D.np_finfo(real.np)
        self.bits = info.bits
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        # 10**-(decimal digits that eps resolves), as a Python float: ml_dtypes rounds its
        # resolution to the narrow type itself
        self.resolution = 10.0 ** -math.floor(-math.log10(self.eps))
        self.dtype = real.name

    def __repr__(self):
        return (f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, "
                f"max={_g(self.max)}, eps={_g(self.eps)}, "
                f"smallest_normal={_g(self.smallest_normal)}, tiny={_g(self.tiny)}, "
                f"dtype={self.dtype})")

    def __eq__(self, other):
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))


class iinfo:
    """Machine limits of an integer dtype."""

    def __init__(self, type):  # noqa: A002
        if type.category not in (D.INTEGRAL,) or type is D.bool:
            raise TypeError(f"torch.iinfo() requires an integer input type. Use torch.finfo "
                            f"to handle '{type.name.capitalize()}'")
        info = np.iinfo(type.np)
        self.bits, self.max, self.min, self.dtype = info.bits, int(info.max), int(info.min), \
            type.name

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"

    def __eq__(self, other):
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))


# torch's C++ names of its element types, in "value cannot be converted to type ..."
_C_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
            "int64": "int64_t", "uint16": "uint16_t", "uint32": "uint32_t",
            "uint64": "uint64_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "float32": "float", "float64": "double", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


def check_scalar(value, npdtype):
    """torch's Scalar.to<T>() (c10's checked_convert) for a number written into a tensor of
    NumPy dtype ``npdtype`` (fill_, masked_fill_, index_fill_, full, ``x[k] = number``): a
    value out of the type's range, NaN or an infinity into an integer type, or a complex
    number with an imaginary part into a real type is refused. A negative integer may wrap
    into an unsigned type, down to minus its largest value. Anything goes into bool. (An
    integer that fits neither int64 nor uint64 is refused first, as torch's argument parser
    does.) Returns the number to write as NumPy can write it: a bool into bool, the real part
    of a complex number into a real type, an unsigned type's wrapped value of a negative
    integer."""
    if hasattr(value, "item"):
        from ._backend import has_data
        if not has_data(value):  # (a meta array has no number to read, nor does torch's)
            return value
    v = value.item() if hasattr(value, "item") else value  # (a 0-dim array: its number)
    if type(v) is int and not -2**63 <= v < 2**64:
        raise OverflowError("int too big to convert" if v > 0 else
                            "can't convert negative int to unsigned")
    if npdtype.kind == "b":
        return bool(v)
    if isinstance(v, bool):
        return value
    if isinstance(v, complex):
        parts = (v.real, v.imag) if npdtype.kind == "c" else (v.real,)
        bad = npdtype.kind != "c" and v.imag != 0
        bad = bad or any(_overflows(p, npdtype) for p in parts)
        value = value if npdtype.kind == "c" else v.real
    else:
        bad = _overflows(v, npdtype)
        if npdtype.kind == "u" and type(v) is int and v < 0 and not bad:
            value = v % (1 << (8 * npdtype.itemsize))
    if bad:
        dt = D._BY_NP[npdtype]
        name = _C_NAMES.get(dt.name) or "c10::" + dt.name.replace("float8", "Float8")
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")
    return half_source(value) if npdtype == np.float16 else value


def half_source(value):
    """A number bound for float16 as torch converts it: its Half is built from a float, so the
    number is rounded to float32 first (NumPy rounds once, which differs where the first
    rounding lands on a tie). Other values pass through."""
    if type(value) is float or type(value) is int:
        with np.errstate(over="ignore"):
            return float(np.float32(value))
    if getattr(value, "dtype", None) == np.float64:
        return D.as_half_source(value, np.dtype(np.float16))
    return value


def _overflows(v, npdtype):
    lowest, highest, special = _limits(np.dtype(npdtype))
    if isinstance(v, float) and not math.isfinite(v):
        return not special(v)
    if npdtype.kind == "u" and isinstance(v, int) and v < 0:
        return -v > highest  # (two's complement: -1 is the largest value)
    return v < lowest or v > highest


_LIMITS = {}


def _limits(npdtype):
    """(lowest, highest, whether an infinity or NaN is representable) of a NumPy dtype."""
    got = _LIMITS.get(npdtype)
    if got is None:
        if npdtype.kind in "iu":
            info = np.iinfo(npdtype)
            got = int(info.min), int(info.max), lambda v: False
        else:
            real = np.dtype(npdtype.char.lower()) if npdtype.kind == "c" else npdtype
            info = D.np_finfo(real)
            with np.errstate(all="ignore"):
                kept = np.array([np.inf, np.nan], np.float64).astype(real).astype(np.float64)
            inf_kept, nan_kept = bool(np.isinf(kept[0])), bool(np.isnan(kept[1]))
            got = (float(info.min), float(info.max),
                   lambda v, i=inf_kept, n=nan_kept: i if math.isinf(v) else n)
        _LIMITS[npdtype] = got
    return got
