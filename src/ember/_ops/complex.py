"""Complex numbers: conj, angle, complex, polar and the conjugate-bit queries.

Gradients follow torch's convention for complex tensors: the gradient of a real loss L
w.r.t. ``z = x + iy`` is ``dL/dx + i dL/dy`` (the conjugate Wirtinger derivative, doubled).
The ops here are not holomorphic, so their formulas are written in that convention directly
(``complex_grad=True``); see ``registry.conjugated`` for how holomorphic ops get it.

NOTE: ``conj`` is torch's lazy view: the result shares its input's memory, base and version
counter and has the conjugate bit. NumPy has no conjugating view, so such a tensor keeps the
memory it shares (``_phys``) and each read of its values conjugates it (``_backend.bit_values``,
through Tensor's ``_data`` descriptor); an in-place op on it writes its values back conjugated
(inplace.dispatch_inplace), and its views take the bit (views.carry_bits). ``x._neg_view()``
and ``x.conj().imag`` have torch's negative bit the same way.
"""
from __future__ import annotations

__all__ = ["angle", "complex", "conj", "conj_physical", "is_conj", "is_neg", "polar",
           "resolve_conj", "resolve_neg"]

import math

import numpy as np

from .. import _dtype as D
from .._backend import get_xp
from .._backend import bit_values
from .._state import recording
from .._tensor import Tensor, physical
from .registry import FLOAT, NONE, conj_value, op
from .views import set_bits


@op("conj", view=True, promote=NONE, complex_grad=True)
def _conj(self):
    # (the values, laid out as self's memory is: what regenerating the view from its base
    # reads; the view itself shows self's memory, see conj)
    return bit_values(self, True)


@_conj.grad("self")
def _(grad):
    return conj_value(grad)  # (torch's grad.conj(): a ConjBackward0 under create_graph)


def conj(input):  # noqa: A002 - torch's name
    """The complex conjugate as torch's lazy view: ``input``'s memory with the conjugate bit
    (a real tensor is its own conjugate: it is returned as it is)."""
    if not (isinstance(input, Tensor) and input.dtype.is_complex):
        return input
    return _bit_view(_conj(input), input, "_conj_bit")


@op("_neg_view", view=True, promote=NONE, node="NegViewBackward0")
def _neg_view_op(self):
    return bit_values(self, False, True)  # (the values, laid out as self's memory is)


@_neg_view_op.grad("self")
def _(grad):
    return -grad


def _neg_view(self):
    """``self``'s memory with torch's negative bit: a view showing ``-self``."""
    return _bit_view(_neg_view_op(self), self, "_neg_bit")


def _bit_view(out, input, bit):
    """``out``, the view op's result on ``input``, made a view of ``input``'s memory with
    ``bit`` flipped (NumPy has no negating or conjugating view: see Tensor's _BitValues)."""
    d = input.__dict__
    if not isinstance(out, Tensor):
        return out
    if (out._base is None and not input._is_inference) or recording[0] is not None:
        # a batched value, or a call ember.compile records (whose program holds arrays the
        # ops made): the values, as the kernel made them, with the bit
        out.__dict__[bit] = not d.get(bit, False)
        return out
    bits = {"_conj_bit": d.get("_conj_bit", False), "_neg_bit": d.get("_neg_bit", False)}
    bits[bit] = not bits[bit]
    for name in ("_data", "_phys", "_conj_bit", "_neg_bit"):
        out.__dict__.pop(name, None)
    set_bits(out, physical(input), bits["_conj_bit"], bits["_neg_bit"])
    return out


@op("conj_physical", promote=NONE, complex_grad=True)
def _conj_physical(self):
    return get_xp(self).conj(self)


@_conj_physical.grad("self")
def _(grad):
    return conj_physical(grad)


def conj_physical(input):  # noqa: A002
    """The complex conjugate, computed now (real tensors are returned as they are)."""
    if isinstance(input, Tensor) and input._data.dtype.kind != "c":
        return input
    return _conj_physical(input)


@op("conj_physical", promote=NONE, complex_grad=True, node="ConjPhysicalBackward1")
def _conj_physical_inplace(self):
    """``Tensor.conj_physical_`` (torch names its node apart from the out-of-place one)."""
    return get_xp(self).conj(self)


@_conj_physical_inplace.grad("self")
def _(grad):
    return conj_physical(grad)


def _conj_physical_(self):
    if self._data.dtype.kind != "c":
        return self
    return _conj_physical_inplace.inplace(self)


def is_conj(input) -> bool:  # noqa: A002
    """Whether ``input`` has torch's conjugate bit (conj's lazy view of a complex tensor)."""
    d = input.__dict__
    if not d.get("_conj_bit", False):
        return False
    phys = d.get("_phys")  # (a real view holding both parts of a conjugate, inside imag)
    return phys is None or phys.dtype.kind == "c"


def is_neg(input) -> bool:  # noqa: A002
    """Whether ``input`` has torch's negative bit (``x._neg_view()``, ``x.conj().imag``)."""
    return bool(input.__dict__.get("_neg_bit", False))


def resolve_conj(input):  # noqa: A002
    """``input`` without the conjugate bit: a copy when it has one, else ``input`` itself."""
    return input.clone() if is_conj(input) else input


def resolve_neg(input):  # noqa: A002
    """``input`` without the negative bit: a copy when it has one, else ``input`` itself."""
    return input.clone() if is_neg(input) else input


# -- angle ----------------------------------------------------------------------------------------
@op("angle", elementwise=True, promote=FLOAT, quiet=True, complex_grad=True)
def angle(self):
    xp = get_xp(self)
    if self.dtype.kind == "c":
        return xp.angle(self)
    # NOTE: torch gives 0 for -0.0 (np.angle gives pi) and keeps NaN.
    return xp.where(self < 0, xp.asarray(math.pi, self.dtype),
                    xp.where(xp.isnan(self), self, xp.zeros_like(self)))


@angle.grad("self")
def _(grad, self):
    if _kind(self) != "c":
        return grad * 0
    # (torch's ``* Scalar(1j)``: mul.Scalar, MulBackward1 under create_graph)
    return where_zero(self, mul_scalar(grad * self / (abs_(self) ** 2), 1j))


# -- complex, polar -------------------------------------------------------------------------------
def _check_float_pair(name_first, real, imag):
    a, b = real._data.dtype, imag._data.dtype
    if a.kind != "f" or b.kind != "f":
        raise RuntimeError("Expected both inputs to be Half, Float or Double tensors but got "
                           f"{D._BY_NP[a].scalar_name} and {D._BY_NP[b].scalar_name}")
    if a != b:
        raise RuntimeError(f"Expected object of scalar type {D._BY_NP[a].scalar_name} but got "
                           f"scalar type {D._BY_NP[b].scalar_name} for second argument")


def _complex_check(real, imag):
    _check_float_pair("complex", real, imag)


@op("complex", tensors=2, promote=NONE, complex_grad=True, check=_complex_check,
    elementwise=True)
def complex(real, imag):  # noqa: A001 - torch's name
    xp = get_xp(real, imag)
    out = xp.empty(np.broadcast_shapes(real.shape, imag.shape), _COMPLEX[real.dtype])
    out.real = real
    out.imag = imag
    return out


@complex.grad("real")
def _(grad):
    return real_part(grad)


@complex.grad("imag")
def _(grad):
    return imag_part(grad)


@op("polar", tensors=2, promote=NONE, complex_grad=True, check=_complex_check,
    elementwise=True, quiet=True)
def polar(abs, angle):  # noqa: A002 - torch's names
    return complex.kernel(abs * get_xp(abs).cos(angle), abs * get_xp(abs).sin(angle))


@polar.grad("abs")
def _(grad, result):
    return real_part(conj_physical(grad) * sgn(result))


@polar.grad("angle")
def _(grad, result):
    return real_part(conj_physical(grad) * (result * 1j))


_COMPLEX = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128,
            np.dtype(np.float16): np.complex64}


def sgn_backward(grad, self, result):
    """sgn's derivative for complex ``self``: only the part of ``grad`` along the unit circle
    at ``result`` moves it, scaled by 1 / |self| (0 at the origin), written as torch's
    formula is, ``(grad - result^2 conj(grad)) / (2 |self|)`` (grad's part along the circle,
    ``grad - Re(grad conj(result)) result``, halved twice over), filled with 0 where |self|
    is 0, so create_graph records torch's nodes."""
    magnitude = abs_(self)
    along = (grad - (result * result) * conj_value(grad)) / mul_scalar(magnitude, 2.0)
    return _masked_fill(along, magnitude == 0, 0)


# -- helpers that work on arrays and Tensors --------------------------------------------------
def _kind(x):
    return (x._data if isinstance(x, Tensor) else x).dtype.kind


def real_part(x):
    """The real part of ``x`` (an array or a Tensor; real values are their own)."""
    if _kind(x) != "c":
        return x
    return real(x) if isinstance(x, Tensor) else x.real


def imag_part(x):
    if _kind(x) != "c":
        return x * 0
    return imag(x) if isinstance(x, Tensor) else x.imag


def where_zero(x, value):
    """``value`` where ``x`` is not 0, else 0 (torch's guard at the origin)."""
    return where(x == 0, 0.0, value)


Tensor.conj = conj
Tensor._neg_view = _neg_view
Tensor.conj_physical = conj_physical
Tensor.conj_physical_ = _conj_physical_
Tensor.is_conj = is_conj
Tensor.is_neg = is_neg
Tensor.resolve_conj = resolve_conj
Tensor.resolve_neg = resolve_neg
Tensor.angle = lambda self: angle(self)

from .pointwise import abs as abs_  # noqa: E402
from .pointwise import mul_scalar, where  # noqa: E402
from .indexing import _masked_fill  # noqa: E402
from .strided import imag, real  # noqa: E402
from .unary import sgn  # noqa: E402
