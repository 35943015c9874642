"""Unary pointwise maths: exponentials, logarithms, trigonometry, rounding, predicates.

Each kernel has its derivative formula right below it; formulas follow torch's
derivatives.yaml, so first and second derivatives (and their values at edge points) match.
Integer and bool inputs of float-valued ops compute in the default dtype (``promote=FLOAT``).
"""
from __future__ import annotations

__all__ = [
    'deg2rad',
    'rad2deg',
    'acos',
    'acosh',
    'arccos',
    'arccosh',
    'arcsin',
    'arcsinh',
    'arctan',
    'arctanh',
    'asin',
    'asinh',
    'atan',
    'atanh',
    'ceil',
    'clamp',
    'clamp_max',
    'clamp_min',
    'clip',
    'cosh',
    'exp2',
    'expm1',
    'fix',
    'floor',
    'frac',
    'isfinite',
    'isinf',
    'isnan',
    'isneginf',
    'isposinf',
    'isreal',
    'log1p',
    'log2',
    'log10',
    'logit',
    'nan_to_num',
    'positive',
    'round',
    'rsqrt',
    'sgn',
    'sinc',
    'sinh',
    'square',
    'tan',
    'trunc',
]

import math
import operator

import numpy as np

from .._backend import asarray_like, get_xp
from .._backend.fp_errors import made_nan
from .._backend.layout import copy_in_format
from .._info import half_source
from .._tensor import Tensor
from .pointwise import (
    add_scalar,
    complex_unsupported,
    cos,
    inplace_with_scalars,
    is_complex_value,
    mul_scalar,
    no_kernel,
    not_implemented,
    positive_nan,
    with_positive_nan,
    refuse,
    pow_scalar,
    scalar_first,
    sign_of,
    sin,
    sub_scalar,
    where,
    with_scalars,
    zero_gradient,
)
from .registry import FLOAT, NONE, conj_value, op

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _alias(name, target):
    """Tensor methods ``name`` and ``name_`` for torch's alias of ``target`` (arcsin: asin)."""
    setattr(Tensor, name, getattr(Tensor, target))
    setattr(Tensor, name + "_", getattr(Tensor, target + "_"))


def _upcast_half(x):
    """float16 computes in float32 (torch's opmath type), then rounds back."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


# -- sign ----------------------------------------------------------------------------------------
@op("sgn", elementwise=True, method=True, inplace=True, complex_grad=True)
def sgn(self):
    return self.copy() if self.dtype == np.bool_ else sign_of(self)


@sgn.grad("self")
def _(grad, self, result):
    if is_complex_value(self):  # z / |z| moves along the circle only
        from .complex import sgn_backward
        return sgn_backward(grad, self, result)
    return zero_gradient(grad)  # real inputs: sgn is piecewise constant


def positive(input):
    """Returns ``input`` itself (refused for bool tensors, as torch does)."""
    if isinstance(input, Tensor) and input._data.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


Tensor.positive = positive


# -- exponentials and logarithms -------------------------------------------------------------
@op("exp2", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True, ufunc=np.exp2)
def exp2(self):
    return np.exp2(self)


@exp2.grad("self")
def _(grad, result):
    return mul_scalar(grad * result, _LN2)


@op("expm1", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True, ufunc=np.expm1)
def expm1(self):
    return np.expm1(self)


@expm1.grad("self")
def _(grad, result):
    return grad * add_scalar(result, 1)


# (no ufunc for the in-place forms: NumPy's NaN below 0 is negative, torch's positive)
@op("log2", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True)
def log2(self):
    return with_positive_nan(np.log2, self)


@log2.grad("self")
def _(grad, self):
    return grad / mul_scalar(self, _LN2)


@op("log10", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True)
def log10(self):
    return with_positive_nan(np.log10, self)


@log10.grad("self")
def _(grad, self):
    return grad / mul_scalar(self, _LN10)


@op("log1p", elementwise=True, node="Log1PBackward0", promote=FLOAT, quiet=True, method=True,
    inplace=True)
def log1p(self):
    out, nan = made_nan(np.log1p, self)
    # torch's float64 NaN below -1 is positive (its float32 one negative, as NumPy's)
    return positive_nan(out, self < -1) if nan and out.dtype == np.float64 else out


@log1p.grad("self")
def _(grad, self):
    return grad / add_scalar(self, 1)


@op("rsqrt", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True)
def rsqrt(self):
    return 1 / np.sqrt(self)


@rsqrt.grad("self")
def _(grad, result):
    return mul_scalar(grad, -0.5) * result ** 3  # torch's formula: its nodes under create_graph


def square(input):
    """``input ** 2`` (torch computes it as pow: int stays int, bool becomes int64)."""
    return pow_scalar(input, 2)


Tensor.square = square
Tensor.square_ = lambda self: self.pow_(2)


@op("logit", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True,
    check=refuse("c", no_kernel("logit_cpu")))
def logit(self, eps=None):
    x = _upcast_half(self)
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    ratio = x / (1 - x)
    # torch: NaN with the ratio's sign at the infinities (set; NumPy's float32 log clears
    # it), and in float32 and float64 +NaN below 0 and above 1 (float16: -NaN, as NumPy's)
    out = np.log(ratio)
    if self.dtype.itemsize >= 4:  # (x is float32 for float16)
        out = positive_nan(out, ratio < 0)
    return np.where(ratio != ratio, ratio, out).astype(self.dtype, copy=False)


@logit.grad("self")
def _(grad, self, eps):
    # NOTE: torch's logit_backward: 0 outside [eps, 1 - eps] (nan outside [0, 1] without eps),
    # and at a NaN input; the where keeps torch's operand order (WhereBackward0's edges).
    g = grad / (self * scalar_first(1.0, self, "sub"))
    if eps is None:
        return where((self >= 0) & (self <= 1), g, math.nan)
    return where((self >= eps) & (self <= 1 - eps), g, 0.0)


# -- trigonometric and hyperbolic --------------------------------------------------------------
@op("tan", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True, ufunc=np.tan)
def tan(self):
    return np.tan(self)


@tan.grad("self")
def _(grad, result):
    return grad * add_scalar(result ** 2, 1)


@op("asin", elementwise=True, promote=FLOAT, quiet=True, method=("asin", "arcsin"), inplace=True,
    ufunc=np.arcsin)
def asin(self):
    return np.arcsin(self)


@asin.grad("self")
def _(grad, self):
    return grad * rsqrt(add_scalar(-self * self, 1))


@op("acos", elementwise=True, promote=FLOAT, quiet=True, method=("acos", "arccos"), inplace=True,
    ufunc=np.arccos)
def acos(self):
    return np.arccos(self)


@acos.grad("self")
def _(grad, self):
    return grad * -rsqrt(add_scalar(-self * self, 1))


@op("atan", elementwise=True, promote=FLOAT, quiet=True, method=("atan", "arctan"), inplace=True,
    ufunc=np.arctan)
def atan(self):
    return np.arctan(self)


@atan.grad("self")
def _(grad, self):
    return grad / add_scalar(self * self, 1)


@op("sinh", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True, ufunc=np.sinh)
def sinh(self):
    return np.sinh(self)


@sinh.grad("self")
def _(grad, self):
    return grad * cosh(self)


@op("cosh", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True, ufunc=np.cosh)
def cosh(self):
    return np.cosh(self)


@cosh.grad("self")
def _(grad, self):
    return grad * sinh(self)


@op("asinh", elementwise=True, promote=FLOAT, quiet=True, method=("asinh", "arcsinh"), inplace=True,
    ufunc=np.arcsinh)
def asinh(self):
    return np.arcsinh(self)


@asinh.grad("self")
def _(grad, self):
    return grad * rsqrt(add_scalar(pow_scalar(self, 2), 1))


@op("acosh", elementwise=True, promote=FLOAT, quiet=True, method=("acosh", "arccosh"), inplace=True,
    ufunc=np.arccosh, complex_grad=True)
def acosh(self):
    return np.arccosh(self)


# (torch's formulas, so create_graph records its nodes: the Scalar overloads, and for complex
# values the conjugate of the computed derivative)
@acosh.grad("self")
def _(grad, self):
    if is_complex_value(self):  # rsqrt(x + 1) rsqrt(x - 1): rsqrt(x^2 - 1)'s branch cut differs
        return grad * conj_value(rsqrt(add_scalar(self, 1)) * rsqrt(sub_scalar(self, 1)))
    return grad * rsqrt(sub_scalar(self * self, 1))


@op("atanh", elementwise=True, promote=FLOAT, quiet=True, method=("atanh", "arctanh"), inplace=True,
    ufunc=np.arctanh)
def atanh(self):
    return np.arctanh(self)


@atanh.grad("self")
def _(grad, self):
    return mul_scalar(grad, 1) / scalar_first(1, pow_scalar(self, 2), "sub")  # torch's nodes


def _inplace_without_derivative(opdef):
    """torch's in-place variant that has no derivative: its node raises on backward."""
    d = op(opdef.name, node=f"{opdef.node_name[:-1]}1", promote=FLOAT)(opdef.kernel)

    @d.grad("self")
    def _(grad):
        raise NotImplementedError(
            f"the derivative for 'inplace version of {opdef.name}' is not implemented.")
    setattr(Tensor, opdef.name + "_", lambda self: d.inplace(self))
    return d


# NOTE: torch 2.13 declares asinh_, acosh_ and atanh_ without a derivative (AsinhBackward1).
asinh_inplace = _inplace_without_derivative(asinh)
acosh_inplace = _inplace_without_derivative(acosh)
atanh_inplace = _inplace_without_derivative(atanh)
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh
for _name, _target in (("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"),
                       ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh")):
    _alias(_name, _target)


@op("sinc", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True)
def sinc(self):
    x = _upcast_half(self)
    px = x * math.pi
    return np.where(x == 0, 1, np.sin(px) / px).astype(self.dtype, copy=False)


@sinc.grad("self")
def _(grad, self):
    # NOTE: torch's sinc_backward: (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at x == 0,
    # in its order of operations (its nodes under create_graph, its rounding)
    px = mul_scalar(self, math.pi)
    sq = mul_scalar(self * self, math.pi)
    return where(sq == 0, 0.0, grad * ((px * cos(px) - sin(px)) / sq))


# -- rounding (zero gradient) --------------------------------------------------------------------
def _copies_integers(self):
    """torch rounds an integer tensor by copying it into the result (copy_: one write, see
    op()'s ``writes``)."""
    return int(not (self.is_floating_point() or self.is_complex()))


def _rounding(name, ufunc):
    def kernel(self):
        if self.dtype == np.bool_:
            raise not_implemented(f"{name}_vml_cpu", self)
        return self.copy() if self.dtype.kind in "iu" else ufunc(self)
    kernel.__name__ = name
    refused = no_kernel("round_vml_cpu") if name == "round" else complex_unsupported(name)
    d = op(name, method=True, inplace=True, check=refuse("c", refused), elementwise=True,
           writes=_copies_integers)(kernel)

    @d.grad("self")
    def _(grad):
        return zero_gradient(grad)
    return d


floor = _rounding("floor", np.floor)
ceil = _rounding("ceil", np.ceil)
trunc = _rounding("trunc", np.trunc)
_round = _rounding("round", np.rint)  # NOTE: rint rounds half to even, as torch does
fix = trunc
_alias("fix", "trunc")


@op("round", elementwise=True, node="RoundBackward1", check=refuse("c", no_kernel("round_cpu")))
def round_decimals(self, decimals):
    if self.dtype.kind in "biu":
        raise not_implemented("round_cpu", self)
    x = _upcast_half(self)
    # NOTE: torch scales by 10**|decimals| in the compute type and rounds half to even.
    ten = x.dtype.type(10.0 ** abs(decimals))
    out = np.rint(x / ten) * ten if decimals < 0 else np.rint(x * ten) / ten
    return out.astype(self.dtype, copy=False)


@round_decimals.grad("self")
def _(grad):
    return zero_gradient(grad)


def round(input, *, decimals=None):
    """Round to the nearest integer (half to even), or to ``decimals`` decimal places."""
    if decimals is None:
        return _round(input)
    return round_decimals(input, decimals)


def _round_(self, *, decimals=None):
    if decimals is None:
        return _round.inplace(self)
    return round_decimals.inplace(self, decimals)


Tensor.round = round
Tensor.round_ = _round_


@op("frac", elementwise=True, quiet=True, method=True, inplace=True)
def frac(self):
    if self.dtype.kind != "f":
        raise not_implemented("frac_cpu", self)
    return self - np.trunc(self)


@frac.grad("self")
def _(grad):
    return grad


@op("nan_to_num", elementwise=True, method=True, inplace=True, writes=1,
    own_layout=True)
def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
    out = copy_in_format(self)  # (torch's result is empty_like(self): preserve_format)
    if self.dtype == np.float16:  # (torch's Half is built from a float)
        nan, posinf, neginf = (half_source(v) for v in (nan, posinf, neginf))
    if self.dtype.kind == "f":
        np.nan_to_num(out, copy=False, nan=nan, posinf=posinf, neginf=neginf)
    return out


@nan_to_num.grad("self")
def _(grad, self):
    return grad * isfinite(self)


# -- predicates (bool results, no gradient) -----------------------------------------------------
def _predicate(name, fn):
    def kernel(self):
        return fn(self)
    kernel.__name__ = name
    return op(name, method=True, differentiable=False, promote=NONE, elementwise=True)(kernel)


def _floating(fn):
    """``fn`` on floating arrays; all False for integers and bools (they are never inf/nan)."""
    return lambda x: fn(x) if x.dtype.kind in "fc" else get_xp(x).zeros(x.shape, np.bool_)


isnan = _predicate("isnan", _floating(np.isnan))
isinf = _predicate("isinf", _floating(np.isinf))
isposinf = _predicate("isposinf", _floating(np.isposinf))
isneginf = _predicate("isneginf", _floating(np.isneginf))
isfinite = _predicate("isfinite", lambda x: np.isfinite(x) if x.dtype.kind in "fc"
                      else get_xp(x).ones(x.shape, np.bool_))
isreal = _predicate("isreal", lambda x: x.imag == 0 if x.dtype.kind == "c"
                    else get_xp(x).ones(x.shape, np.bool_))


# -- clamping ------------------------------------------------------------------------------------
def _bound(bound, x):
    """A Python-number bound in ``x``'s dtype (integers wrap, as torch casts them; float16
    takes it through float32, as torch's Half does)."""
    if bound is not None and x.dtype == np.float16:
        return half_source(bound)
    if bound is None or x.dtype.kind not in "iub":
        return bound
    return asarray_like(bound, x).astype(x.dtype)


def _no_bool(x, kernel):
    if x.dtype == np.bool_:
        raise not_implemented(kernel, x)


@op("clamp", elementwise=True, node="ClampBackward1", promote=NONE,
    check=refuse("c", lambda t: NotImplementedError("clamp is not supported for complex types")))
def clamp_scalar(self, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("ember.clamp: At least one of 'min' or 'max' must not be None")
    x = with_scalars(self, min, max)
    _no_bool(x, "clamp_scalar_cpu")
    min, max = _bound(min, x), _bound(max, x)
    # (the input second: NumPy gives the second operand at a tie, so clamping -0.0 to a
    # bound of 0 keeps -0.0, as torch's min(max(x, lo), hi) does)
    out = x if min is None else np.maximum(min, x)
    out = out if max is None else np.minimum(max, out)
    return out if out is not self else self.copy()


@clamp_scalar.grad("self")
def _(grad, self, min, max):
    return where(clamp_mask(self, min, max), grad, 0)


@op("clamp_mask", elementwise=True, differentiable=False, promote=NONE)
def clamp_mask(self, min, max):
    """Where clamp passes its input through (its gradient's support)."""
    mask = get_xp(self).ones(self.shape, dtype=bool)
    if min is not None:
        mask &= self >= min
    if max is not None:
        mask &= self <= max
    return mask


@op("clamp", elementwise=True, node="ClampBackward0", tensors=3,
    check=refuse("c", lambda t: NotImplementedError("clamp is not supported for complex types")))
def clamp_tensor(self, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("ember.clamp: At least one of 'min' or 'max' must not be None")
    if min is not None and max is not None:
        _no_bool(self, "clamp_cpu")
    out = self if min is None else np.maximum(self, min)
    out = out if max is None else np.minimum(out, max)
    return out if out is not self else self.copy()


@clamp_tensor.grad("self")
def _(grad, self, min, max):
    if min is None:
        return where(self <= max, grad, 0)
    if max is None:
        return where(self >= min, grad, 0)
    return where(_combined_in_place(self >= min, self <= max, operator.and_), grad, 0)


@clamp_tensor.grad("min", key="min, max")  # (one joint formula in torch)
def _(grad, self, min, max):
    # NOTE: torch's clamp_backward_min_max: where min > max, min gets no gradient.
    if max is None:
        return where(self < min, grad, 0)
    return where(_combined_in_place(self < min, min < max, operator.and_), grad, 0)


@clamp_tensor.grad("max", key="min, max")
def _(grad, self, min, max):
    if min is None:
        return where(self > max, grad, 0)
    return where(_combined_in_place(self > max, max < min, operator.or_), grad, 0)


def _combined_in_place(mask, other, combine):
    """``combine(mask, other)`` as torch's clamp_backward_min_max combines its two masks: in
    place into the first (logical_and_), so that bounds whose shapes broadcast past self's
    and the first bound's (a 0-dim min and a (3, 1) max of a (3,) input) are refused there."""
    from .inplace import _check_inplace_shape
    shape = tuple(mask.shape)
    _check_inplace_shape(shape, np.broadcast_shapes(shape, tuple(other.shape)))
    return combine(mask, other)


@clamp_tensor.jvp("self", "min", "max", joint=True)
def _(tangents, self, min, max):
    # torch's clamp_jvp: each element takes the tangent of the input clamp picks (max's where
    # min > max), by comparisons that NaN fails: a NaN bound passes self's tangent on
    self_t, min_t, max_t = (0.0 if t is None else t for t in tangents)
    if min is None:
        return where(self < max, self_t, max_t)
    if max is None:
        return where(self > min, self_t, min_t)
    inner = where(self < min, min_t, where(self > max, max_t, self_t))
    return where(min > max, max_t, inner)


@op("clamp_min", elementwise=True, node="ClampMinBackward0", promote=NONE)
def _clamp_min_scalar(self, min):
    x = with_scalars(self, min)
    _no_bool(x, "clamp_min_scalar_cpu")
    return np.maximum(_bound(min, x), x)  # (x second: -0.0 stays, see clamp_scalar)


@_clamp_min_scalar.grad("self")
def _(grad, self, min):
    return where(self >= min, grad, 0)


@op("clamp_min", elementwise=True, node="ClampMinBackward1", tensors=2)
def _clamp_min_tensor(self, min):
    return np.maximum(self, min)


@_clamp_min_tensor.grad("self")
def _(grad, self, min):
    return where(self >= min, grad, 0)


@_clamp_min_tensor.grad("min")
def _(grad, self, min):
    return where(self < min, grad, 0)


@op("clamp_max", elementwise=True, node="ClampMaxBackward0", promote=NONE)
def _clamp_max_scalar(self, max):
    x = with_scalars(self, max)
    _no_bool(x, "clamp_max_scalar_cpu")
    return np.minimum(_bound(max, x), x)


@_clamp_max_scalar.grad("self")
def _(grad, self, max):
    return where(self <= max, grad, 0)


@op("clamp_max", elementwise=True, node="ClampMaxBackward1", tensors=2)
def _clamp_max_tensor(self, max):
    return np.minimum(self, max)


@_clamp_max_tensor.grad("self")
def _(grad, self, max):
    return where(self <= max, grad, 0)


@_clamp_max_tensor.grad("max")
def _(grad, self, max):
    return where(self > max, grad, 0)


def _as_number(bound):
    """torch's argument parser takes a 0-dim tensor that requires no grad for a Number (its
    value, of its dtype's kind: ``tensor(True)`` is a bool, ``tensor(0.5)`` a float)."""
    if isinstance(bound, Tensor) and bound.ndim == 0 and not bound.requires_grad:
        return bound.item()
    return bound


_BOUNDS = (Tensor, bool, int, float, complex, np.generic, type(None))


def _clamp_bounds(min, max):
    """The bounds as clamp's overloads read them: both tensors (or None), or both numbers,
    a 0-dim tensor beside a number standing for a number."""
    if not (isinstance(min, _BOUNDS) and isinstance(max, _BOUNDS)):
        raise _no_clamp_overload(min, max)
    tensors = [isinstance(b, Tensor) for b in (min, max) if b is not None]
    if any(tensors) and not all(tensors):
        numbers = _as_number(min), _as_number(max)
        if not any(isinstance(b, Tensor) for b in numbers):
            return numbers
    return min, max


def _clamp_variant(min, max):
    tensors = [isinstance(b, Tensor) for b in (min, max) if b is not None]
    if any(tensors) and not all(tensors):
        raise _no_clamp_overload(min, max)
    return clamp_tensor if any(tensors) else clamp_scalar


def _no_clamp_overload(min, max):
    """The error for bounds that fit neither overload: the public clamp, clip and their
    in-place forms rewrite it as torch's, listing the arguments as they were passed (see
    _numpy_operands.refusing_arrays); this text is for a call that bypassed them."""
    from .._numpy_operands import InvalidCombination, refusal
    return InvalidCombination(str(refusal("clamp", (min, max), True)))


def clamp(input, min=None, max=None):
    """Clamp every element into ``[min, max]`` (bounds: Python numbers or tensors)."""
    min, max = _clamp_bounds(min, max)
    return _clamp_variant(min, max)(input, min, max)


_clamp_scalar_ = inplace_with_scalars(clamp_scalar, n_scalars=2, cpp_names=True)


def _clamp_(self, min=None, max=None):
    min, max = _clamp_bounds(min, max)
    if _clamp_variant(min, max) is clamp_tensor:
        return clamp_tensor.inplace(self, min, max)
    return _clamp_scalar_(self, min, max)


def clamp_min(input, min):
    """``max(input, min)`` elementwise, with clamp's gradient."""
    if isinstance(min, Tensor):
        return _clamp_min_tensor(input, min)
    return _clamp_min_scalar(input, min)


def clamp_max(input, max):
    """``min(input, max)`` elementwise, with clamp's gradient."""
    if isinstance(max, Tensor):
        return _clamp_max_tensor(input, max)
    return _clamp_max_scalar(input, max)


_clamp_min_scalar_ = inplace_with_scalars(_clamp_min_scalar)
_clamp_max_scalar_ = inplace_with_scalars(_clamp_max_scalar)
clip = clamp
Tensor.clamp = Tensor.clip = clamp
Tensor.clamp_ = Tensor.clip_ = _clamp_
Tensor.clamp_min, Tensor.clamp_max = clamp_min, clamp_max
Tensor.clamp_min_ = lambda self, min: (_clamp_min_tensor.inplace(self, min)
                                       if isinstance(min, Tensor)
                                       else _clamp_min_scalar_(self, min))
Tensor.clamp_max_ = lambda self, max: (_clamp_max_tensor.inplace(self, max)
                                       if isinstance(max, Tensor)
                                       else _clamp_max_scalar_(self, max))


# torch's kernels that write their results through these out= functions, whose autograd
# layer refuses an inference dual (see forward_ad._check_out_function)
nan_to_num.out_function = "nan_to_num_out"
isinf.out_function = isfinite.out_function = "abs_out"


# -- angle conversions: torch's ops (Deg2RadBackward0, Rad2DegBackward0), each a product by a
# constant that torch's kernel computes with mul_out and its formula with mul.Scalar ---------
def _times_constant(x, c):
    """``x * c`` as torch's mul by a wrapped double computes it: in float for half types."""
    if x.dtype.itemsize < 4:  # float16, bfloat16: opmath float, then rounded once
        return (x.astype(np.float32) * np.float32(c)).astype(x.dtype)
    return x * x.dtype.type(c)


def _angle_conversion(name, node, factor):
    refused = refuse("c", lambda t: RuntimeError(f"{name} is not supported for complex tensors."))

    @op(name, node=node, elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True,
        check=refused)
    def convert(self):
        return _times_constant(self, factor)

    @convert.grad("self")
    def _(grad):
        return mul_scalar(grad, factor)

    convert.out_function = f"{name}_out"  # (its kernel writes with mul_out: see forward_ad)
    return convert


deg2rad = _angle_conversion("deg2rad", "Deg2RadBackward0", math.pi / 180)
rad2deg = _angle_conversion("rad2deg", "Rad2DegBackward0", 180 / math.pi)
