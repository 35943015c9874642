"""Matrix products: mm, mv, dot, bmm, addmm, and matmul composed from them as torch does."""
from __future__ import annotations

__all__ = ['addmm', 'bmm', 'dot', 'matmul', 'mm', 'mv', 'outer']

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from .registry import NONE, op
from .shape import expand, reshape, squeeze, unsqueeze, unsafe_view


def _name(a):
    return D._BY_NP[a.dtype].scalar_name


def _c_name(a):
    return {"Float": "float", "Double": "double", "Long": "long int", "Int": "int",
            "Half": "c10::Half"}.get(_name(a), _name(a))


def _check_mm(self, mat2):
    if self._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2._data.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if self._data.dtype != mat2._data.dtype:
        raise RuntimeError("expected m1 and m2 to have the same dtype, but got: "
                           f"{_c_name(self._data)} != {_c_name(mat2._data)}")
    (n, k), (k2, m) = self.shape, mat2.shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")


@op("mm", tensors=2, promote=NONE, method=True, check=_check_mm)
def mm(self, mat2):
    return self @ mat2


@mm.grad("self")
def _(grad, mat2):
    return mm(grad, t(mat2))


@mm.grad("mat2")
def _(grad, self):
    return mm(t(self), grad)


def _check_mv(self, vec):
    if self._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {self._data.ndim}, "
                           f"{vec._data.ndim}")
    if self._data.dtype != vec._data.dtype:
        n = _name(vec._data)
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {n}, "
                           f"{_name(self._data)}, and {n}")
    if self.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({self.shape[0]}), mat "
                           f"({self.shape[0]}x{self.shape[1]}), vec ({vec.shape[0]})")


@op("mv", tensors=2, promote=NONE, method=True, check=_check_mv)
def mv(self, vec):
    return self @ vec


@mv.grad("self")
def _(grad, vec):
    return outer(grad, vec)


@mv.grad("vec")
def _(grad, self):
    return mv(t(self), grad)


def _check_dot(self, other):
    if self._data.ndim != 1 or other._data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {self._data.ndim}D and "
                           f"{other._data.ndim}D tensors")
    if self._data.dtype != other._data.dtype:
        raise RuntimeError("dot : expected both vectors to have same dtype, but found "
                           f"{_name(self._data)} and {_name(other._data)}")
    if self.shape[0] != other.shape[0]:
        a, b = self.shape[0], other.shape[0]
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a}] and src [{b}] to "
                           f"have the same number of elements, but got {a} and {b} elements "
                           "respectively")


@op("dot", tensors=2, promote=NONE, method=("dot", "inner"), check=_check_dot)
def dot(self, other):
    return np.dot(self, other)


@dot.grad("self")
def _(grad, other):
    return grad * other


@dot.grad("other")
def _(grad, self):
    return grad * self


@op("outer", tensors=2, method=("outer", "ger"))
def outer(self, vec2):
    return np.multiply.outer(self, vec2)


@outer.grad("self")
def _(grad, vec2):
    return mv(grad, vec2)


@outer.grad("vec2")
def _(grad, self):
    return mv(t(grad), self)


def _check_bmm(self, mat2):
    if self._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2._data.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    b, _, k = self.shape
    if tuple(mat2.shape[:2]) != (b, k):
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b}, {k}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    if self._data.dtype != mat2._data.dtype:
        raise RuntimeError("expected scalar type " f"{_name(self._data)} but found "
                           f"{_name(mat2._data)}")


@op("bmm", tensors=2, promote=NONE, method=True, check=_check_bmm)
def bmm(self, mat2):
    return np.matmul(self, mat2)


@bmm.grad("self")
def _(grad, mat2):
    return bmm(grad, transpose(mat2, 1, 2))


@bmm.grad("mat2")
def _(grad, self):
    return bmm(transpose(self, 1, 2), grad)


@op("addmm", tensors=3, method=True)
def addmm(self, mat1, mat2, beta=1, alpha=1):
    prod = mat1 @ mat2
    if alpha != 1:
        prod = prod * alpha
    return prod + self if beta == 1 else prod + self * beta


@addmm.grad("self")
def _(grad, beta):
    return grad if beta == 1 else grad * beta


@addmm.grad("mat1")
def _(grad, mat2, alpha):
    g = mm(grad, t(mat2))
    return g if alpha == 1 else g * alpha


@addmm.grad("mat2")
def _(grad, mat1, alpha):
    g = mm(t(mat1), grad)
    return g if alpha == 1 else g * alpha


def matmul(input, other):  # noqa: A002 - torch's name
    """Matrix product with torch's rules for 1-D, 2-D and batched (broadcast) operands."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        return np.matmul(input, other)
    a, b = input, other
    da, db = a.ndim, b.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    if da == 1 and db == 1:
        return dot(a, b)
    if da == 2 and db == 1:
        return mv(a, b)
    if da == 1 and db == 2:
        return squeeze(mm(unsqueeze(a, 0), b), 0)
    if da == 2 and db == 2:
        return mm(a, b)
    if da >= 3 and db <= 2:
        # Fold the batch into the rows: one BLAS call instead of a loop.
        rows = reshape(a, (-1, a.shape[-1]))
        out = mm(rows, b) if db == 2 else mv(rows, b)
        tail = (b.shape[-1],) if db == 2 else ()
        return unsafe_view(out, tuple(a.shape[:-1]) + tail)
    return _batched_matmul(a, b)


def _batched_matmul(a, b):
    va, vb = a.ndim == 1, b.ndim == 1
    if va:
        a = unsqueeze(a, 0)
    if vb:
        b = unsqueeze(b, -1)
    n, m, p = a.shape[-2], a.shape[-1], b.shape[-1]
    try:
        batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    except ValueError:
        from .registry import broadcast_error
        raise broadcast_error([a[..., 0, 0], b[..., 0, 0]]) from None
    nb = int(np.prod(batch)) if batch else 1
    a3 = reshape(expand(a, batch + (n, m)), (nb, n, m))
    b3 = reshape(expand(b, batch + (b.shape[-2], p)), (nb, b.shape[-2], p))
    out_shape = batch + (() if va else (n,)) + (() if vb else (p,))
    return unsafe_view(bmm(a3, b3), out_shape)


Tensor.matmul = matmul
Tensor.__matmul__ = matmul
Tensor.__rmatmul__ = lambda self, other: matmul(other, self)

from .shape import t, transpose  # noqa: E402  (used by formulas)
