"""Pointwise ops: each kernel with its derivative formulas right below it."""
from __future__ import annotations

__all__ = ['abs', 'add', 'cos', 'div', 'eq', 'exp', 'ge', 'gt', 'le', 'log', 'lt', 'maximum', 'minimum', 'mul', 'ne', 'neg', 'pow', 'reciprocal', 'relu', 'rsub', 'sigmoid', 'sign', 'sin', 'sqrt', 'sub', 'tanh', 'where']

import functools
import math

import numpy as np

from .. import _dtype as D
from .._backend import get_xp, is_array, masked_or_zero
from .._backend.device import device_of, move
from .._backend.layout import scalar_loop_mask
from .._backend.fp_errors import made_nan
from .._info import check_scalar, half_source
from .._numpy_operands import python_number
from .._state import forward_hook, profiler_hook, vmap_hook
from .._tensor import _C_NAMES, Tensor, _wrap, typename
from . import opmath
from .fused import fused_multiply_add
from .inplace import inplace_operator
from .registry import (FLOAT, NONE, OPERANDS, broadcast_error, conj_value, foreign_operand, op,
                       refuses_kinds)
from .replay import PASS, replay_form


# -- helpers shared by the pointwise families ------------------------------------------------
def scalar_name(array) -> str:
    """torch's name of an array's dtype in its messages ('Float', 'Long', 'Bool')."""
    return D._BY_NP[array.dtype].scalar_name


def zero_gradient(grad, shape=None):
    """torch's ``zeros_like(grad)``, the gradient of a piecewise-constant function (floor,
    sign, fill_, ...): zero also where ``grad`` is NaN or inf, which ``grad * 0`` would carry
    along. A constant: in a ``create_graph`` pass it records nothing. ``shape``: zeros of
    that shape (and grad's dtype) instead."""
    data = grad._data if isinstance(grad, Tensor) else grad
    xp = get_xp(data)
    zeros = xp.zeros_like(data) if shape is None else xp.zeros(shape, data.dtype)
    return _wrap(zeros) if isinstance(grad, Tensor) else zeros


def positive_nan(out, outside):
    """``out`` with NaN of a clear sign bit where ``outside`` (an input outside the function's
    domain), as torch's float32 and float64 kernels give it: NumPy's give the x86 default
    NaN there, whose sign bit is set (``copysign`` and ``signbit`` show the difference), as
    torch's float16 and bfloat16 ones do."""
    if out.dtype.kind != "f" or out.dtype.itemsize < 4 or opmath.reduced_now() is not None:
        return out
    return get_xp(out).where(outside, np.nan, out)


def with_positive_nan(ufunc, x):
    """``ufunc(x)`` (log, sqrt, ...: NaN below 0) with torch's +NaN below 0 (see positive_nan),
    at no cost where it made no NaN."""
    out, nan = made_nan(ufunc, x)
    return positive_nan(out, x < 0) if nan else out


def no_derivative(name):
    """The formula of an op torch records under a ``NotImplemented`` node: backward through it
    raises (torch's ``not_implemented`` derivatives, e.g. heaviside's), and so does forward
    mode, with torch's NotImplementedError."""
    def formula(grad):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")

    def refuse_forward(*_):  # (the registry declares it the inputs' forward-mode rule)
        raise NotImplementedError(f"Trying to use forward AD with aten::{name} that does not "
                                  "support it.")
    formula.forward_refusal = refuse_forward
    return formula


def inplace_without_derivative(d, *inputs):
    """The in-place form of op ``d``, whose derivative torch leaves out, as an op of its own:
    torch's error names the in-place op (``aten::floor_divide_``)."""
    from .inplace import inplace_method
    name_ = d.name + "_"
    twin = op(name_, node=d.node_name, tensors=d.n_tensors, promote=d.promote, check=d.check,
              promote_from=d.promote_from, elementwise=d.elementwise)(d.kernel)
    twin.aten = d.aten
    twin.grad(*inputs)(no_derivative(name_))
    setattr(Tensor, name_, inplace_method(twin, name_))
    return twin


def derivative_not_implemented(what):
    """The formula of an op whose node torch names after it but whose derivative it leaves
    out (``Unique2Backward0``): backward through it raises NotImplementedError."""
    def formula(grad):
        raise NotImplementedError(f"the derivative for '{what}' is not implemented.")
    return formula


def no_forward_ad(name):
    """The JVP rule of an op torch gives no forward-mode derivative: torch's error. Its
    ``refuse_inplace`` raises the in-place form's (``name_``), which forward AD calls before
    the op writes."""
    def rule(*_):
        raise NotImplementedError(
            f"Trying to use forward AD with {name} that does not support it because it has "
            "not been implemented yet.\nPlease file an issue to PyTorch at "
            "https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so "
            "that we can prioritize its implementation or submit a PR adding the "
            "implementation to derivatives.yaml")
    rule.refuse_inplace = rule if name.endswith("_") else no_forward_ad(name + "_")
    return rule


def refuse_forward_ad(name, *tensors):
    """no_forward_ad's error for an op built from others (no rule of its own) that torch
    gives no forward-mode derivative, where one of ``tensors`` has a tangent."""
    from ..autograd.forward_ad import unpack_dual
    if any(t is not None and unpack_dual(t).tangent is not None for t in tensors):
        no_forward_ad(name)()


def not_implemented(kernel, array):
    """torch's refusal of a dtype a kernel has no loop for."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{scalar_name(array)}\'')


def masked_fill(x, mask, value):
    """``x.masked_fill(mask, value)`` inside a formula, as torch's formulas write it (its node
    is MaskedFillBackward0, or MaskedFillBackward1 for a tensor value)."""
    from .indexing import masked_fill as masked_fill_op
    return masked_fill_op(x, mask, value)


def refuse(kinds, error, then=None):
    """A ``check`` refusing tensor arguments of NumPy dtype kinds ``kinds`` ("c": complex, "b":
    bool) as torch does for ops it does not define for them: ``error(tensor)`` is raised.
    ``then``: the op's own check, run after."""
    def check(*args):
        for a in args:
            if isinstance(a, Tensor) and a._data.dtype.kind in kinds:
                raise error(a)
        if then is not None:
            then(*args)
    return check


def complex_unsupported(name):
    """torch's message for floor, ceil and trunc of a complex tensor."""
    return lambda t: NotImplementedError(f"{name} is not supported for complex inputs")


def no_kernel(kernel):
    """torch's message for a dtype its kernel ``kernel`` has no loop for."""
    return lambda t: not_implemented(kernel, t._data)


def with_scalars(self, *scalars, floating=False):
    """``self`` cast to torch's result dtype of (tensor ``self``, Python ``scalars``).

    For ops whose Python-number arguments take part in promotion without being tensor
    inputs of the node (``pow(x, 1.5)``, ``clamp(x, 0.5)``, ``fmod(x, 2.5)``): torch's node
    for them has one input, so the registry cannot promote them.
    """
    if self.dtype.kind == "f":
        for s in scalars:  # (a loop, not all() over a generator: this runs per op call)
            if not (type(s) is float or type(s) is int or s is None):
                break
        else:
            return self  # a Python int or float never promotes a float tensor
    key = ((D._BY_NP[self.dtype], D.DIM),) + tuple(
        (D.scalar_dtype(s), D.SCALAR) for s in scalars if s is not None)
    dt = D.result_type_of(key)
    if floating and dt.category < D.FLOATING:
        dt = D.get_default_dtype()
    return self if self.dtype == dt.np else self.astype(dt.np)


def inplace_with_scalars(opdef, n_scalars=1, floating=False, cpp_names=False):
    """``Tensor.<op>_`` for an op promoted by ``with_scalars``: refuses a narrowing result.

    ``cpp_names``: torch's message names self's type as C++ does ("long int"; clamp_ does).
    """
    def method(self, *args, **kwargs):
        full = opdef.bind((self, *args), kwargs)
        scalars = [a for a in full[1:1 + n_scalars] if not isinstance(a, Tensor)]
        dt = D.from_numpy_dtype(with_scalars(np.empty(0, self._data.dtype), *scalars,
                                             floating=floating).dtype)
        if not D.can_cast(dt, self.dtype):
            out = CPP_NAME[self.dtype.name] if cpp_names else self.dtype.scalar_name
            raise RuntimeError(f"result type {dt.scalar_name} can't be cast to the desired "
                               f"output type {out}")
        return opdef.inplace(*full)
    method.__name__ = opdef.name + "_"
    return method


# C++ type names torch prints in some dtype checks (lerp's "expected dtype float ..."): the
# tensor module's, bfloat16 and complex ones included
CPP_NAME = _C_NAMES


def require_tensor(fn, name, value, position):
    """torch's TypeError for a Python number where a tensor argument is required."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Tensor, "
                        f"not {typename(value)}")


def _is_bool(value):
    if isinstance(value, Tensor):
        return value._data.dtype == np.bool_
    return isinstance(value, (bool, np.bool_)) or getattr(value, "dtype", None) == np.bool_


# -- arithmetic --------------------------------------------------------------------------------


def _alpha(self, alpha):
    """alpha as torch applies it to a result of ``self``'s dtype (its alpha_check)."""
    kind = getattr(self, "dtype", np.dtype(float)).kind
    if isinstance(alpha, (bool, np.bool_)) and kind != "b":
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if kind in "biu" and isinstance(alpha, (float, np.floating)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    return bool(alpha) if kind == "b" else alpha


def _scaled_add(base, scaled, alpha, subtract=False):
    """``base + alpha * scaled`` (``-`` with ``subtract``) as torch's kernel computes it
    (``alpha`` checked): for float tensors one fused multiply-add, ``alpha`` and a number
    operand cast to the result's dtype first (bfloat16/float16 then computed in float32);
    other kinds multiply, then add (an unsigned alpha is not negated: it would not fit)."""
    arrays = [v for v in (base, scaled) if is_array(v)]
    if any(v.dtype.kind != "f" for v in arrays):
        return base - scaled * alpha if subtract else base + scaled * alpha
    alpha = -alpha if subtract else alpha
    dtype = opmath.reduced_now() or np.result_type(*arrays)
    base, scaled = (v if is_array(v) else _number_in(v, dtype) for v in (base, scaled))
    out = fused_multiply_add(scaled, _number_in(alpha, dtype), base)
    if dtype == np.float16 and get_xp(*arrays) is np:
        _half_scalar_loop(out, base, scaled, _number_in(alpha, dtype))
    return out


def _half_scalar_loop(out, base, scaled, alpha):
    """torch's float16 add with alpha computes most elements in float32 with one fused
    multiply-add (its vectorized loop), but the rest of each row (and rows of strided
    operands whole) in its scalar loop, in float16 arithmetic: ``alpha * scaled`` rounded to
    float16, then the sum rounded again. Those elements are recomputed so (in place)."""
    from .._threads import get_num_threads
    mask = scalar_loop_mask(out.shape, (base, scaled), get_num_threads())
    if not mask.any():
        return
    half = np.float16
    b, s = (np.broadcast_to(v, out.shape)[mask] if is_array(v) else half(v)
            for v in (base, scaled))
    with np.errstate(all="ignore"):  # (an overflow is torch's inf, silently)
        out[mask] = b + half(alpha) * s


def _number_in(value, dtype):
    """The Python number ``value`` rounded to ``dtype`` (float16 through float32, as torch's
    Half is built from a float), as a Python number."""
    if value is None:  # (NumPy reads None as NaN: add(x, None, alpha=2) was NaN, silently)
        raise TypeError("a number is required, not None")
    return float(np.asarray(half_source(value) if dtype == np.float16 else value, dtype=dtype))


@op("add", elementwise=True, tensors=2, method=("add", "__add__", "__radd__"), inplace=True,
    weak_scalars=True, ufunc=np.add, quiet=True, conj_saved=True)
def add(self, other, alpha=1):
    if alpha == 1 and not isinstance(alpha, bool):
        return self + other
    return _scaled_add(self, other, _alpha(self, alpha))


@add.grad("self")
def _(grad):
    return grad


@add.grad("other")
def _add_other_gradient(grad, alpha):
    return grad if alpha == 1 else mul_scalar(grad, alpha)  # torch's mul.Scalar (its node)


@replay_form(_add_other_gradient)
def _(grad, alpha):
    return (PASS, (0,)) if alpha == 1 else None


@add.jvp("self")
def _(self_t):
    return self_t


@add.jvp("other")
def _(other_t, alpha):
    return other_t if alpha == 1 else other_t * alpha


add.zero_term_scalar = ("alpha", ("other",))  # (see forward_ad._zero_term_dtype)


@refuses_kinds("b")
def _sub_check(self, other, alpha=1):
    """torch's sub_check: no bool operand (a Python bool counts as a bool tensor)."""
    # (plain tensors, the usual operands of every subtraction, read without a call)
    a = self._data.dtype.kind == "b" if type(self) is Tensor else _is_bool(self)
    b = other._data.dtype.kind == "b" if type(other) is Tensor else _is_bool(other)
    if a and b:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if a or b:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.")


@op("sub", elementwise=True, tensors=2, method=("sub", "__sub__", "subtract"), inplace=True,
    check=_sub_check, weak_scalars=True, ufunc=np.subtract, quiet=True, conj_saved=True)
def sub(self, other, alpha=1):
    _sub_check(self, other)
    if alpha == 1 and not isinstance(alpha, bool):
        return self - other
    return _scaled_add(self, other, _alpha(self, alpha), subtract=True)


@sub.grad("self")
def _(grad):
    return grad


@sub.grad("other")
def _(grad, alpha):
    return -grad if alpha == 1 else mul_scalar(-grad, alpha)


@sub.jvp("self")
def _(self_t):
    return self_t


@sub.jvp("other")
def _(other_t, alpha):
    return -other_t if alpha == 1 else other_t * -alpha


sub.zero_term_scalar = ("alpha", ("other",))


@op("rsub", elementwise=True, tensors=2, node="RsubBackward0", number_node="RsubBackward1",
    check=_sub_check, weak_scalars=True, quiet=True)
def rsub(self, other, alpha=1):
    """other - alpha * self (what ``2 - x`` computes). Shapes that don't broadcast are
    named in the order torch's kernel reads them, ``other`` first."""
    try:
        if alpha == 1:
            return other - self
        return _scaled_add(other, self, _alpha(self, alpha), subtract=True)
    except ValueError as e:
        if "broadcast" in str(e):
            raise broadcast_error((other, self)) from None
        raise


@rsub.grad("self")
def _(grad, alpha):
    return -grad if alpha == 1 else mul_scalar(-grad, alpha)


@rsub.grad("other")
def _(grad):
    return grad


rsub.zero_term_scalar = ("alpha", ("self",))  # (see forward_ad._zero_term_dtype)


@op("mul", elementwise=True, tensors=2, method=("mul", "__mul__", "__rmul__", "multiply"),
    inplace=True, weak_scalars=True, ufunc=np.multiply, quiet=True, conj_saved=True,
    numbers_in_opmath=True)
def mul(self, other):
    return in_own_dtype(self * other, self)


def in_own_dtype(out, self):
    """The result of mul or div in ``self``'s dtype: a float16 tensor with a number met the
    number in float32 (see OpDef.numbers_in_opmath), and torch's kernel rounds the float32
    result to float16 once."""
    dtype = getattr(self, "dtype", None)
    return out if dtype is None or out.dtype == dtype else out.astype(dtype)


@mul.grad("self")
def _(grad, other):
    return grad * other


@mul.grad("other")
def _(grad, self):
    return grad * self


@mul.jvp("self")
def _(self_t, other):
    return self_t * other


# -- a float tensor and a Python number, as torch's own formulas and ops compute it -------------
# (mul.Scalar, div.Scalar: their nodes have one edge and torch's names, MulBackward1 and
# DivBackward1; from Python, ``x * 2`` is mul.Tensor with a wrapped number, MulBackward0)
@op("mul", elementwise=True, quiet=True, node="MulBackward1", conj_saved=True)
def mul_scalar(self, other):
    return self * other


@mul_scalar.grad("self")
def _(grad, other):
    return mul_scalar(grad, other)


@op("add", elementwise=True, quiet=True, node="AddBackward1", conj_saved=True)
def add_scalar(self, other):
    return self + other


@add_scalar.grad("self")
def _(grad):
    return grad


@op("sub", elementwise=True, quiet=True, node="SubBackward1", conj_saved=True)
def sub_scalar(self, other):
    return self - other


@sub_scalar.grad("self")
def _(grad):
    return grad


@op("div", elementwise=True, node="DivBackward1", quiet=True, conj_saved=True)
def div_scalar(self, other):
    return self / other


@div_scalar.grad("self")
def _(grad, other):
    return div_scalar(grad, other)


def scalar_first(value, tensor, op_name):
    """C++'s ``value - tensor`` / ``value / tensor`` (``op_name`` "sub" / "div") in torch's
    formulas: a tensor filled with the number, then ``sub_`` / ``div_`` by ``tensor`` in
    place, so a create_graph pass records SubBackward0 / DivBackward0 whose first edge is
    None (from Python, ``value - tensor`` is rsub: RsubBackward1)."""
    if not isinstance(tensor, Tensor):  # (arrays: first-order backward)
        return value - tensor if op_name == "sub" else value / tensor
    from .._creation import empty_like
    filled = empty_like(tensor).fill_(value)
    return getattr(filled, op_name + "_")(tensor)


@mul.jvp("other")
def _(other_t, self):
    return other_t * self


@op("div", elementwise=True, tensors=2, promote=FLOAT, quiet=True, inplace=True, weak_scalars=True,
    ufunc=np.true_divide, method=("div", "__truediv__", "divide", "true_divide"),
    conj_saved=True, numbers_in_opmath=True)
def div(self, other):
    return in_own_dtype(self / other, self)


@div.grad("self")
def _(grad, other):
    return grad / other


@div.grad("other")
def _(grad, self, other):
    return -grad * ((self / other) / other)  # torch's formula: its nodes under create_graph


@div.complex_form("other")
def _(grad, self, other):
    return -grad * conj_value((self / other) / other)  # (torch's: the quotient conjugated)


@div.jvp("self")
def _(self_t, other):
    return self_t / other


@div.jvp("other")
def _(other_t, other, result):
    return -other_t * result / other


@op("neg", elementwise=True, method=("neg", "__neg__", "negative"), inplace=True,
    conj_saved=True)
def neg(self):
    if self.dtype == np.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return -self


@neg.grad("self")
def _(grad):
    return -grad


def int_pow(base, exponent):
    """Integer ``base ** exponent`` as torch computes it: negative powers give 0, 1 or -1."""
    neg = exponent < 0
    out = np.power(base, np.where(neg, 0, exponent))
    if np.any(neg):
        # NOTE: torch's powi: 1 ** -n == 1, (-1) ** -n == +-1 by parity, anything else 0.
        odd = np.where(exponent % 2 == 0, 1, -1)
        out = np.where(neg, np.where(base == 1, 1, np.where(base == -1, odd, 0)), out)
    return np.asarray(out).astype(np.result_type(base, exponent), copy=False)


# the dtypes in which torch computes x ** 0.5 as sqrt and x ** -0.5 as rsqrt (float16 and
# bfloat16 through C's pow in float32)
_SQRT_POWER = frozenset(np.dtype(n) for n in ("float32", "float64"))


@op("pow", elementwise=True, node="PowBackward0", quiet=True, method=("pow", "__pow__"),
    promote=NONE, writes=lambda self, exponent: int(
        (self.is_floating_point() or self.is_complex()) and exponent in (0, 1)))
# (a floating tensor to the power 0 or 1: torch fills its result with 1 or copies the input)
def pow_scalar(self, exponent):
    t = type(exponent)
    if (t is int or t is float and exponent != 0.5 and exponent != -0.5) and (
            self.dtype in D.NATIVE_FLOAT_NP):
        if t is float and opmath.reduced_now() is not None:
            # NOTE: torch rounds the exponent to bfloat16 before its float32 pow (NumPy's
            # float16 ** rounds it to float16 as torch's float16 kernel does).
            exponent = float(opmath.reduced_now().type(exponent))
        if exponent == 1 and self.flags.c_contiguous:
            # NOTE: torch copies its input for a power of 1 (what pow's gradient takes of every
            # x ** 2); NumPy's power computes it, at four times a copy's cost. (Other layouts
            # keep the power's: the copy would lay out broadcast dimensions differently.)
            return self.copy()
        if exponent == 3:
            # NOTE: torch's kernel multiplies out a cube, x * x * x (two roundings), and
            # takes 1 / (x * x) for a power of -2, where C's pow rounds once
            return self * self * self
        if exponent == -2:
            return 1 / (self * self)
        return self ** exponent  # (the usual call, x ** 2: what the steps below come to)
    x = with_scalars(self, exponent)
    if x.dtype.kind in "iub" and not isinstance(exponent, (float, np.floating)):
        if exponent < 0 and x.dtype.kind != "b":
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        if x.dtype.kind == "b":  # bool ** bool: computed in int64, True where nonzero
            return (self.astype(np.int64) ** int(exponent)).astype(np.bool_)
    if (exponent == 0.5 or exponent == -0.5) and x.dtype.kind == "f":
        if x.dtype not in _SQRT_POWER:
            # (the ufunc: ``**`` would take sqrt or rsqrt, where C's pow gives inf at -inf
            # and 0 at -0.0 for 0.5, inf at -0.0 and 0 at -inf for -0.5)
            return get_xp(x).power(x, x.dtype.type(exponent))
        if exponent == 0.5:
            return with_positive_nan(np.sqrt, x)  # (torch's sqrt)
        # NOTE: torch computes this power as rsqrt (NumPy's ** already takes sqrt for 0.5):
        # -inf at -0.0 and NaN at -inf, where C's pow gives inf and 0. sqrt's gradient,
        # 0.5 * x ** -0.5, is -inf at -0.0 in torch for that reason.
        return 1 / get_xp(x).sqrt(x)
    return x ** exponent


@pow_scalar.grad("self")
def _(grad, self, exponent):
    if exponent == 0:
        return zero_gradient(grad)
    # NOTE: pow_scalar, not ``**``: on raw arrays ``**`` is NumPy's, which computes x ** -0.5
    # as pow where torch takes rsqrt (see the kernel).
    return grad * mul_scalar(pow_scalar(self, exponent - 1), exponent)


@pow_scalar.jvp("self")
def _(self_t, self, exponent):
    if exponent == 0:
        return self_t * 0
    return self_t * (pow_scalar(self, exponent - 1) * exponent)


@op("pow", elementwise=True, node="PowBackward1", tensors=2, quiet=True)
def pow_tensor(self, exponent):
    if self.dtype.kind == "b":
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if self.dtype.kind in "iu":
        return int_pow(self, exponent)
    return self ** exponent


@pow_tensor.grad("self")
def _(grad, self, exponent):
    # NOTE: torch masks exponent == 0 (else 0 ** -1 would give 0 * inf = nan at self == 0).
    return where(exponent == 0, 0.0, grad * (exponent * self ** (exponent - 1)))


@pow_tensor.grad("exponent")
def _(grad, self, exponent, result):
    # NOTE: d/dy x**y = x**y log x, taken as 0 where x == 0 and y >= 0 (torch's convention).
    return grad * where((self == 0) & (exponent >= 0), 0.0, result * log(self))


# torch's forward formulas are its backward ones with the tangent for grad (pow_backward_self,
# pow_backward_exponent): the same masks, exponent == 0 (else 0 ** -1 gives a NaN tangent at
# self == 0) and self == 0 only where exponent >= 0 (0 ** -1's exponent tangent is -inf)
@pow_tensor.jvp("self")
def _(self_t, self, exponent):
    return where(exponent == 0, 0.0, self_t * (exponent * self ** (exponent - 1)))


@pow_tensor.jvp("exponent")
def _(exponent_t, self, exponent, result):
    return exponent_t * where((self == 0) & (exponent >= 0), 0.0, result * log(self))


@op("pow", elementwise=True, node="PowBackward2", tensors=2, quiet=True, writes=1)  # (fill_)
def pow_scalar_base(self, exponent):
    """``self ** exponent`` for a Python-number base (what ``2 ** x`` computes)."""
    if exponent.dtype.kind == "b":
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if exponent.dtype.kind in "iu":
        return int_pow(np.asarray(self, exponent.dtype), exponent)
    return self ** exponent


@pow_scalar_base.grad("exponent")
def _(grad, self, exponent, result):
    import math
    if self == 0:  # torch: 0 where the exponent is >= 0, result * log(0) = -inf elsewhere
        return grad * where(exponent >= 0, 0.0, result * -math.inf)
    return grad * mul_scalar(result, math.log(self))


def pow(input, exponent):  # noqa: A002 - torch's name
    """``self ** exponent`` for tensors or Python numbers on either side."""
    if isinstance(exponent, Tensor) or (not isinstance(input, Tensor) and hasattr(exponent,
                                                                                 "shape")):
        if isinstance(input, Tensor) or hasattr(input, "shape"):
            return pow_tensor(input, exponent)
        return pow_scalar_base(input, exponent)
    return pow_scalar(input, exponent)


_pow_scalar_inplace = inplace_with_scalars(pow_scalar)


def _pow_(self, exponent):
    if isinstance(exponent, Tensor):
        return pow_tensor.inplace(self, exponent)
    return _pow_scalar_inplace(self, exponent)


def _pow_operator(self, exponent):
    """``self ** exponent``: a Python number (the usual ``x ** 2``) goes straight to
    pow_scalar's generated path, where pow() and the op's call would send it, two calls
    later; anything else goes to pow(), and an operand ember does not take gives
    NotImplemented (what registry.guard_operators gives the other operators)."""
    t = type(exponent)
    if ((t is int or t is float) and type(self) is Tensor and forward_hook[0] is None
            and profiler_hook[0] is None):
        call = pow_scalar.caller
        if call is not None:
            return call((self, exponent))
    if isinstance(exponent, np.generic):  # (a NumPy scalar is a number, as torch's parser
        return _pow_operator(self, python_number(exponent))  # reads it: x stays float32)
    if t is not Tensor and not isinstance(exponent, OPERANDS):
        return foreign_operand("__pow__", self, exponent)
    return pow(self, exponent)


_pow_operator.__name__ = _pow_operator.__qualname__ = "__pow__"
_pow_operator._takes_operand = True  # (guard_operators leaves it as it is)
Tensor.pow = pow
Tensor.__pow__ = _pow_operator
Tensor.pow_ = Tensor.__ipow__ = _pow_
Tensor.__rpow__ = lambda self, base: pow_scalar_base(base, self)
Tensor.__rsub__ = lambda self, other: rsub(self, other)


def _rtruediv(self, other):
    """``other / self`` as torch's: ``self.reciprocal() * other``, the operator, so that an
    ndarray ``other`` takes NumPy's reflected multiply (see registry.OPERANDS)."""
    if type(other) is not Tensor and not isinstance(other, OPERANDS + (np.ndarray,)):
        return NotImplemented
    return reciprocal(self) * other


_rtruediv._takes_operand = True
Tensor.__rtruediv__ = _rtruediv
# A Python float operand of these is a float64 tensor in their tangents inside a torch.func
# transform (see forward_ad._transform_scalar_dtype); rsub's number stays a Scalar.
add.number_operands = sub.number_operands = mul.number_operands = div.number_operands = True
Tensor.__iadd__ = inplace_operator(add, "__iadd__")
Tensor.__isub__ = inplace_operator(sub, "__isub__")
Tensor.__imul__ = inplace_operator(mul, "__imul__")
Tensor.__itruediv__ = lambda self, other: self.div_(other)


def _pos(self):
    if self._data.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


Tensor.__pos__ = _pos


def _tensor_other(name):
    def check(self, other):
        require_tensor(name, "other", other, 2)
    return check


@op("maximum", elementwise=True, tensors=2, check=refuse("c", lambda t: RuntimeError(
    "maximum not implemented for complex tensors."), _tensor_other("maximum")))
def maximum(self, other):
    return np.maximum(self, other)


@maximum.grad("self", writes=1)
def _(grad, self, other):
    # NOTE: ties split the gradient in half between the inputs, as torch does; where either
    # is NaN both get the full gradient (torch masks only where one is strictly smaller).
    return masked_fill(where(self == other, div_scalar(grad, 2), grad), self < other, 0)


@maximum.grad("other", writes=1)
def _(grad, self, other):
    return masked_fill(where(self == other, div_scalar(grad, 2), grad), self > other, 0)


def tangent_of_a_pick(tangents, share):
    """torch's forward formula of an op that picks one of two inputs elementwise (maximum,
    fmax, ...): ``other_t + share * (self_t - other_t)``, ``share`` being self's part, a
    missing tangent standing there as torch's ZeroTensor (so where NaN makes no pick, or the
    other input is picked, self's tangent gives a zero of its sign)."""
    self_t, other_t = tangents
    if other_t is None:
        return share * self_t
    return other_t + share * (-other_t if self_t is None else self_t - other_t)


def _share_of_self(self, other, picked, result):
    """maximum's and minimum's share of self: 1 where ``picked``, 1/2 at a tie, 0 elsewhere
    (where either input is NaN too), in the result's dtype."""
    return where(self == other, 0.5, picked.to(result.dtype))


@maximum.jvp("self", "other", joint=True)
def _(tangents, self, other, result):
    return tangent_of_a_pick(tangents, _share_of_self(self, other, self > other, result))


@op("minimum", elementwise=True, tensors=2, check=refuse("c", lambda t: RuntimeError(
    "minimum not implemented for complex tensors."), _tensor_other("minimum")))
def minimum(self, other):
    return np.minimum(self, other)


@minimum.grad("self", writes=1)
def _(grad, self, other):
    return masked_fill(where(self == other, div_scalar(grad, 2), grad), self > other, 0)


@minimum.grad("other", writes=1)
def _(grad, self, other):
    return masked_fill(where(self == other, div_scalar(grad, 2), grad), self < other, 0)


def _tensor_method(opdef, name):
    """``Tensor.<name>(other)``: torch counts the method's positions from ``other`` (1)."""
    def method(self, other):
        require_tensor(name, "other", other, 1)
        return opdef(self, other)
    method.__name__ = name
    return method


@minimum.jvp("self", "other", joint=True)
def _(tangents, self, other, result):
    return tangent_of_a_pick(tangents, _share_of_self(self, other, self < other, result))


maximum.own_jvp = minimum.own_jvp = True  # (see _batched_forward._elementwise)

Tensor.maximum = _tensor_method(maximum, "maximum")
Tensor.minimum = _tensor_method(minimum, "minimum")


@op("reciprocal", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True)
def reciprocal(self):
    return 1 / self


@reciprocal.grad("self")
def _(grad, result):
    return -grad * (result * result)


# -- unary maths -------------------------------------------------------------------------------
@op("exp", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True, ufunc=np.exp,
    conj_saved=True)
def exp(self):
    return np.exp(self)


@exp.grad("self")
def _(grad, result):
    return grad * result


@exp.jvp("self")
def _(self_t, result):
    return self_t * result


@op("log", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True)
def log(self):
    return with_positive_nan(np.log, self)


@log.grad("self")
def _(grad, self):
    return grad / self


@log.jvp("self")
def _(self_t, self):
    return self_t / self


@op("sin", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True, ufunc=np.sin)
def sin(self):
    return np.sin(self)


@sin.grad("self")
def _(grad, self):
    return grad * cos(self)


@op("cos", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True, ufunc=np.cos)
def cos(self):
    return np.cos(self)


@cos.grad("self")
def _(grad, self):
    return grad * -sin(self)


@op("tanh", elementwise=True, promote=FLOAT, method=True, inplace=True, ufunc=np.tanh,
    complex_grad=True)
def tanh(self):
    return np.tanh(self)


@tanh.grad("self")
def _(grad, result):
    return tanh_backward(grad, result)


def _read_only_ones():
    ones = {np.dtype(c): np.ones((), c) for c in "efd"}
    for one in ones.values():
        one.flags.writeable = False
    return ones


# 1 as a read-only 0-d NumPy array of each real float dtype, for the gradient kernels
# run at every node of their op (sigmoid_backward): NumPy subtracts it from an
# array about 0.2 µs faster than the Python number, which it converts on every call, with the
# same result (the number is taken in the array's dtype either way)
_ONES = _read_only_ones()


# NOTE: tanh's gradient as one op, as torch has it: with create_graph it records one node
# (TanhBackwardBackward0) instead of three, and a double backward runs one instead of three.
# For complex values the kernel conjugates its factor, as torch's does, so tanh's formula
# passes the result itself (the node's second edge is tanh's, with no ConjBackward0).
@op("tanh_backward", elementwise=True, quiet=True, tensors=2, node="TanhBackwardBackward0",
    complex_grad=True)
def tanh_backward(grad_output, output):
    dtype = output.dtype
    if dtype.kind == "c":
        return grad_output * (1 - output * output).conj()
    if dtype == np.float32 and getattr(grad_output, "shape", None) == output.shape:
        return _float32_tanh_gradient(grad_output, output)
    factor = _one_minus_square(output)
    if dtype == np.float16:
        return (grad_output.astype(np.float32) * factor).astype(np.float16)
    if np.shape(grad_output) == factor.shape:
        return np.multiply(grad_output, factor, out=factor)
    return grad_output * factor


def _float32_tanh_gradient(grad_output, output):
    """tanh_backward of a float32 output and a gradient of its shape: the factor's float32
    array multiplied in place (the product torch's kernel rounds: multiplication commutes).

    NOTE: where the output and the gradient are both NaN, the NaN kept (its payload and
    sign) depends on the operand order and on each library's vector loops: torch keeps the
    output's in some 16-element blocks and the gradient's in others; this keeps the
    output's (the order before kept the gradient's). Neither matches torch throughout."""
    factor = _narrow_one_minus_square(output)
    factor *= grad_output
    return factor


@replay_form(tanh_backward)
def _(grad_output, output):
    # (the float32 path's tests are of dtypes and shapes: a program calls it directly)
    if output.dtype == np.float32 and getattr(grad_output, "shape", None) == output.shape:
        return _float32_tanh_gradient, (0, 1)
    return None


def _one_minus_square(y):
    """``1 - y * y`` rounded once, as torch's tanh_backward computes it (a fused multiply-add:
    rounding the square first differs in the last bit for one element in three); float16 in
    float32, the result rounded to float16 after the product with the gradient, as torch's."""
    if y.dtype == np.float64:
        return fused_multiply_add(-y, y, 1.0)
    return _narrow_one_minus_square(y)


def _narrow_one_minus_square(y):
    """_one_minus_square of float32 or float16 ``y``, as float32.

    NOTE: ``y * y`` is exact in float64 and so is ``1 - y * y`` where |y| >= 1/8; below, the
    float64 difference is rounded once more, which lands on a float32 midpoint practically
    never (none in 4e7 samples against torch): two passes cheaper than the emulated fused
    multiply-add, which float64 ``y`` needs. Written for small arrays: the method ``astype``
    (no array-module look-up), in-place operators and a positional output (no keyword to
    parse): 4 calls of 1.9 µs in all on 16 elements where a keyword-argument form took 3.0."""
    wide = y.astype(np.float64)  # (a copy: y is float32 or float16)
    wide *= wide
    np.subtract(1.0, wide, wide)
    return wide.astype(np.float32)


@tanh_backward.grad("grad_output")
def _(grad, output):
    return tanh_backward(grad, conj_value(output))


@tanh_backward.grad("output")
def _(grad, grad_output, output):
    return conj_value(grad) * (-2 * conj_value(output) * grad_output)


@tanh.jvp("self")
def _(self_t, result):  # (torch's: its gradient kernel on the tangent, one node)
    return tanh_backward(self_t, conj_value(result))


@op("sigmoid", elementwise=True, promote=FLOAT, method=True, inplace=True, complex_grad=True)
def sigmoid(self):
    if self.dtype == np.float16:  # torch computes in float32 and rounds once
        return _sigmoid(self.astype(np.float32)).astype(np.float16)
    return _sigmoid(self)


def _sigmoid(self):
    if self.dtype.kind == "c":  # (no ordering of complex numbers to split on)
        return 1 / (1 + get_xp(self).exp(-self))
    # NOTE: exp(-|x|) never overflows, and each branch is exact where it is used.
    e = np.exp(-np.abs(self))
    return np.where(self >= 0, 1 / (1 + e), e / (1 + e))


@sigmoid.grad("self")
def _(grad, result):
    return sigmoid_backward(grad, result)


# NOTE: as tanh_backward: create_graph records torch's one node (SigmoidBackwardBackward0),
# and the kernel conjugates its factor for complex values (torch's grad * conj(y (1 - y))).
@op("sigmoid_backward", elementwise=True, quiet=True, tensors=2, node="SigmoidBackwardBackward0",
    complex_grad=True)
def sigmoid_backward(grad_output, output):
    one = _ONES.get(output.dtype) if type(output) is np.ndarray else None  # (see _ONES)
    if one is not None:  # (torch's order: grad * (1 - y), then times y)
        return grad_output * (one - output) * output
    if output.dtype.kind == "c":
        return grad_output * (output * (1 - output)).conj()
    return grad_output * (1 - output) * output


@sigmoid_backward.grad("grad_output")
def _(grad, output):
    return sigmoid_backward(grad, conj_value(output))


@sigmoid_backward.grad("output")
def _(grad, grad_output, output):
    return conj_value(grad) * grad_output * (1 - 2 * conj_value(output))


@sigmoid.jvp("self")
def _(self_t, result):  # (torch's: its gradient kernel on the tangent, one node)
    return sigmoid_backward(self_t, conj_value(result))


def _relu_check(self):
    """torch's refusal of a complex relu (its kernel is clamp_min's). One test: every ReLU of
    a network runs it."""
    if isinstance(self, Tensor) and self._data.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")


@op("relu", elementwise=True, method=True, inplace=True, check=_relu_check)
def relu(self):
    if self.dtype.kind == "b":
        raise RuntimeError("Boolean inputs not supported for relu")
    # (the input second: NumPy's maximum gives its second operand at a tie, so -0.0 stays
    # -0.0, as torch's x < 0 ? 0 : x keeps it)
    return np.maximum(0, self)


@replay_form(relu)
def _(self):
    # (np.maximum bound to its first operand: the kernel's one call, without its frame)
    if type(self) is np.ndarray and self.dtype.kind != "b" and self.ndim:  # (0-d: a scalar)
        return functools.partial(np.maximum, 0), (0,)
    return None


@relu.grad("self")
def _(grad, result):
    return threshold_backward(grad, result, 0)


# NOTE: the gradients of piecewise-linear functions are ops of (grad_output, self), as torch's
# *_backward ops: linear in grad_output, of zero derivative in self. So a create_graph pass
# records them even when grad_output is a constant, and a second derivative is zeros (a
# graph), as in torch, instead of a constant that does not require grad.
@op("threshold_backward", elementwise=True, tensors=2)
def threshold_backward(grad_output, self, threshold):
    if self.dtype == np.float16:  # (torch's kernel compares float16 values in float32)
        threshold = np.float32(threshold)
    mask = self <= threshold
    if type(mask) is np.ndarray and mask.size >= 4096 and type(grad_output) is np.ndarray:
        # (ReLU's gradient in a training step: what _where does for it, without its call)
        out = masked_or_zero(mask, grad_output, keep=False)
        if out is not None:
            return out
    return _where.kernel(mask, 0, grad_output)


@replay_form(threshold_backward)
def _(grad_output, self, threshold):
    # (the masked path's tests are of types, dtypes and sizes: a program computes its words)
    bits = _MASK_WORDS.get(grad_output.dtype.itemsize) if grad_output.dtype.kind == "f" else None
    # (not float16's path: its threshold is taken in float32)
    if (type(self) is np.ndarray and type(grad_output) is np.ndarray and bits is not None
            and self.size >= 4096 and self.shape == grad_output.shape
            and type(threshold) in (int, float) and self.dtype != np.float16):
        return functools.partial(_zero_at_or_below, bits), (0, 1, 2)
    return None


def _zero_at_or_below(bits, grad_output, self, threshold):
    """threshold_backward's masked path on NumPy arrays (masked_or_zero(self <= threshold,
    grad_output, keep=False)): each value's bits multiplied by a word that is 0 where
    ``self <= threshold`` and 1 elsewhere: the mask inverted in place, then cast to words (a
    NaN in ``self`` keeps its gradient, as ``self <= threshold`` is then false)."""
    word = _less_equal(self, threshold)
    _invert(word, out=word)
    word = word.astype(bits)
    return _multiply(grad_output.view(bits), word, out=word).view(grad_output.dtype)


_MASK_WORDS = {2: np.uint16, 4: np.uint32, 8: np.uint64}
# (bound once: relu's gradient, at every training step)
_less_equal, _invert, _multiply = np.less_equal, np.invert, np.multiply


@threshold_backward.grad("grad_output")
def _(grad, self, threshold):
    return threshold_backward(grad, self, threshold)


@threshold_backward.grad("self")
def _(grad):
    return zero_gradient(grad)


@relu.jvp("self")
def _(self_t, result):
    # torch's formula (threshold_backward): the tangent is kept where the result is not
    # <= 0, so a NaN result keeps it
    return threshold_backward(self_t, result, 0)


@op("sqrt", elementwise=True, promote=FLOAT, quiet=True, method=True, inplace=True)
def sqrt(self):
    return with_positive_nan(np.sqrt, self)


@sqrt.grad("self")
def _(grad, result):
    return grad / mul_scalar(result, 2)


@op("abs", elementwise=True, method=("abs", "__abs__", "absolute"), inplace=True, writes=1,
    quiet=True)  # (a complex64 |z| past float32's range rounds to inf, as torch's, silently)
def abs(self):
    if self.dtype == np.bool_:
        raise not_implemented("abs_cpu", self)
    if self.dtype == np.complex64:
        # NOTE: NumPy's complex64 |z| can be 1 ulp off (|1+6j| = 6.0827622); torch's hypot is
        # correctly rounded (6.0827627), as |z| computed in double and rounded once is
        return np.abs(self.astype(np.complex128)).astype(np.float32)
    return np.abs(self)


abs.inplace_check = refuse("c", lambda t: RuntimeError(
    "In-place abs is not supported for complex tensors."))


@abs.grad("self")
def _(grad, self):
    from .unary import sgn
    return grad * sgn(self)  # torch's formula (its node, SgnBackward0, under create_graph)


def is_complex_value(x):
    """Whether an array or Tensor holds complex numbers (formulas get both)."""
    return (x._data if isinstance(x, Tensor) else x).dtype.kind == "c"


@op("sign", elementwise=True, method=True, inplace=True, check=refuse("c", lambda t: (
    NotImplementedError("Unlike NumPy, ember.sign is not intended to support complex numbers. "
                        "Please use ember.sgn instead."))))
def sign(self):
    return self.copy() if self.dtype == np.bool_ else sign_of(self)


def sign_of(x):
    """torch's sign: -1, 0 or 1, and 0 for NaN (``(0 < x) - (x < 0)``), where NumPy gives NaN.
    Complex numbers: x / |x| (sgn)."""
    xp = get_xp(x)
    out = xp.sign(x)
    if out.dtype.kind == "f":
        nan = xp.isnan(out)
        if nan.any():  # (a where, not a masked write: NumPy's sign of a 0-d array is a scalar)
            out = xp.where(nan, 0, out)
    return out


@sign.grad("self")
def _(grad):
    return zero_gradient(grad)


def _where_check(condition, self, other):
    dt = condition._data.dtype if isinstance(condition, Tensor) else None
    if dt is not None and dt != np.bool_ and dt != np.uint8:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {D._BY_NP[dt].scalar_name}")


@op("where", elementwise=True, tensors=3, node="WhereBackward0", promote_from=1, check=_where_check)
def _where(condition, self, other):
    # A gradient masked with 0 (ReLU's, where's own): see masked_or_zero for why, and why
    # only from a few thousand elements on (below that its extra calls cost more).
    if type(condition) is np.ndarray and condition.size >= 4096:
        out = None
        if type(self) is np.ndarray and _is_plus_zero(other, self.dtype):
            out = masked_or_zero(condition, self, keep=True)
        elif type(other) is np.ndarray and _is_plus_zero(self, other.dtype):
            out = masked_or_zero(condition, other, keep=False)
        if out is not None:
            return out
    if type(self) in _PYTHON_NUMBERS and type(other) in _PYTHON_NUMBERS:
        # two Python numbers: torch's dtype for them, not NumPy's (float64 for floats)
        dt = D.result_type_of(((D.scalar_dtype(self), D.SCALAR),
                               (D.scalar_dtype(other), D.SCALAR))).np
        xp = get_xp(condition)
        return xp.where(condition, xp.asarray(self, dt), xp.asarray(other, dt))
    return np.where(condition, self, other)


_PYTHON_NUMBERS = (bool, int, float, complex)


def _is_plus_zero(x, dtype):
    """x is a Python zero, or a 0-d zero of ``dtype``, without a sign bit (so that where()
    would neither promote nor write a -0.0)."""
    t = type(x)
    if t is int:
        return x == 0
    if t is float:
        return x == 0 and math.copysign(1.0, x) > 0
    return (t is np.ndarray and x.ndim == 0 and x.dtype == dtype and x == 0
            and not np.signbit(x))


@_where.grad("self")
def _(grad, condition):
    return where(condition, grad, 0)


@_where.grad("other")
def _(grad, condition):
    return where(condition, 0, grad)


def where(condition, input=None, other=None):
    """``input`` where ``condition`` holds, else ``other`` (tensors or Python numbers)."""
    if input is None and other is None:
        vm = vmap_hook[0]
        if vm is not None:  # (torch's refusal under vmap: each example's count differs)
            vm.refuse_dynamic_shape("aten::where", condition)
        return nonzero_tuple(condition)
    if input is None or other is None:  # (torch's parser takes None for neither alone)
        raise _where_refusal((condition, input, other), _WHERE_OVERLOADS)
    try:
        return _where(condition, input, other)
    except TypeError as e:  # (formulas give arrays alone, or an array condition: they pass)
        if hasattr(e, "method_form"):  # an ndarray beside a tensor (registry.not_tensor_error)
            raise _where_refusal((condition, input, other), _WHERE_OVERLOADS) from None
        raise


# torch's where overloads, as its argument parser lists them (None: an overload it lists
# without saying why it did not match: another number of arguments, or keyword-only ones)
_WHERE_OVERLOADS = (("Tensor condition", None),
                    ("Tensor condition, Tensor input, Tensor other, *, Tensor out = None", None),
                    ("Tensor condition, Number self, Tensor other", ("T", "N", "T")),
                    ("Tensor condition, Tensor input, Number other", ("T", "T", "N")),
                    ("Tensor condition, Number self, Number other", ("T", "N", "N")))
_WHERE_METHOD_OVERLOADS = (("Tensor condition, Tensor other", ("T", "T")),
                           ("Tensor condition, Number other", ("T", "N")))


def _where_refusal(args, overloads):
    """torch's TypeError for where given a NumPy array (it takes tensors and numbers)."""
    def fits(value, kind):  # (torch's message marks a number even where a Number goes)
        return kind == "T" and isinstance(value, Tensor)
    words = ["Tensor" if isinstance(a, Tensor) else typename(a) for a in args]
    lines = [f"where() received an invalid combination of arguments - got ({', '.join(words)}), "
             "but expected one of:"]
    for signature, kinds in overloads:
        lines.append(f" * ({signature})")
        if kinds is not None:
            marked = [w if fits(a, k) else f"!{w}!" for w, a, k in zip(words, args, kinds)]
            lines.append("      didn't match because some of the arguments have invalid "
                         f"types: ({', '.join(marked)})")
    return TypeError("\n".join(lines) + "\n")


def _where_method(self, condition, other):
    if not isinstance(condition, Tensor) or other is None:  # (torch takes a tensor
        # condition only, and no None)
        raise _where_refusal((condition, other), _WHERE_METHOD_OVERLOADS)
    try:
        return _where(condition, self, other)
    except TypeError as e:
        if hasattr(e, "method_form"):
            raise _where_refusal((condition, other), _WHERE_METHOD_OVERLOADS) from None
        raise


def nonzero_tuple(condition):
    from .._creation import tensor_from_array
    data = condition._data if isinstance(condition, Tensor) else condition
    return tuple(tensor_from_array(i) for i in np.nonzero(data))


Tensor.where = _where_method

# -- comparisons and logic (no gradient) -------------------------------------------------------


def _compare(name, ufunc, dunder):
    def kernel(self, other):
        return ufunc(self, other)
    kernel.__name__ = name
    # NOTE: complex numbers are not ordered: torch has no loop for <, <=, >, >= on them.
    check = None if name in ("eq", "ne") else _refuse_complex_order(name)
    return op(name, tensors=2, method=(name, dunder), differentiable=False, check=check,
              elementwise=True)(kernel)


def _refuse_complex_order(name):
    """``name``'s check: a complex tensor, or a Python complex number beside a real tensor
    (torch compares in their complex result dtype, for which it has no loop either)."""
    refuse_tensors = refuse("c", no_kernel(f"{name}_cpu"))

    def check(*args):
        refuse_tensors(*args)
        if any(type(a) is complex for a in args):
            t = next(a for a in args if isinstance(a, Tensor))
            # (float16 with a complex number is torch's complex32, which NumPy lacks)
            common = ("ComplexHalf" if t.dtype is D.float16 else
                      D.result_type_of(((t.dtype, D.DIM), (D.complex64, D.SCALAR))).scalar_name)
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{common}\'')
    return check


eq = _compare("eq", np.equal, "__eq__")
ne = _compare("ne", np.not_equal, "__ne__")
lt = _compare("lt", np.less, "__lt__")
le = _compare("le", np.less_equal, "__le__")
gt = _compare("gt", np.greater, "__gt__")
ge = _compare("ge", np.greater_equal, "__ge__")
Tensor.greater, Tensor.less = Tensor.gt, Tensor.lt
Tensor.greater_equal, Tensor.less_equal, Tensor.not_equal = Tensor.ge, Tensor.le, Tensor.ne


# -- filling and copying -----------------------------------------------------------------------
def _filled(self, value):
    if not is_array(value):  # (a tensor's value is copied: no check)
        value = check_scalar(value, self.dtype)
    elif value.ndim:
        raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value.ndim} dimensions.")
    elif value.dtype.kind == "c" and self.dtype.kind != "c":
        value = value.real  # (torch drops the imaginary part without a word)
    return np.full_like(self, value)


# torch.fill (FillBackward1, of a number FillBackward0) and x.fill_ (FillBackward3, 2): one
# kernel and one derivative, under the node names of torch's four overloads
fill = op("fill", tensors=2, promote=NONE, inplace="fill_", node="FillBackward3",
          number_node="FillBackward2", quiet=True)(_filled)  # (a NaN tensor into integers:
fill_out_of_place = op("fill", tensors=2, promote=NONE, node="FillBackward1",  # torch is silent)
                       number_node="FillBackward0", quiet=True)(_filled)


def _zero_for_self(grad):
    return zero_gradient(grad)


def _sum_for_value(grad):
    from .reduction import sum_all
    return sum_all(grad)


for _fill in (fill, fill_out_of_place):
    _fill.grad("self")(_zero_for_self)
    _fill.grad("value")(_sum_for_value)


@op("zero", elementwise=True, promote=NONE, inplace="zero_")
def zero(self):
    return np.zeros_like(self)


@zero.grad("self")
def _(grad):
    return zero_gradient(grad)


# (torch's binding calls the source ``other``: its schema's ``src`` is refused by name)
@op("copy", elementwise=True, tensors=2, promote=NONE, inplace="copy_", node="CopyBackwards")
def copy(self, other, non_blocking=False):
    shape = getattr(other, "shape", None)
    if shape is None:  # (a number is a source, as torch's)
        if not isinstance(other, (bool, int, float, complex)):  # (worded as torch's parser
            # by the method's wrapper: _arg_parser.py)
            raise TypeError(f"copy_(): argument 'other' must be Tensor, not "
                            f"{type(other).__name__}")
        shape = ()
    src = move(other, device_of(self)) if type(other) is not type(self) else other  # (devices)
    if shape != self.shape:
        np.result_type(src)  # (a sparse operand leaves the dense kernel first, as in torch)
        _check_copies_into(self.shape, shape)
    return D.as_half_source(np.broadcast_to(src, self.shape), self.dtype).astype(self.dtype)


def _check_copies_into(shape, src_shape):
    """torch's errors for a source that does not broadcast to self's shape: shapes that don't
    broadcast at all, or whose broadcast shape is not self's."""
    try:
        full = np.broadcast_shapes(shape, src_shape)
    except ValueError:
        raise broadcast_error((np.empty(shape), np.empty(src_shape))) from None
    if full != tuple(shape):
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                           f"{list(full)}")


@copy.grad("self")
def _(grad):
    return zero_gradient(grad)


@copy.grad("other")
def _(grad):
    return grad


# torch's kernels that write their results through these out= functions, whose autograd
# layer refuses an inference dual (see forward_ad._check_out_function)
abs.out_function = "abs_out"
