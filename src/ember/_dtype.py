"""dtypes and PyTorch's type-promotion rules.

NumPy promotes differently from torch exactly where users notice (``int64 / 2``,
``float32 + 0-dim float64``, NumPy scalars), so ember decides every result dtype here and
hands kernels operands already in that dtype.
"""
from __future__ import annotations

import builtins as _builtins

import numpy as np

__all__ = [
    "dtype", "float16", "half", "float32", "float", "float64", "double", "int8", "int16",
    "short", "int32", "int", "int64", "long", "uint8", "bool", "complex64", "cfloat",
    "complex128", "cdouble", "promote_types", "get_default_dtype", "set_default_dtype",
    "can_cast",
]

# Categories order the kinds of numbers: a higher category always wins a promotion.
BOOL, INTEGRAL, FLOATING, COMPLEX = 0, 1, 2, 3

_LEGACY_TYPE = {
    "float16": "HalfTensor", "float32": "FloatTensor", "float64": "DoubleTensor",
    "int8": "CharTensor", "int16": "ShortTensor", "int32": "IntTensor", "int64": "LongTensor",
    "uint8": "ByteTensor", "bool": "BoolTensor", "complex64": "ComplexFloatTensor",
    "complex128": "ComplexDoubleTensor",
}
# What torch calls a scalar type in its messages ("result type Float can't be cast ...").
_SCALAR_NAME = {
    "float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char",
    "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte", "bool": "Bool",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}


class dtype:
    """A tensor element type (``ember.float32``); wraps the NumPy dtype that stores it."""

    __slots__ = ("name", "np", "category", "itemsize", "is_signed", "_complex_of", "_real_of")

    def __init__(self, name: str, category: int):
        self.name = name
        self.np = np.dtype(name)
        self.category = category
        self.itemsize = self.np.itemsize
        self.is_signed = name not in ("uint8", "bool")

    @property
    def is_floating_point(self) -> bool:
        return self.category == FLOATING

    @property
    def is_complex(self) -> bool:
        return self.category == COMPLEX

    def to_complex(self) -> "dtype":
        return _TO_COMPLEX.get(self.name, self) if self.category != COMPLEX else self

    def to_real(self) -> "dtype":
        return _TO_REAL.get(self.name, self)

    @property
    def legacy_type_name(self) -> str:
        return "ember." + _LEGACY_TYPE[self.name]

    @property
    def scalar_name(self) -> str:
        return _SCALAR_NAME[self.name]

    def __repr__(self) -> str:
        return "ember." + self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


def _dtype_by_name(name):
    return _BY_NAME[name]


float16 = half = dtype("float16", FLOATING)
float32 = float = dtype("float32", FLOATING)
float64 = double = dtype("float64", FLOATING)
int8 = dtype("int8", INTEGRAL)
int16 = short = dtype("int16", INTEGRAL)
int32 = int = dtype("int32", INTEGRAL)
int64 = long = dtype("int64", INTEGRAL)
uint8 = dtype("uint8", INTEGRAL)
bool = dtype("bool", BOOL)  # noqa: A001 - torch's public name
complex64 = cfloat = dtype("complex64", COMPLEX)
complex128 = cdouble = dtype("complex128", COMPLEX)

ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool, complex64, complex128)
_BY_NAME = {d.name: d for d in ALL}
# Lookup from a NumPy dtype: the one place arrays are mapped back to ember dtypes.
_BY_NP = {d.np: d for d in ALL}
_TO_COMPLEX = {"float16": complex64, "float32": complex64, "float64": complex128}
_TO_REAL = {"complex64": float32, "complex128": float64}


def from_numpy_dtype(npdtype) -> dtype:
    try:
        return _BY_NP[npdtype]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(npdtype).name}. The only "
            "supported types are: float64, float32, float16, complex64, complex128, int64, "
            "int32, int16, int8, uint8, and bool.") from None


# -- default dtype -----------------------------------------------------------------------------
_default = [float32]


def get_default_dtype() -> dtype:
    """Return the current default floating point dtype (``ember.float32`` initially)."""
    return _default[0]


def set_default_dtype(d: dtype) -> None:
    """Set the default floating point dtype (float32 or float64, as torch allows)."""
    if not isinstance(d, dtype) or d.category != FLOATING:
        raise TypeError("only floating-point types are supported as the default type")
    _default[0] = d
    _RESULT_CACHE.clear()


def default_complex() -> dtype:
    return complex128 if _default[0] is float64 else complex64


# -- promotion ---------------------------------------------------------------------------------
def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.category == COMPLEX and lo.category == FLOATING:
            # complex64 with float64 widens to complex128, as NumPy and torch agree.
            return _BY_NP[np.promote_types(hi.np, lo.np)]
        return hi
    # Same category: NumPy's table agrees with torch's (uint8 + int8 -> int16, ...).
    return _BY_NP[np.promote_types(a.np, b.np)]


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both ``type1`` and ``type2`` can be safely cast to."""
    return _promote_pair(type1, type2)


def can_cast(from_: dtype, to: dtype) -> bool:
    """torch.can_cast: no cast to a lower category (float -> int, complex -> float, x -> bool)."""
    return from_.category <= to.category


def _combine(higher, lower):
    """torch's combine_categories: ``higher`` wins unless ``lower`` is of a higher category."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        # float64 tensor with a complex scalar stays double precision: complex128.
        return higher.to_complex() if higher.category == FLOATING else lower
    if higher.category == FLOATING:
        return higher
    if higher.category == BOOL or lower.category == FLOATING:
        return _promote_pair(higher, lower)
    return higher


# Kinds of operands, as torch's ResultTypeState sees them.
DIM, ZERO_DIM, SCALAR = 0, 1, 2
_RESULT_CACHE: dict = {}


def result_type_of(key) -> dtype:
    """Result dtype for a tuple of (dtype, kind) pairs, memoised per combination."""
    r = _RESULT_CACHE.get(key)
    if r is None:
        r = _RESULT_CACHE[key] = _result_type(key)
    return r


def _result_type(key) -> dtype:
    state = [None, None, None]
    for dt, kind in key:
        if kind == SCALAR:
            # A Python number only contributes its category, at the default precision.
            if dt.category == FLOATING:
                dt = _default[0]
            elif dt.category == COMPLEX:
                dt = default_complex()
        state[kind] = dt if state[kind] is None else _promote_pair(state[kind], dt)
    return _combine(state[DIM], _combine(state[ZERO_DIM], state[SCALAR]))


def scalar_dtype(value) -> dtype:
    """dtype a Python scalar carries into promotion (bool, int64, float64, complex128)."""
    t = type(value)
    if t is _builtins.float:
        return float64
    if t is _builtins.bool:
        return bool
    if t is _builtins.int:
        return int64
    if t is _builtins.complex:
        return complex128
    if isinstance(value, np.generic):
        return from_numpy_dtype(value.dtype)
    raise TypeError(f"unsupported scalar type {t.__name__}")
