"""Pointwise ops: each kernel with its derivative formulas right below it."""
from __future__ import annotations

__all__ = ['abs', 'add', 'allclose', 'bitwise_and', 'bitwise_not', 'bitwise_or', 'bitwise_xor', 'clamp', 'cos', 'div', 'eq', 'equal', 'exp', 'ge', 'gt', 'isclose', 'le', 'log', 'logical_not', 'lt', 'maximum', 'minimum', 'mul', 'ne', 'neg', 'pow', 'reciprocal', 'relu', 'rsub', 'sigmoid', 'sign', 'sin', 'sqrt', 'sub', 'tanh', 'where']

import numpy as np

from .._tensor import Tensor
from .registry import FLOAT, NONE, op

# -- arithmetic --------------------------------------------------------------------------------


@op("add", tensors=2, method=("add", "__add__", "__radd__"), inplace=True)
def add(self, other, alpha=1):
    return self + other if alpha == 1 else self + other * alpha


@add.grad("self")
def _(grad):
    return grad


@add.grad("other")
def _(grad, alpha):
    return grad if alpha == 1 else grad * alpha


@op("sub", tensors=2, method=("sub", "__sub__", "subtract"), inplace=True)
def sub(self, other, alpha=1):
    if self.dtype == np.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    return self - other if alpha == 1 else self - other * alpha


@sub.grad("self")
def _(grad):
    return grad


@sub.grad("other")
def _(grad, alpha):
    return -grad if alpha == 1 else grad * -alpha


@op("rsub", tensors=2, node="RsubBackward1")
def rsub(self, other, alpha=1):
    """other - alpha * self (what ``2 - x`` computes)."""
    return other - self if alpha == 1 else other - self * alpha


@rsub.grad("self")
def _(grad, alpha):
    return -grad if alpha == 1 else grad * -alpha


@rsub.grad("other")
def _(grad):
    return grad


@op("mul", tensors=2, method=("mul", "__mul__", "__rmul__", "multiply"), inplace=True)
def mul(self, other):
    return self * other


@mul.grad("self")
def _(grad, other):
    return grad * other


@mul.grad("other")
def _(grad, self):
    return grad * self


@op("div", tensors=2, promote=FLOAT, quiet=True, method=("div", "__truediv__", "divide", "true_divide"), inplace=True)
def div(self, other):
    return self / other


@div.grad("self")
def _(grad, other):
    return grad / other


@div.grad("other")
def _(grad, self, other):
    return -grad * self / (other * other)


@op("neg", method=("neg", "__neg__", "negative"), inplace=True)
def neg(self):
    if self.dtype == np.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return -self


@neg.grad("self")
def _(grad):
    return -grad


def _check_int_pow(base, exponent):
    if base.dtype.kind in "iu" and isinstance(exponent, int) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


@op("pow", node="PowBackward0", quiet=True, method=("pow", "__pow__"), inplace=True)
def pow_scalar(self, exponent):
    _check_int_pow(self, exponent)
    return self ** exponent


@pow_scalar.grad("self")
def _(grad, self, exponent):
    if exponent == 0:
        return grad * 0
    if exponent == 2:
        return grad * (self * 2)
    return grad * (self ** (exponent - 1) * exponent)


@op("pow", node="PowBackward1", tensors=2, quiet=True)
def pow_tensor(self, exponent):
    return self ** exponent


@pow_tensor.grad("self")
def _(grad, self, exponent):
    return grad * (exponent * self ** (exponent - 1))


@pow_tensor.grad("exponent")
def _(grad, self, result):
    # NOTE: d/dy x**y = x**y log x, taken as 0 where x == 0 (torch's convention).
    return grad * where(self == 0, 0.0, result * log(self))


@op("pow", node="PowBackward2", tensors=2, quiet=True)
def pow_scalar_base(self, exponent):
    """``self ** exponent`` for a Python-number base (what ``2 ** x`` computes)."""
    return self ** exponent


@pow_scalar_base.grad("exponent")
def _(grad, self, result):
    import math
    return grad * (result * math.log(self)) if self != 0 else grad * 0


def pow(self, exponent):  # noqa: A001 - torch's name
    """``self ** exponent`` for tensors or Python numbers on either side."""
    if isinstance(exponent, Tensor) or (not isinstance(self, Tensor) and hasattr(exponent,
                                                                                 "shape")):
        if isinstance(self, Tensor) or hasattr(self, "shape"):
            return pow_tensor(self, exponent)
        return pow_scalar_base(self, exponent)
    return pow_scalar(self, exponent)


Tensor.pow = pow
Tensor.__pow__ = pow
Tensor.__rpow__ = lambda self, base: pow_scalar_base(base, self)
Tensor.__rsub__ = lambda self, other: rsub(self, other)
Tensor.__rtruediv__ = lambda self, other: mul(reciprocal(self), other)
Tensor.__iadd__ = lambda self, other: self.add_(other)
Tensor.__isub__ = lambda self, other: self.sub_(other)
Tensor.__imul__ = lambda self, other: self.mul_(other)
Tensor.__itruediv__ = lambda self, other: self.div_(other)
Tensor.__pos__ = lambda self: self


@op("maximum", tensors=2, method=True)
def maximum(self, other):
    return np.maximum(self, other)


@maximum.grad("self")
def _(grad, self, other):
    # NOTE: ties split the gradient in half between the inputs, as torch does.
    return where(self == other, grad / 2, where(self > other, grad, 0))


@maximum.grad("other")
def _(grad, self, other):
    return where(self == other, grad / 2, where(other > self, grad, 0))


@op("minimum", tensors=2, method=True)
def minimum(self, other):
    return np.minimum(self, other)


@minimum.grad("self")
def _(grad, self, other):
    return where(self == other, grad / 2, where(self < other, grad, 0))


@minimum.grad("other")
def _(grad, self, other):
    return where(self == other, grad / 2, where(other < self, grad, 0))


@op("reciprocal", promote=FLOAT, quiet=True, method=True, inplace=True)
def reciprocal(self):
    return 1 / self


@reciprocal.grad("self")
def _(grad, result):
    return -grad * (result * result)


# -- unary maths -------------------------------------------------------------------------------
@op("exp", promote=FLOAT, method=True, inplace=True)
def exp(self):
    return np.exp(self)


@exp.grad("self")
def _(grad, result):
    return grad * result


@op("log", promote=FLOAT, quiet=True, method=True, inplace=True)
def log(self):
    return np.log(self)


@log.grad("self")
def _(grad, self):
    return grad / self


@op("sin", promote=FLOAT, method=True, inplace=True)
def sin(self):
    return np.sin(self)


@sin.grad("self")
def _(grad, self):
    return grad * cos(self)


@op("cos", promote=FLOAT, method=True, inplace=True)
def cos(self):
    return np.cos(self)


@cos.grad("self")
def _(grad, self):
    return grad * -sin(self)


@op("tanh", promote=FLOAT, method=True, inplace=True)
def tanh(self):
    return np.tanh(self)


@tanh.grad("self")
def _(grad, result):
    return grad * (1 - result * result)


@op("sigmoid", promote=FLOAT, method=True, inplace=True)
def sigmoid(self):
    # NOTE: exp(-|x|) never overflows, and each branch is exact where it is used.
    e = np.exp(-np.abs(self))
    return np.where(self >= 0, 1 / (1 + e), e / (1 + e))


@sigmoid.grad("self")
def _(grad, result):
    return grad * (result * (1 - result))


@op("relu", method=True, inplace=True)
def relu(self):
    return np.maximum(self, 0)


@relu.grad("self")
def _(grad, result):
    return where(result > 0, grad, 0)


@op("sqrt", promote=FLOAT, quiet=True, method=True, inplace=True)
def sqrt(self):
    return np.sqrt(self)


@sqrt.grad("self")
def _(grad, result):
    return grad / (result * 2)


@op("abs", method=("abs", "__abs__", "absolute"), inplace=True)
def abs(self):  # noqa: A001 - torch's name
    return np.abs(self)


@abs.grad("self")
def _(grad, self):
    return grad * sign(self)


@op("sign", method=True, inplace=True)
def sign(self):
    return np.sign(self)


@sign.grad("self")
def _(grad):
    return grad * 0


@op("clamp", method=("clamp", "clip"), inplace=True, node="ClampBackward1")
def clamp(self, min=None, max=None):  # noqa: A002 - torch's keywords
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    out = self
    if min is not None:
        out = np.maximum(out, min)
    if max is not None:
        out = np.minimum(out, max)
    return out if out is not self else self.copy()


@clamp.grad("self")
def _(grad, self, min, max):  # noqa: A002
    return where(clamp_mask(self, min, max), grad, 0)


@op("clamp_mask", differentiable=False, promote=NONE)
def clamp_mask(self, min, max):  # noqa: A002
    """Where clamp passes its input through (its gradient's support)."""
    mask = np.ones(self.shape, dtype=bool)
    if min is not None:
        mask &= self >= min
    if max is not None:
        mask &= self <= max
    return mask


@op("where", tensors=3, node="WhereBackward0", promote_from=1)
def _where(condition, self, other):
    return np.where(condition, self, other)


@_where.grad("self")
def _(grad, condition):
    return where(condition, grad, 0)


@_where.grad("other")
def _(grad, condition):
    return where(condition, 0, grad)


def where(condition, input=None, other=None):  # noqa: A002 - torch's keywords
    """``input`` where ``condition`` holds, else ``other`` (tensors or Python numbers)."""
    if input is None and other is None:
        return nonzero_tuple(condition)
    return _where(condition, input, other)


def nonzero_tuple(condition):
    from .._creation import tensor_from_array
    data = condition._data if isinstance(condition, Tensor) else condition
    return tuple(tensor_from_array(i) for i in np.nonzero(data))


Tensor.where = lambda self, condition, other: _where(condition, self, other)

# -- comparisons and logic (no gradient) -------------------------------------------------------


def _compare(name, ufunc, dunder):
    def kernel(self, other):
        return ufunc(self, other)
    kernel.__name__ = name
    return op(name, tensors=2, method=(name, dunder), differentiable=False)(kernel)


eq = _compare("eq", np.equal, "__eq__")
ne = _compare("ne", np.not_equal, "__ne__")
lt = _compare("lt", np.less, "__lt__")
le = _compare("le", np.less_equal, "__le__")
gt = _compare("gt", np.greater, "__gt__")
ge = _compare("ge", np.greater_equal, "__ge__")
Tensor.greater, Tensor.less, Tensor.greater_equal, Tensor.less_equal = gt, lt, ge, le
Tensor.not_equal = ne


@op("bitwise_and", tensors=2, method=("bitwise_and", "__and__", "__rand__"), differentiable=False)
def bitwise_and(self, other):
    return self & other


@op("bitwise_or", tensors=2, method=("bitwise_or", "__or__", "__ror__"), differentiable=False)
def bitwise_or(self, other):
    return self | other


@op("bitwise_xor", tensors=2, method=("bitwise_xor", "__xor__", "__rxor__"), differentiable=False)
def bitwise_xor(self, other):
    return self ^ other


@op("bitwise_not", method=("bitwise_not", "__invert__"), differentiable=False)
def bitwise_not(self):
    if self.dtype.kind == "f":
        raise TypeError("bitwise_not is only supported for integer and boolean tensors")
    return ~self


@op("logical_not", method=True, differentiable=False, promote=NONE)
def logical_not(self):
    return np.logical_not(self)


# -- filling and copying (in place only) -------------------------------------------------------
@op("fill", tensors=2, promote=NONE, inplace="fill_")
def fill(self, value):
    return np.full_like(self, value)


@fill.grad("self")
def _(grad):
    return grad * 0


@fill.grad("value")
def _(grad):
    from .reduction import sum_all
    return sum_all(grad)


@op("zero", promote=NONE, inplace="zero_")
def zero(self):
    return np.zeros_like(self)


@zero.grad("self")
def _(grad):
    return grad * 0


@op("copy", tensors=2, promote=NONE, inplace="copy_", node="CopyBackwards")
def copy(self, src, non_blocking=False):
    return np.broadcast_to(src, self.shape).astype(self.dtype)


@copy.grad("self")
def _(grad):
    return grad * 0


@copy.grad("src")
def _(grad):
    return grad


# -- closeness ---------------------------------------------------------------------------------
@op("isclose", tensors=2, method=True, differentiable=False)
def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return np.isclose(self, other, rtol=rtol, atol=atol, equal_nan=equal_nan)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """True when every element of ``input`` is close to ``other`` (broadcasting)."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input, other) -> bool:
    """True when both tensors have the same shape and elements."""
    return input.shape == other.shape and bool((input._data == other._data).all())


Tensor.allclose = allclose
Tensor.equal = equal
