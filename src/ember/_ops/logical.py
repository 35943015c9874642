"""Logical, bitwise and closeness ops: bool or integer results, no gradient.

Split from binary.py (the two-argument family) to keep files short; binary re-exports it.
"""
from __future__ import annotations

__all__ = ['allclose', 'bitwise_and', 'bitwise_left_shift', 'bitwise_not', 'bitwise_or',
           'bitwise_right_shift', 'bitwise_xor', 'equal', 'isclose', 'logical_and',
           'logical_not', 'logical_or', 'logical_xor']

import numpy as np

from .._backend import asarray_like, get_xp
from .._tensor import Tensor
from .pointwise import not_implemented, require_tensor, scalar_name
from .registry import NONE, op


def _tensor_other(name, position=2):
    def check(self, other, *rest):
        require_tensor(name, "other", other, position)
    return check


# -- logical (bool results, no gradient) ---------------------------------------------------------
def _logical(name, ufunc):
    def kernel(self, other):
        return ufunc(self, other)
    kernel.__name__ = name
    return op(name, tensors=2, method=True, inplace=True, differentiable=False, promote=NONE,
              check=_tensor_other(name), writes=1, elementwise=True)(kernel)


logical_and = _logical("logical_and", np.logical_and)
logical_or = _logical("logical_or", np.logical_or)
logical_xor = _logical("logical_xor", np.logical_xor)


# -- bitwise (integers and bools) ----------------------------------------------------------------
def integer_only(kernel_name, *arrays):
    """torch's refusal of floating operands (after promotion) in bitwise kernels."""
    for a in arrays:
        if getattr(a, "dtype", None) is not None and a.dtype.kind in "fc":
            raise not_implemented(kernel_name, a)


@op("bitwise_and", tensors=2, method=("bitwise_and", "__and__", "__rand__"), inplace=True,
    differentiable=False, elementwise=True)
def bitwise_and(self, other):
    integer_only("bitwise_and_cpu", self, other)
    return self & other


@op("bitwise_or", tensors=2, method=("bitwise_or", "__or__", "__ror__"), inplace=True,
    differentiable=False, elementwise=True)
def bitwise_or(self, other):
    integer_only("bitwise_or_cpu", self, other)
    return self | other


@op("bitwise_xor", tensors=2, method=("bitwise_xor", "__xor__", "__rxor__"), inplace=True,
    differentiable=False, elementwise=True)
def bitwise_xor(self, other):
    integer_only("bitwise_xor_cpu", self, other)
    return self ^ other


@op("bitwise_not", method="bitwise_not", inplace=True, differentiable=False)
def bitwise_not(self):
    integer_only("bitwise_not_cpu", self)
    return ~self


def _invert(self):
    try:
        return bitwise_not(self)
    except NotImplementedError:  # the operator words torch's refusal differently
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors") from None


Tensor.__invert__ = _invert
Tensor.__iand__ = lambda self, other: self.bitwise_and_(other)
Tensor.__ior__ = lambda self, other: self.bitwise_or_(other)
Tensor.__ixor__ = lambda self, other: self.bitwise_xor_(other)


@op("logical_not", method=True, differentiable=False, promote=NONE, writes=1,
    elementwise=True)
def logical_not(self):
    return np.logical_not(self)


def _shift(self, other, left):
    if not hasattr(self, "dtype"):  # a Python-number self (``3 << x``)
        self = asarray_like(self, other, other.dtype)
    name = "lshift_cpu" if left else "rshift_cpu"
    integer_only(name, self, other)
    if self.dtype == np.bool_:
        raise not_implemented(name, self)
    bits = self.dtype.itemsize * 8
    other = asarray_like(other, self)
    # NOTE: torch defines shifts by a negative amount or by the width or more: a left shift
    # gives 0, a right shift gives the sign fill (0 or -1).
    bad = (other < 0) | (other >= bits)
    xp = get_xp(self)
    if left:
        out = xp.where(bad, 0, xp.left_shift(self, xp.where(bad, 0, other).astype(self.dtype)))
    else:
        out = xp.right_shift(self, xp.where(bad, bits - 1, other).astype(self.dtype))
    return out.astype(self.dtype, copy=False)


@op("bitwise_left_shift", tensors=2, differentiable=False, inplace=True,
    method=("bitwise_left_shift", "__lshift__"))
def bitwise_left_shift(self, other):
    return _shift(self, other, True)


@op("bitwise_right_shift", tensors=2, differentiable=False, inplace=True,
    method=("bitwise_right_shift", "__rshift__"))
def bitwise_right_shift(self, other):
    return _shift(self, other, False)


Tensor.__rlshift__ = lambda self, other: bitwise_left_shift(other, self)
Tensor.__rrshift__ = lambda self, other: bitwise_right_shift(other, self)
Tensor.__ilshift__ = lambda self, other: self.bitwise_left_shift_(other)
Tensor.__irshift__ = lambda self, other: self.bitwise_right_shift_(other)


# -- closeness ---------------------------------------------------------------------------------
def _same_dtypes(self, other, *_):
    """isclose compares tensors of one dtype only (torch does not promote here)."""
    if isinstance(self, Tensor) and isinstance(other, Tensor) and self.dtype != other.dtype:
        raise RuntimeError(f"{scalar_name(self._data)} did not match "
                           f"{scalar_name(other._data)}")


@op("isclose", tensors=2, method=True, differentiable=False, check=_same_dtypes, quiet=True,
    elementwise=True)
def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return np.isclose(self, other, rtol=rtol, atol=atol, equal_nan=equal_nan)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """True when every element of ``input`` is close to ``other`` (broadcasting)."""
    # (.item(): a meta tensor has no value to give, as in torch)
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all().item())


def equal(input, other) -> bool:
    """True when both tensors have the same shape and elements."""
    a, b = input._data, other._data
    return input.shape == other.shape and bool(get_xp(a, b).array_equal(a, b))


Tensor.allclose = allclose
Tensor.equal = equal
