"""Sparse COO tensors: construction, conversion, products, sums and the arithmetic torch
defines on them.

A sparse tensor is a Tensor whose ``_data`` is a ``CooArray`` (``_sparse/coo.py``); the ops
below take and give such arrays, so the registry records their nodes with torch's names and
the engine carries sparse gradients as it carries dense ones. A dense op handed a sparse
operand fails in its kernel; the registry then calls :func:`route`, which runs the sparse op
torch has for it or raises torch's "Could not run 'aten::...' with arguments from the
'SparseCPU' backend" error.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as D
from .._sparse import coo as C
from .._sparse.coo import CooArray
from .._tensor import Tensor, _wrap
from .reduction import sum_all as _dense_sum_all, sum_whole
from .pointwise import no_forward_ad
from .registry import NONE, op

__all__ = ["sparse_coo_tensor", "spmm"]


def is_sparse(x) -> bool:
    return type(x._data if isinstance(x, Tensor) else x) is CooArray


def _coo(x) -> CooArray:
    return x._data if isinstance(x, Tensor) else x


def _not_on_sparse(aten):
    return NotImplementedError(
        f"Could not run '{aten}' with arguments from the 'SparseCPU' backend. This could be "
        "because the operator doesn't exist for this backend, or was omitted during the "
        "selective/custom build process (if using custom build).")


def _not_on_dense(aten):
    return NotImplementedError(
        f"Could not run '{aten}' with arguments from the 'CPU' backend. This could be "
        "because the operator doesn't exist for this backend, or was omitted during the "
        "selective/custom build process (if using custom build).")


def _check_sparse(self, fn):
    """torch's error for a sparse-only method called on a dense tensor."""
    if is_sparse(self):
        return
    if fn.startswith("_"):  # (torch has no dense kernel for these at all)
        raise _not_on_dense(f"aten::{fn}")
    kind = "sparse" if fn == "values" else "sparse coordinate"
    raise RuntimeError(f"{fn} expected {kind} tensor layout but got Strided")


# -- construction and conversion ---------------------------------------------------------------
@op("_sparse_coo_tensor_with_dims_and_tensors", tensors=2, promote=NONE,
    node="SparseCooTensorWithDimsAndTensorsBackward0")
def _make(indices, values, size, coalesced=False):
    # NOTE: torch's set_indices_and_values_unsafe marks fewer than two entries coalesced
    return CooArray(indices, values, size, coalesced or indices.shape[1] < 2)


_make.jvp("values")(no_forward_ad("_sparse_coo_tensor_with_dims_and_tensors"))


@_make.grad("values")
def _(grad, indices, result):
    # (result unused: saved as torch's node saves it, so that an in-place op on the sparse
    # tensor makes its backward refuse, as torch's does)
    return _entries(grad, indices)


# NOTE: not differentiable, as torch's sparse_constructor_values_backward: under create_graph
# the gradient of a sparse tensor's values is a constant in torch, and so it is here.
@op("sparse_coo_entries", tensors=2, promote=NONE, differentiable=False)
def _entries(self, indices):
    """The values of ``self`` (sparse or dense) at each column of ``indices``."""
    return C.lookup(self, indices)


@op("sparse_coo_coalesce", aten="aten::coalesce", promote=NONE, node="CoalesceBackward0")
def _coalesce(self):
    return C.coalesce(self)


@_coalesce.grad("self")
def _(grad):
    return grad


@op("sparse_coo_to_dense", aten="aten::to_dense", promote=NONE, node="ToDenseBackward0")
def _to_dense(self):
    return C.to_dense(self)


@_to_dense.grad("self")
def _(grad, self):
    return _mask(grad, _pattern(self))


def _pattern(x):
    """The coalesced positions of sparse ``x`` (a Tensor when ``x`` is): where a gradient of
    ``x`` lives, each position once however often ``x`` repeats it."""
    coo = C.coalesce(_coo(x))
    return _wrap(coo) if isinstance(x, Tensor) else coo


@op("sparse_mask", tensors=2, promote=NONE, node="SparseMaskBackward0")
def _mask(self, mask):
    return C.mask(self, mask)


_mask.jvp("self")(no_forward_ad("sparse_mask"))


@_mask.grad("self")
def _(grad, mask):
    # torch's sparse_mask_backward: the gradient at each of mask's entries (a repeated
    # position's gradients add up), dense as self is
    return _to_dense(_mask_projection(grad, mask))


@op("sparse_mask_projection", aten="aten::_sparse_mask_projection", tensors=2, promote=NONE,
    node="NotImplemented")
def _mask_projection(self, mask):
    """sparse_mask as its backward runs it: torch defines no derivative for it."""
    return C.mask(self, mask)


@_mask_projection.grad("self")
def _(grad):
    raise RuntimeError("derivative for aten::_sparse_mask_projection is not implemented")


@op("sparse_mask_of_sparse", aten="aten::sparse_mask", tensors=2, promote=NONE,
    node="SparseMaskBackward0")
def _mask_of_sparse(self, mask):
    """A sparse ``self`` at mask's entries (zero where ``self`` has none)."""
    return C.mask(self, mask)


@_mask_of_sparse.grad("self")
def _(grad, mask):
    return _coalesce(_mask_projection(grad, mask))


@op("sparse_coo_from_dense", aten="aten::to_sparse", promote=NONE, node="ToSparseBackward1")
def _to_sparse(self):
    return C.from_dense(self)


_to_sparse.jvp("self")(no_forward_ad("_to_sparse"))


@_to_sparse.grad("self")
def _(grad):
    return _to_dense(grad)


@op("sparse_coo_from_dense_dim", aten="aten::to_sparse", promote=NONE,
    node="ToSparseBackward0")
def _to_sparse_dim(self, sparse_dim):
    return C.from_dense(self, sparse_dim)


_to_sparse_dim.jvp("self")(no_forward_ad("_to_sparse"))


@_to_sparse_dim.grad("self")
def _(grad):
    return _to_dense(grad)


@op("sparse_coo_values", aten="aten::values", promote=NONE, node="ValuesBackward0")
def _values(self):
    return self.values


@_values.grad("self")
def _(grad, self):
    return _make(_coo(self).indices, grad, _coo(self).shape, True)


# -- products ----------------------------------------------------------------------------------
def _mm_self_grad(grad, self, mat2):
    # (grad @ mat2^T) at self's entries: the gradient of a sparse matrix keeps its pattern
    return _mask(grad.mm(mat2.t()) if isinstance(grad, Tensor) else grad @ mat2.T,
                 _pattern(self))


@op("sparse_coo_addmm", aten="aten::_sparse_addmm", tensors=2, promote=NONE,
    node="SparseAddmmBackward0")
def _sparse_addmm(self, mat2):
    return C.mm(self, mat2)


@op("sparse_coo_addmm_scaled", aten="aten::addmm", tensors=3, promote=NONE,
    node="SparseAddmmBackward0")
def _sparse_addmm_scaled(self, mat1, mat2, beta=1, alpha=1):
    """beta * self + alpha * (sparse mat1 @ dense mat2); self broadcasts, and with beta 0 it
    is not read (its NaNs do not reach the result), as torch's."""
    out = C.mm(mat1, mat2)
    if alpha != 1:
        out = out * alpha
    return out + beta * self if beta != 0 else out


@_sparse_addmm_scaled.grad("self")
def _(grad, self_shape, beta):
    from .reduction import sum_to
    return sum_to(grad * beta, self_shape)


@_sparse_addmm_scaled.grad("mat1")
def _(grad, mat1, mat2, alpha):
    out = _mm_self_grad(grad, mat1, mat2)
    return out if alpha == 1 else _scale(out, alpha)


@_sparse_addmm_scaled.grad("mat2")
def _(grad, mat1, alpha):
    return _sparse_dense_mm(_t(mat1), grad) * alpha


def sparse_addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """torch.sparse.addmm: ``beta * mat + alpha * mat1 @ mat2`` for a sparse ``mat1`` (a
    SparseAddmmBackward0 node), else torch.addmm."""
    if not is_sparse(mat1) or is_sparse(mat2):
        from .. import addmm
        return addmm(mat, mat1, mat2, beta=beta, alpha=alpha)
    _check_mm_shapes(mat1, mat2)
    shape = (mat1.shape[0], mat2.shape[1])
    if tuple(mat.shape) != shape:
        mat.detach().expand(shape)  # (torch's error for a mat that does not broadcast)
    return _sparse_addmm_scaled(mat, mat1, mat2, beta, alpha)


@op("sparse_coo_mm", aten="aten::mm", tensors=2, promote=NONE, node="MmBackward0")
def _sparse_dense_mm(self, mat2):
    return C.mm(self, mat2)


@op("sparse_coo_mm_dense_sparse", aten="aten::mm", tensors=2, promote=NONE,
    node="MmBackward0")
def _dense_sparse_mm(self, mat2):
    return C.mm_dense_sparse(self, mat2)


for _d in (_sparse_addmm, _sparse_dense_mm):
    _d.grad("self")(_mm_self_grad)
    _d.grad("mat2")(lambda grad, self: _sparse_dense_mm(_t(self), grad))


@_dense_sparse_mm.grad("self")
def _(grad, mat2):
    return _dense_sparse_mm(grad, _t(mat2))


@_dense_sparse_mm.grad("mat2")
def _(grad, self):
    # torch gives a sparse mat2 a dense gradient here
    return self.t().mm(grad) if isinstance(self, Tensor) else self.T @ grad


@op("sparse_coo_mv", aten="aten::mv", tensors=2, promote=NONE, node="MvBackward0")
def _sparse_mv(self, vec):
    return C.mm(self, vec[:, None])[:, 0]


@_sparse_mv.grad("self")
def _(grad, self, vec):
    return _mask(grad[:, None] * vec[None, :], _pattern(self))


@_sparse_mv.grad("vec")
def _(grad, self):
    return _sparse_mv(_t(self), grad)


@op("sparse_coo_t", aten="aten::t", promote=NONE, node="TBackward0")
def _t(self):
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{self.ndim}D")
    return C.transpose(self, 0, 1) if self.ndim == 2 else self


@_t.grad("self")
def _(grad):
    return _t(grad) if is_sparse(grad) else (grad.t() if isinstance(grad, Tensor) else grad.T)


@op("sparse_coo_transpose", aten="aten::transpose", promote=NONE, node="TransposeBackward0")
def _transpose(self, dim0, dim1):
    if max(dim0, dim1) >= self.sparse_dim:
        raise _not_on_sparse("aten::transpose")  # (a dense dimension: not in ember)
    return C.transpose(self, dim0, dim1)


@_transpose.grad("self")
def _(grad, dim0, dim1):
    return _transpose(grad, dim0, dim1) if is_sparse(grad) else grad.transpose(dim0, dim1) if (
        isinstance(grad, Tensor)) else grad.swapaxes(dim0, dim1)


@op("sparse_coo_clone", aten="aten::clone", promote=NONE, node="CloneBackward0")
def _clone(self):
    return self.copy()


@_clone.grad("self")
def _(grad):
    return grad


# the C++ names torch's refusal of a memory format gives
_FORMAT_NAMES = {"contiguous_format": "Contiguous", "legacy_contiguous_format": "Contiguous",
                 "channels_last": "ChannelsLast", "channels_last_3d": "ChannelsLast3d"}


def _route_clone(op, self, memory_format=None):
    name = getattr(memory_format, "name", "preserve_format")
    if name != "preserve_format":
        raise RuntimeError(f"unsupported memory format option {_FORMAT_NAMES.get(name, name)}")
    return _clone(self)


# -- arithmetic --------------------------------------------------------------------------------
@op("sparse_coo_zero", aten="aten::zero", promote=NONE, node="ZeroBackward0")
def _zero(self):
    """No entries: what torch's ``zero_`` leaves of a sparse tensor."""
    xp_values = self.values
    return CooArray(self.indices[:, :0], xp_values[:0], self.shape, coalesced=True)


@_zero.grad("self")
def _(grad):
    if is_sparse(grad):
        return C.scale(_coo(grad), 0) if not isinstance(grad, Tensor) else _scale(grad, 0)
    from .pointwise import zero_gradient
    return zero_gradient(grad)


@op("sparse_coo_neg", aten="aten::neg", promote=NONE, node="NegBackward0")
def _neg(self):
    return C.scale(self, -1)


@_neg.grad("self")
def _(grad):
    return _neg(grad) if is_sparse(grad) else -grad


@op("sparse_coo_sub", aten="aten::sub", tensors=2, node="SubBackward0")
def _sparse_sub(self, other, alpha=1):
    return C.add(self, other, -alpha)


@_sparse_sub.grad("self")
def _(grad):
    return grad


@_sparse_sub.grad("other")
def _(grad, alpha):
    return _scale(grad, -alpha) if is_sparse(grad) else grad * -alpha


@op("sparse_coo_add", aten="aten::add", tensors=2, node="AddBackward0")
def _sparse_add(self, other, alpha=1):
    return C.add(self, other, alpha)


@_sparse_add.grad("self")
def _(grad):
    return grad


@_sparse_add.grad("other")
def _(grad, alpha):
    return grad if alpha == 1 else _scale(grad, alpha)


@op("sparse_coo_add_dense", aten="aten::add", tensors=2, node="AddBackward0")
def _dense_sparse_add(self, other, alpha=1):
    """dense + alpha * sparse (either order): a dense result."""
    dense, sparse = (self, other) if type(other) is CooArray else (other, self)
    out = dense.copy()
    np.add.at(out, tuple(sparse.indices), (sparse.values * alpha).astype(out.dtype))
    return out


@_dense_sparse_add.grad("self")
def _(grad, self_shape, other_shape):
    return grad


@_dense_sparse_add.grad("other")
def _(grad, alpha):
    return grad if alpha == 1 else grad * alpha


@op("sparse_coo_sub_dense", aten="aten::sub", tensors=2, node="SubBackward0")
def _dense_sparse_sub(self, other, alpha=1):
    """dense - alpha * sparse: a dense result."""
    out = self.copy()
    np.add.at(out, tuple(other.indices), (other.values * -alpha).astype(out.dtype))
    return out


@_dense_sparse_sub.grad("self")
def _(grad):
    return grad


@_dense_sparse_sub.grad("other")
def _(grad, alpha):
    return grad * -alpha


def _check_same_size(self, other):
    """torch's refusal of a dense-sparse sum of two sizes (it does not broadcast)."""
    if self.shape != other.shape:
        raise RuntimeError(
            f"add: expected 'self' and 'other' to have same size, but self has size "
            f"{list(self.shape)} while other has size {list(other.shape)} (FYI: dense-sparse "
            "addition does not currently support broadcasting)")


@op("sparse_coo_mul", aten="aten::mul", tensors=1, node="MulBackward0")
def _scale(self, other):
    return C.scale(self, other)


@_scale.grad("self")
def _(grad, other):
    return _scale(grad, other) if is_sparse(grad) else grad * other


@op("sparse_coo_mul_dense", aten="aten::mul", tensors=2, node="MulBackward0")
def _times(self, other):
    """sparse * dense of one shape: sparse, on the sparse operand's entries."""
    return C.times_at_entries(self, other)


@_times.grad("self")
def _(grad, other):
    return _times(grad, other) if is_sparse(grad) else grad * other


@_times.grad("other")
def _(grad, self):
    # NOTE: torch gives the dense operand a sparse gradient (self's entries times the
    # gradient there); ember gives it dense, so that the dense nodes before it, whose
    # formulas take dense gradients only, can run (the same numbers).
    return _to_dense(_times(self, grad))


@op("sparse_coo_mul_into_dense", aten="aten::mul", tensors=2, promote=NONE,
    node="MulBackward0")
def _dense_times_sparse(self, other):
    """dense * sparse of one shape, made dense: what ``dense.mul_(sparse)`` writes."""
    return C.to_dense(C.times_at_entries(other, self))


@_dense_times_sparse.grad("self")
def _(grad, other):
    # NOTE: torch's gradient here is sparse (on other's entries); ember's is dense (the same
    # numbers), as for the dense operand of sparse * dense
    return _to_dense(_times(other, grad))


@_dense_times_sparse.grad("other")
def _(grad, self):
    return grad * self  # (dense, as torch's: its mul formula of two dense operands)


# -- torch.sparse.softmax and log_softmax: over each line's entries only -----------------------
@op("sparse_coo_softmax", aten="aten::_sparse_softmax", promote=NONE,
    node="SparseSoftmaxBackward0")
def _softmax(self, dim):
    return C.softmax(self, dim)


@_softmax.grad("self")
def _(grad, result, dim):
    return _softmax_backward(grad, result, dim, False)


@op("sparse_coo_log_softmax", aten="aten::_sparse_log_softmax", promote=NONE,
    node="SparseLogSoftmaxBackward0")
def _log_softmax(self, dim):
    return C.softmax(self, dim, log=True)


@_log_softmax.grad("self")
def _(grad, result, dim):
    return _softmax_backward(grad, result, dim, True)


# NOTE: not differentiable: its gradient reaches a sparse tensor's values, whose gradient is a
# constant under create_graph in torch as in ember (see _entries)
@op("sparse_coo_softmax_backward", tensors=2, promote=NONE, differentiable=False)
def _softmax_backward(grad, result, dim, log):
    return C.softmax_backward(grad, result, dim, log)


def sparse_softmax(input, dim, dtype=None, *, log=False):  # noqa: A002 - torch's name
    """torch.sparse.softmax / log_softmax: a sparse result on input's coalesced entries."""
    name = "log_softmax" if log else "softmax"
    if not is_sparse(input):
        raise _not_on_dense(f"aten::_sparse_{name}")
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{name}" not implemented for '
                                  f"'{input.dtype.scalar_name}'")
    dim = dim % input.dim() if input.dim() else 0
    return (_log_softmax if log else _softmax)(input, dim)


# -- zero-preserving elementwise ops: on the coalesced values -----------------------------------
_SLOPES = {"abs": np.sign, "relu": lambda v: (v > 0).astype(v.dtype)}


@op("sparse_coo_abs", aten="aten::abs", promote=NONE, node="AbsBackward0")
def _abs(self):
    return C.map_values(self, np.abs)


@_abs.grad("self")
def _(grad, self):
    return _slope_times(grad, self, "abs")


@op("sparse_coo_sqrt", aten="aten::sqrt", promote=NONE, node="SqrtBackward0")
def _sqrt(self):
    floating = self.values.dtype.kind in "fc"
    return C.map_values(self, lambda v: np.sqrt(
        v if floating else v.astype(D.get_default_dtype().np)).astype(
            v.dtype if floating else D.get_default_dtype().np))


@_sqrt.grad("self")
def _(grad, result):
    # torch's formula, grad / (2 * result), divides by a sparse tensor, which torch refuses
    raise _sparse_divisor_error(_coo(result).shape)


def _sparse_divisor_error(shape):
    return RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor "
                        f"(got shape {list(shape)} for divisor)")


@op("sparse_coo_relu", aten="aten::relu", promote=NONE, node="ReluBackward0")
def _relu(self):
    return C.map_values(self, lambda v: np.maximum(v, 0).astype(v.dtype))


@_relu.grad("self")
def _(grad, self):
    return _slope_times(grad, self, "relu")


# NOTE: linear in grad, so differentiable in it; the slopes of abs and relu are constant
# where they are differentiable, so nothing flows to self.
@op("sparse_coo_slope_times", tensors=2, promote=NONE, node="SparseSlopeBackward0")
def _slope_times(grad, self, fn):
    return C.times_slope(grad, self, _SLOPES[fn])


@_slope_times.grad("grad")
def _(grad, self, fn):
    return _slope_times(grad, self, fn)


@op("sparse_coo_div", aten="aten::div", tensors=1, node="DivBackward0")
def _divide(self, other):
    return C.divide(self, other)


@_divide.grad("self")
def _(grad, other):
    return _divide(grad, other) if is_sparse(grad) else grad / other


@op("sparse_coo_sum", aten="aten::sum", promote=NONE, node="SumBackward0")
def _sparse_sum_all(self):
    # (torch sums the values as they are stored, coalesced or not, with its dense kernel)
    return sum_whole(self.values, None)


@_sparse_sum_all.grad("self")
def _(grad, self):
    # every position of self's pattern gets the gradient (a broadcast view, never dense)
    shape = _coo(self).shape
    return _mask(grad.expand(shape) if isinstance(grad, Tensor) else np.broadcast_to(
        grad, shape), _pattern(self))


@op("sparse_coo_sum_dim", aten="aten::sum", promote=NONE, node="SumBackward1")
def _sum_dim(self, dims):
    """``s.sum(dim)``: torch.sparse.sum's values under the dense op's node."""
    return C.sum_dims(self, dims)


@_sum_dim.grad("self")
def _(grad, self, dims):
    if len(dims) < len(_coo(self).shape):  # torch's formula expands the sparse gradient
        raise RuntimeError("expand is unsupported for Sparse tensors")
    shape = _coo(self).shape
    return _mask(grad.expand(shape) if isinstance(grad, Tensor) else np.broadcast_to(
        grad, shape), _pattern(self))


@op("_sparse_sum", promote=NONE, node="SparseSumBackward0")
def _sparse_sum_dims(self, dims):
    return C.sum_dims(self, dims)


@_sparse_sum_dims.grad("self")
def _(grad, self, dims):
    return _sparse_sum_backward(grad, self, dims)


@op("_sparse_sum_backward", tensors=2, promote=NONE, differentiable=False)
def _sparse_sum_backward(grad, self, dims):
    """The gradient of a sum over ``dims``: each entry of ``self`` gets the gradient at its
    position with ``dims`` left out."""
    self = C.coalesce(self)  # (one gradient per position, however often it repeats)
    kept = [d for d in range(self.sparse_dim) if d not in dims]
    dense_dims = [d for d in dims if d >= self.sparse_dim]
    g = grad if type(grad) is not CooArray else C.to_dense(grad)
    picked = g[tuple(self.indices[kept])] if kept else np.broadcast_to(
        g, (self.nnz,) + g.shape)
    for d in sorted(dense_dims):
        picked = np.expand_dims(picked, d - self.sparse_dim + 1)
    values = np.broadcast_to(picked, self.values.shape).astype(self.dtype)
    return CooArray(self.indices, values, self.shape, self.coalesced)


# -- the public functions ----------------------------------------------------------------------
_WARNED = []
_INVARIANTS_WARNING = (
    "Sparse invariant checks are implicitly disabled. Memory errors (e.g. SEGFAULT) will occur "
    "when operating on a sparse tensor which violates the invariants, but checks incur "
    "performance overhead. To silence this warning, explicitly opt in or out. See "
    "`torch.sparse.check_sparse_tensor_invariants.__doc__` for guidance.  (Triggered internally "
    "at /__w/pytorch/pytorch/aten/src/ATen/Context.cpp:816.)")


def sparse_coo_tensor(indices=None, values=None, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad=False, check_invariants=None,
                      is_coalesced=None):
    """A sparse COO tensor with entries ``values`` at the columns of ``indices``; or, given only
    a size (``sparse_coo_tensor((5, 3))``, ``size=(5, 3)``), an empty one of that shape."""
    from .._creation import tensor as _tensor
    if check_invariants is None and not _WARNED:
        _WARNED.append(True)
        warnings.warn(_INVARIANTS_WARNING, UserWarning, stacklevel=2)
    if values is None:
        indices, values, size = _empty_coo_parts(indices, size, dtype)
    if not isinstance(indices, Tensor):
        indices = _tensor(np.asarray(indices))
    if not isinstance(values, Tensor):
        values = _tensor(values, dtype=dtype)
    if dtype is not None and values.dtype != dtype:
        values = values.to(dtype)
    if indices.dtype != D.int64:
        indices = indices.to(D.int64)
    idx = indices._data
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if idx.shape[1] != values.shape[0]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{idx.shape[1]}, nnz from values: {values.shape[0]}")
    dense_shape = tuple(values.shape[1:])
    if size is None:
        size = tuple(int(m) + 1 for m in idx.max(axis=1)) if idx.shape[1] else (0,) * len(idx)
        size += dense_shape
    size = tuple(int(s) for s in size)
    if len(size) != idx.shape[0] + len(dense_shape):
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) "
                           f"= {len(size)}, sparse_dim = {idx.shape[0]}, dense_dim = "
                           f"{len(dense_shape)}")
    if check_invariants:
        _check_bounds(idx, size)
    if requires_grad:
        values = values.detach()
    out = _make(indices.detach(), values, size, bool(is_coalesced))
    if requires_grad:
        out._set_requires_grad(True)
    return out


def _empty_coo_parts(first, size, dtype):
    """``(indices, values, size)`` of torch's size-only form: no entry, every dimension
    sparse, values of ``dtype`` (the default dtype if None)."""
    from .._creation import zeros
    if size is None:
        size = first
    if size is None or (first is not None and first is not size):
        raise TypeError("sparse_coo_tensor() missing 2 required positional arguments: "
                        "'indices' and 'values'")
    if isinstance(size, Tensor):
        raise TypeError("sparse_coo_tensor(): argument 'size' (position 1) must be tuple of "
                        "ints, not Tensor")
    size = tuple(int(n) for n in size)
    return zeros(len(size), 0, dtype=D.int64), zeros(0, dtype=dtype), size


def _check_bounds(idx, size):
    for d in range(idx.shape[0]):
        if idx.shape[1] and (idx[d].max() >= size[d] or idx[d].min() < 0):
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                               f"{size[d]} but found index {int(idx[d].max())}")


def spmm(input, mat2):  # noqa: A002 - torch's name
    """torch.spmm: a sparse or dense matrix times a dense one."""
    from .linalg import mm
    return mm(input, mat2)


def sparse_mm(mat1, mat2):
    """torch.sparse.mm: sparse x dense (a SparseAddmmBackward0 node), else mm."""
    if is_sparse(mat1) and not is_sparse(mat2):
        _check_mm_shapes(mat1, mat2)
        return _sparse_addmm(mat1, mat2)
    from .linalg import mm
    return mm(mat1, mat2)


def _check_mm_shapes(mat1, mat2):
    if mat1._data.sparse_dim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {mat1._data.sparse_dim}D tensor")
    if mat1.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError("mm: expected 2D matrices")
    if mat1.dtype != mat2.dtype:
        raise RuntimeError(f"expected scalar type {mat1.dtype.scalar_name} but found "
                           f"{mat2.dtype.scalar_name}")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {mat1.shape[1]}, "
                           f"got {mat2.shape[0]}")


def sparse_sum(input, dim=None, dtype=None):  # noqa: A002 - torch's name
    """torch.sparse.sum: every entry (a dense 0-dim tensor) or over ``dim``."""
    if dtype is not None:
        input = input.to(dtype)
    if dim is None:  # (torch's: the coalesced values' sum, its graph through their nodes)
        return input.coalesce().values().sum()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(sorted(d % input.dim() for d in dims))
    return _sparse_sum_dims(input, dims)


# -- dense ops handed a sparse operand ---------------------------------------------------------
def route(op, args, inplace=False):
    """The sparse form of a dense op's call (see the module docstring)."""
    if inplace and op.name == "copy":
        return _route_copy(*args[:2])
    if inplace and not is_sparse(args[0]):
        out = _route_dense_inplace(op, args)
        if out is not NotImplemented:
            return out
    if inplace:
        out = _route_inplace(op, args)
        if out is not NotImplemented:
            return out
        raise _not_on_sparse(op.aten + "_")
    handler = _ROUTES.get(op.name)
    if handler is not None:
        out = handler(op, *args)
        if out is not NotImplemented:
            return out
    raise _not_on_sparse(op.aten)


def _route_inplace(op, args):
    """``s += t``, ``s.mul_(2)``, ``s.zero_()``, ...: the out-of-place result's indices and
    values become ``self``'s, as torch's sparse in-place arithmetic gives them (coalesced when
    the out-of-place op coalesces). With a tensor requiring grad, as torch's: a leaf refuses,
    else ``self`` takes the recorded result's history (``AddBackward0``, ...)."""
    self = args[0]
    if op.name not in _IN_PLACE or not is_sparse(self):
        return NotImplemented
    from .._state import state
    from .inplace import check_inplace
    recording = state.grad_enabled and any(isinstance(a, Tensor) and a.requires_grad
                                           for a in args)
    check_inplace(self, recording)
    if op.name in _NEEDS_COALESCED and not self._data.coalesced:
        raise RuntimeError(f"{op.name}_ requires coalesced input")
    if recording and op.name in _NEEDS_COALESCED:
        # (their formulas read self as it was: as torch's, a clone of it is saved)
        args = (_clone(self),) + tuple(args[1:])
    out = _ROUTES[op.name](op, *args)
    if out is NotImplemented:
        return out
    if out.dtype != self.dtype:
        if op.name == "sqrt":  # (a floating result, refused as torch's dense ops refuse it)
            raise RuntimeError(f"result type {out.dtype.scalar_name} can't be cast to the "
                               f"desired output type {self.dtype.scalar_name}")
        if not D.can_cast(out.dtype, self.dtype):
            raise RuntimeError(f"dtype of values ({out.dtype.scalar_name}) must match dtype of "
                               f"sparse tensor ({self.dtype.scalar_name})")
        out = out.to(self.dtype)
    mine, result = self._data, out._data
    mine.indices, mine.values, mine.coalesced = result.indices, result.values, result.coalesced
    self._bump_version()
    if recording:
        self._grad_fn, self._output_nr, self._requires_grad = out._grad_fn, out._output_nr, True
    return self


def _route_copy(self, src):
    """``copy_`` with a sparse operand: torch copies a sparse tensor into a sparse one (its
    size, indices and values, cast to self's dtype) and refuses a dense one either way."""
    if is_sparse(self) != is_sparse(src):
        def name(t):
            typename = D._BY_NP[t._data.dtype].legacy_type_name
            return typename.replace(".", ".sparse.", 1) if is_sparse(t) else typename
        raise RuntimeError("copy_() between dense and sparse Tensors is not implemented! Found "
                           f"self type = {name(self)} and src type = {name(src)}")
    from .._state import state
    if state.grad_enabled and (self.requires_grad or src.requires_grad):
        raise _not_on_sparse("aten::copy_")  # (a recorded sparse copy_: not in ember)
    mine, theirs = self._data, src._data
    _check_resizable(mine, theirs.shape, theirs.sparse_dim)
    mine.indices, mine.values = theirs.indices.copy(), theirs.values.astype(mine.values.dtype)
    mine.shape, mine.coalesced = theirs.shape, theirs.coalesced
    self._bump_version()
    return self


_RESIZE_OPTIONS = (
    " on a non-empty sparse tensor is not supported.\nYou could try the following options:\n"
    "1. If you need an empty sparse tensor of this size, call `x = ember.sparse_coo_tensor("
    "size)`.\n2. If you need to resize this tensor, you have the following options:\n    1. "
    "For both sparse and dense dimensions, keep the number of them constant and the size of "
    "them non-shrinking, and then try the same call again.\n    2. Or, create a new sparse "
    "tensor with the correct indices and values from this sparse tensor.")


def _check_resizable(coo, shape, sparse_dim):
    """torch's refusals to resize a sparse tensor with entries: another number of sparse
    dimensions, or a sparse dimension that shrinks."""
    if coo.values.shape[0] == 0:
        return
    if sparse_dim != coo.sparse_dim:
        raise RuntimeError(f"changing the number of sparse dimensions (from {coo.sparse_dim} "
                           f"to {sparse_dim})" + _RESIZE_OPTIONS)
    old, new = list(coo.shape[:sparse_dim]), list(shape[:sparse_dim])
    if any(n < o for o, n in zip(old, new)):
        raise RuntimeError(f"shrinking the size of sparse dimensions (from {old} to {new})"
                           + _RESIZE_OPTIONS)


def _route_dense_inplace(op, args):
    """``dense.add_(sparse)``, ``sub_`` and ``mul_``: the out-of-place result, dense, written
    into ``self``, which takes its history (AddBackward0, SubBackward0, MulBackward0), as
    torch's; ``div_`` by a sparse tensor is torch's refusal."""
    self, other = args[0], args[1] if len(args) > 1 else None
    if not isinstance(other, Tensor) or not is_sparse(other):
        return NotImplemented
    if op.name == "div":
        raise _sparse_divisor_error(other.shape)
    if op.name not in _DENSE_IN_PLACE:
        return NotImplemented
    if op.name == "mul" and self.shape != other.shape:
        from .registry import broadcast_error
        try:
            np.broadcast_shapes(self.shape, other.shape)
        except ValueError:
            raise broadcast_error((self, other)) from None
        return NotImplemented  # (torch's broadcast sparse product: not in ember)
    _check_same_size(self, other)
    dt = D.promote_types(self.dtype, other.dtype)
    if not D.can_cast(dt, self.dtype):  # (torch's message names add for mul_ too)
        raise RuntimeError(f"Can't convert result type {dt.scalar_name} to output "
                           f"{self.dtype.scalar_name} in add operation")
    from .._state import state
    from .inplace import check_inplace
    recording = state.grad_enabled and (self.requires_grad or other.requires_grad)
    check_inplace(self, recording)
    alpha = args[2] if len(args) > 2 else 1
    other = other.to(self.dtype)
    if recording and self._base is not None:  # (a view: its base's history is rebased)
        return self.copy_(_dense_in_place_result(op.name, self, other, alpha))
    # (mul's formula reads self as it was: a clone of it, recorded, is what it saves)
    operand = self.detach() if not recording else self.clone() if op.name == "mul" else self
    out = _dense_in_place_result(op.name, operand, other, alpha)
    np.copyto(self._data, out._data)
    self._bump_version()
    if recording:
        self._grad_fn, self._output_nr, self._requires_grad = out._grad_fn, out._output_nr, True
    return self


_DENSE_IN_PLACE = ("add", "sub", "mul")


def _dense_in_place_result(name, self, other, alpha):
    if name == "mul":
        return _dense_times_sparse(self, other)
    return (_dense_sparse_add if name == "add" else _dense_sparse_sub)(self, other, alpha)


def _route_mm(op, self, mat2):
    if is_sparse(self) and not is_sparse(mat2):
        _check_mm_shapes(self, mat2)
        return _sparse_dense_mm(self, mat2)
    if is_sparse(mat2) and not is_sparse(self):
        return _dense_sparse_mm(self, mat2)
    return NotImplemented


def _route_mv(op, self, vec):
    if not is_sparse(self) or is_sparse(vec):
        return NotImplemented
    if self.dtype != vec.dtype:
        raise RuntimeError(f"expected scalar type {self.dtype.scalar_name} but found "
                           f"{vec.dtype.scalar_name}")
    return _sparse_mv(self, vec)


def _route_add(op, self, other, alpha=1):
    if not isinstance(other, Tensor):
        return NotImplemented
    if is_sparse(other) and not is_sparse(self):
        _check_same_size(self, other)
    if self.shape != other.shape:
        return NotImplemented
    if is_sparse(self) and not is_sparse(other):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    dt = D.promote_types(self.dtype, other.dtype)
    self, other = self.to(dt), other.to(dt)
    if is_sparse(self) and is_sparse(other):
        return _sparse_add(self, other, alpha)
    return _dense_sparse_add(self, other, alpha)


def _route_mul(op, self, other):
    if isinstance(other, Tensor):
        return _route_mul_tensors(self, other)
    if not is_sparse(self):
        return NotImplemented
    from .. import result_type
    return _scale(self.to(result_type(self, other)), other)  # (int * 2.5 is float)


def _route_mul_tensors(self, other):
    if is_sparse(self) == is_sparse(other) or self.shape != other.shape:
        return NotImplemented  # (sparse * sparse keeps torch's intersection: not in ember)
    dt = D.promote_types(self.dtype, other.dtype)
    sparse, dense = (self, other) if is_sparse(self) else (other, self)
    return _times(sparse.to(dt), dense.to(dt))


def _route_div(op, self, other):
    if isinstance(other, Tensor) and (is_sparse(other) or other.dim() != 0):
        raise _sparse_divisor_error(other.shape)
    if isinstance(other, Tensor) or not is_sparse(self):
        return NotImplemented
    from .. import result_type
    dt = result_type(self, other)
    return _divide(self.to(dt if dt.is_floating_point else D.get_default_dtype()), other)


def _route_sub(op, self, other, alpha=1):
    if isinstance(other, Tensor) and is_sparse(other) and not is_sparse(self):
        _check_same_size(self, other)
        dt = D.promote_types(self.dtype, other.dtype)
        return _dense_sparse_sub(self.to(dt), other.to(dt), alpha)
    if not (isinstance(other, Tensor) and is_sparse(self) and is_sparse(other)
            and self.shape == other.shape):
        return NotImplemented
    dt = D.promote_types(self.dtype, other.dtype)
    return _sparse_sub(self.to(dt), other.to(dt), alpha)


def _route_transpose(op, self, dim0, dim1):
    return _transpose(self, dim0 % self.dim(), dim1 % self.dim())


def _route_sum(op, self, *args):
    if op is _dense_sum_all:
        return _sparse_sum_all(self if args[0] is None else self.to(args[0]))
    dim, keepdim, dtype = args
    if keepdim:
        return NotImplemented
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return _sum_dim(self if dtype is None else self.to(dtype),
                    tuple(sorted({d % self.dim() for d in dims})))


_ROUTES = {"mm": _route_mm, "add": _route_add, "sub": _route_sub, "mul": _route_mul,
           "abs": lambda op, self: _abs(self), "relu": lambda op, self: _relu(self),
           "div": _route_div, "mv": _route_mv,
           "t": lambda op, self: _t(self), "transpose": _route_transpose,
           "neg": lambda op, self: _neg(self), "sum": _route_sum, "clone": _route_clone,
           "zero": lambda op, self: _zero(self), "sqrt": lambda op, self: _sqrt(self)}
# (torch's sparse in-place arithmetic; its in-place unary ops but neg_ take coalesced input)
_IN_PLACE = frozenset({"add", "sub", "mul", "div", "neg", "zero", "abs", "relu", "sqrt"})
_NEEDS_COALESCED = frozenset({"abs", "relu", "sqrt"})


# -- Tensor methods ----------------------------------------------------------------------------
def _tensor_to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    if layout is not None and repr(layout) != "ember.sparse_coo":
        raise NotImplementedError(f"to_sparse: layout {layout} is not supported by ember")
    if is_sparse(self):
        return self
    if sparse_dim is not None:
        return _to_sparse_dim(self, int(sparse_dim))
    return _to_sparse(self)


def _tensor_to_dense(self, dtype=None, *, masked_grad=None):
    out = _to_dense(self) if is_sparse(self) else self
    return out if dtype is None else out.to(dtype)


def _tensor_sparse_mask(self, mask):
    """``self`` (dense or sparse) at the entries of the sparse ``mask``, whose values are
    ignored: a sparse tensor of self's dtype with mask's indices."""
    if not is_sparse(mask):  # (torch's sparse self asks the dense mask for its _nnz)
        raise _not_on_dense("aten::_nnz" if is_sparse(self) else "aten::sparse_mask")
    if self.shape != mask.shape:
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(self.shape)} but mask has size {list(mask.shape)}")
    # (mask is not differentiable in torch: its values are never read)
    return (_mask_of_sparse if is_sparse(self) else _mask)(self, mask.detach())


def _tensor_coalesce(self):
    _check_sparse(self, "coalesce")
    return self if self._data.coalesced else _coalesce(self)


def _tensor_is_coalesced(self):
    _check_sparse(self, "is_coalesced")
    return self._data.coalesced


def _tensor_indices(self):
    _check_sparse(self, "indices")
    if not self._data.coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                           ".coalesce() first")
    return _wrap(self._data.indices)


def _tensor_values(self):
    _check_sparse(self, "values")
    if not self._data.coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                           ".coalesce() first")
    return _values(self)


def _tensor_raw_indices(self):
    _check_sparse(self, "_indices")
    return _wrap(self._data.indices)


def _tensor_raw_values(self):
    _check_sparse(self, "_values")
    return _wrap(self._data.values)


def _tensor_nnz(self):
    _check_sparse(self, "_nnz")
    return self._data.nnz


def _tensor_coalesced_(self, coalesced):
    _check_sparse(self, "_coalesced_")
    self._data.coalesced = bool(coalesced)
    return self


def _install():
    from .._tensor import sparse_coo, strided
    methods = {"to_sparse": _tensor_to_sparse, "to_dense": _tensor_to_dense,
               "coalesce": _tensor_coalesce, "sparse_mask": _tensor_sparse_mask, "is_coalesced": _tensor_is_coalesced,
               "indices": _tensor_indices, "values": _tensor_values,
               "_indices": _tensor_raw_indices, "_values": _tensor_raw_values,
               "_nnz": _tensor_nnz, "_coalesced_": _tensor_coalesced_,
               "sparse_dim": lambda self: self._data.sparse_dim if is_sparse(self) else 0,
               "dense_dim": lambda self: (self._data.dense_dim if is_sparse(self)
                                          else self._data.ndim)}
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    Tensor.is_sparse = property(lambda self: type(self._data) is CooArray)
    Tensor.layout = property(lambda self: sparse_coo if type(self._data) is CooArray
                             else strided)


_install()
