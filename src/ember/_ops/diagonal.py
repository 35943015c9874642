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


# -- block_diag: torch's op (BlockDiagBackward0) -------------------------------------------------
def _block_size(shape):
    """The (rows, columns) a block_diag input takes: a 0-dim one (1, 1), a 1-D one a row."""
    return (1, 1) if len(shape) == 0 else (1, shape[0]) if len(shape) == 1 else shape


@op("block_diag", node="BlockDiagBackward0", conj_saved=True)
def block_diag_op(tensors):
    """The tensors (0-, 1- or 2-D, one dtype) along the diagonal of one matrix."""
    for k, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {k} has {t.ndim} dimensions")
    sizes = [_block_size(t.shape) for t in tensors]
    out = get_xp(*tensors).zeros(tuple(map(sum, zip(*sizes))), tensors[0].dtype)
    row = col = 0
    for t, (rows, cols) in zip(tensors, sizes):
        out[row:row + rows, col:col + cols] = t.reshape(rows, cols)
        row, col = row + rows, col + cols
    return out


@block_diag_op.grad("tensors")
def _(grad, shapes):
    """torch's block_diag_backward: each input's block of the gradient (two slices), squeezed
    back for 0-dim and 1-D inputs (and summed to a 1-D input's shape, as torch's engine
    does)."""
    from .pointwise import zero_gradient
    from .reduction import sum_dim
    from .shape import _squeeze_dim, slice_, view
    out, row, col = [], 0, 0
    for shape in shapes:
        if shape == (0,):  # (an empty 1-D input: torch's zeros({0}))
            out.append(zero_gradient(grad, (0,)))
            row += 1
            continue
        rows, cols = _block_size(shape)
        block = slice_(slice_(grad, 0, row, row + rows, 1), 1, col, col + cols, 1)
        for _ in range(2 - len(shape)):
            block = _squeeze_dim(block, -1)
        if tuple(block.shape) != tuple(shape):  # (a 1-D input's (1, n) block)
            block = view(sum_dim(block, 0, True), shape)
        out.append(block)
        row, col = row + rows, col + cols
    return out


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) placed along the diagonal of one matrix."""
    if not tensors:
        from .._creation import zeros
        return zeros(1, 0)
    return block_diag_op.specialize(len(tensors))(*tensors)
