"""Elementwise functions of a number's representation or of integers: gcd/lcm, frexp,
heaviside, nextafter, signbit, isin, unravel_index, and detach_copy.

Where torch records a node (frexp's mantissa, nextafter, and heaviside's ``NotImplemented``
node whose backward raises) they are ops with torch's formulas; the rest compute on the arrays
and wrap the results, recording nothing, as torch's do.
"""
from __future__ import annotations

__all__ = ['detach_copy', 'frexp', 'gcd', 'heaviside', 'isin', 'lcm', 'nextafter', 'signbit',
           'unravel_index']

import math

import numpy as np

from .. import _dtype as D
from .._backend import get_xp
from .._backend.layout import preserving_layout
from .._overloads import NO_VALUE, choose
from .._tensor import Tensor, _wrap
from .pointwise import (
    inplace_without_derivative,
    no_derivative,
    not_implemented,
    require_tensor,
    where,
    zero_gradient,
)
from .reduction import return_type
from .registry import NONE, op

_frexp = return_type("frexp", ("mantissa", "exponent"))


def _array(x):
    return x._data if isinstance(x, Tensor) else np.asarray(x)


def _integral(name, a, b):
    for x in (a, b):
        if x.dtype.kind not in "iub" or x.dtype.kind == "b":
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                      f"'{D._BY_NP[x.dtype].scalar_name}'")


def _result_dtype(a, b):
    from .. import result_type
    return result_type(a, b).np


def gcd(input, other, *, out=None):  # noqa: A002 - torch's name
    """Elementwise greatest common divisor of integer tensors."""
    a, b = _array(input), _array(other)
    _integral("gcd", a, b)
    return _wrap(get_xp(a).gcd(a, b).astype(_result_dtype(input, other)))


def lcm(input, other, *, out=None):  # noqa: A002
    """Elementwise least common multiple of integer tensors."""
    a, b = _array(input), _array(other)
    _integral("lcm", a, b)
    return _wrap(get_xp(a).lcm(a, b).astype(_result_dtype(input, other)))


@op("frexp", promote=NONE, outputs=2, diff_outputs=(True, False), node="FrexpBackward0",
    writes=1)  # (its results are written through their out= form)
def _frexp_op(self):
    m, e = get_xp(self).frexp(self)  # (torch's results: empty_like(self), preserve_format)
    return preserving_layout(m.astype(self.dtype), self), preserving_layout(e.astype(np.int32),
                                                                            self)


@_frexp_op.grad("self")
def _(grads, result1):
    return grads[0] / 2.0 ** result1


def frexp(input, *, out=None):  # noqa: A002
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent``, |mantissa| in
    [0.5, 1)."""
    if input.dtype.is_complex or not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    return _frexp(*_frexp_op(input))


def _check_heaviside(self, values):
    require_tensor("heaviside", "values", values, 2)
    if self.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")


@op("heaviside", tensors=2, promote=NONE, node="NotImplemented", check=_check_heaviside,
    method=True, elementwise=True)
def heaviside(self, values):
    """0 where ``input < 0``, 1 where ``input > 0``, ``values`` where it is 0."""
    xp = get_xp(self, values)
    return xp.where(self == 0, values, (self > 0).astype(self.dtype)).astype(self.dtype)


heaviside.grad("self", "values")(no_derivative("heaviside"))
heaviside_ = inplace_without_derivative(heaviside, "self", "values")


def _check_nextafter(self, other):
    for a in (self, other):
        if isinstance(a, Tensor) and not a.dtype.is_floating_point:
            raise not_implemented("nextafter_cpu", a._data)


@op("nextafter", tensors=2, check=_check_nextafter, method=True, inplace=True)
def nextafter(self, other):
    """The next floating-point value after ``input`` towards ``other``."""
    return get_xp(self, other).nextafter(self, other)


@nextafter.grad("self")
def _(grad, self, other):
    # NOTE: torch's formula: the identity, except where the two are equal (nextafter(a, a)
    # is a, flat in self).
    return where(self != other, grad, 0)


@nextafter.grad("other")
def _(grad, other_shape):
    return zero_gradient(grad, other_shape)


@op("detach_copy", promote=NONE, node="NotImplemented")
def detach_copy(self):
    """A copy of ``input``'s data; unlike ``detach()``, torch records a node for it, and
    backward through that node raises."""
    return self.copy()


detach_copy.grad("self")(no_derivative("detach_copy"))


def _check_signbit(self):
    if self.dtype.is_complex:
        raise NotImplementedError("signbit is not implemented for complex tensors.")


@op("signbit", method=True, differentiable=False, promote=NONE, elementwise=True,
    check=_check_signbit)
def signbit(self):
    """Whether each element's sign bit is set (true for -0.0)."""
    if self.dtype.kind != "f" and D._BY_NP[self.dtype].is_floating_point:
        self = self.astype(np.float32)  # bfloat16, float8 (exact in float32; NumPy has none)
    return get_xp(self).signbit(self) if self.dtype.kind == "f" else self < 0


_ISIN_OVERLOADS = ((("Tensor", "elements"), ("Tensor", "test_elements")),
                   (("Number", "element"), ("Tensor", "test_elements")),
                   (("Tensor", "elements"), ("Number", "test_element")))
_ISIN_KEYWORDS = ", *, bool assume_unique = False, bool invert = False, Tensor out = None"


def isin(_first=NO_VALUE, _second=NO_VALUE, /, *, elements=NO_VALUE, test_elements=NO_VALUE,
         element=NO_VALUE, test_element=NO_VALUE, assume_unique=False, invert=False):
    """Whether each element of ``elements`` is in ``test_elements``; torch's overloads take a
    number for one side (``element=`` or ``test_element=`` by keyword)."""
    named = {"elements": elements, "test_elements": test_elements, "element": element,
             "test_element": test_element}
    named = {k: v for k, v in named.items() if v is not NO_VALUE}
    _, values = choose("isin", _ISIN_OVERLOADS, (_first, _second), named, _ISIN_KEYWORDS)
    for v in values:  # (elements first: torch's check names the first refused dtype)
        if isinstance(v, Tensor):
            kind = v.dtype.scalar_name if v._data.dtype.kind in "bc" else None
        elif isinstance(v, (bool, complex)):
            kind = "Bool" if isinstance(v, bool) else "ComplexDouble"
        else:
            kind = None
        if kind is not None:
            raise RuntimeError(f"Unsupported input type encountered for isin(): {kind}")
    a, b = _array(values[0]), _array(values[1])
    return _wrap(np.asarray(get_xp(a).isin(a, b, invert=invert)))


def unravel_index(indices, shape):
    """The coordinates in ``shape`` of flat ``indices``: one int64 tensor per dimension."""
    idx = _array(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"{D._BY_NP[idx.dtype]}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    size = math.prod(shape)
    if idx.size and (idx.min() < -size or idx.max() >= size):
        raise RuntimeError("index out of bounds")
    coords = np.unravel_index(np.where(idx < 0, idx + size, idx), shape)
    return tuple(_wrap(np.asarray(c, dtype=np.int64)) for c in coords)


for _name in ("gcd", "lcm", "frexp"):
    setattr(Tensor, _name, globals()[_name])


# torch's kernels that write their results through these out= functions, whose autograd
# layer refuses an inference dual (see forward_ad._check_out_function)
_frexp_op.out_function = "frexp_out"
