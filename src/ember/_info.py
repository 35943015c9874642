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
