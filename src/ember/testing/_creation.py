"""``make_tensor``: a tensor of a shape and dtype filled with uniform random values, drawn
from the global generator the way torch.testing draws them (same seed, same values)."""
from __future__ import annotations

import collections.abc
import math
import warnings

import ember

_INTEGRAL = ("uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
_FLOATING = ("float16", "bfloat16", "float32", "float64")
_FLOAT8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
_COMPLEX = ("complex32", "complex64", "complex128")


def _name(dtype):
    return str(dtype).split(".")[-1]


def _interval(dtype, low, high, lowest, highest, default_low, default_high):
    """``[low, high)`` checked and clamped to what ``dtype`` holds (integer bounds ceiled)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    name = _name(dtype)
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
    if low == high and name in _FLOATING + _COMPLEX:
        warnings.warn("Passing `low==high` to `ember.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. "
                      "Use `ember.full(...)` instead.", FutureWarning, stacklevel=4)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, "
                         f"{high}), but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if name == "bool" or name in _INTEGRAL:
        # (randint's high is exclusive: ceiling both keeps every value inside [low, high))
        return math.ceil(low), math.ceil(high)
    return low, high


def _uniform_(t, low, high):
    # (uniform_ needs high - low to be finite in the dtype: draw half the range and double it)
    if high - low >= ember.finfo(t.dtype).max:
        return t.uniform_(low / 2, high / 2).mul_(2)
    return t.uniform_(low, high)


def _random(shape, dtype, device, low, high):
    name = _name(dtype)
    if name == "bool":
        low, high = _interval(dtype, low, high, 0, 2, 0, 2)
        return ember.randint(low, high, shape, device=device, dtype=dtype)
    if name in _INTEGRAL:
        info = ember.iinfo(dtype)
        # (randint takes int64 bounds: int64's maximum itself cannot be drawn)
        highest = info.max + (1 if name != "int64" else 0)
        low, high = _interval(dtype, low, high, info.min, highest, -9, 10)
        return ember.randint(low, high, shape, device=device, dtype=dtype)
    if name in _FLOATING + _COMPLEX + _FLOAT8:
        info = ember.finfo(dtype)
        low, high = _interval(dtype, low, high, info.min, info.max, -9, 9)
        if name in _FLOAT8:
            return _uniform_(ember.empty(shape, device=device), low, high).to(dtype)
        result = ember.empty(shape, device=device, dtype=dtype)
        _uniform_(ember.view_as_real(result) if name in _COMPLEX else result, low, high)
        return result
    raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                    "ember.testing.make_tensor(). To request support, file an issue at: "
                    "https://github.com/pytorch/pytorch/issues")


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` filled with values drawn uniformly from ``[low, high)``
    (defaults by dtype: bool [0, 2), unsigned [0, 10), signed [-9, 10), floating and
    complex [-9, 9)); ``noncontiguous`` gives a strided view, ``memory_format`` a clone in
    that layout, ``exclude_zero`` replaces zeros by 1 or the dtype's ``tiny``."""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    name = _name(dtype)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got {noncontiguous=} and {memory_format=}")
    if requires_grad and (name == "bool" or name in _INTEGRAL):
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got {dtype=}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:  # (twice the last dimension, so the view skips real values)
        shape = (*shape[:-1], 2 * shape[-1])
    result = _random(shape, dtype, device, low, high)
    if noncontiguous:
        result = result[..., 1::2]  # (starting at 1 also catches offset mistakes)
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = (1 if name == "bool" or name in _INTEGRAL
                               else ember.finfo(dtype).tiny)
    if name in _FLOATING + _COMPLEX:
        result.requires_grad = requires_grad
    return result
