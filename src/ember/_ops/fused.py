"""``x * y + z`` rounded once, as torch's CPU kernels compute it with a fused multiply-add.

torch's vectorized add/sub with ``alpha`` and addcmul run ``Vectorized::fmadd``: the product
is not rounded before the sum. Two NumPy operations round twice and differ from torch by an
ulp in about one element in ten, which every optimizer step then carries forward.

float32 (and the half types, which torch computes in float32): the product of two float32
numbers is exact in float64, so ``z + x*y`` in float64 is one rounding away from the exact
value; rounding that float64 sum "to odd" makes the final rounding to float32 the correct one
(rounding twice to nearest would differ where the float64 sum lands on a float32 midpoint).
float64: the product is split exactly (Dekker's TwoProduct) and summed with Boldo and
Melquiond's round-to-odd emulation of an fma.

NumPy has no fma ufunc, but its SIMD complex multiply on x86 with FMA (and on ARM) rounds
the real part once: ``(x + i*z) * (y - i)`` has the real part ``fma(x, y, z)``. Where that is
shown to hold (checked once per dtype, for the operand forms used here), arrays go through it
in cache-sized blocks, a few passes in all; elsewhere (other array modules, other CPUs, a
single element) the exact emulation below, some 20 array passes, is used.
"""
from __future__ import annotations

import functools
import math
import sys

import numpy as np

from .._backend import get_xp

_F32, _F64, _F16 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16)
_U64 = np.dtype(np.uint64)
_LITTLE = sys.byteorder == "little"
# The float64 bits below float32's mantissa, and those of a float32 midpoint.
_BELOW_F32 = np.uint64((1 << 29) - 1)
_F32_MIDPOINT = np.uint64(1 << 28)
_EXPONENT = np.uint64(0x7FF << 52)
# float64 exponent bits of float32's smallest normal: below it float32's midpoints move up
_F32_NORMAL = np.uint64((1023 - 126) << 52)
_SPLITTER = float(2 ** 27 + 1)  # Veltkamp's constant for float64
_COMPLEX = {_F32: np.dtype(np.complex64), _F64: np.dtype(np.complex128)}
# bytes of a complex buffer of the fused route's blocks: they stay in the cache (1 MiB of L2
# a core on the AMD EPYC measured), and a block's few NumPy calls cost little next to its
# arithmetic (float32: 131072 elements a block, float64: 65536)
_BLOCK_BYTES = 1 << 20
_EMULATED_BLOCK = 32768  # (its float64 temporaries: 256 KiB each)


def fused_multiply_add(x, y, z, dtype=None):
    """``x * y + z`` with one rounding to ``dtype`` (by default the float dtype of the
    operands: float16, float32 or float64; float16 through float32, as torch's kernels
    compute it). A number operand is used as it is: cast it as torch casts its Scalar."""
    out = _fma_plain(x, y, z, dtype)
    if out is not None:
        return out
    dtype = np.result_type(x, y, z) if dtype is None else np.dtype(dtype)
    if dtype == _F64:
        out = _fma_complex(x, y, z, _F64)
        return _emulated(_fma_f64, x, y, z, _F64) if out is None else out
    x, y, z = (_as_f32(v) for v in (x, y, z))
    out = _fma_complex(x, y, z, _F32)
    out = _emulated(_fma_f32, x, y, z, _F32) if out is None else out
    return out if dtype == _F32 else out.astype(dtype)


def add_scaled(base, scaled, alpha):
    """``base + alpha * scaled`` for arrays, as torch's ``add(base, scaled, alpha=alpha)``
    rounds it: float16/32/64 fused, ``alpha`` cast to their dtype; other dtypes (complex,
    bfloat16 storage) multiply, then add."""
    dtype = np.result_type(base, scaled)
    if alpha == 1 or dtype not in (_F16, _F32, _F64):
        return base + scaled if alpha == 1 else base + alpha * scaled
    return fused_multiply_add(scaled, float(np.asarray(alpha, dtype=dtype)), base)


def add_product(base, tensor1, tensor2, value):
    """``base + value * tensor1 * tensor2`` for arrays, as torch's addcmul rounds it:
    fmadd(value * tensor1, tensor2, base), ``value`` in the dtype the kernel computes in
    (float32 for float16); other dtypes multiply, then add."""
    dtype = np.result_type(base, tensor1, tensor2)
    if dtype not in (_F16, _F32, _F64):
        return base + value * tensor1 * tensor2
    wide = _F32 if dtype == _F16 else dtype
    scaled = tensor1.astype(wide, copy=False) * wide.type(value)
    return fused_multiply_add(scaled, tensor2, base, dtype)


def _fma_plain(x, y, z, dtype):
    """``fma(x, y, z)`` for the usual operands of the optimizers and of ``add_(alpha=)``,
    without the general route's checks that cannot fail for them: ``z`` and one factor NumPy
    arrays of one shape (two elements or more) and one dtype, float32 or float64, the other
    factor such an array, a number of that dtype, or a Python float that it holds exactly;
    where the fused complex multiply applies. None otherwise: the general route decides."""
    if type(y) is np.ndarray and y.ndim and not (type(x) is np.ndarray and x.ndim):
        x, y = y, x  # (the product commutes: the array first)
    if type(x) is not np.ndarray or type(z) is not np.ndarray:
        return None
    real, shape = z.dtype, z.shape
    if (x.dtype != real or x.shape != shape or real not in _COMPLEX or z.size < 2
            or (dtype is not None and dtype != real)):
        return None
    if type(y) is float:
        if real.type(y) != y:
            return None
    elif getattr(y, "dtype", None) != real or (y.ndim and y.shape != shape):
        return None
    if not _complex_multiply_fuses(real):
        return None
    out = np.empty(shape, real)
    block = _BLOCK_BYTES // (2 * real.itemsize)
    if z.size <= block:  # one block, in the arrays' own shape
        _fused_blocks(x, y, z, out, real, shape)
    else:
        flat_y = y if _is_number(y) else y.reshape(-1)
        _fused_blocks(x.reshape(-1), flat_y, z.reshape(-1), out.reshape(-1), real, block)
    return out


def _fma_complex(x, y, z, real):
    """``fma(x, y, z)`` in ``real`` (float32/float64) through NumPy's fused complex multiply,
    or None where that route does not apply (no such multiply here, another array module, a
    number operand that ``real`` cannot hold exactly, fewer than two elements)."""
    if get_xp(x, y, z) is not np or not _complex_multiply_fuses(real):
        return None
    if _is_number(x):  # the product commutes: an array first
        x, y = y, x
    if any(real.type(v) != v for v in (x, y, z) if _is_number(v)):
        return None
    shapes = {v.shape for v in (x, y, z) if not _is_number(v)}
    shape = shapes.pop() if len(shapes) == 1 else np.broadcast_shapes(*shapes)
    size = math.prod(shape)
    if size < 2:
        return None
    out = np.empty(shape, real)
    if shapes:  # broadcasting: one block
        _fused_blocks(x, y, z, out, real, shape)
        return out
    x, y, z = (v if _is_number(v) else v.reshape(-1) for v in (x, y, z))
    _fused_blocks(x, y, z, out.reshape(-1), real, min(_BLOCK_BYTES // (2 * real.itemsize), size))
    return out


@np.errstate(all="ignore")  # (the imaginary part, unused, may overflow)
def _fused_blocks(x, y, z, out, real, block):
    """``out = fma(x, y, z)`` in blocks of ``block`` elements of the flat arrays, or at once
    where ``block`` is the (broadcast) shape. The buffers are reused by each block, so the
    passes run in the cache and no large temporary is made. (NumPy's error state is set by
    the decorator, at less cost per call than a ``with`` block: this runs for every small
    parameter of every optimizer step.)"""
    left = np.empty(block, _COMPLEX[real])
    right = _right_factor(y, real, block)
    size = len(out)
    if isinstance(block, tuple) or size == block:
        return _fused_block(x, y, z, out, left, right)
    for start in range(0, size, block):
        stop = min(start + block, size)
        start = min(start, stop - 2)  # (a one-element block would take a scalar path)
        part, used = slice(start, stop), slice(0, stop - start)
        _fused_block(*(v if _is_number(v) else v[part] for v in (x, y, z)), out[part],
                     left[used], right if _is_number(right) else right[used])


def _right_factor(y, real, shape):
    """``y - i``: a complex number for a number ``y``, else a buffer of ``shape`` whose
    imaginary part is -1 (its real part is set by each block)."""
    complex_ = _COMPLEX[real]
    if _is_number(y):
        return complex_.type(complex(float(y), -1.0))
    right = np.empty(shape, complex_)
    right.imag = -1
    return right


def _emulated(kernel, x, y, z, real):
    """``kernel(x, y, z)``, an exact emulation, in blocks of ``_EMULATED_BLOCK`` elements
    where the arrays have one shape: its many passes then run in the cache (1M float64
    elements on the AMD EPYC measured: 22 -> 14 ms)."""
    shapes = {v.shape for v in (x, y, z) if not _is_number(v)}
    size = math.prod(next(iter(shapes))) if len(shapes) == 1 else 0
    if size <= _EMULATED_BLOCK:
        return kernel(x, y, z)
    out = get_xp(x, y, z).empty(shapes.pop(), real)
    flat = out.reshape(-1)
    x, y, z = (v if _is_number(v) else v.reshape(-1) for v in (x, y, z))
    for start in range(0, size, _EMULATED_BLOCK):
        part = slice(start, start + _EMULATED_BLOCK)
        flat[part] = kernel(*(v if _is_number(v) else v[part] for v in (x, y, z)))
    return out


def _is_number(v):
    """A Python or NumPy number, or a 0-d array."""
    return getattr(v, "ndim", 0) == 0


def _fused_block(x, y, z, out, left, right):
    """``out = fma(x, y, z)``: ``x + i*z`` in ``left``, times ``y - i`` (``right``, a number
    or a buffer whose imaginary part is -1), real part."""
    left.real, left.imag = x, z
    if type(right) is np.ndarray:  # (else a complex number)
        right.real = y
    np.multiply(left, right, out=left)
    out[...] = left.real


@functools.cache
def _complex_multiply_fuses(real):
    """Whether NumPy's complex multiply rounds ``(x + i*z) * (y - i)``'s real part once, for an
    array and for a number ``y``: compared with the exact emulation on values where a separate
    rounding of the product shows (about one in ten)."""
    exact = _fma_f64 if real == _F64 else _fma_f32
    rng = np.random.default_rng(12345)
    for size in (2, 3, 8, 13, 64, 1000, 5000):
        x, y, z = (rng.standard_normal(size).astype(real) for _ in range(3))
        for factor in (y, real.type(y[0])):
            out = np.empty(size, real)
            _fused_blocks(x, factor, z, out, real, (size,))
            if not np.array_equal(out, exact(x, factor, z)):
                return False
    return True


def _as_f32(v):
    return v.astype(_F32) if getattr(v, "dtype", _F32) != _F32 else v


def _fma_f32(x, y, z):
    xp = get_xp(x, y, z)
    x, y = (v if hasattr(v, "dtype") else _F64.type(v) for v in (x, y))
    total = xp.asarray(xp.multiply(x, y, dtype=_F64))  # exact: 24 + 24 bits
    z = z.astype(_F64) if hasattr(z, "astype") else float(z)
    if total.shape == np.broadcast_shapes(total.shape, getattr(z, "shape", ())):
        xp.add(total, z, out=total)  # (no second temporary)
    else:
        total = total + z
    return _rounded_to_odd(total, x, y, z, xp).astype(_F32)


def _rounded_to_odd(total, x, y, z, xp):
    """``total`` (= fl(x*y + z), the product exact) where it could round to float32
    differently from the exact value: on a float32 midpoint, or in float32's subnormal range,
    the inexact ones move to their odd neighbour so that rounding to float32 is decided by
    the exact sum. (In place: ``total`` is the caller's own temporary.)"""
    bits = total.view(_U64)
    part = xp.asarray(bits & _BELOW_F32)  # (an array even for a 0-d total)
    suspect = part == _F32_MIDPOINT
    xp.bitwise_and(bits, _EXPONENT, out=part)
    suspect |= part < _F32_NORMAL
    if not suspect.any():
        return total
    x, y, z = (xp.broadcast_to(xp.asarray(v, dtype=_F64), total.shape)[suspect]
               for v in (x, y, z))
    total[suspect] = _odd_sum(total[suspect], x * y, z, xp)
    return total


def _two_sum_error(total, a, b):
    """The exact ``a + b - total`` for ``total = fl(a + b)`` (Knuth's TwoSum)."""
    b_part = total - a
    return (a - (total - b_part)) + (b - b_part)


def _odd_sum(total, a, b, xp):
    """``a + b`` rounded to odd: an inexact sum takes, of its two float64 neighbours, the one
    with an odd last bit. On the bits: truncated toward zero (one step down in magnitude
    where the nearest rounding went up), then the last bit set where inexact."""
    error = _two_sum_error(total, a, b)
    inexact = (error != 0) & xp.isfinite(total)
    rounded_up = inexact & (xp.signbit(error) != xp.signbit(total))
    bits = total.view(_U64) - rounded_up.astype(_U64)
    return (bits | inexact.astype(_U64)).view(_F64)


def _split(v):
    """``v`` as high + low halves of 26 bits each (Veltkamp)."""
    c = _SPLITTER * v
    high = c - (c - v)
    return high, v - high


def _fma_f64(x, y, z):
    xp = get_xp(x, y, z)
    product = x * y
    # Dekker's TwoProduct: product + product_error == x * y exactly
    (xh, xl), (yh, yl) = _split(x), _split(y)
    product_error = ((xh * yh - product) + xh * yl + xl * yh) + xl * yl
    high = xp.asarray(product + z)
    high_error = _two_sum_error(high, product, z)
    low = _odd_sum(xp.asarray(high_error + product_error), high_error, product_error, xp)
    # (nothing left to add: high itself, the sign of a zero included, which + 0.0 would lose)
    out = xp.where(low == 0, high, high + low)
    # (the splitting overflows near float64's range: there, the plain result, as computed)
    return xp.where(xp.isfinite(out), out, product + z)


# -- in place: the optimizers' updates --------------------------------------------------------
_U32 = np.dtype(np.uint32)
_C64 = np.dtype(np.complex64)
# float32's -1.0 in the high (imaginary) half of a complex64's bits
_MINUS_I_BITS = np.uint64(0xBF800000 << 32)


def add_scaled_(out, base, scaled, alpha):
    """``out[...] = add_scaled(base, scaled, alpha)``, torch's ``add(alpha=)`` into ``out``
    (which may be ``base`` or ``scaled``): for float32/float64 NumPy arrays, with no
    temporary the size of ``out``."""
    if alpha == 1:
        out[...] = base + scaled if type(out) is not np.ndarray else np.add(base, scaled,
                                                                              out=out)
        return
    dtype = out.dtype
    if dtype not in _COMPLEX or not _fma_into(out, scaled, float(dtype.type(alpha)), base):
        out[...] = add_scaled(base, scaled, alpha)


def add_product_(out, base, tensor1, tensor2, value):
    """``out[...] = add_product(base, tensor1, tensor2, value)``, torch's ``addcmul`` into
    ``out`` (which may be ``base``), ``value * tensor1`` made a block at a time."""
    dtype = out.dtype
    if dtype not in _COMPLEX or not _fma_into(out, None, tensor2, base,
                                              (np.multiply, tensor1, dtype.type(value))):
        out[...] = add_product(base, tensor1, tensor2, value)


def lerp_(start, end, weight):
    """``start.lerp_(end, weight)`` for a number ``weight``, torch's two-sided formula (its
    weight in ``start``'s dtype, then ``(w or w - 1) * (end - start) + (start or end)`` with
    one rounding) written into ``start``; False where the in-place route does not apply."""
    dtype = start.dtype
    if dtype not in _COMPLEX:
        return False
    w = dtype.type(weight)
    if abs(w) < 0.5:
        return _fma_into(start, None, float(w), start, (np.subtract, end, start))
    return _fma_into(start, None, float(w - dtype.type(1)), end, (np.subtract, end, start))


def _fma_into(out, x, y, z, x_op=None):
    """``out[...] = fma(x, y, z)`` (one rounding), with no temporary the size of ``out``, or
    False where that route does not apply (then nothing is written). ``out`` may be ``x`` or
    ``z`` itself, as in torch's in-place ``add_(alpha=)``, ``addcmul_`` and ``lerp_``. With
    ``x_op = (ufunc, a, b)`` the factor ``x`` is ``ufunc(a, b)`` (``x`` is then None; ``b``
    may be a number of ``out``'s dtype), computed a cache-sized block at a time: addcmul's
    ``value * tensor1`` or lerp's ``end - start`` without a pass of its own over the whole
    arrays. ``y`` is an array or a Python float that ``out``'s dtype holds exactly. The
    route: NumPy arrays of one shape (two elements or more), one dtype (float32 or float64),
    C-contiguous (so that their flat views are views), where NumPy's complex multiply
    fuses."""
    if type(out) is not np.ndarray or out.size < 2 or not out.flags.c_contiguous:
        return False
    shape, real = out.shape, out.dtype
    if x_op is not None:
        x = x_op[1]
        if not (_like(x_op[2], shape, real) or type(x_op[2]) is real.type):
            return False
    # (an operand that is ``out`` itself, checked above: the usual in-place case)
    if not ((x is out or _like(x, shape, real)) and (z is out or _like(z, shape, real))):
        return False
    if type(y) is np.ndarray:
        if not _like(y, shape, real):
            return False
    elif type(y) is not float or real.type(y) != y:
        return False
    if not _complex_multiply_fuses(real):
        return False
    _fused_into(None if x_op is not None else x, y, z, out, x_op)
    return True


def _like(a, shape, dtype):
    """Whether ``a`` is a C-contiguous NumPy array of ``shape`` and ``dtype``."""
    return (type(a) is np.ndarray and a.shape == shape and a.dtype == dtype
            and a.flags.c_contiguous)


@np.errstate(all="ignore")  # (the imaginary part, unused, may overflow)
def _fused_into(x, y, z, out, x_op):
    """``out = fma(x, y, z)``, a block of ``_BLOCK_BYTES`` of complex buffer at a time over
    flat views (never a block one element long: that would take NumPy's scalar multiply).
    Each block reads its operands before it writes ``out``, so ``out`` may be an operand."""
    real = out.dtype
    kernel = _bits_block if real == _F32 and _LITTLE else _complex_block
    size = out.size
    block = _BLOCK_BYTES // (2 * real.itemsize)
    if size <= block:
        kernel(x, y, z, out, x_op)
        return
    x, y, z, out = (v.reshape(-1) if type(v) is np.ndarray else v for v in (x, y, z, out))
    if x_op is not None:
        x_op = tuple(v.reshape(-1) if type(v) is np.ndarray else v for v in x_op)
    stops = list(range(block, size, block)) + [size]
    if stops[-1] - stops[-2] == 1:
        stops[-2] -= 1  # (the last block two elements long, the one before it one shorter)
    start = 0
    for stop in stops:
        part = slice(start, stop)
        kernel(x if x is None else x[part], y[part] if type(y) is np.ndarray else y, z[part],
               out[part], x_op and tuple(v[part] if type(v) is np.ndarray else v
                                         for v in x_op))
        start = stop


def _bits_block(x, y, z, out, x_op):
    """float32 on a little-endian machine: the complex64 ``x + i*z`` made from the bits,
    ``x``'s widened into the low halves of uint64s (a contiguous cast, about twice as fast as
    NumPy's strided copy into ``.real``), times ``y - i``; the product's real part read back
    by narrowing them."""
    bits = np.empty(out.shape, _U64)
    left = bits.view(_C64)
    if x_op is not None:
        x = x_op[0](x_op[1], x_op[2])  # (a block's temporary)
    np.copyto(bits, x.view(_U32))
    left.imag = z
    if type(y) is np.ndarray:
        right = np.empty(out.shape, _U64)
        np.copyto(right, y.view(_U32))
        np.bitwise_or(right, _MINUS_I_BITS, out=right)
        y = right.view(_C64)
    else:
        y = _C64.type(complex(y, -1.0))
    np.multiply(left, y, out=left)
    np.copyto(out.view(_U32), bits, casting="unsafe")


def _complex_block(x, y, z, out, x_op):
    """float64 (or a big-endian machine): ``x + i*z`` written into a complex buffer's real
    and imaginary parts, times ``y - i``, the real part."""
    if x_op is not None:
        x = x_op[0](x_op[1], x_op[2])
    left = np.empty(out.shape, _COMPLEX[out.dtype])
    left.real, left.imag = x, z
    right = _right_factor(y, out.dtype, out.shape)
    if type(right) is np.ndarray:
        right.real = y
    np.multiply(left, right, out=left)
    out[...] = left.real
