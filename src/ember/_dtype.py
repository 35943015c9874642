"""dtypes and PyTorch's type-promotion rules.

NumPy promotes differently from torch exactly where users notice (``int64 / 2``,
``float32 + 0-dim float64``, NumPy scalars), so ember decides every result dtype here and
hands kernels operands already in that dtype.
"""
from __future__ import annotations

import builtins as _builtins

import numpy as np

from ._backend.fp_errors import quietly

__all__ = [
    "dtype", "float16", "half", "float32", "float", "float64", "double", "int8", "int16",
    "short", "int32", "int", "int64", "long", "uint8", "bool", "complex64", "cfloat",
    "complex128", "cdouble", "promote_types", "get_default_dtype", "set_default_dtype",
    "can_cast", "bfloat16", "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2",
    "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
]

try:  # the optional extra behind bfloat16 and the float8 types
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover - exercised where ml_dtypes is not installed
    _ml = None

# Categories order the kinds of numbers: a higher category always wins a promotion.
BOOL, INTEGRAL, FLOATING, COMPLEX = 0, 1, 2, 3

_LEGACY_TYPE = {
    "float16": "HalfTensor", "float32": "FloatTensor", "float64": "DoubleTensor",
    "int8": "CharTensor", "int16": "ShortTensor", "int32": "IntTensor", "int64": "LongTensor",
    "uint8": "ByteTensor", "bool": "BoolTensor", "complex64": "ComplexFloatTensor",
    "complex128": "ComplexDoubleTensor", "bfloat16": "BFloat16Tensor",
    "uint16": "UInt16Tensor", "uint32": "UInt32Tensor", "uint64": "UInt64Tensor",
    "float8_e4m3fn": "Float8_e4m3fnTensor", "float8_e5m2": "Float8_e5m2Tensor",
    "float8_e4m3fnuz": "Float8_e4m3fnuzTensor", "float8_e5m2fnuz": "Float8_e5m2fnuzTensor",
    "float8_e8m0fnu": "Float8_e8m0fnuTensor",
}
# What torch calls a scalar type in its messages ("result type Float can't be cast ...").
_NAMED_BY_TYPE_OBJECT = frozenset(("Bool", "BFloat16", "ComplexFloat", "ComplexDouble"))
_SCALAR_NAME = {
    "float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char",
    "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte", "bool": "Bool",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble", "bfloat16": "BFloat16",
    "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
    "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2",
    "float8_e4m3fnuz": "Float8_e4m3fnuz", "float8_e5m2fnuz": "Float8_e5m2fnuz",
    "float8_e8m0fnu": "Float8_e8m0fnu",
}


class dtype:
    """A tensor element type (``ember.float32``); wraps the NumPy dtype that stores it."""

    __slots__ = ("name", "np", "category", "itemsize", "is_signed", "_complex_of", "_real_of")

    def __init__(self, name: str, category: int, storage=None, itemsize=None):
        self.name = name
        self.np = np.dtype(name if storage is None else storage)
        self.category = category
        self.itemsize = self.np.itemsize if itemsize is None else itemsize
        self.is_signed = name not in ("uint8", "uint16", "uint32", "uint64", "bool")

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
    def type_string(self) -> str:
        """What torch's ``Tensor::toString()`` names a CPU tensor of this dtype in its
        messages: a bool, bfloat16 or complex one by its old type object (CPUBoolType), the
        others by their legacy tensor type (torch.FloatTensor)."""
        if self.scalar_name in _NAMED_BY_TYPE_OBJECT:
            return f"CPU{self.scalar_name}Type"
        return self.legacy_type_name

    @property
    def scalar_name(self) -> str:
        return _SCALAR_NAME[self.name]

    def __repr__(self) -> str:
        return "ember." + self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


def _dtype_by_name(name):
    return _BY_NAME[name]


class _NeedsMlDtypes(dtype):
    """A dtype whose storage ml_dtypes provides, where ml_dtypes is not installed: it can be
    named and compared, and any use that needs its storage says which package to install."""

    __slots__ = ()

    def __init__(self, name, category, itemsize):
        self.name, self.category, self.itemsize = name, category, itemsize
        self.is_signed = True

    def __getattribute__(self, attr):
        if attr == "np":
            name = object.__getattribute__(self, "name")
            raise ModuleNotFoundError(
                f"ember.{name} needs the ml_dtypes package (pip install ml_dtypes, or ember's "
                f"'ml_dtypes' extra)")
        return object.__getattribute__(self, attr)


def _ml_dtype(name, category, itemsize):
    if _ml is None:
        return _NeedsMlDtypes(name, category, itemsize)
    return dtype(name, category, getattr(_ml, name))


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
# torch's "limited support" unsigned types: storage, conversion, and a few ops (see
# _limited.py); no promotion with any other dtype.
uint16 = dtype("uint16", INTEGRAL)
uint32 = dtype("uint32", INTEGRAL)
uint64 = dtype("uint64", INTEGRAL)
bfloat16 = _ml_dtype("bfloat16", FLOATING, 2)
# float8 formats: storage and conversion only (torch has no arithmetic on them on the CPU).
float8_e4m3fn = _ml_dtype("float8_e4m3fn", FLOATING, 1)
float8_e5m2 = _ml_dtype("float8_e5m2", FLOATING, 1)
float8_e4m3fnuz = _ml_dtype("float8_e4m3fnuz", FLOATING, 1)
float8_e5m2fnuz = _ml_dtype("float8_e5m2fnuz", FLOATING, 1)
float8_e8m0fnu = _ml_dtype("float8_e8m0fnu", FLOATING, 1)

ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool, complex64, complex128,
       uint16, uint32, uint64, bfloat16, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz,
       float8_e5m2fnuz, float8_e8m0fnu)
UNSIGNED_LIMITED = (uint16, uint32, uint64)
FLOAT8 = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)
_BY_NAME = {d.name: d for d in ALL}
# Lookup from a NumPy dtype: the one place arrays are mapped back to ember dtypes.
_BY_NP = {d.np: d for d in ALL if not isinstance(d, _NeedsMlDtypes)}
# Reduced-precision floats computed in float32 and rounded back (torch's opmath type).
REDUCED_NP = frozenset(d.np for d in (bfloat16,) if not isinstance(d, _NeedsMlDtypes))
FLOAT8_NP = frozenset(d.np for d in FLOAT8 if not isinstance(d, _NeedsMlDtypes))
# Tensors of these dtypes take the registry's general path (see _ops/opmath.py).
SPECIAL_NP = REDUCED_NP | FLOAT8_NP | frozenset(d.np for d in UNSIGNED_LIMITED)
# Where NumPy's own arithmetic serves: the registry's fast paths take only these.
NATIVE_FLOAT_NP = frozenset(np.dtype(n) for n in ("float16", "float32", "float64"))
NATIVE_NP = NATIVE_FLOAT_NP | frozenset(np.dtype(n) for n in (
    "complex64", "complex128", "int8", "int16", "int32", "int64", "uint8"))


def is_differentiable_np(npdtype) -> bool:
    """Whether a tensor of NumPy dtype ``npdtype`` can carry a gradient or a tangent: a float
    or complex one, bfloat16 and the float8 types included (stored as ml_dtypes' types, NumPy
    kind 'V')."""
    return npdtype.kind in "fc" or npdtype in REDUCED_NP or npdtype in FLOAT8_NP


_TO_COMPLEX = {"float16": complex64, "float32": complex64, "float64": complex128,
               "bfloat16": complex64}
_TO_REAL = {"complex64": float32, "complex128": float64}


def from_numpy_dtype(npdtype) -> dtype:
    try:
        return _BY_NP[npdtype]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(npdtype).type.__name__}. The only "
            "supported types are: float64, float32, float16, complex64, complex128, int64, "
            "int32, int16, int8, uint64, uint32, uint16, uint8, and bool.") from None


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
# Floating dtypes by precision; float16 with bfloat16 meets at float32, as torch's table has.
_FLOAT_RANK = {"float16": 0, "bfloat16": 0, "float32": 1, "float64": 2}


def _promote_limited(a: dtype, b: dtype) -> dtype:
    """torch's rule for the limited-support dtypes: float8 promotes with nothing, and the
    wide unsigned types only with a real floating dtype (which wins)."""
    if a in FLOAT8 or b in FLOAT8:
        raise RuntimeError("Promotion for Float8 Types is not supported, attempted to promote "
                           f"{a.scalar_name} and {b.scalar_name}")
    for d in (a, b):
        if d.category == FLOATING:
            return d
    raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, "
                       f"attempted to promote {a.scalar_name} and {b.scalar_name}")


def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a in _LIMITED or b in _LIMITED:
        return _promote_limited(a, b)
    if a.category == b.category == FLOATING:
        ra, rb = _FLOAT_RANK[a.name], _FLOAT_RANK[b.name]
        return (a if ra > rb else b) if ra != rb else float32
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.category == COMPLEX and lo.category == FLOATING:
            # complex64 with float64 widens to complex128, as NumPy and torch agree.
            return complex128 if lo is float64 else hi
        return hi
    # Same category: NumPy's table agrees with torch's (uint8 + int8 -> int16, ...).
    return _BY_NP[np.promote_types(a.np, b.np)]


_LIMITED = frozenset(UNSIGNED_LIMITED + FLOAT8)


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


def as_half_source(array, target_np):
    """``array`` ready to be converted to ``target_np``: float64 rounded to float32 first when
    the target is float16, as torch's Half is built from a float (NumPy rounds once, which
    differs where the first rounding lands on a tie; silently, as torch overflows)."""
    if target_np == np.float16 and array.dtype == np.float64:
        return quietly(array.astype, np.float32)
    return array


# float8 formats torch converts to integers through float32 (see cast)
_THROUGH_FLOAT32 = frozenset(d.np for d in (float8_e4m3fn, float8_e5m2)
                             if not isinstance(d, _NeedsMlDtypes))


def cast(array, dt: dtype):
    """``array`` in ``dt``, converting to float8 as torch does: float8_e4m3fn saturates at its
    largest finite value (infinities included) and float8_e8m0fnu, which has no sign bit,
    takes magnitudes, and float64 reaches float16 through float32. Other conversions are NumPy's
    ``astype``."""
    if dt is float8_e4m3fn and array.dtype.kind in "fiuV":
        limit = 448.0
        array = array.clip(-limit, limit) if array.dtype.kind != "V" else \
            array.astype(np.float32).clip(-limit, limit)
    elif dt is float8_e8m0fnu and array.dtype.kind in "fiubV":
        # torch converts through float32 and keeps its exponent field: no sign, and zero
        # (whose field is that of the subnormals) is the smallest value, 2**-127, not NaN
        array = abs(quietly(array.astype, np.float32))
        array[array == 0] = 2.0 ** -127
    elif dt.np.kind in "iu" and array.dtype in _THROUGH_FLOAT32:
        # (through float32, as torch converts them: NaN and infinities become what a
        # float32's cast gives, where ml_dtypes' own cast writes 0, as torch does for the
        # other float8 formats)
        array = array.astype(np.float32)
    else:
        array = as_half_source(array, dt.np)
    return quietly(array.astype, dt.np)  # (torch overflows to inf without a word)


def np_finfo(npdtype):
    """NumPy's finfo of a floating storage dtype, ml_dtypes' for the dtypes it provides."""
    return _ml.finfo(npdtype) if npdtype in REDUCED_NP | FLOAT8_NP else np.finfo(npdtype)


def refuse_limited(dt: dtype, kernel: str) -> None:
    """torch's refusal of ``kernel`` for a limited-support dtype (none for the others), for
    the functions that do not go through the op registry (see _ops/opmath.py)."""
    if dt in _LIMITED:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{dt.scalar_name}\'')


def refuse_numpy(npdtype) -> None:
    """torch's refusal to hand bfloat16 and float8 tensors to NumPy (which has no such
    types)."""
    if npdtype in REDUCED_NP or npdtype in FLOAT8_NP:
        raise TypeError(f"Got unsupported ScalarType {_BY_NP[npdtype].scalar_name}")

