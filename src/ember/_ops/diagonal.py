"""Triangles and diagonals: tril, triu, diagonal (a writable view), diag, diag_embed, trace.

indexing.py re-exports this module's public names.
"""
from __future__ import annotations

__all__: list[str] = []  # exported through indexing.py

import numpy as np

from .._backend import get_xp
from .._tensor import _wrap_dim
from ..autograd._grad_versions import note_view
from .registry import NONE, op


def _axis_key(dim, index):
    return (slice(None),) * dim + (index,)


# -- triangles, diagonals, trace -------------------------------------------------------------------
def _triangle(name, kernel_name):
    @op(name, promote=NONE, method=True, inplace=True)
    def tri(self, diagonal=0):
        if self.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        xp = get_xp(self)  # (torch's result is contiguous whatever the input's layout)
        return xp.ascontiguousarray(getattr(xp, kernel_name)(self, diagonal))

    @tri.grad("self")
    def _(grad, diagonal):
        return tri(grad, diagonal)
    return tri


tril = _triangle("tril", "tril")
triu = _triangle("triu", "triu")


def _diagonal_view(x, offset, dim1, dim2):
    """The (writable) view of ``x``'s diagonal, as the last dim, like torch.diagonal."""
    d1, d2 = _wrap_dim(dim1, x.ndim), _wrap_dim(dim2, x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n1, n2 = x.shape[d1], x.shape[d2]
    length = max(min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2), 0)
    if length:  # start at the first diagonal element
        x = x[_axis_key(d2, slice(offset, None))] if offset >= 0 else \
            x[_axis_key(d1, slice(-offset, None))]
    rest = [i for i in range(x.ndim) if i not in (d1, d2)]
    shape = tuple(x.shape[i] for i in rest) + (length,)
    strides = tuple(x.strides[i] for i in rest) + (x.strides[d1] + x.strides[d2],)
    return get_xp(x).lib.stride_tricks.as_strided(x, shape, strides)


@op("diagonal", view=True, promote=NONE)
def _diagonal(self, offset=0, dim1=0, dim2=1):
    return _diagonal_view(self, offset, dim1, dim2)


@_diagonal.grad("self")
def _(grad, self_shape, offset, dim1, dim2):
    return diagonal_backward(grad, self_shape, offset, dim1, dim2)


@op("diagonal_backward", promote=NONE, node="DiagonalBackwardBackward0")
def diagonal_backward(grad, input_sizes, offset, dim1, dim2):
    out = get_xp(grad).zeros(tuple(input_sizes), grad.dtype)
    _diagonal_view(out, offset, dim1, dim2)[...] = grad
    return out


@diagonal_backward.grad("grad")
def _(grad, offset, dim1, dim2):
    return _diagonal(grad, offset, dim1, dim2)


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of ``input`` w.r.t. ``dim1`` and ``dim2``, as its last dim (a view)."""
    return _diagonal(input, offset, dim1, dim2)


@op("diagonal_copy", promote=NONE, node="DiagonalBackward0_copy", writes=1)  # (copy_)
def _diagonal_copy(self, offset=0, dim1=0, dim2=1):
    return _diagonal_view(self, offset, dim1, dim2).copy()


@_diagonal_copy.grad("self")
def _(grad, self_shape, offset, dim1, dim2):
    return diagonal_backward(grad, self_shape, offset, dim1, dim2)


@op("diag_embed", promote=NONE, writes=2, copies=True)  # (zeros: fill_; the diagonal: copy_)
def _diag_embed(self, offset=0, dim1=-2, dim2=-1):
    nd = self.ndim + 1
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (self.shape[-1] if self.ndim else 1) + abs(offset)
    rest = iter(self.shape[:-1])
    shape = tuple(n if i in (d1, d2) else next(rest) for i in range(nd))
    out = get_xp(self).zeros(shape, self.dtype)
    _diagonal_view(out, offset, d1, d2)[...] = self
    return out


@_diag_embed.grad("self")
def _(grad, offset, dim1, dim2):
    return _diagonal(grad, offset, dim1, dim2)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Tensors whose diagonals (w.r.t. ``dim1``, ``dim2``) are filled by ``input``'s last dim."""
    return _diag_embed(input, offset, dim1, dim2)


def diag(input, diagonal=0, *, out=None):
    """A 1-D input as the diagonal of a matrix, or a matrix's diagonal as a 1-D copy."""
    if input.ndim == 1:
        return _diag_embed(input, diagonal, -2, -1)  # (torch's node shows these dims)
    if input.ndim == 2:
        return _diagonal_copy(input, diagonal, 0, 1)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


@op("trace", promote=NONE)
def _trace(self):
    if self.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
    if self.dtype.kind == "b":
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    acc = np.int64 if self.dtype.kind in "iu" else self.dtype
    return get_xp(self).trace(self, dtype=acc)


@_trace.grad("self", writes=2)
def _(grad, self_shape):
    from .shape import expand
    n = min(self_shape)
    out = diagonal_backward(expand(grad, (n,)), self_shape, 0, 0, 1)
    note_view(out)  # (torch's: a view of the flat tensor it writes the diagonal into)
    return out


def trace(input):
    """The sum of the main diagonal of a matrix."""
    return _trace(input)
