"""Views of a tensor's storage: ``as_strided``, ``view_as_real``, ``view_as_complex``, and the
``real`` / ``imag`` views of complex tensors.

A tensor's storage is the memory its NumPy array's owner holds (``_backend.storage_of``);
storage offsets and strides count elements of the tensor's dtype, as in torch. Like every view
op these share memory and the version counter with their base (``view=True``).
"""
from __future__ import annotations

__all__ = ["as_strided", "as_strided_scatter", "view_as_real", "view_as_complex", "real", "imag"]

import numpy as np

from .._backend import (contiguous_strides, data_address, get_xp, scatter_add, storage_of,
                        strided_view)
from .._backend.layout import copy_in_format
from .._tensor import Tensor
from ..autograd.grad_mode import is_grad_enabled
from .registry import NONE, op
from .shape import clone, select


# -- as_strided ---------------------------------------------------------------------------------
def _int_tuple(value, name, position, function="as_strided"):
    """``value`` as a tuple of ints, with torch's argument errors."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{function}(): argument '{name}' (position {position}) must be tuple "
                        f"of ints, not {type(value).__name__}")
    for k, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{function}(): argument '{name}' (position {position}) must be "
                            f"tuple of ints, but found element of type {type(v).__name__} at "
                            f"pos {k}")
    return tuple(int(v) for v in value)


def _strided_arguments(size, stride, storage_offset, position, function="as_strided"):
    """``(size, stride, storage_offset)`` checked as torch's parser checks them (``position``:
    that of ``size``)."""
    size = _int_tuple(size, "size", position, function)
    stride = _int_tuple(stride, "stride", position + 1, function)
    if storage_offset is not None:
        if isinstance(storage_offset, bool) or not isinstance(storage_offset, (int, np.integer)):
            raise TypeError(f"{function}(): argument 'storage_offset' (position "
                            f"{position + 2}) must be int, not {type(storage_offset).__name__}")
        storage_offset = int(storage_offset)
    return size, stride, storage_offset


def geometry(x):
    """``(shape, strides, storage_offset, storage_size)`` of array ``x``, in elements."""
    _, start, end = storage_of(x)
    item = x.itemsize
    return (x.shape, tuple(s // item for s in x.strides), (data_address(x) - start) // item,
            (end - start) // item)


def _check_strided(size, stride, storage_offset, item, storage_bytes):
    """torch's refusals for a strided view that does not fit its storage."""
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    if storage_offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {storage_offset}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    if 0 in size:
        return
    needed = item * (storage_offset + 1 + sum((n - 1) * s for n, s in zip(size, stride)))
    if needed > storage_bytes:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {storage_offset}, and itemsize {item} requiring a storage "
                           f"size of {needed} are out of bounds for storage of size "
                           f"{storage_bytes}")


def refuse_filling_empty(self, n, dim, into_self):
    """torch's index_fill_ of an empty ``dim`` views the result with that dim ``n`` long and
    of stride 0, which its storage refuses unless it holds the elements that view reaches:
    self's (in place), or a new empty contiguous tensor's (which holds none)."""
    item = self._data.itemsize
    size = list(self.shape)
    if into_self:
        stride, offset = list(self.stride()), self.storage_offset()
        held = self.untyped_storage().nbytes()
    else:
        stride, offset, held = [s // item for s in contiguous_strides(size, item)], 0, 0
    size[dim], stride[dim] = n, 0
    _check_strided(size, stride, offset, item, held)


@op("as_strided", view=True, promote=NONE, node="AsStridedBackward0")
def _as_strided(self, size, stride, storage_offset, self_geometry):
    _, start, end = storage_of(self)
    item = self.itemsize
    if storage_offset is None:  # torch: the input's own offset
        storage_offset = (data_address(self) - start) // item
    _check_strided(size, stride, storage_offset, item, end - start)
    return strided_view(self, size, [s * item for s in stride], start + storage_offset * item)


@_as_strided.grad("self", writes=1)
def _(grad, size, stride, storage_offset, self_geometry):
    if isinstance(grad, Tensor):  # create_graph: the graph torch's formula records
        return _composed_backward(grad, self_geometry, size, stride, storage_offset)
    return as_strided_backward(grad, self_geometry, size, stride, storage_offset)


def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with the given size, stride and storage offset."""
    return _as_strided_call(input, size, stride, storage_offset, 2)


def _as_strided_method(self, size, stride, storage_offset=None):
    return _as_strided_call(self, size, stride, storage_offset, 1)


def _as_strided_call(x, size, stride, storage_offset, position, as_strided_op=None):
    """as_strided's arguments checked as torch's parser checks them, then ``as_strided_op``
    (as_strided, or as_strided_copy) called with them."""
    size, stride, storage_offset = _strided_arguments(size, stride, storage_offset, position)
    data = x._data if isinstance(x, Tensor) else x
    return (as_strided_op or _as_strided)(x, size, stride, storage_offset, geometry(data))


Tensor.as_strided = _as_strided_method


# -- as_strided_scatter -------------------------------------------------------------------------
@op("as_strided_scatter", tensors=2, promote=NONE, node="AsStridedScatterBackward0")
def _as_strided_scatter(self, src, size, stride, storage_offset):
    out = copy_in_format(self)  # (torch's clone: a dense self's strides kept)
    _, start, end = storage_of(out)
    item = out.itemsize
    offset = 0 if storage_offset is None else storage_offset  # (the fresh copy's own: 0)
    _check_strided(size, stride, offset, item, end - start)
    region = strided_view(out, size, [s * item for s in stride], start + offset * item)
    if region.shape != src.shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(src.shape)}, slice size = {list(region.shape)}")
    region[...] = src
    return out


# NOTE: torch's formula gives self the gradient inside the region (and zeros outside it), which
# its own gradcheck refuses; these are the derivatives: self's gradient outside the region,
# src's inside it. Both read the region in a contiguous result (as_strided_scatter refuses
# another layout where a gradient is wanted).
def _fresh_contiguous(x):
    """A C-contiguous copy of ``x`` in memory of its own (storage offset 0)."""
    from .._tensor_extras import contiguous_format
    return clone(x, contiguous_format)


@_as_strided_scatter.grad("self")
def _(grad, src_shape, size, stride, storage_offset):
    from .pointwise import zero_gradient
    return _as_strided_scatter(_fresh_contiguous(grad), zero_gradient(grad, src_shape), size,
                               stride, storage_offset)


@_as_strided_scatter.grad("src")
def _(grad, size, stride, storage_offset):
    return _fresh_contiguous(as_strided(_fresh_contiguous(grad), size, stride, storage_offset))


_NOT_CONTIGUOUS = ('!self.requires_grad() || self.is_contiguous() INTERNAL ASSERT FAILED at '
                   '"/__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp":4754, please '
                   'report a bug to PyTorch. as_strided_scatter is currently only supported for '
                   'contiguous inputs')


def as_strided_scatter(input, src, size, stride, storage_offset=None):  # noqa: A002
    """``input`` with ``input.as_strided(size, stride, storage_offset)`` replaced by ``src``
    (of a copy of ``input``, laid out as ``clone`` lays it out)."""
    return _scatter_call(input, src, size, stride, storage_offset, 3)


def _as_strided_scatter_method(self, src, size, stride, storage_offset=None):
    return _scatter_call(self, src, size, stride, storage_offset, 2)


def _scatter_call(x, src, size, stride, storage_offset, position):
    size, stride, storage_offset = _strided_arguments(size, stride, storage_offset, position,
                                                      "as_strided_scatter")
    if isinstance(x, Tensor) and not x.is_contiguous():
        if x.requires_grad:  # (torch's check, in any grad mode)
            raise RuntimeError(_NOT_CONTIGUOUS)
        if isinstance(src, Tensor) and src.requires_grad and is_grad_enabled():
            # NOTE: torch reads src's gradient from a contiguous copy of the output's: of a
            # result laid out otherwise, other elements' (wrong); ember refuses
            raise RuntimeError("as_strided_scatter: the gradient of src is supported for a "
                               "contiguous input only")
    return _as_strided_scatter(x, src, size, stride, storage_offset)


Tensor.as_strided_scatter = _as_strided_scatter_method


# The gradient of as_strided, and the gradient of that: linear maps between the input's
# elements and the output's, through the storage positions each element occupies.
def _positions(xp, shape, strides, offset):
    """The storage position of every element of a strided view, as an int array of ``shape``."""
    idx = xp.asarray(offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        step = xp.arange(n, dtype=np.int64) * s
        idx = idx + step.reshape((n,) + (1,) * (len(shape) - d - 1))
    return xp.broadcast_to(idx, tuple(shape))


def _transfer(values, src, dst, counted):
    """Sum ``values`` into the storage positions ``src``, then read positions ``dst``.

    ``counted`` ("src" or "dst") is the side that holds the input's positions: an input whose
    elements overlap in storage shares each position's gradient among them (torch does the
    same), so values are divided by how many input elements share their position.
    """
    xp = get_xp(values)
    src, dst = src.ravel(), dst.ravel()
    if src.size == 0 or dst.size == 0:
        return xp.zeros(dst.size, values.dtype)
    lo = int(min(src.min(), dst.min()))
    n = int(max(src.max(), dst.max())) - lo + 1
    inputs = src if counted == "src" else dst
    counts = scatter_add(xp.zeros(n, values.dtype), inputs - lo, 1)
    overlap = bool(counts.max() > 1)
    values = xp.ravel(values)
    if overlap and counted == "src":
        values = values / counts[src - lo]
    out = scatter_add(xp.zeros(n, values.dtype), src - lo, values)[dst - lo]
    if overlap and counted == "dst":
        out = out / counts[dst - lo]
    return out


def _input_and_output_positions(xp, self_geometry, size, stride, storage_offset):
    shape, strides, offset, _ = self_geometry
    out_offset = offset if storage_offset is None else storage_offset
    return (_positions(xp, shape, strides, offset),
            _positions(xp, size, stride, out_offset))


@op("as_strided_backward", promote=NONE, node="AsStridedBackward0")
def as_strided_backward(grad, self_geometry, size, stride, storage_offset):
    """The gradient of ``as_strided`` w.r.t. its input, from the output's ``grad``."""
    pin, pout = _input_and_output_positions(get_xp(grad), self_geometry, size, stride,
                                            storage_offset)
    return _transfer(grad, pout, pin, "dst").reshape(self_geometry[0])


def _composed_backward(grad, self_geometry, size, stride, storage_offset):
    """``as_strided_backward`` on Tensors, composed as torch's formula is, so that
    create_graph records its nodes: output dimensions of one element squeezed and of stride 0
    summed, the gradient copied into its place in a zero "storage" (CopySlices), or summed
    there by index_add_ where output elements overlap, divided by how many input elements
    share each place where those overlap, and the input's view of that storage
    (AsStridedBackward0)."""
    from .._creation import arange
    in_sizes, in_strides, in_offset, _ = self_geometry
    out_offset = in_offset if storage_offset is None else storage_offset
    out_sizes, out_strides = [], []
    for i in reversed(range(len(size))):
        if size[i] == 0:
            return grad.new_zeros(tuple(in_sizes))
        if size[i] == 1:
            grad = grad.squeeze(i)
        elif stride[i] == 0:
            grad = grad.sum(i)
        else:
            out_sizes.insert(0, size[i])
            out_strides.insert(0, stride[i])
    kept = [(n, st) for n, st in zip(in_sizes, in_strides) if n != 1]
    if any(n == 0 for n, _ in kept):
        return grad.new_zeros(tuple(in_sizes))
    kept_sizes, kept_strides = [n for n, _ in kept], [st for _, st in kept]
    shared = min(in_offset, out_offset)
    in_offset, out_offset = in_offset - shared, out_offset - shared
    storage = grad.new_zeros(max(_min_storage_size(kept_sizes, kept_strides, in_offset),
                                 _min_storage_size(out_sizes, out_strides, out_offset)))
    positions = arange(storage.numel(), device=grad.device)
    if _maybe_overlapping(out_sizes, out_strides):
        where = positions.as_strided(out_sizes, out_strides, out_offset).reshape(-1)
        storage.index_add_(0, where, grad.reshape(-1))
    else:
        storage.as_strided(out_sizes, out_strides, out_offset).copy_(grad)
    if _maybe_overlapping(kept_sizes, kept_strides):
        where = positions.as_strided(kept_sizes, kept_strides, in_offset).reshape(-1)
        count = grad.new_zeros(storage.shape)
        count.index_add_(0, where, grad.new_ones(1).expand(where.shape))
        storage.div_(count)
    return storage.as_strided(tuple(in_sizes), tuple(in_strides), in_offset)


def _min_storage_size(sizes, strides, offset):
    return offset + 1 + sum((n - 1) * st for n, st in zip(sizes, strides))


def _maybe_overlapping(sizes, strides):
    """torch's test for a strided geometry whose elements may share memory: by increasing
    stride, each stride must pass the extent of the dimensions before it."""
    extent = 0
    for n, st in sorted(zip(sizes, strides), key=lambda d: d[1]):
        if st <= extent:
            return True
        extent += st * (n - 1)
    return False


# -- complex <-> real views ---------------------------------------------------------------------
_REAL_OF = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}
_COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}
_SCALAR_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                 "uint8": "Byte", "bool": "Bool", "float16": "Half"}


def _refuse_conjugated(self):
    """torch's view_as_real refuses a tensor with the conjugate bit: its view would show the
    unconjugated values (ember's array holds them conjugated, so the view would not be the
    alias torch's is)."""
    if self.__dict__.get("_conj_bit"):
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To "
                           "resolve the conjugate tensor so you can view it as real, use "
                           "self.resolve_conj(); however, be warned that the resulting tensor "
                           "will NOT alias the original.")


def view_as_real(input):  # noqa: A002
    """A real view of a complex tensor: a last dimension of size 2 holds (real, imag)."""
    _refuse_conjugated(input)
    return _view_as_real(input)


@op("view_as_real", view=True, promote=NONE, node="ViewAsRealBackward0")
def _view_as_real(self):
    """view_as_real's op (real and imag view a conjugated tensor through it: ember's array
    holds the conjugated values)."""
    real = _REAL_OF.get(self.dtype)
    if real is None:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    # NOTE: a size-1 trailing axis is always "contiguous", so NumPy can split each complex
    # element in two whatever the other strides are.
    return self[..., None].view(real)


@_view_as_real.grad("self")
def _(grad):
    # torch's view_as_complex(grad.contiguous()): a copy only where grad's layout needs one
    data = grad._data if isinstance(grad, Tensor) else grad
    return view_as_complex(grad if data.flags.c_contiguous else clone(grad))


@op("view_as_complex", view=True, promote=NONE, node="ViewAsComplexBackward0")
def view_as_complex(self):
    """A complex view of a real tensor whose last dimension (size 2) holds (real, imag)."""
    cplx = _COMPLEX_OF.get(self.dtype)
    if cplx is None:
        if self.dtype == np.float16:  # NOTE: torch gives complex32, which ember lacks
            raise RuntimeError("view_as_complex of a half tensor needs complex32, which ember "
                               "does not have")
        raise RuntimeError("view_as_complex is only supported for half, float and double "
                           "tensors, but got a tensor of scalar type: "
                           f"{_SCALAR_NAMES.get(self.dtype.name, self.dtype.name)}")
    _check_complex_layout(self)
    return self.view(cplx)[..., 0]


def _check_complex_layout(x):
    if x.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    shape, strides, offset, _ = geometry(x)
    # NOTE: NumPy gives empty arrays zero strides, and the stride of a size-1 dimension means
    # nothing to it either: such strides are torch's contiguous ones as far as this goes.
    if x.size == 0:
        return
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for n, s in zip(shape[:-1], strides[:-1]) if n != 1):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last "
                           "dimension")
    if offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")


@view_as_complex.grad("self")
def _(grad):
    return _view_as_real(grad)


def real(input):
    """The real part of a complex tensor as a view (a real tensor is its own real part)."""
    if not input.dtype.is_complex:
        return input
    return select(_view_as_real(input), input.ndim, 0)  # (torch selects the wrapped dim)


def imag(input):
    """The imaginary part of a complex tensor as a view."""
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return select(_view_as_real(input), input.ndim, 1)  # (torch selects the wrapped dim)


def _set_part(part):
    def setter(self, value):
        part(self).copy_(value)
    return setter


Tensor.real = property(real, _set_part(real))
Tensor.imag = property(imag, _set_part(imag))
