"""Binary and ternary pointwise ops: rounding division, remainders, powers, two-argument
maths, interpolation and fused multiply-add (the logical and bitwise family lives in
logical.py and is re-exported here; clamping lives in unary.py).

Each kernel has its derivative formulas right below it (torch's derivatives.yaml). Python
numbers that torch folds into promotion without making them node inputs (``fmod(x, 2.5)``,
``clamp(x, 0.5)``) are promoted in the kernel with ``with_scalars``.
"""
from __future__ import annotations

__all__ = ['addcdiv', 'addcmul', 'allclose', 'arctan2', 'atan2', 'bitwise_and',
           'bitwise_left_shift', 'bitwise_not', 'bitwise_or', 'bitwise_right_shift',
           'bitwise_xor', 'copysign', 'div', 'divide', 'equal', 'float_power', 'floor_divide',
           'fmax', 'fmin', 'fmod', 'hypot', 'isclose', 'ldexp', 'lerp', 'logaddexp', 'logaddexp2',
           'logical_and', 'logical_not', 'logical_or', 'logical_xor', 'remainder',
           'true_divide', 'xlogy']

import numbers

import numpy as np

from .. import _dtype as D
from .._backend import asarray_like, get_xp
from .._tensor import Tensor
from . import opmath
from .fused import add_product, fused_multiply_add
from . import pointwise as PW
from .logical import (
    allclose,
    bitwise_and,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    equal,
    isclose,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
)
from .pointwise import (
    CPP_NAME,
    add_scalar,
    mul_scalar,
    exp,
    inplace_with_scalars,
    inplace_without_derivative,
    masked_fill,
    no_derivative,
    no_kernel,
    not_implemented,
    refuse,
    require_tensor,
    scalar_first,
    where,
    with_scalars,
    zero_gradient,
)
from .registry import FLOAT, NONE, method_refusals, op
from .shape import raw
from .unary import isnan


def _tensor_other(name, position=2):
    def check(self, other, *rest):
        require_tensor(name, "other", other, position)
    return check


def _float_only(kernel_name, x):
    if x.dtype.kind not in "fc":
        raise not_implemented(kernel_name, x)


def _zero_division(self, other):
    """torch's refusal of an integer division by zero: its kernel raises at a zero it divides
    by, so an empty dividend (no quotient computed) is no division by zero."""
    if self.size and (asarray_like(other, other) == 0).any():
        raise RuntimeError("ZeroDivisionError")


# -- division with rounding --------------------------------------------------------------------
def _trunc_div(a, b):
    if a.dtype.kind in "iu":
        q = a // b
        # NOTE: floor and trunc differ where the division is inexact and the signs differ.
        return get_xp(a, b).where((a % b != 0) & ((a < 0) != (b < 0)), q + 1, q)
    return get_xp(a, b).trunc(a / b)


def _rounded_div(a, b, mode):
    if mode not in ("trunc", "floor"):
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{mode}'")
    if a.dtype == np.bool_:
        raise not_implemented(f"div_{mode}_cpu", a)
    if a.dtype.kind in "iu":
        _zero_division(a, b)
    with np.errstate(all="ignore"):
        if _number_of_half(a, b):  # (in float32, rounded once: see OpDef.numbers_in_opmath)
            return _rounded_div(a.astype(np.float32), np.float32(b), mode).astype(np.float16)
        return _trunc_div(a, b) if mode == "trunc" else a // b


def _number_of_half(a, b):
    """Whether ``b`` is a Python number dividing a float16 array ``a``: torch's kernel takes
    it in float32 (see OpDef.numbers_in_opmath)."""
    return a.dtype == np.float16 and (type(b) is float or type(b) is int)


@op("div", elementwise=True, node="DivBackward2", tensors=2, quiet=True, numbers_in_opmath=True)
def div_mode(self, other, rounding_mode):
    if rounding_mode is None:  # torch.div(..., rounding_mode=None): true division
        return PW.div(self, np.float32(other) if _number_of_half(self, other) else other)
    if type(other) is np.ndarray and other.dtype != self.dtype:
        # arrays of two dtypes (a formula's saved integer self and float other, as in
        # remainder's): promoted by torch's rules, never cast down to self's dtype
        dt = D.promote_types(D._BY_NP[self.dtype], D._BY_NP[other.dtype]).np
        self, other = self.astype(dt), other.astype(dt)
    if not _number_of_half(self, other):
        other = asarray_like(other, self, self.dtype)
    return _rounded_div(self, other, rounding_mode)


@div_mode.grad("self")
def _(grad, other, rounding_mode):
    # NOTE: rounded quotients are piecewise constant: zero, as torch's zeros_like.
    return grad / other if rounding_mode is None else zero_gradient(grad)


@div_mode.grad("other")
def _(grad, self, other, rounding_mode):
    return -grad * self / (other * other) if rounding_mode is None else zero_gradient(grad)


_UNSET = object()


def div(input, other, *, rounding_mode=_UNSET):
    """``input / other`` (true division), or rounded with ``rounding_mode`` 'trunc'/'floor'."""
    if rounding_mode is _UNSET:
        return PW.div(input, other)
    if rounding_mode is None:  # torch picks its div.Tensor_mode overload (DivBackward2)
        return div_mode(_float_operand(input, other), other, None)
    return div_mode(input, other, rounding_mode)


def _float_operand(input, other):
    """``input`` in the default dtype where true division of the pair would stay integral."""
    if isinstance(input, Tensor) and not input.dtype.is_floating_point and not (
            isinstance(other, float) or (isinstance(other, Tensor)
                                         and other.dtype.is_floating_point)):
        return input.to(D.get_default_dtype())
    return input


def _div_(self, other, *, rounding_mode=_UNSET):
    if rounding_mode is _UNSET or rounding_mode is None:
        return PW.div.inplace(self, other)
    return div_mode.inplace(self, other, rounding_mode)


divide = true_divide = div
Tensor.div = method_refusals(div, "div")
Tensor.divide = div
Tensor.div_ = Tensor.divide_ = _div_
Tensor.true_divide_ = lambda self, other: PW.div.inplace(self, other)


@op("floor_divide", elementwise=True, node="NotImplemented", number_node="NotImplemented",
    tensors=2, method=("floor_divide", "__floordiv__"), numbers_in_opmath=True,
    check=refuse("c", no_kernel("div_floor_cpu")))
def floor_divide(self, other):
    return _rounded_div(asarray_like(self, other, getattr(other, "dtype", None)), other,
                        "floor")


floor_divide.grad("self", "other")(no_derivative("floor_divide"))
floor_divide_ = inplace_without_derivative(floor_divide, "self", "other")
Tensor.__rfloordiv__ = lambda self, other: floor_divide(other, self)
Tensor.__ifloordiv__ = lambda self, other: self.floor_divide_(other)


# -- remainders ----------------------------------------------------------------------------------
def _mod(a, b, ufunc, name):
    if a.dtype == np.bool_:
        raise not_implemented(f"{name}_cpu", a)
    if a.dtype.kind in "iu":
        _zero_division(a, b)
    with np.errstate(all="ignore"):
        r = ufunc(a, b)
    return _zero_takes_dividend_sign(r, a) if ufunc is np.remainder else r


def _zero_takes_dividend_sign(r, a):
    """torch's float remainder is fmod, moved by the divisor when the signs differ: an exact
    zero keeps the dividend's sign (``0.0 % -1.0`` is 0.0), where NumPy's takes the divisor's."""
    if r.dtype.kind != "f":
        return r
    xp = get_xp(r)
    zero = r == 0
    if not zero.any():
        return r
    return xp.where(zero, xp.copysign(xp.zeros((), r.dtype), a), r).astype(r.dtype, copy=False)


@op("remainder", elementwise=True, node="RemainderBackward1", tensors=2,
    check=refuse("c", no_kernel("remainder_cpu")))
def _remainder_tensor(self, other):
    return _mod(asarray_like(self, other, getattr(other, "dtype", None)), other, np.remainder,
                "remainder")


@_remainder_tensor.grad("self")
def _(grad):
    return grad


@_remainder_tensor.grad("other")
def _(grad, self, other):
    return -grad * div_mode(self, other, "floor")


@op("remainder", elementwise=True, node="RemainderBackward0", promote=NONE,
    check=refuse("c", no_kernel("remainder_cpu")))
def _remainder_scalar(self, other):
    return _mod(with_scalars(self, other), opmath.number_now(other), np.remainder, "remainder")


@_remainder_scalar.grad("self")
def _(grad):
    return grad


@op("remainder", elementwise=True, node="NotImplemented", tensors=2,
    check=refuse("c", no_kernel("remainder_cpu")))
def _rremainder(self, other):
    """``self % other`` for a Python-number ``self`` (what ``2 % x`` computes)."""
    return _mod(asarray_like(self, other, other.dtype), other, np.remainder, "remainder")


_rremainder.grad("other")(no_derivative("remainder"))


def remainder(input, other):
    """Python's modulus: the result has the sign of ``other``."""
    if not isinstance(input, Tensor):
        return _rremainder(input, other)
    if isinstance(other, Tensor):
        return _remainder_tensor(input, other)
    return _remainder_scalar(input, other)


_remainder_scalar_ = inplace_with_scalars(_remainder_scalar)


def _remainder_(self, other):
    if isinstance(other, Tensor):
        return _remainder_tensor.inplace(self, other)
    return _remainder_scalar_(self, other)


Tensor.remainder = Tensor.__mod__ = remainder
Tensor.remainder_ = Tensor.__imod__ = _remainder_
Tensor.__rmod__ = lambda self, other: remainder(other, self)


@op("fmod", elementwise=True, node="FmodBackward1", tensors=2,
    check=refuse("c", no_kernel("fmod_cpu")))
def _fmod_tensor(self, other):
    return _mod(self, other, np.fmod, "fmod")


@_fmod_tensor.grad("self")
def _(grad):
    return grad


@_fmod_tensor.grad("other")
def _(grad, self, other):
    return -grad * div_mode(self, other, "trunc")


@op("fmod", elementwise=True, node="FmodBackward0", promote=NONE,
    check=refuse("c", no_kernel("fmod_cpu")))
def _fmod_scalar(self, other):
    return _mod(with_scalars(self, other), opmath.number_now(other), np.fmod, "fmod")


@_fmod_scalar.grad("self")
def _(grad):
    return grad


def fmod(input, other):
    """C's remainder: the result has the sign of ``input``."""
    if isinstance(other, Tensor):
        return _fmod_tensor(input, other)
    return _fmod_scalar(input, other)


_fmod_scalar_ = inplace_with_scalars(_fmod_scalar)
Tensor.fmod = fmod
Tensor.fmod_ = lambda self, other: (_fmod_tensor.inplace(self, other)
                                    if isinstance(other, Tensor) else _fmod_scalar_(self, other))


# -- powers in double precision ----------------------------------------------------------------
def float_power(input, exponent):
    """``input ** exponent`` computed in float64 (complex128 for complex operands)."""
    cplx = any(isinstance(a, complex) or (isinstance(a, Tensor) and a.dtype.is_complex)
               for a in (input, exponent))
    dt = D.complex128 if cplx else D.float64
    base = input.to(dt) if isinstance(input, Tensor) else input
    exp_ = exponent.to(dt) if isinstance(exponent, Tensor) else exponent
    return PW.pow(base, exp_)


def _float_power_(self, exponent):
    from .._state import vmap_hook
    if vmap_hook[0] is not None:  # (torch refuses a batched exponent before the dtypes)
        vmap_hook[0].check_write("aten::float_power_", self, exponent)
    cplx = self.dtype.is_complex or isinstance(exponent, complex) or (
        isinstance(exponent, Tensor) and exponent.dtype.is_complex)
    dt = D.complex128 if cplx else D.float64
    if self.dtype is not dt:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype.scalar_name} "
                           f"but the operation's result requires dtype {dt.scalar_name}")
    return self.pow_(exponent.to(dt) if isinstance(exponent, Tensor) else exponent)


Tensor.float_power = float_power
Tensor.float_power_ = _float_power_


# -- two-argument maths ------------------------------------------------------------------------
@op("atan2", elementwise=True, tensors=2, promote=FLOAT, quiet=True, method=("atan2", "arctan2"),
    inplace=True, check=refuse("c", no_kernel("atan2_cpu"), _tensor_other("atan2")))
def atan2(self, other):
    return np.arctan2(self, other)


atan2.inplace_check = refuse("c", no_kernel("atan2_cpu"),
                             lambda self, other: require_tensor("atan2_", "other", other, 1))


@atan2.grad("self", key="self, other")  # (one joint formula in torch)
def _(grad, self, other):
    return grad * other * _atan2_recip(self, other)


@atan2.grad("other", key="self, other")
def _(grad, self, other):
    return grad * -self * _atan2_recip(self, other)


def _atan2_recip(self, other):
    """1 / (self² + other²), and 0 where that is 1 / 0: torch's gradient of atan2 at the
    origin is a (signed) zero, not NaN."""
    from .pointwise import reciprocal
    denom = self * self + other * other
    return masked_fill(reciprocal(denom), denom == 0, 0.0)  # as torch's formula (its nodes)


arctan2 = atan2
Tensor.arctan2_ = Tensor.atan2_


@op("fmax", elementwise=True, tensors=2, method=True, check=refuse("c", lambda t: RuntimeError(
    "fmax not implemented for complex tensors."), _tensor_other("fmax")))
def fmax(self, other):
    return np.fmax(self, other)


@fmax.grad("self")
def _(grad, self, other):
    # NOTE: unlike maximum, ties send the whole gradient to self (torch's formula).
    return masked_fill(grad, ~((self >= other) | isnan(other)), 0)


@fmax.grad("other")
def _(grad, self, other):
    return masked_fill(grad, (self >= other) | isnan(other), 0)


@fmax.jvp("self", "other", joint=True)
def _(tangents, self, other):
    # (a tie gives other's tangent here, where fmax's gradient goes to self)
    return PW.tangent_of_a_pick(tangents, (self > other) | isnan(other))


fmax.own_jvp = True  # (see _batched_forward._elementwise)


@op("fmin", elementwise=True, tensors=2, method=True, check=refuse("c", lambda t: RuntimeError(
    "fmin not implemented for complex tensors."), _tensor_other("fmin")))
def fmin(self, other):
    return np.fmin(self, other)


@fmin.grad("self")
def _(grad, self, other):
    return masked_fill(grad, ~((self <= other) | isnan(other)), 0)


@fmin.grad("other")
def _(grad, self, other):
    return masked_fill(grad, (self <= other) | isnan(other), 0)


@op("hypot", elementwise=True, tensors=2, method=True, inplace=True, quiet=True,
    check=refuse("c", no_kernel("hypot_cpu"), _tensor_other("hypot")))
def hypot(self, other):
    _float_only("hypot_cpu", self)
    return np.hypot(self, other)


hypot.inplace_check = refuse("c", no_kernel("hypot_cpu"),
                             lambda self, other: require_tensor("hypot_", "other", other, 1))


@hypot.grad("self")
def _(grad, self, result):
    return grad * self / result


@hypot.grad("other")
def _(grad, other, result):
    return grad * other / result


@op("logaddexp", elementwise=True, tensors=2, method=True, quiet=True,
    check=_tensor_other("logaddexp"))
def logaddexp(self, other):
    _float_only("logaddexp_cpu", self)
    return np.logaddexp(self, other)


@logaddexp.grad("self")
def _(grad, self, other):
    return grad / add_scalar(exp(other - self), 1)


@logaddexp.grad("other")
def _(grad, self, other):
    return grad / add_scalar(exp(self - other), 1)


@op("logaddexp2", elementwise=True, tensors=2, method=True, quiet=True,
    check=_tensor_other("logaddexp2"))
def logaddexp2(self, other):
    _float_only("logaddexp2_cpu", self)
    return np.logaddexp2(self, other)


@logaddexp2.grad("self")
def _(grad, self, other):
    return grad / (2 ** (other - self) + 1)


@logaddexp2.grad("other")
def _(grad, self, other):
    return grad / (2 ** (self - other) + 1)


@op("copysign", elementwise=True, node="CopysignBackward0", tensors=2, promote=FLOAT,
    check=refuse("c", no_kernel("copysign_cpu")))
def _copysign_tensor(self, other):
    return np.copysign(self, other)


@_copysign_tensor.grad("self")
def _(grad, self, result):
    return grad * masked_fill(result / self, self == 0, 0.0)  # as torch's formula (its nodes)


@_copysign_tensor.grad("other")
def _(grad):
    return zero_gradient(grad)


@_copysign_tensor.jvp("self", "other", joint=True)
def _(tangents, self, result):
    # torch's tangent is self's term only: none at all when only other has one
    self_t = tangents[0]
    if self_t is None:
        return None
    return self_t * masked_fill(result / self, self == 0, 0.0)


@op("copysign", elementwise=True, node="CopysignBackward1", promote=NONE,
    check=refuse("c", no_kernel("copysign_cpu")))
def _copysign_scalar(self, other):
    return np.copysign(with_scalars(self, other, floating=True), other)


@_copysign_scalar.grad("self")
def _(grad, self, result):
    return grad * masked_fill(result / self, self == 0, 0.0)  # as torch's formula (its nodes)


def copysign(input, other):
    """``input``'s magnitude with ``other``'s sign (elementwise)."""
    if isinstance(other, Tensor):
        return _copysign_tensor(input, other)
    return _copysign_scalar(input, other)


_copysign_scalar_ = inplace_with_scalars(_copysign_scalar, floating=True)
Tensor.copysign = copysign
Tensor.copysign_ = lambda self, other: (_copysign_tensor.inplace(self, other)
                                        if isinstance(other, Tensor)
                                        else _copysign_scalar_(self, other))


def _xlogy(x, y):
    # NOTE: torch: nan where y is nan, else 0 where x == 0 (even for y == 0), else x log y.
    xp = get_xp(x, y)
    with np.errstate(all="ignore"):
        out = xp.where(x == 0, 0, x * xp.log(y))
    nan = xp.isnan(y)
    if out.dtype == np.float64 or opmath.reduced_now() is not None:
        nan = nan | ((y < 0) & (x != 0))  # torch's NaN is positive there (float32's, float16's not)
    return xp.where(nan, np.nan, out).astype(out.dtype, copy=False)


def binary_with_scalars(name, node, kernel, grad_self, grad_other, check=None):
    """A float-valued binary op either of whose operands may be a Python number, declared as
    torch declares such ops: node ``<node>0`` for two tensors, ``<node>1`` for a number first
    and ``<node>2`` for a number second. ``kernel(x, y)`` gets arrays of the result dtype;
    ``grad_self(grad, self, other)`` and ``grad_other`` are the derivative formulas. Returns
    the function that picks the variant; its ``ops`` are the three OpDefs. ``check``: the
    three variants' argument check."""
    def both_kernel(self, other):
        return kernel(self, other)

    def number_first_kernel(self, other):
        return kernel(asarray_like(self, other, other.dtype), other)

    def number_second_kernel(self, other):
        x = with_scalars(self, other, floating=True)
        return kernel(x, asarray_like(other, x, x.dtype))

    both = op(name, elementwise=True, node=f"{node}0", tensors=2, promote=FLOAT,
              check=check)(both_kernel)
    first = op(name, elementwise=True, node=f"{node}1", tensors=2, promote=FLOAT,
               check=check)(number_first_kernel)
    second = op(name, elementwise=True, node=f"{node}2", promote=NONE, check=check)(
        number_second_kernel)
    second.wraps_number = True  # (torch's Scalar_Other overloads wrap the number)
    both.grad("self")(grad_self)
    both.grad("other")(grad_other)
    first.grad("other")(grad_other)
    second.grad("self")(grad_self)
    # torch's forward formulas are the same expressions, the tangent standing for grad (its
    # auto_element_wise): a tangent derived from them at grad = 0 would read the masks of
    # xlogy's own derivative there (0 where other < 0, where torch's tangent is NaN)
    both.jvp("self")(grad_self)
    both.jvp("other")(grad_other)
    first.jvp("other")(grad_other)
    second.jvp("self")(grad_self)

    def call(input, other):  # noqa: A002 - torch's names
        if not isinstance(input, Tensor) and not hasattr(input, "shape"):
            return first(input, other)
        if isinstance(other, Tensor) or hasattr(other, "shape"):
            return both(input, other)
        return second(input, other)
    call.ops = (both, first, second)
    return call


def at_or_below(other, bound):
    """The ``other <= bound`` of xlogy's and xlog1py's self-derivative masks: elementwise for a
    tensor; for a number (the Scalar_Other overloads) torch's test is ``not other > bound``,
    which takes NaN as below, so where self == 0 the derivative stays 0."""
    if isinstance(other, (int, float)):
        return not other > bound
    return other <= bound


def _xlogy_grad_self(grad, self, other):
    # NOTE: torch's formula: log(other) scaled by grad, 0 where self == 0 and other <= 0.
    return masked_fill(xlogy(grad, other), (self == 0) & at_or_below(other, 0), 0.0)


def _xlogy_grad_other(grad, self, other):
    return grad * self / other


xlogy = binary_with_scalars("xlogy", "XlogyBackward", _xlogy, _xlogy_grad_self,
                            _xlogy_grad_other, check=refuse("c", no_kernel("xlogy_cpu")))
xlogy.__doc__ = "``input * log(other)``, 0 where ``input`` is 0 (nan where ``other`` is nan)."
_xlogy_tensor, _xlogy_scalar_self, _xlogy_scalar_other = xlogy.ops


_xlogy_scalar_other_ = inplace_with_scalars(_xlogy_scalar_other, floating=True)
Tensor.xlogy = xlogy
Tensor.xlogy_ = lambda self, other: (_xlogy_tensor.inplace(self, other)
                                     if isinstance(other, Tensor)
                                     else _xlogy_scalar_other_(self, other))


# -- interpolation and fused multiply-add ------------------------------------------------------
def _lerp(start, end, weight):
    # NOTE: torch's two-sided formula keeps lerp exact at both ends (weight 0 and 1).
    if start.dtype in _FUSED_IN_FLOAT32:
        return _lerp_fused(start, end, weight, np.float32)
    if start.dtype == np.float64:
        return _lerp_fused(start, end, weight, np.float64)
    small = np.abs(weight) < 0.5
    diff = end - start
    return np.where(small, start + weight * diff, end - diff * (1 - weight))


# (bfloat16 too: torch computes it in float32, its opmath type, and rounds the result)
_FUSED_IN_FLOAT32 = (np.dtype(np.float16), np.dtype(np.float32), *D.REDUCED_NP)


def _lerp_fused(start, end, weight, compute):
    """torch's float kernel: the weight in the ``compute`` dtype (float32 for the half types),
    then one fused multiply-add, ``(w or w - 1) * (end - start) + (start or end)``."""
    xp = get_xp(start)
    s, e = start.astype(compute, copy=False), end.astype(compute, copy=False)
    w = weight.astype(compute, copy=False) if hasattr(weight, "dtype") else compute(weight)
    small = xp.abs(w) < 0.5
    coeff = xp.where(small, w, w - compute(1))
    # (one weight: the start or the end itself, not a copy of it)
    base = xp.where(small, s, e) if getattr(small, "ndim", 0) else (s if small else e)
    fused = fused_multiply_add(coeff, e - s, base, compute)
    return fused.astype(start.dtype, copy=False)


def _lerp_check(self, end, weight):
    if not isinstance(end, Tensor):
        got = ", ".join("Tensor" if isinstance(a, Tensor) else type(a).__name__
                        for a in (self, end, weight))
        raise TypeError(f"lerp() received an invalid combination of arguments - got ({got}), "
                        "but expected one of:\n"
                        " * (Tensor input, Tensor end, Tensor weight, *, Tensor out = None)\n"
                        " * (Tensor input, Tensor end, Number weight, *, Tensor out = None)\n")
    if not isinstance(weight, (Tensor, numbers.Number)):
        # (a None weight, which NumPy would read as NaN: the caller's argument parser gives
        # torch's TypeError in place of this one)
        raise TypeError(f"lerp(): weight must be a Tensor or a number, not "
                        f"{type(weight).__name__}")
    kernel = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
    if self._data.dtype.kind not in "fc" and self._data.dtype not in D.REDUCED_NP:
        raise not_implemented(kernel, self._data)
    if isinstance(weight, numbers.Complex) and weight.imag and self._data.dtype.kind != "c":
        raise RuntimeError(f"value cannot be converted to type {CPP_NAME[self.dtype.name]} "
                           "without overflow")
    for name, t in (("end", end), ("weight", weight)):
        if isinstance(t, Tensor) and t._data.dtype != self._data.dtype and (
                name == "end" or t._data.ndim > 0):
            raise RuntimeError(f"expected dtype {CPP_NAME[self.dtype.name]} for `{name}` but "
                               f"got dtype {CPP_NAME[t.dtype.name]}")


@op("lerp", elementwise=True, node="LerpBackward0", tensors=2, check=_lerp_check, quiet=True)
def _lerp_scalar(self, end, weight):
    return _lerp(self, end, weight)


@_lerp_scalar.grad("self")
def _(grad, weight):
    return mul_scalar(grad, 1 - weight)  # a number weight: torch's mul.Scalar (its node)


@_lerp_scalar.grad("end")
def _(grad, weight):
    return mul_scalar(grad, weight)


@op("lerp", elementwise=True, node="LerpBackward1", tensors=3, check=_lerp_check, quiet=True)
def _lerp_tensor(self, end, weight):
    return _lerp(self, end, weight)


@_lerp_tensor.grad("self")
def _(grad, weight):
    return grad * (1 - weight)


@_lerp_tensor.grad("end")
def _(grad, weight):
    return grad * weight


@_lerp_tensor.grad("weight")
def _(grad, self, end):
    return grad * (end - self)


def lerp(input, end, weight):
    """``input + weight * (end - input)`` (weight a Python number or a tensor)."""
    if isinstance(weight, Tensor):
        return _lerp_tensor(input, end, weight)
    return _lerp_scalar(input, end, _real_weight(input, weight))


def _lerp_(self, end, weight):
    if isinstance(weight, Tensor):
        return _lerp_tensor.inplace(self, end, weight)
    return _lerp_scalar.inplace(self, end, _real_weight(self, weight))


def _real_weight(input, weight):
    """A complex number weight with no imaginary part is its real part for a real ``input``
    (torch converts the Scalar; one with an imaginary part is refused by _lerp_check)."""
    if (isinstance(weight, complex) and not weight.imag and isinstance(input, Tensor)
            and input._data.dtype.kind != "c"):
        return weight.real
    return weight


Tensor.lerp = lerp
Tensor.lerp_ = _lerp_


def _addc_check(name, inplace=False):
    def check(self, tensor1, tensor2, value=1):
        require_tensor(name, "tensor1", tensor1, 2)
        require_tensor(name, "tensor2", tensor2, 3)
        _check_number(value, name + "_" if inplace else name)
        if name == "addcdiv" and all(t._data.dtype.kind in "biu" for t in (tensor1, tensor2)):
            raise RuntimeError(
                "Integer division with addcdiv is no longer supported, and in a future  "
                "release addcdiv will perform a true division of tensor1 and tensor2. The "
                "historic addcdiv behavior can be implemented as (input + value * "
                "ember.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv "
                "behavior is just the latter implementation: (input + value * tensor1 / "
                "tensor2), for all dtypes.")
    return check


def _check_number(value, name):
    """torch's parsing of a Number argument: a 0-dim tensor that requires no grad is taken
    as its value (see _value); any other tensor is refused."""
    if isinstance(value, Tensor) and (value.ndim or value.requires_grad):
        raise TypeError(f"{name}(): argument 'value' must be Number, not Tensor")


def _number(value):
    """A Number argument's value (a 0-dim tensor's, see _check_number)."""
    return value.item() if isinstance(value, Tensor) else value


def _value(x, value, kernel):
    """``value`` (a number, or a 0-dim tensor's value) cast to the result's kind, as torch's
    kernels take it."""
    if x.dtype == np.bool_:
        raise not_implemented(kernel, x)
    value = _number(value)
    return int(value) if x.dtype.kind in "iu" else value


@op("addcmul", elementwise=True, tensors=3, method=True, inplace=True, quiet=True,
    check=_addc_check("addcmul"))
def addcmul(self, tensor1, tensor2, value=1):
    return add_product(self, tensor1, tensor2, _value(self, value, "addcmul_cpu_out"))


@addcmul.grad("self")
def _(grad):
    return grad


@addcmul.grad("tensor1")
def _(grad, tensor2, value):
    return grad * mul_scalar(tensor2, _number(value))


@addcmul.grad("tensor2")
def _(grad, tensor1, value):
    return grad * mul_scalar(tensor1, _number(value))


@op("addcdiv", elementwise=True, tensors=3, method=True, inplace=True, quiet=True,
    check=_addc_check("addcdiv"))
def addcdiv(self, tensor1, tensor2, value=1):
    # (value * tensor1) / tensor2, in that order, as torch's kernel: the same overflows
    value = _value(self, value, "addcdiv_cpu_out")
    if self.dtype == np.float16:  # (torch's Half kernel: in float32, rounded once)
        wide = [a.astype(np.float32) for a in (self, tensor1, tensor2)]
        return (wide[0] + np.float32(value) * wide[1] / wide[2]).astype(np.float16)
    return self + value * tensor1 / tensor2


@addcdiv.grad("self")
def _(grad):
    return grad


@addcdiv.grad("tensor1")
def _(grad, tensor2, value):
    return grad * scalar_first(_number(value), tensor2, "div")


@addcdiv.grad("tensor2")
def _(grad, tensor1, tensor2, value):
    return -grad * (mul_scalar(tensor1, _number(value)) / (tensor2 * tensor2))


# (torch's tangent formulas scale both product terms by value: see
# forward_ad._zero_term_dtype)
addcmul.zero_term_scalar = addcdiv.zero_term_scalar = ("value", ("tensor1", "tensor2"))
addcmul.inplace_check = _addc_check("addcmul", inplace=True)
addcdiv.inplace_check = _addc_check("addcdiv", inplace=True)


# torch's fmod.Scalar and remainder.Scalar run the Tensor overload with the number wrapped
_fmod_scalar.wraps_number = _remainder_scalar.wraps_number = True


# -- ldexp: torch's op (LdexpBackward0). A floating input with integer exponents takes torch's
# ldexp kernel (exact: 1e-30 * 2 ** 200 is finite in float32); anything else is torch's
# composition self * pow(2, other), with 2 in self's dtype (float32 for integers) -------------
def _kind(array):
    """The operand kind torch's promotion sees: a 0-dim tensor or one with dimensions."""
    return D.ZERO_DIM if array.ndim == 0 else D.DIM


def _is_real_float(array):
    return array.dtype.kind == "f" or array.dtype in D.REDUCED_NP


def _ldexp_exact(self, exponents):
    """``self * 2 ** exponents`` with C's ldexp, for integer exponents: exact but where the
    result leaves the dtype's range. torch passes the exponents as C ints (int64 wraps) and
    computes float16 and bfloat16 in float32, rounding once."""
    if exponents.dtype == np.bool_:
        raise not_implemented("ldexp_cpu_exp", exponents)
    compute = np.float32 if self.dtype.itemsize < 4 else self.dtype
    out = get_xp(self, exponents).ldexp(self.astype(compute, copy=False),
                                        exponents.astype(np.int32))
    return out.astype(self.dtype, copy=False)


def _takes_exact_ldexp(self, other):
    return _is_real_float(self) and other.dtype.kind in "iub"


def _ldexp_dtypes(self, other):
    """The dtypes of torch's composition: (``pow(two, other)``'s, the result's), two a 0-dim
    tensor of self's dtype (float32 for integers and bool)."""
    self_dt, other_dt = D._BY_NP[self.dtype], D._BY_NP[other.dtype]
    two_dt = self_dt if self_dt.category >= D.FLOATING else D.float32
    pow_dt = D.result_type_of(((two_dt, D.ZERO_DIM), (other_dt, _kind(other))))
    return pow_dt, D.result_type_of(((self_dt, _kind(self)), (pow_dt, _kind(other))))


def _ldexp_composite(self, other):
    """torch's ``self * pow(two, other)``, each step in torch's result dtype."""
    pow_dt, out_dt = _ldexp_dtypes(self, other)
    with np.errstate(all="ignore"):
        powers = asarray_like(2, other, pow_dt.np) ** other.astype(pow_dt.np, copy=False)
        return self.astype(out_dt.np, copy=False) * powers.astype(out_dt.np, copy=False)


@op("ldexp", node="LdexpBackward0", elementwise=True, tensors=2, promote=NONE, quiet=True,
    method=True, inplace=True, conj_saved=True, check=_tensor_other("ldexp"))
def ldexp(self, other):
    """``self * 2 ** other``."""
    if _takes_exact_ldexp(self, other):
        return _ldexp_exact(self, other)
    return _ldexp_composite(self, other)


def _check_ldexp_inplace(self, other):
    require_tensor("ldexp_", "other", other, 1)
    a, b = raw(self), raw(other)
    if _takes_exact_ldexp(a, b):
        return
    out_dt = _ldexp_dtypes(a, b)[1]
    if not D.can_cast(out_dt, self.dtype):  # (torch names itself where self is integral)
        head = "ldexp" if self.dtype.category < D.FLOATING else f"result type {out_dt.scalar_name}"
        raise RuntimeError(f"{head} can't be cast to the desired output type "
                           f"{self.dtype.scalar_name}")


ldexp.inplace_check = _check_ldexp_inplace


def _powers_of_two(other, like):
    """``2 ** other`` in ``like``'s dtype: exact for integer exponents (torch's formula takes
    them with an integer pow, which gives 0 for negative ones: a wrong gradient)."""
    if raw(other).dtype.kind in "fc":
        return PW.pow(2, other)
    one = like.new_ones(()) if isinstance(like, Tensor) else asarray_like(1, like, like.dtype)
    return ldexp(one, other)


@ldexp.grad("self")
def _(grad, other):
    return grad * _powers_of_two(other, grad)


@ldexp.grad("other")
def _(grad, result):
    return mul_scalar(grad * result, _LN2)


@ldexp.jvp("self")
def _(self_t, other):
    return self_t * _powers_of_two(other, self_t)


@ldexp.jvp("other")
def _(other_t, result):
    return other_t * mul_scalar(result, _LN2)


_LN2 = float(np.log(2.0))
