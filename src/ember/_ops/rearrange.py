"""Shape ops, part two: moving, repeating, flipping, rolling, joining and splitting.

The views here (movedim, narrow, unflatten, tensor_split, the atleast_* reshapes) are built
from shape.py's view ops, so they share memory and version counters as torch's do; flip, roll,
rot90 and repeat are copies with their own derivative formulas. shape.py re-exports this
module's public names.
"""
from __future__ import annotations

__all__ = ['atleast_1d', 'atleast_2d', 'atleast_3d', 'broadcast_to', 'column_stack', 'dstack',
           'flip', 'fliplr', 'flipud', 'hstack', 'moveaxis', 'movedim', 'narrow', 'narrow_copy',
           'repeat_interleave', 'roll', 'rot90', 'row_stack', 'tensor_split', 'tile',
           'unflatten', 'vstack']

import numpy as np

from .._backend import get_xp
from .._size import args_or_keyword
from .._state import vmap_hook
from .._tensor import Tensor, _wrap, _wrap_dim
from .registry import NONE, op
from .scan import flip_dims
from .shape import (
    _expand,
    _permute,
    _unique_dims,
    alias,
    cat,
    clone,
    expand,
    flatten,
    reshape,
    slice_,
    slice_backward,
    unsqueeze,
    view,
)


def _int_tuple(x):
    """An int or a sequence of ints (or 0-dim integer tensors) as a tuple of ints."""
    if isinstance(x, (int, np.integer, Tensor)):
        return (int(x),)
    return tuple(int(v) for v in x)


def _sizes(args):
    """``f(2, 3)`` and ``f((2, 3))`` alike, as torch's size arguments."""
    if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
        return tuple(int(s) for s in args[0])
    return tuple(int(s) for s in args)


# -- views made of other views --------------------------------------------------------------------
def unflatten(input, dim, sizes):
    """Expand dim ``dim`` of ``input`` into the shape ``sizes`` (a view)."""
    sizes = tuple(int(s) for s in sizes)
    d = _wrap_dim(dim, input.ndim)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input.shape[d]
    known = 1
    for s in sizes:
        known *= s if s != -1 else 1
    if sizes.count(-1) > 1 or (-1 not in sizes and known != n) or (
            -1 in sizes and (known == 0 or n % known)):
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({n}) in the input tensor")
    sizes = tuple(n // known if s == -1 else s for s in sizes)
    return view(input, tuple(input.shape[:d]) + sizes + tuple(input.shape[d + 1:]))


def movedim(input, source, destination):
    """Move the dims ``source`` of ``input`` to the positions ``destination``."""
    src, dst = _int_tuple(source), _int_tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    nd = input.ndim
    ws = [_wrap_dim(d, nd) for d in src]
    wd = [_wrap_dim(d, nd) for d in dst]
    if len(set(ws)) != len(ws):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(wd)) != len(wd):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    if nd == 0:
        return alias(input)
    order = [-1] * nd
    for s, d in zip(ws, wd):
        order[d] = s
    rest = iter(i for i in range(nd) if i not in ws)
    order = [next(rest) if o == -1 else o for o in order]
    return _permute(input, tuple(order))


moveaxis = movedim


def broadcast_to(input, size):
    """``input`` broadcast to ``size`` (a view, as ``expand``)."""
    return _expand(input, tuple(int(s) for s in size))


def narrow(input, dim, start, length):
    """The slice ``start:start + length`` of ``input`` along ``dim`` (a view)."""
    d, start = _narrow_args(input, dim, start, length)
    return slice_(input, d, start, start + length, 1)


def _narrow_args(input, dim, start, length):
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    start, length = int(start), int(length)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    if start < 0:
        start += n
    if start > n - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return d, start


@op("narrow_copy", promote=NONE)
def _narrow_copy(self, dim, start, length):
    return self[(slice(None),) * dim + (slice(start, start + length),)].copy()


@_narrow_copy.grad("self")
def _(grad, self_shape, dim, start, length):
    return slice_backward(grad, self_shape, dim, start, start + length, 1)


def narrow_copy(input, dim, start, length):
    """``narrow`` as a copy."""
    d, start = _narrow_args(input, dim, start, length)
    return _narrow_copy(input, d, start, int(length))


# torch's overloads of tensor_split (and hsplit, vsplit, dsplit) name the split points by
# their kind: ``sections`` (an int), ``indices`` (ints), ``tensor_indices_or_sections``.
_SPLIT_KEYWORDS = (("sections", int), ("indices", (tuple, list)),
                   ("tensor_indices_or_sections", Tensor))


def split_points(name, indices_or_sections, keywords):
    """The split points of ``name`` given positionally or by one of its overloads' keywords."""
    given = [(k, v) for k, v in keywords.items() if v is not None]
    if indices_or_sections is not None:
        given.insert(0, ("indices_or_sections", indices_or_sections))
    if len(given) == 1:
        key, value = given[0]
        kinds = dict(_SPLIT_KEYWORDS)
        if key not in kinds or isinstance(value, kinds[key]) and not (
                key == "sections" and isinstance(value, bool)):
            return value
    got = ", ".join(["Tensor"] + [f"{k}={type(v).__name__}" for k, v in given])
    raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but "
                    "expected one of:\n * (Tensor input, tuple of ints indices)\n * (Tensor "
                    "input, Tensor tensor_indices_or_sections)\n * (Tensor input, int sections)")


def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None,  # noqa: A002
                 indices=None, tensor_indices_or_sections=None):
    """Split ``input`` into views along ``dim``: ``n`` near-equal parts or at ``indices``."""
    ios = split_points("tensor_split", indices_or_sections, {
        "sections": sections, "indices": indices,
        "tensor_indices_or_sections": tensor_indices_or_sections})
    if isinstance(ios, Tensor):
        vm = vmap_hook[0]
        if vm is not None:  # (torch has no rule for this overload, and no fallback)
            vm.refuse_without_fallback("aten::tensor_split.tensor_indices_or_sections", input,
                                       ios)
        if ios.device.type != "cpu":
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be on cpu, "
                               f"but it's on {ios.device}")
        if ios.dtype.name != "int64":
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype "
                               f"of long, but got {ios.dtype.scalar_name}")
        if ios.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {ios.ndim} dims")
        ios = int(ios.item()) if ios.ndim == 0 else [int(i) for i in ios.tolist()]
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = _wrap_dim(dim, input.ndim)
    if isinstance(ios, (int, np.integer)):
        if ios <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {ios}")
        q, r = divmod(input.shape[d], int(ios))
        bounds, at = [], 0
        for k in range(int(ios) - 1):
            at += q + (k < r)
            bounds.append(at)
    else:
        bounds = [int(i) for i in ios]
    starts = [0] + bounds
    ends = bounds + [None]
    return tuple(slice_(input, d, s, e, 1) for s, e in zip(starts, ends))


def _atleast(nd, tensors):
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    if len(tensors) == 1 and not single:
        tensors = tuple(tensors[0])
    out = []
    for t in tensors:
        if t.ndim == 0:
            t = reshape(t, (1,) * nd)
        elif t.ndim == 1 and nd >= 2:
            t = unsqueeze(t, 0)
            if nd == 3:
                t = unsqueeze(t, -1)
        elif t.ndim == 2 and nd == 3:
            t = unsqueeze(t, -1)
        out.append(t)
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    """Each input with at least one dimension (0-dim tensors become shape (1,))."""
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    """Each input with at least two dimensions."""
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    """Each input with at least three dimensions."""
    return _atleast(3, tensors)


# -- joining --------------------------------------------------------------------------------------
def hstack(tensors, *, out=None):
    """Concatenate horizontally: along dim 0 for 1-D tensors, else along dim 1."""
    ts = atleast_1d(tuple(tensors))
    return cat(ts, 0 if ts and ts[0].ndim == 1 else 1)


def vstack(tensors, *, out=None):
    """Concatenate vertically (row-wise) after making each tensor at least 2-D."""
    return cat(atleast_2d(tuple(tensors)), 0)


row_stack = vstack


def dstack(tensors, *, out=None):
    """Concatenate depth-wise (along dim 2) after making each tensor at least 3-D."""
    return cat(atleast_3d(tuple(tensors)), 2)


def column_stack(tensors, *, out=None):
    """Stack as columns: 0-D and 1-D tensors become columns, then hstack."""
    cols = [reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t for t in tensors]
    return hstack(cols)


# -- repeating ------------------------------------------------------------------------------------
@op("repeat", promote=NONE, writes=1, conj_saved=True)
def _repeat(self, repeats):
    if len(repeats) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    padded = (1,) * (len(repeats) - self.ndim) + tuple(self.shape)
    shape = [s * r for s, r in zip(padded, repeats)]
    bad = next((s for s in shape if s < 0), None)
    if bad is not None:
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {shape}")
    return get_xp(self).tile(self.reshape(padded), repeats)


@_repeat.grad("self")
def _(grad, self_shape, repeats):
    # torch's repeat_backward step by step (its nodes under create_graph): each repeated block
    # of the result is a copy of self, and the copies are summed back
    from .pointwise import zero_gradient
    from .reduction import sum_dim
    if 0 in repeats:
        return zero_gradient(grad, tuple(self_shape))
    for _ in range(len(repeats) - len(self_shape)):  # (new leading dims)
        grad = sum_dim(grad, 0)
    sizes, repeated = [], []
    for s, r in zip(self_shape, repeats[len(repeats) - len(self_shape):]):
        if r != 1:
            sizes.append(r)
            repeated.append(len(sizes) - 1)
        sizes.append(s)
    return sum_dim(reshape(grad, tuple(sizes)), tuple(repeated)) if repeated else grad


def repeat(self, *args, repeats=None):
    """``self`` repeated ``sizes[i]`` times along each dim (new leading dims allowed)."""
    return _repeat_call(self, _sizes(args_or_keyword(args, repeats, "repeat", "repeats")))


def _repeat_call(self, repeats):
    out = _repeat(self, repeats)
    if isinstance(self, Tensor) and self._is_inference:
        from .views import inference_only_call, view_of_fresh
        if inference_only_call((self,)):
            # torch's repeat writes its result through an alias of it, and returns a view
            return view_of_fresh(out, tuple(out.shape))
    return out


def tile(input, dims):
    """``input`` repeated along each dim; ``dims`` shorter than ``input.ndim`` is padded."""
    if isinstance(dims, (int, np.integer)):
        raise TypeError(f"tile(): argument 'dims' (position 2) must be tuple of ints, not "
                        f"{type(dims).__name__}")
    dims = _int_tuple(dims)
    return _repeat_call(input, (1,) * (input.ndim - len(dims)) + dims)


def _tile_method(self, *args, dims=None):
    args = args_or_keyword(args, dims, "tile", "dims")
    return tile(self, _sizes(args) if args else ())


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element (or slice along ``dim``) ``repeats`` times, consecutively."""
    if repeats is None:  # repeat_interleave(repeats): the indices that repeat_interleave uses
        return _wrap(_repeat_index(input._data))
    x = flatten(input) if dim is None else input
    d = 0 if dim is None else _wrap_dim(dim, x.ndim)
    if x.ndim == 0:  # (torch reads the size of dim, or unsqueezes after it, of the 0-d input)
        if isinstance(repeats, Tensor):
            raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
        _wrap_dim(d + 1, 0)
    if isinstance(repeats, Tensor):
        if repeats.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        reps = repeats._data.reshape(-1)
        n = x.shape[d] if x.ndim else 1
        if reps.shape[0] == 1:
            reps = get_xp(reps).broadcast_to(reps, (n,))
        elif reps.shape[0] != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {reps.shape[0]} and input.size({d}) = {n}")
        from .indexing import index_select
        return index_select(x, d, _wrap(_repeat_index(reps)))
    repeats = int(repeats)
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    if x.ndim == 0:
        x = reshape(x, (1,))
    shape = list(x.shape)
    shape.insert(d + 1, repeats)
    return flatten(clone(expand(unsqueeze(x, d + 1), tuple(shape))), d, d + 1)


def _repeat_index(reps):
    xp = get_xp(reps)
    if reps.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if reps.dtype.kind not in "iu":
        raise RuntimeError("repeats has to be Long or Int tensor")
    if reps.size and reps.min() < 0:
        raise RuntimeError("repeats can not be negative")
    return xp.repeat(xp.arange(reps.shape[0], dtype=np.int64), reps)


# -- flips, rolls, rotations (copies) ------------------------------------------------------------
def flip(input, dims):
    """``input`` reversed along ``dims`` (a copy)."""
    if isinstance(dims, (int, np.integer)):
        raise TypeError(f"flip(): argument 'dims' (position 2) must be tuple of ints, not "
                        f"{type(dims).__name__}")
    return flip_dims(input, tuple(_unique_dims(_int_tuple(dims), input.ndim)))


def _flip_method(self, *args, dims=None):
    args = args_or_keyword(args, dims, "flip", "dims")
    return flip(self, _sizes(args) if args else ())


def fliplr(input):
    """Flip left-right: reverse dim 1 (needs at least 2 dims)."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip_dims(input, (1,))


def flipud(input):
    """Flip up-down: reverse dim 0 (needs at least 1 dim)."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip_dims(input, (0,))


@op("roll", promote=NONE, conj_saved=True)
def _roll(self, shifts, dims):
    xp = get_xp(self)
    if not dims:
        return xp.roll(self.reshape(-1), shifts[0]).reshape(self.shape)
    return xp.roll(self, shifts, axis=dims)


@_roll.grad("self")
def _(grad, shifts, dims):
    return _roll(grad, tuple(-s for s in shifts), dims)


def roll(input, shifts, dims=None):
    """Roll ``input`` by ``shifts`` along ``dims`` (the flattened tensor when no dims)."""
    shifts = _int_tuple(shifts)
    dims = () if dims is None else _int_tuple(dims)
    if len(shifts) != len(dims) and not (not dims and len(shifts) == 1):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    if dims and input.ndim == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    for d in dims:
        _wrap_dim(d, input.ndim)  # (torch's error for a dim out of range)
    return _roll(input, shifts, dims)  # (dims as given: torch's node shows them so)


@op("rot90", promote=NONE, copies=lambda self, k, dims: k == 0)  # (k 0: torch's clone)
def _rot90(self, k, dims):
    return get_xp(self).rot90(self, k, axes=dims).copy()


@_rot90.grad("self")
def _(grad, k, dims):
    return _rot90(grad, -k, dims)


def rot90(input, k=1, dims=(0, 1)):
    """Rotate ``input`` by 90 degrees ``k`` times in the plane of ``dims``."""
    dims = _int_tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (_wrap_dim(d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    return _rot90(input, int(k) % 4, (d0, d1))


# -- Tensor methods ---------------------------------------------------------------------------
for _name in ("unflatten", "movedim", "moveaxis", "narrow", "narrow_copy", "tensor_split",
              "repeat_interleave", "fliplr", "flipud", "roll", "rot90"):
    setattr(Tensor, _name, globals()[_name])
Tensor.repeat = repeat
Tensor.flip = _flip_method
Tensor.tile = _tile_method
Tensor.broadcast_to = broadcast_to
