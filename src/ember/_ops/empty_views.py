"""Where torch puts a view with no elements: its storage offset and strides.

torch computes an empty view's geometry with the same arithmetic as a full one's (an empty
slice ``t[5:]`` starts ``5 * stride`` elements in, its stride is ``stride * step``), and what
comes next reads it: ``storage_offset()``, ``stride()``, ``as_strided`` (which starts at the
input's offset). NumPy's kernels put an empty view at its base's start with strides of their
own, so each view op's result with no elements is placed again here, from its input's torch
geometry, by the rule of the view op that made it (``GEOMETRY``; an op without a rule keeps
NumPy's). Views with elements never come here: NumPy's geometry is torch's for them, but for
expand's new dimensions of size 1 (``expand_strides``, which shape.expand uses too).
"""
from __future__ import annotations

import numpy as np

from .._backend import contiguous_strides, data_address, empty_strides, place_empty, storage_of
from .._tensor import _wrap_dim


def geometry(x):
    """``(strides, storage_offset)`` of array ``x`` as torch gives them, in elements."""
    item = x.itemsize
    strides = tuple(s // item for s in x.strides) if x.size else empty_strides(x)
    return strides, (data_address(x) - storage_of(x)[1]) // item


def placed(view_op, base, out, args, index):
    """``out`` (what ``view_op``'s kernel made of array ``base``, with no elements) moved to
    torch's offset with torch's strides."""
    rule = GEOMETRY.get(view_op.kernel.__name__)
    if rule is None:
        return out
    strides, offset = geometry(base)
    strides, offset = rule(base.shape, list(strides), offset, args[1:], index, out.shape)
    return place_empty(base, out.shape, strides, offset)


def as_dtype(x, dtype):
    """``x`` (an array with no elements) read as ``dtype``, as torch's ``view(dtype)`` places
    it: sizes, strides but the last and offset scaled by the ratio of the element sizes."""
    old, new = x.itemsize, np.dtype(dtype).itemsize
    strides, offset = geometry(x)
    shape = x.shape[:-1] + (x.shape[-1] * old // new,)
    strides = [s * old // new for s in strides[:-1]] + list(strides[-1:])
    return place_empty(x, shape, strides, offset * old // new, dtype)


# Each rule: (input shape, input strides (a list of its own), input offset, the op's other
# arguments, the output's index for multi-output ops, the output's shape) -> (output strides,
# output offset).
def _view(shape, strides, offset, args, index, out_shape):
    """view / reshape: an empty tensor keeps its strides when its shape stays, else takes the
    contiguous ones (torch's computeStride)."""
    return (strides if out_shape == shape else contiguous_strides(out_shape, 1)), offset


def _same(shape, strides, offset, args, index, out_shape):
    return strides, offset


def _t(shape, strides, offset, args, index, out_shape):
    return strides[::-1], offset


def _transpose(shape, strides, offset, args, index, out_shape):
    if strides:
        d0, d1 = _wrap_dim(args[0], len(shape)), _wrap_dim(args[1], len(shape))
        strides[d0], strides[d1] = strides[d1], strides[d0]
    return strides, offset


def _permute(shape, strides, offset, args, index, out_shape):
    return [strides[_wrap_dim(d, len(shape))] for d in args[0]], offset


def _expand(shape, strides, offset, args, index, out_shape):
    return expand_strides(shape, strides, tuple(args[0])), offset


def expand_strides(shape, strides, size):
    """torch's inferExpandGeometry: the strides of ``shape`` (with ``strides``) expanded to
    ``size`` (-1 keeps a dimension): a dimension that grows (from 1) has stride 0, a new one
    the size times the stride of the next unless it grows too (0 for all of a 0-dim tensor's).
    (NumPy gives every new dimension stride 0, also one of size 1.)"""
    out = [0] * len(size)
    lead = len(size) - len(shape)
    for i in range(len(size) - 1, -1, -1):
        d = i - lead
        if d >= 0:
            n, s = shape[d], strides[d]
        else:
            n, s = 1, (size[i + 1] * out[i + 1] if i + 1 < len(size) else 0)
        target = n if size[i] == -1 else size[i]
        out[i] = s if n == target else 0
    return out


def _squeeze(shape, strides, offset, args, index, out_shape):
    nd = len(shape)
    if not args or args[0] is None:
        dims = range(nd)
    elif isinstance(args[0], (tuple, list)):
        dims = {_wrap_dim(d, nd) for d in args[0]} if nd else ()
    else:
        dims = (_wrap_dim(args[0], nd),) if nd else ()
    return [s for d, s in enumerate(strides) if not (d in dims and shape[d] == 1)], offset


def _unsqueeze(shape, strides, offset, args, index, out_shape):
    nd = len(shape)
    d = _wrap_dim(args[0], nd + 1)
    strides.insert(d, 1 if d >= nd else shape[d] * strides[d])
    return strides, offset


def _select_at(shape, strides, offset, d, i):
    """``select(d, i)``: one index fewer, ``i`` steps further."""
    if i < 0:
        i += shape[d]
    return strides[:d] + strides[d + 1:], offset + i * strides[d]


def _select(shape, strides, offset, args, index, out_shape):
    return _select_at(shape, strides, offset, _wrap_dim(args[0], len(shape)), args[1])


def _unbind(shape, strides, offset, args, index, out_shape):
    return _select_at(shape, strides, offset, _wrap_dim(args[0], len(shape)), index)


def _slice(shape, strides, offset, args, index, out_shape):
    """torch's slice: start clamped to the dimension (an empty slice of a too-large start sits
    at its end), the stride times the step."""
    d = _wrap_dim(args[0], len(shape))
    start, step, n = args[1], args[3], shape[d]
    start = 0 if start is None else start + n if start < 0 else start
    start = min(max(start, 0), n)
    offset += start * strides[d]
    strides[d] *= 1 if step is None else step
    return strides, offset


def _split_with_sizes(shape, strides, offset, args, index, out_shape):
    d = _wrap_dim(args[1], len(shape))
    return strides, offset + sum(args[0][:index]) * strides[d]


def _split(shape, strides, offset, args, index, out_shape):
    d = _wrap_dim(args[1], len(shape))
    return strides, offset + index * args[0] * strides[d]


def _diagonal(shape, strides, offset, args, index, out_shape):
    """torch's diagonal: an empty diagonal (its offset beyond the matrix) stays at the start."""
    k = args[0]
    d1, d2 = _wrap_dim(args[1], len(shape)), _wrap_dim(args[2], len(shape))
    n = max(min(shape[d1], shape[d2] - k) if k >= 0 else min(shape[d1] + k, shape[d2]), 0)
    if n:
        offset += k * strides[d2] if k >= 0 else -k * strides[d1]
    diag = strides[d1] + strides[d2]
    return [s for d, s in enumerate(strides) if d not in (d1, d2)] + [diag], offset


def _as_strided(shape, strides, offset, args, index, out_shape):
    return args[1], offset if args[2] is None else args[2]


def _view_as_real(shape, strides, offset, args, index, out_shape):
    return [2 * s for s in strides] + [1], 2 * offset


def _view_as_complex(shape, strides, offset, args, index, out_shape):
    return [s // 2 for s in strides[:-1]], offset // 2


def _unfold(shape, strides, offset, args, index, out_shape):
    dimension, _, step = args
    if not shape:
        return [1], offset
    d = _wrap_dim(dimension, len(shape))
    last = strides[d]
    strides[d] = step * strides[d]
    return strides + [last], offset


# view op kernels by name -> rule (kernel names: several ops share a name, e.g. squeeze)
GEOMETRY = {
    "view": _view, "reshape_alias": _view, "alias": _same, "t": _t, "transpose": _transpose,
    "_transposed": _transpose, "_permute": _permute, "_expand": _expand,
    "_squeeze_all": _squeeze, "_squeeze_dim": _squeeze, "_squeeze_dims": _squeeze,
    "_squeezed": _squeeze, "unsqueeze": _unsqueeze, "select": _select, "unbind": _unbind,
    "slice_": _slice, "split_with_sizes": _split_with_sizes, "_split": _split,
    "_diagonal": _diagonal, "_as_strided": _as_strided, "_view_as_real": _view_as_real,
    "view_as_complex": _view_as_complex, "unfold": _unfold,
}
