"""New contents for an array, as torch's in-place samplers (``uniform_``, ``normal_``,
``random_``, ...) would write them: torch's argument checks and messages, the kernel for the
array's dtype, the values laid out in the array's memory order.

Each function takes the NumPy array to be filled (for its dtype, shape and strides) and returns
a new array of its shape; the tensor layer writes it in with ``copy_``. For a tensor on another
device the ``generator`` is a ``DeviceDraw`` (see ``generator.py``): the checks are the same,
the draw is made on that device (an array there, in C order).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .._backend import get_xp, has_data
from . import sampling
from .generator import DeviceDraw, cpu_generator, kernel_name
from .. import _dtype as D
from .order import lay_out, memory_axes

# torch's names for dtypes: the scalar type (in "not implemented" errors) and the C++ type
_SCALAR = {"float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char",
           "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte", "bool": "Bool",
           "complex64": "ComplexFloat", "complex128": "ComplexDouble", "bfloat16": "BFloat16"}
_CPP = {"float16": "c10::Half", "float32": "float", "float64": "double", "int8": "signed char",
        "int16": "short int", "int32": "int", "int64": "long int", "uint8": "unsigned char",
        "bool": "bool", "complex64": "c10::complex<float>", "bfloat16": "c10::BFloat16",
        "complex128": "c10::complex<double>"}


def scalar_name(dtype):
    return _SCALAR[np.dtype(dtype).name]


def _not_implemented(kernel, dtype):
    return NotImplementedError(f'"{kernel}" not implemented for \'{scalar_name(dtype)}\'')


def _is_float(dtype):
    """A real floating dtype (bfloat16's NumPy dtype has a kind of its own)."""
    return dtype.kind == "f" or dtype in D.REDUCED_NP


def _require_float(array, kernel, generator):
    if not _is_float(array.dtype):
        raise _not_implemented(kernel_name(kernel, generator), array.dtype)


def _placed(values, array, generator):
    """The drawn ``values`` as ``array``'s new contents (in its memory order on the CPU)."""
    if isinstance(generator, DeviceDraw):
        return values.reshape(array.shape)
    return lay_out(values, array)


def _draw(array, kernel, generator, *args):
    """``kernel(gen, n, dtype, *args)`` laid out over ``array``."""
    if not has_data(array):  # (a meta array: nothing drawn, as torch draws nothing)
        return array
    if array.size == 0:
        return np.empty(array.shape, array.dtype)
    if isinstance(generator, DeviceDraw):
        values = generator.sample(kernel.__name__, array.size, array.dtype, *args)
    else:
        values = kernel(cpu_generator(generator), array.size, array.dtype, *args)
    return _placed(values, array, generator)


def _complex_as_pairs(array, fill, generator):
    """Fill a complex array through its real view (real and imaginary parts interleaved in
    memory), as torch's ``view_as_real`` does; the view is contiguous when the array is."""
    real_dtype = array.real.dtype
    n = 2 * array.size
    template = np.empty(n, real_dtype) if array.flags.c_contiguous \
        else np.empty(2 * n, real_dtype)[::2]
    values = fill(template)
    values = (values if isinstance(generator, DeviceDraw)
              else np.ascontiguousarray(values)).view(array.dtype)
    return _placed(values, array, generator)


# -- continuous ---------------------------------------------------------------------------------
def _bounds_check(dtype, low, high):
    info = D.np_finfo(dtype)
    lowest, highest = float(info.min), float(info.max)
    for value, name in ((low, "from"), (high, "to")):
        if not lowest <= value <= highest:
            raise RuntimeError(f"{name} is out of bounds for {_CPP[dtype.name]}")
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={low:g} > to={high:g}")
    if high - low > highest:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<"
                           f"{scalar_name(dtype)}>::max(), but found to={high:g} and "
                           f"from={low:g} which result in to-from to exceed the limit")


def uniform(array, low, high, generator=None):
    low, high = float(low), float(high)
    if array.dtype.kind == "c":
        return _complex_as_pairs(array, lambda real: uniform(real, low, high, generator),
                                 generator)
    if not _is_float(array.dtype):
        raise _not_implemented("check_uniform_bounds", array.dtype)
    _bounds_check(array.dtype, low, high)
    return _draw(array, sampling.uniform, generator, low, high)


def normal(array, mean=0.0, std=1.0, generator=None):
    mean, std = float(mean), float(std)
    if not std >= 0:  # (NaN included)
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    if array.dtype.kind == "c":
        return _complex_as_pairs(array, lambda real: normal(real, mean, std / math.sqrt(2),
                                                            generator), generator)
    _require_float(array, "normal_kernel_cpu", generator)
    return _draw(array, sampling.normal, generator, mean, std, array.flags.c_contiguous)


def log_normal(array, mean=1.0, std=2.0, generator=None):
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    _require_float(array, "log_normal_cpu", generator)
    return _draw(array, sampling.log_normal, generator, float(mean), float(std))


def _continuous_only(array, distribution, type_name):
    if not _is_float(array.dtype):
        raise RuntimeError(f"{distribution} distribution is a continuous probability "
                           "distribution. dtype must be a floating point but you specified "
                           f"{type_name}")


def exponential(array, lambd=1.0, generator=None):
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    _continuous_only(array, "Exponential", scalar_name(array.dtype))
    return _draw(array, sampling.exponential, generator, float(lambd))


def cauchy(array, median=0.0, sigma=1.0, generator=None):
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    _continuous_only(array, "Cauchy", _CPP[array.dtype.name])  # (torch names the C++ type)
    return _draw(array, sampling.cauchy, generator, float(median), float(sigma))


def geometric(array, p, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    if array.dtype.kind not in "fiu" and not _is_float(array.dtype):
        raise _not_implemented(kernel_name("geometric_cpu", generator), array.dtype)
    return _draw(array, sampling.geometric, generator, float(p))


# -- bernoulli ------------------------------------------------------------------------------------
def bernoulli_scalar(array, p, generator=None):
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
    if array.dtype.kind == "c":
        raise _not_implemented(kernel_name("bernoulli_scalar_cpu_", generator), array.dtype)
    return _draw(array, sampling.bernoulli_scalar, generator, float(p))


_BAD_P = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
          "message be improved?  If so, please report an enhancement request to PyTorch.)")


def bernoulli_tensor(array, p, generator=None):
    """``p`` (an array broadcastable to ``array``, on the device drawn on) gives each
    element's probability."""
    on_device = isinstance(generator, DeviceDraw)
    if p.dtype.kind != "f":
        if on_device:  # (torch's CUDA kernel checks p with a message of its own)
            raise RuntimeError("expected probabilities tensor to have floating type, got "
                               f"{scalar_name(p.dtype)}")
        raise _not_implemented("bernoulli_tensor_cpu_p_", p.dtype)
    if array.dtype.kind == "c":
        raise _not_implemented(kernel_name("bernoulli_tensor_cpu_self_", generator),
                               array.dtype)
    xp = get_xp(p)
    p = xp.broadcast_to(p, array.shape)
    if bool(xp.any(~((p >= 0) & (p <= 1)))):
        raise RuntimeError(_BAD_P)
    if array.size == 0:
        return np.empty(array.shape, array.dtype)
    if on_device:
        values = generator.sample("bernoulli_tensor", p.ravel(), array.dtype)
        return values.reshape(array.shape)
    probs = p.transpose(memory_axes(array)).ravel()  # in the order the array is filled
    values = sampling.bernoulli_tensor(cpu_generator(generator), probs, array.dtype)
    return lay_out(values, array)


# -- integers -----------------------------------------------------------------------------------
def _int_limits(dtype):
    if dtype == np.bool_:
        return 0, 1
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


_DIGITS = {"float16": 11, "float32": 24, "float64": 53, "bfloat16": 8}


def random(array, low=None, high=None, generator=None):
    """``random_()``, ``random_(to)``, ``random_(from, to)`` and ``random_(from, None)``."""
    dtype = array.dtype
    if low is None and high is None:
        if dtype.kind == "c":
            raise _not_implemented(kernel_name("random_kernel_cpu", generator), dtype)
        return _draw(array, sampling.random_default, generator)
    low = 0 if low is None else int(low)
    if dtype.kind == "c":
        raise _not_implemented("random_from_to_range_calc" if high is None
                               else "random_update_from_to", dtype)
    if high is not None:
        high = int(high)
        if low >= high:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={low} >= to={high}")
        if _is_float(dtype):
            digits = _DIGITS[dtype.name]
            low = _update_from(low, digits)
            high = _update_to(high, digits)
            if low >= high:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than 'to' "
                                   f"casted to dtype, but got from={low} >= to={high}")
        _check_in_range(dtype, low, high - 1)
        return _draw(array, sampling.random_from_to, generator, high - low, low)
    if low == -(1 << 63):
        if dtype.name not in ("int64", "float32", "float64", "bfloat16"):
            raise RuntimeError(kernel_name("random_full_64_bits_range_kernel_cpu", generator)
                               + " handles only int64, double, float and bfloat16")
        return _draw(array, sampling.random_full_64, generator)
    if _is_float(dtype):
        digits = _DIGITS[dtype.name]
        to_inc = min(1 << digits, (1 << 63) - 1)
        low = _update_from(low, digits)
        if low >= to_inc:
            raise RuntimeError("random_ expects 'from' casted to dtype to be less than or equal "
                               f"to 'to_inc' casted to dtype, but got from={low} > "
                               f"to_inc={to_inc}")
    else:
        to_inc = _int_limits(dtype)[1]
    _check_in_range(dtype, low, to_inc)
    return _draw(array, sampling.random_from_to, generator, to_inc - low + 1, low)


def _update_from(low, digits):
    """torch's ``update_from``: a ``from`` the float type rounds down is moved up a step."""
    rounded = _round_to_digits(low + 1, digits)
    if rounded < low:
        n = abs(low + 1).bit_length() - 1
        return rounded + (1 << (n - digits + 1))
    return low


def _update_to(high, digits):
    """torch's ``update_to``: a ``to`` the float type rounds up is moved down a step."""
    rounded = _round_to_digits(high - 1, digits)
    if rounded >= high:
        n = abs(high - 1).bit_length() - 1
        return rounded - (1 << (n - digits + 1))
    return high


def _round_to_digits(value, digits):
    """``int64(float_type(value))``: ``value`` rounded to ``digits`` significant bits."""
    as_int = np.int64(value)
    with np.errstate(over="ignore"):
        if digits == 53:
            rounded = as_int.astype(np.float64)
        else:  # to half or bfloat16 through float, as c10's types convert
            rounded = as_int.astype(np.float32)
            if digits == 11:
                rounded = rounded.astype(np.float16)
            elif digits == 8:
                rounded = rounded.astype(D.bfloat16.np).astype(np.float32)
    return int(rounded) if np.isfinite(rounded) else value


def _check_in_range(dtype, low, to_inc):
    if _is_float(dtype):
        info = D.np_finfo(dtype)
        lowest, highest = float(info.min), float(info.max)
        digits = _DIGITS[dtype.name]
        name = _CPP[dtype.name]
        for value, what in ((low, "from"), (to_inc, "to - 1")):
            if not lowest <= value <= highest:
                raise RuntimeError(f"{what} is out of bounds for {name}")
        for value, what in ((low, "from"), (to_inc, "to - 1")):
            if value < -(1 << digits) or value > (1 << digits):
                warnings.warn(
                    f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision "
                    f"limitations {name} can support discrete uniform distribution only within "
                    "this range. This warning will become an error in version 1.7 release, "
                    "please fix the code in advance", UserWarning, stacklevel=4)
        return
    lowest, highest = _int_limits(dtype)
    for value, what in ((low, "from"), (to_inc, "to - 1")):
        if not lowest <= value <= highest:
            raise RuntimeError(f"{what} is out of bounds for {_CPP[dtype.name]}")
