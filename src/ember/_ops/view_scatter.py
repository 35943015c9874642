"""The ``*_scatter`` ops: a copy of ``self`` with one view's elements replaced by ``src``
(slice_scatter, select_scatter, diagonal_scatter, with torch's nodes SliceScatterBackward0,
SelectScatterBackward0, DiagonalScatterBackward0).

Each kernel writes ``src`` (cast to self's dtype) into the view its view op's kernel takes of a
copy of ``self`` laid out as self is (torch's clone); the gradients are torch's formulas: the
gradient with the view's elements zeroed (the same scatter of zeros), and the view of the
gradient for ``src``.
"""
from __future__ import annotations

__all__: list[str] = []  # exported through composite.py

from .diagonal import _diagonal
from .pointwise import zero_gradient
from .registry import NONE, op
from .shape import select, slice_


def _copy_with(self, src, view):
    """``self`` laid out as it is, with ``view(copy)`` replaced by ``src``."""
    out = self.copy(order="K")
    region = view(out)
    if region.shape != src.shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(src.shape)}, slice size = {list(region.shape)}")
    region[...] = src
    return out


@op("slice_scatter", node="SliceScatterBackward0", tensors=2, promote=NONE, method=True)
def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    """``self`` with ``self[start:end:step]`` along ``dim`` replaced by ``src``."""
    return _copy_with(self, src, lambda out: slice_.kernel(out, dim, start, end, step))


@slice_scatter.grad("self")
def _(grad, src_shape, dim, start, end, step):
    return slice_scatter(grad, zero_gradient(grad, tuple(src_shape)), dim, start, end, step)


@slice_scatter.grad("src")
def _(grad, dim, start, end, step):
    return slice_(grad, dim, start, end, step)


@op("select_scatter", node="SelectScatterBackward0", tensors=2, promote=NONE, method=True)
def select_scatter(self, src, dim, index):
    """``self`` with ``self.select(dim, index)`` replaced by ``src``."""
    return _copy_with(self, src, lambda out: select.kernel(out, dim, index))


@select_scatter.grad("self")
def _(grad, src_shape, dim, index):
    return select_scatter(grad, zero_gradient(grad, tuple(src_shape)), dim, index)


@select_scatter.grad("src")
def _(grad, dim, index):
    return select(grad, dim, index)


@op("diagonal_scatter", node="DiagonalScatterBackward0", tensors=2, promote=NONE, method=True)
def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    """``self`` with its diagonal ``(offset, dim1, dim2)`` replaced by ``src``."""
    return _copy_with(self, src, lambda out: _diagonal.kernel(out, offset, dim1, dim2))


@diagonal_scatter.grad("self")
def _(grad, src_shape, offset, dim1, dim2):
    return diagonal_scatter(grad, zero_gradient(grad, tuple(src_shape)), offset, dim1, dim2)


@diagonal_scatter.grad("src")
def _(grad, offset, dim1, dim2):
    return _diagonal(grad, offset, dim1, dim2)
