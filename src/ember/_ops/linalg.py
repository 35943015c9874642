"""Matrix products: mm, mv, dot, bmm, the add* family, matmul, tensordot, kron, cross.

matmul, tensordot, inner, kron and multi_dot are composed from primitives the way torch
composes them, so their grad_fn names are torch's; so is einsum (``einsum.py``), re-exported
from here.
"""
from __future__ import annotations

__all__ = ['addbmm', 'addmm', 'addmv', 'addr', 'baddbmm', 'bmm', 'chain_matmul', 'cross', 'dot',
           'einsum', 'inner', 'kron', 'matmul', 'mm', 'mv', 'outer', 'tensordot', 'vdot']

import math
import warnings

import numpy as np

from .. import _dtype as D
from .._backend import get_xp, is_array
from .._state import forward_hook, profiler_hook
from .._tensor import Tensor, _c_type_name, typename
from .pointwise import mul_scalar, no_kernel, refuse
from .registry import NONE, conj_value, op
from .replay import replay_form
from .shape import _expand, expand, reshape, squeeze, squeeze_result, unsqueeze, unsafe_view


def _name(a):
    return D._BY_NP[a.dtype].scalar_name


def _c_name(a):
    """torch's C++ name of ``a``'s element type, as its dtype checks print it."""
    dt = D._BY_NP[a.dtype]
    try:
        return _c_type_name(dt)
    except KeyError:  # (a limited-support dtype: its scalar name)
        return dt.scalar_name


def _check_mm(self, mat2):
    if self._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2._data.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if self._data.dtype != mat2._data.dtype:
        raise RuntimeError("expected m1 and m2 to have the same dtype, but got: "
                           f"{_c_name(self._data)} != {_c_name(mat2._data)}")
    (n, k), (k2, m) = self._data.shape, mat2._data.shape
    if k != k2 and getattr(self._data, "is_sparse", False):  # (torch's sparse kernel is addmm)
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {k}, got {k2}")
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")


_check_mm_dtypes = refuse("b", no_kernel("addmm_impl_cpu_"), _check_mm)


def _check_mm_call(self, mat2):
    """mm's argument checks, in torch's order (a bool matrix, then dims, dtypes, shapes).

    NOTE: the usual call, two matrices of one float or complex dtype whose shapes fit, passes
    all of them: it is told apart in one test, since every matrix product runs this."""
    a, b = self._data, mat2._data
    if (a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0] and a.dtype == b.dtype
            and a.dtype.kind in "fc"):
        return
    _check_mm_dtypes(self, mat2)


@op("mm", tensors=2, quiet=True, promote=NONE, method=True, check=_check_mm_call,
    conj_saved=True)
def mm(self, mat2):
    return self @ mat2


@replay_form(mm)
def _(self, mat2):
    # (``a @ b`` of two NumPy arrays is np.matmul's call: the ufunc itself, no frame)
    return (np.matmul, (0, 1)) if _host_pair(self, mat2) else None


# NOTE: as torch's mm_mat1_backward / mm_mat2_backward, a column-major input (x.t() of a
# contiguous x; strides in bytes here) gets its gradient computed transposed, column-major
# like it: under create_graph that is a TBackward0 of an mm.
# A first-order backward's gradients are NumPy arrays: the formulas then compute with `@` and
# `.T`, what mm's and t's calls on such arrays run (their kernels), without the two op calls
# (the engine's pass has NumPy's floating-point errors silenced already, see engine.py).
def _column_major(strides, rows, itemsize):
    """Whether a matrix of ``rows`` rows with these strides (in bytes) is column-major."""
    return strides[0] == itemsize and strides[1] == itemsize * rows


def _mat1_grad(grad, mat2, mat1_strides):
    host = _host_pair(grad, mat2)
    if _column_major(mat1_strides, grad.shape[0], grad.itemsize):
        return _host_mat1_grad_t(grad, mat2) if host else t(mm(mat2, t(grad)))
    return _host_mat1_grad(grad, mat2) if host else mm(grad, t(mat2))


def _mat2_grad(grad, mat1, mat2_strides):
    host = _host_pair(grad, mat1)
    if _column_major(mat2_strides, mat1.shape[1], grad.itemsize):
        return _host_mat2_grad_t(grad, mat1) if host else t(mm(t(grad), mat1))
    return _host_mat2_grad(grad, mat1) if host else mm(t(mat1), grad)


# The four products on NumPy arrays (a replay form calls the one its path takes).
def _host_mat1_grad(grad, mat2):
    return grad @ mat2.T


def _host_mat1_grad_t(grad, mat2):
    return (mat2 @ grad.T).T


def _host_mat2_grad(grad, mat1):
    return mat1.T @ grad


def _host_mat2_grad_t(grad, mat1):
    return (grad.T @ mat1).T


@replay_form(_mat1_grad)
def _(grad, mat2, mat1_strides):
    # (the path depends on the arrays' types and dtypes, the shapes and the input's strides,
    # a constant of the recording: the gradient's own strides play no part)
    if not _host_pair(grad, mat2):
        return None
    if _column_major(mat1_strides, grad.shape[0], grad.itemsize):
        return _host_mat1_grad_t, (0, 1)
    return _host_mat1_grad, (0, 1)


@replay_form(_mat2_grad)
def _(grad, mat1, mat2_strides):
    if not _host_pair(grad, mat1):
        return None
    if _column_major(mat2_strides, mat1.shape[1], grad.itemsize):
        return _host_mat2_grad_t, (0, 1)
    return _host_mat2_grad, (0, 1)


def _host_pair(a, b):
    """Two NumPy arrays (not Tensors, not a device's) of dtypes NumPy computes itself: mm's
    call on them runs its kernel, ``a @ b``."""
    return (type(a) is _ndarray and type(b) is _ndarray and a.dtype not in _SPECIAL
            and b.dtype not in _SPECIAL)


_ndarray, _SPECIAL = np.ndarray, D.SPECIAL_NP


@mm.grad("self")
def _(grad, mat2, self_strides):
    return _mat1_grad(grad, mat2, self_strides)


@mm.grad("mat2")
def _(grad, self, mat2_strides):
    return _mat2_grad(grad, self, mat2_strides)


# NOTE: for a complex output, torch's mm_mat1_backward / mm_mat2_backward conjugate the other
# matrix itself in the column-major case (what conj_saved runs) but its transpose otherwise
# (``grad.mm(mat2.t().conj())``): under create_graph a ConjBackward0 over a TBackward0.
@mm.complex_form("self")
def _(grad, mat2, self_strides):
    if _column_major(self_strides, grad.shape[0], grad.itemsize):
        return _mat1_grad(grad, conj_value(mat2), self_strides)
    return mm(grad, conj_value(t(mat2)))


@mm.complex_form("mat2")
def _(grad, self, mat2_strides):
    if _column_major(mat2_strides, self.shape[1], grad.itemsize):
        return _mat2_grad(grad, conj_value(self), mat2_strides)
    return mm(conj_value(t(self)), grad)


@mm.batched_grad("self")
def _(grad, mat2):
    return matmul(grad, t(mat2))


@mm.batched_grad("mat2")
def _(grad, self):
    return matmul(t(self), grad)


@mm.jvp("self")
def _(self_t, mat2):
    return mm(self_t, mat2)


@mm.jvp("mat2")
def _(mat2_t, self):
    return mm(self, mat2_t)


def _check_mv(self, vec):
    if self._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {self._data.ndim}, "
                           f"{vec._data.ndim}")
    if self._data.dtype != vec._data.dtype:
        n = _name(vec._data)
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {n}, "
                           f"{_name(self._data)}, and {n}")
    (n, k), (k2,) = self._data.shape, vec._data.shape
    if k != k2:
        raise RuntimeError(f"size mismatch, got input ({n}), mat ({n}x{k}), vec ({k2})")


_refuse_bool_mv = refuse("b", no_kernel("addmv_impl_cpu"))


def _check_mv_call(self, vec):
    """mv's argument checks, in torch's order (dims, dtypes, sizes, then a bool kernel).
    The usual call passes all of them in one test, as mm's does (_check_mm_call)."""
    a, b = self._data, vec._data
    if (a.ndim == 2 and b.ndim == 1 and a.shape[1] == b.shape[0]
            and (dt := a.dtype) == b.dtype and dt in D.NATIVE_NP):
        return
    _check_mv(self, vec)
    _refuse_bool_mv(self, vec)


@op("mv", tensors=2, quiet=True, promote=NONE, method=True, writes=1, check=_check_mv_call)
def mv(self, vec):
    return self @ vec


@mv.grad("self")
def _(grad, vec):
    return outer(grad, vec)


@mv.grad("vec")
def _(grad, self):
    return mv(t(self), grad)


@mv.batched_grad("self")
def _(grad, vec):
    return mul(unsqueeze(grad, -1), vec)


@mv.batched_grad("vec")
def _(grad, self):
    return matmul(grad, self)


@mv.jvp("self")
def _(self_t, vec):
    return mv(self_t, vec)


@mv.jvp("vec")
def _(vec_t, self):
    return mv(self, vec_t)


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


@op("dot", tensors=2, quiet=True, promote=NONE, method=True, check=refuse("b", no_kernel("dot"), _check_dot),
    writes=1)
def dot(self, tensor):  # (torch's names: dot(input, tensor), _saved_tensor)
    return np.dot(self, tensor)


@dot.grad("self")
def _(grad, tensor):
    return grad * tensor


@dot.grad("tensor")
def _(grad, self):
    return grad * self


def outer(input, vec2):  # noqa: A002 - torch's name
    """Outer product of two vectors (torch composes it: ``input.reshape(-1, 1) * vec2``)."""
    for name, v in (("self", input), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    return mul(reshape(input, (-1, 1)), vec2)


Tensor.outer = Tensor.ger = outer


# NOTE: vdot conjugates ``self``, so it is not holomorphic in it: its formulas are written
# in torch's convention for complex tensors (for real ones the conjugates are the identity).
@op("vdot", tensors=2, quiet=True, promote=NONE, method=True, check=_check_dot, complex_grad=True)
def vdot(self, other):
    return np.vdot(self, other)


@vdot.grad("self")
def _(grad, other):
    return conj_value(grad) * other  # (torch's grad.conj(): a ConjBackward0 under create_graph)


@vdot.grad("other")
def _(grad, self):
    return grad * self


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


@op("bmm", tensors=2, quiet=True, promote=NONE, method=True, check=refuse("b", no_kernel("bmm"), _check_bmm))
def bmm(self, mat2):
    return np.matmul(self, mat2)


@bmm.grad("self")
def _(grad, mat2):
    return bmm(grad, transpose(mat2, 1, 2))


@bmm.grad("mat2")
def _(grad, self):
    return bmm(transpose(self, 1, 2), grad)


@bmm.batched_grad("self")
def _(grad, mat2):
    return matmul(grad, transpose(mat2, 1, 2))


@bmm.batched_grad("mat2")
def _(grad, self):
    return matmul(transpose(self, 1, 2), grad)


def _scaled_sum(bias, prod, beta, alpha):
    """``beta * bias + alpha * prod``; beta == 0 ignores bias (its NaNs do not propagate)."""
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return np.broadcast_to(prod, np.broadcast_shapes(bias.shape, prod.shape)).copy()
    return prod + bias if beta == 1 else prod + bias * beta


def _bias_grad(grad, beta):
    return _times(grad, beta)


def _times(g, alpha):
    # torch's maybe_multiply: a multiplication by a Scalar (its node is MulBackward1)
    return g if alpha == 1 else mul_scalar(g, alpha)


def _check_addmm(self, mat1, mat2, beta=1, alpha=1):
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
    (n, k), (k2, m) = mat1.shape, mat2.shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    _check_addmm_dtypes(self, mat1, mat2)


def _check_addmm_dtypes(self, mat1, mat2):
    """torch's refusal of mixed dtypes in addmm (and addbmm, linear): no promotion."""
    if self.dtype != mat2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_name(_np(self))} and {_name(_np(mat2))}")
    if mat1.dtype != mat2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_name(_np(mat1))} and {_name(_np(mat2))}")


def _np(a):
    return a._data if isinstance(a, Tensor) else a


@op("addmm", tensors=3, quiet=True, method=True, inplace=True, check=_check_addmm, writes=1)
def addmm(self, mat1, mat2, beta=1, alpha=1):
    if beta == 1 and alpha == 1:  # (nn.Linear's call, at every replay: no helper call)
        return mat1 @ mat2 + self
    return _scaled_sum(self, mat1 @ mat2, beta, alpha)


addmm.grad("self")(_bias_grad)


@addmm.grad("mat1")
def _(grad, mat2, alpha, mat1_strides):
    return _times(_mat1_grad(grad, mat2, mat1_strides), alpha)


@addmm.grad("mat2")
def _(grad, mat1, alpha, mat2_strides):
    return _times(_mat2_grad(grad, mat1, mat2_strides), alpha)


addmm.batched_grad("self")(_bias_grad)  # the engine sums the batch of rows to self's shape


@addmm.batched_grad("mat1")
def _(grad, mat2, alpha):
    return _times(matmul(grad, t(mat2)), alpha)


@addmm.batched_grad("mat2")
def _(grad, mat1, alpha):
    return _times(matmul(t(mat1), grad), alpha)


def _check_addmv(self, mat, vec, beta=1, alpha=1):
    if not self.dtype == mat.dtype == vec.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{_name(_np(self))}, {_name(_np(mat))}, and {_name(_np(vec))}")
    if mat.ndim != 2 or vec.ndim != 1 or self.ndim > 1 or mat.shape[1] != vec.shape[0] or (
            self.ndim == 1 and self.shape[0] not in (1, mat.shape[0])):
        size = "x".join(str(s) for s in self.shape) if self.ndim else ""
        raise RuntimeError(f"size mismatch, got input ({size}), mat "
                           f"({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")


@op("addmv", tensors=3, quiet=True, method=True, inplace=True, check=_check_addmv)
def addmv(self, mat, vec, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``."""
    return _scaled_sum(self, mat @ vec, beta, alpha)


addmv.grad("self")(_bias_grad)


@addmv.grad("mat")
def _(grad, vec, alpha):
    return _times(outer(grad, vec), alpha)


@addmv.grad("vec")
def _(grad, mat, alpha):
    return _times(mv(t(mat), grad), alpha)


def _check_addr(self, vec1, vec2, beta=1, alpha=1):
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.ndim}-D")
    kind = np.result_type(_np(self), _np(vec1), _np(vec2)).kind
    for name, scalar in (("beta", beta), ("alpha", alpha)):
        if isinstance(scalar, (bool, np.bool_)) and kind != "b":
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if kind in "biu" and isinstance(scalar, (float, np.floating)):
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                               f"floating point number.")
    _expand.kernel(_np(self), (vec1.shape[0], vec2.shape[0]))  # (torch's expand of self)


@op("addr", tensors=3, quiet=True, method=True, inplace=True, check=_check_addr)
def addr(self, vec1, vec2, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``, element by element as torch's kernel
    computes it: ``(alpha * vec1[i]) * vec2[j]``, plus ``beta * input`` unless beta is 0."""
    col, dtype = vec1[:, None], vec2.dtype
    if dtype == np.bool_:  # torch's boolean kernel: (beta and self) or (alpha and v1 and v2)
        prod = np.logical_and(col, vec2) if alpha else np.zeros_like(col & vec2)
        return np.logical_or(prod, self) if beta else np.broadcast_to(prod, prod.shape).copy()
    xp = get_xp(vec2)
    prod = (col if alpha == 1 else xp.asarray(alpha, dtype) * col) * vec2
    if beta == 0:
        return xp.broadcast_to(prod, prod.shape).copy()
    return (self if beta == 1 else xp.asarray(beta, dtype) * self) + prod


addr.grad("self")(_bias_grad)


@addr.grad("vec1")
def _(grad, vec2, alpha):
    return _times(mv(grad, vec2), alpha)


@addr.grad("vec2")
def _(grad, vec1, alpha):
    return _times(mv(t(grad), vec1), alpha)


def _check_batches(self, batch1, batch2, beta=1, alpha=1):
    for name, b in (("batch1", batch1), ("batch2", batch2)):
        if b.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError("batch1 and batch2 must have same number of batches, got "
                           f"{batch1.shape[0]} and {batch2.shape[0]}")
    b, _, k = batch1.shape
    if batch2.shape[1] != k:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b}, {k}] but got: [{batch2.shape[0]}, {batch2.shape[1]}].")


def _check_baddbmm(self, batch1, batch2, beta=1, alpha=1):
    # torch's meta function reads batch1.size(0), batch1.size(1) and batch2.size(2) first
    # (self expanded to them): fewer dims raise size()'s IndexError (difftest 56000272)
    for t, d in ((batch1, 0), (batch1, 1), (batch2, 2)):
        if t.ndim == 0:
            raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
        if d >= t.ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-t.ndim}, {t.ndim - 1}], but got {d})")
    _check_batches(self, batch1, batch2)
    if self.dtype != batch1.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {_c_name(_np(self))}, "
                           f"batch1: {_c_name(_np(batch1))}, batch2: {_c_name(_np(batch2))}")
    if batch1.dtype != batch2.dtype:
        raise RuntimeError(f"expected scalar type {_name(_np(batch1))} but found "
                           f"{_name(_np(batch2))}")


def _check_baddbmm_inplace(self, batch1, batch2, beta=1, alpha=1):
    # torch's in-place form also compares self with the result's dtype (batch2's), after
    # self with batch1 and before batch1 with batch2
    if self.dtype == batch1.dtype and self.dtype != batch2.dtype:
        _check_batches(self, batch1, batch2)
        raise RuntimeError(f"Bad in-place call: input tensor dtype {_c_name(_np(self))} and "
                           f"output tensor dtype {_c_name(_np(batch2))} should match")
    _check_baddbmm(self, batch1, batch2)


def _check_addbmm(self, batch1, batch2, beta=1, alpha=1):
    _check_batches(self, batch1, batch2)
    _check_addmm_dtypes(self, batch1, batch2)


@op("baddbmm", tensors=3, quiet=True, method=True, inplace=True, check=_check_baddbmm)
def baddbmm(self, batch1, batch2, beta=1, alpha=1):
    """``beta * input + alpha * (batch1 @ batch2)``, batch by batch."""
    return _scaled_sum(self, np.matmul(batch1, batch2), beta, alpha)


baddbmm.inplace_check = _check_baddbmm_inplace
baddbmm.grad("self")(_bias_grad)


@baddbmm.grad("batch1")
def _(grad, batch2, alpha):
    return _times(bmm(grad, transpose(batch2, 1, 2)), alpha)


@baddbmm.grad("batch2")
def _(grad, batch1, alpha):
    return _times(bmm(transpose(batch1, 1, 2), grad), alpha)


@op("addbmm", tensors=3, quiet=True, method=True, inplace=True, check=_check_addbmm)
def addbmm(self, batch1, batch2, beta=1, alpha=1):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    prod = np.matmul(batch1, batch2).sum(0) if batch1.shape[0] else get_xp(batch1).zeros(
        (batch1.shape[1], batch2.shape[2]), batch1.dtype)
    return _scaled_sum(self, prod, beta, alpha)


addbmm.grad("self")(_bias_grad)


def _expand_batch(grad, n):
    return expand(unsqueeze(grad, 0), (n,) + tuple(grad.shape))


@addbmm.grad("batch1")
def _(grad, batch1_shape, batch2, alpha):
    return _times(bmm(_expand_batch(grad, batch1_shape[0]), transpose(batch2, 1, 2)), alpha)


@addbmm.grad("batch2")
def _(grad, batch1, alpha):
    return _times(bmm(transpose(batch1, 1, 2), _expand_batch(grad, batch1.shape[0])), alpha)


def matmul(input, other):  # noqa: A002 - torch's name
    """Matrix product with torch's rules for 1-D, 2-D and batched (broadcast) operands, made
    of the ops torch makes it of (so its graph is torch's)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        return np.matmul(input, other)
    if type(input) is not Tensor or type(other) is not Tensor:  # (an array beside a tensor too)
        _refuse_operand(input, "input", 1, arrays=False)
        _refuse_operand(other, "other", 2, arrays=False)
    a, b = input, other
    # NOTE: dim() rather than _data.ndim for anything but a plain Tensor: under vmap a
    # BatchedTensor's example has one dimension less than its array.
    da = a._data.ndim if type(a) is Tensor else a.dim() if isinstance(a, Tensor) else np.ndim(a)
    db = b._data.ndim if type(b) is Tensor else b.dim() if isinstance(b, Tensor) else np.ndim(b)
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    if da == 1 and db == 1:
        return dot(a, b)
    if da == 2 and db == 1:
        return mv(a, b)
    if da == 1 and db == 2:
        return _squeezed(mm(unsqueeze(a, 0), b))
    if da == 2 and db == 2:
        return mm(a, b)
    if _should_fold(a, b):
        return _folded_matmul(a, b)
    return _batched_matmul(a, b)


def _squeezed(out):
    """``out.squeeze_(0)``: torch squeezes a fresh product in place (a version bump)."""
    out = squeeze_result(out, 0)
    out._vc = [1]  # (a fresh tensor: its own counter, as after torch's in-place squeeze)
    return out


def _should_fold(a, b):
    """Whether torch folds the batch of the larger operand into the rows of one mm or mv: a
    larger operand of 3+ dims and a smaller of 1 or 2, when the smaller requires grad (a
    batched product would expand it) or the fold is a view."""
    big, small = (a, b) if a.ndim >= b.ndim else (b.mT, a)
    if not (big.ndim >= 3 and small.ndim <= 2):
        return False
    if isinstance(small, Tensor) and small.requires_grad:
        return True
    if a.ndim == 2:  # folding would need a copy of the transposed result
        return False
    if big.numel() == 0:
        return True
    shape, strides = big.shape, big.stride()
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(big.ndim - 2))


def _folded_matmul(a, b):
    transpose = b.ndim > a.ndim
    big = b.mT if transpose else a
    small = (a.t() if a.ndim == 2 else a) if transpose else b
    out_shape = tuple(big.shape[:-1])
    rows = reshape(big, (int(np.prod(out_shape)), big.shape[-1]))
    if small.ndim == 2:
        out = unsafe_view(mm(rows, small), out_shape + (small.shape[1],))
        return out.mT.contiguous() if transpose else out
    return unsafe_view(mv(rows, small), out_shape)


def _batched_matmul(a, b):
    n = a.shape[-2] if a.ndim > 1 else 1
    m1 = a.shape[-1]
    m2 = b.shape[-2] if b.ndim > 1 else b.shape[0]
    p = b.shape[-1] if b.ndim > 1 else 1
    batch_a, batch_b = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    if a.ndim == 3 and b.ndim == 3 and batch_a[0] != batch_b[0]:
        # a batch of one that requires grad is squeezed, so that the product folds
        if batch_a[0] == 1 and a.requires_grad:
            return matmul(a.squeeze(0), b)
        if batch_b[0] == 1 and b.requires_grad:
            return matmul(a, b.squeeze(0))
    try:
        batch = np.broadcast_shapes(batch_a, batch_b)
    except ValueError:
        from .registry import broadcast_error
        raise broadcast_error([a[..., 0, 0] if a.ndim > 1 else a[0],
                               b[..., 0, 0] if b.ndim > 1 else b[0]]) from None
    nb = int(np.prod(batch)) if batch else 1
    a3 = reshape(expand(a, batch + (n, m1)), (nb, n, m1))
    vector_rhs = b.ndim == 1
    if vector_rhs:
        b3 = unsqueeze(reshape(expand(b, batch + (m2,)), (nb, m2)), 2)
    else:
        b3 = reshape(expand(b, batch + (m2, p)), (nb, m2, p))
    out_shape = batch + ((n,) if a.ndim > 1 else ()) + ((p,) if b.ndim > 1 else ())
    out = bmm(a3, b3)
    return unsafe_view(squeeze(out, -1) if vector_rhs else out, out_shape)


def _refuse_operand(x, name, position, arrays=True):
    """torch's TypeError for an operand of matmul that is not a tensor (a Python number, a
    list, None). Arrays pass unless ``arrays`` is False: formulas call matmul on them."""
    if not isinstance(x, Tensor) and not (arrays and is_array(x)):
        raise TypeError(f"matmul(): argument '{name}' (position {position}) must be Tensor, "
                        f"not {typename(x)}")


def _matmul_method(self, other):
    """``self.matmul(other)`` (torch counts ``other`` as its first argument)."""
    _refuse_operand(other, "other", 1, arrays=False)
    return matmul(self, other)


def _matmul_operator(self, other):
    """``self @ other``: two matrices go straight to mm's generated path, a matrix and a
    vector to mv's (where matmul and the op's dispatch would send them, two calls later);
    other tensors take matmul. Anything else gives NotImplemented (Python then raises its
    TypeError), as torch's operator does: it takes no number, not even a 0-dim one."""
    if not isinstance(other, Tensor):
        return NotImplemented
    # (other may be a Parameter; inside vmap a forward hook is set and matmul decides)
    if (type(self) is Tensor and self._data.ndim == 2
            and forward_hook[0] is None and profiler_hook[0] is None):
        nd = other._data.ndim
        call = mm.caller if nd == 2 else mv.caller if nd == 1 else None
        if call is not None:
            return call((self, other))
    return matmul(self, other)


def _rmatmul_operator(self, other):
    """``other @ self`` for an ``other`` that is not a tensor: NotImplemented, as torch's."""
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, self)


for _method, _attribute in ((_matmul_method, "matmul"), (_matmul_operator, "__matmul__"),
                            (_rmatmul_operator, "__rmatmul__")):
    _method.__name__ = _method.__qualname__ = _attribute
    _method._takes_operand = True  # (guard_operators: they check their operand themselves)
Tensor.matmul = _matmul_method
Tensor.__matmul__ = _matmul_operator
Tensor.__rmatmul__ = _rmatmul_operator


# -- tensordot, inner, kron, cross, multi_dot ---------------------------------------------------
def _as_list(dims):
    return [dims] if isinstance(dims, int) else list(dims)


def tensordot(a, b, dims=2, out=None):
    """Sum of products over ``dims`` of ``a`` and ``b`` (torch's permute, mm, reshape)."""
    if not isinstance(dims, (tuple, list, Tensor, int)):  # (torch's Python tensordot's check)
        raise RuntimeError("tensordot expects dims to be int or tuple[list[int], list[int]] or "
                           f"list[list[int]] containing two lists, but got dims={dims}")
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        given_a, given_b = list(range(-dims, 0)), list(range(dims))
    else:
        given_a, given_b = _as_list(dims[0]), _as_list(dims[1])
    if len(given_a) != len(given_b):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    da, db = [_wrap_dim(d, a.ndim) for d in given_a], [_wrap_dim(d, b.ndim) for d in given_b]
    t1, t2, size = a, b, 1
    for x, y, gx, gy in zip(da, db, given_a, given_b):
        if b.shape[y] == 1:  # a broadcast dimension is summed at once
            t1 = t1.sum(x, True)
        elif a.shape[x] == 1:
            t2 = t2.sum(y, True)
        elif a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {gx} and second has size {b.shape[y]} in "
                               f"dim {gy}")
        else:
            size *= a.shape[x]
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    size1 = math.prod(t1.shape[d] for d in free_a)
    size2 = math.prod(t2.shape[d] for d in free_b)
    shape = tuple(t1.shape[d] for d in free_a) + tuple(t2.shape[d] for d in free_b)
    t1, t2 = permute(t1, free_a + da), permute(t2, db + free_b)
    if size1 != 1 or size2 != 1:
        return reshape(mm(reshape(t1, (size1, size)), reshape(t2, (size, size2))), shape)
    # a full contraction: a dot product (or a product and a sum, sparing two copies)
    if t1.is_contiguous() and t2.is_contiguous():
        return reshape(dot(t1.flatten(), t2.flatten()), shape)
    return reshape((t1.squeeze() * t2.squeeze()).sum(dtype=t1.dtype), shape)


def inner(input, other, *, out=None):  # noqa: A002 - torch's name
    """Inner product over the last dimension (a product when either is 0-dim)."""
    if input.ndim == 0 or other.ndim == 0:
        return mul(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError("inner() the last dimension must match on both input tensors but got "
                           f"shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def kron(input, other, *, out=None):  # noqa: A002 - torch's name
    """Kronecker product (torch's interleaved reshape, mul and unsafe view)."""
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    # (torch's _unsafe_view of each operand, UnsafeViewBackward0: torch's kron raises "view size
    # is not compatible with input tensor's size and stride" where no view exists, ember's
    # unsafe_view copies there)
    a = unsafe_view(input, tuple(x for s in sa for x in (s, 1)))
    b = unsafe_view(other, tuple(x for s in sb for x in (1, s)))
    return unsafe_view(mul(a, b), tuple(x * y for x, y in zip(sa, sb)))


@op("linalg_cross", tensors=2)
def linalg_cross(self, other, dim=-1):
    if self.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = np.broadcast_shapes(self.shape, other.shape)
    d = _wrap_dim(dim, len(shape))
    a, b = np.broadcast_to(self, shape), np.broadcast_to(other, shape)
    if shape[d] != 3 or self.shape[d - len(shape)] != other.shape[d - len(shape)]:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{self.shape[d - len(shape)]} and {other.shape[d - len(shape)]}")
    return np.cross(a, b, axis=d)


@linalg_cross.grad("self")
def _(grad, other, dim):
    return linalg_cross(other, grad, dim)


@linalg_cross.grad("other")
def _(grad, self, dim):
    return linalg_cross(grad, self, dim)


_cross_dim_warned = False


def _warn_cross_dim_once():
    """torch's deprecation warning for cross without ``dim``: once per process, as its
    TORCH_WARN_ONCE, at the caller's line."""
    global _cross_dim_warned
    if _cross_dim_warned:
        return
    _cross_dim_warned = True
    from .inplace import _user_stacklevel  # the caller's line, past with_out's wrapper
    warnings.warn("Using ember.cross without specifying the dim arg is deprecated.\nPlease "
                  "either pass the dim explicitly or simply use ember.linalg.cross.\nThe "
                  "default value of dim will change to agree with that of linalg.cross in a "
                  "future release.", UserWarning, stacklevel=_user_stacklevel())


def cross(input, other, dim=None, *, out=None):  # noqa: A002 - torch's name
    """Cross product of 3-vectors along ``dim`` (default: the first dim of size 3)."""
    if dim is None:
        _warn_cross_dim_once()
        shape = np.broadcast_shapes(tuple(input.shape), tuple(other.shape))
        dim = next((i for i, s in enumerate(shape) if s == 3), -1)
    return linalg_cross(input, other, dim)


Tensor.cross = cross
Tensor.kron = kron
Tensor.inner = inner


def _chain_order(shapes):
    """Optimal parenthesisation of a matrix chain (the classic O(n^3) dynamic program)."""
    n = len(shapes)
    p = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(tensors, *, out=None):
    """Product of a chain of matrices, multiplied in the cheapest order."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0], tensors[-1]
    for k, x in ((0, first), (n - 1, last)):
        if x.ndim not in (1, 2):
            which = "first" if k == 0 else "last"
            raise RuntimeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got "
                               f"{x.ndim}D")
    for k, x in enumerate(tensors[1:-1], 1):
        if x.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {k} must be 2D but got {x.ndim}D")
    for k, x in enumerate(tensors[1:], 1):
        if x.dtype != first.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but "
                               f"tensor 0 is {_c_name(first._data)} and tensor {k} "
                               f"{_c_name(x._data)}")
    mats = [unsqueeze(first, 0) if first.ndim == 1 else first, *tensors[1:-1],
            unsqueeze(last, 1) if last.ndim == 1 else last]
    for k in range(n - 1):
        if mats[k].shape[1] != mats[k + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {k} and {k + 1} with shapes "
                               f"{list(tensors[k].shape)} and {list(tensors[k + 1].shape)} "
                               "cannot be multiplied")
    split = _chain_order([tuple(m.shape) for m in mats])

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return mm(product(i, k), product(k + 1, j))
    out_shape = tuple(first.shape[:-1]) + tuple(last.shape[1:])
    return view(product(0, n - 1), out_shape)


def chain_matmul(*matrices, out=None):
    """Deprecated form of ``linalg.multi_dot`` taking the matrices as arguments."""
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    if len(matrices) == 1:
        return clone(matrices[0])
    return multi_dot(matrices)


from .einsum import einsum  # noqa: E402,F401  (re-exported: torch.einsum)
from .pointwise import mul  # noqa: E402
from .shape import clone, permute, t, transpose, view  # noqa: E402  (used by formulas)
from .._tensor import _wrap_dim  # noqa: E402
