"""Batching rules of index_add, index_copy, index_fill, index_put and the view-scatter ops
(select_scatter, slice_scatter, diagonal_scatter), as torch's: a batched index (one per
example) or a batched fill value, which the physical op cannot take as it is."""
from __future__ import annotations

import re

import numpy as np

from .._tensor import Tensor
from ._batched_tensor import batch_level
from ._batching import level_size, materialize, wrap
from ._batching_rules import (_batched, _shift, rule, same_rank_dim_rule,
                              unbatched_write_refusal)


def _example(x, level, b):
    """Example ``b`` of ``x`` at ``level`` (``x`` itself where it is not batched there)."""
    return x._value[b] if _batched(x, level) else x


@rule("index_add")
def index_add_rule(op, args, level):
    """torch's rule adds into a clone of self; with a batched index it loops over the
    examples and stacks their index_add (StackBackward0 over IndexAddBackward0)."""
    from .._ops.shape import stack
    base = args[0].clone()
    if not _batched(args[1], level):
        return same_rank_dim_rule(op, [base] + list(args[1:]), level)
    rows = [op(*(_example(a, level, b) if k < op.n_tensors else a
                 for k, a in enumerate([base] + list(args[1:]))))
            for b in range(level_size(level))]
    return wrap(stack(rows), level)


@rule("index_copy")
def index_copy_rule(op, args, level):
    """torch writes index_copy under vmap as a scatter (ScatterBackward0): the index, one
    entry per slice of ``dim``, expanded over the source's other dimensions."""
    from .._ops.indexing import scatter
    self_, index, source, dim = args
    nd = self_.dim()
    if nd == 0 or source.dim() != nd or index.dim() > 1:
        return same_rank_dim_rule(op, args, level)  # (each example's own checks and errors)
    d = _shift(dim, nd)
    phys_self = materialize(self_, level)
    phys_index = materialize(index.reshape(-1), level)
    shape = [1] * (nd + 1)
    shape[0], shape[d] = phys_index.shape[0], phys_index.shape[1]
    spread = list(phys_self.shape)  # (self's shape, but the index's length at dim)
    spread[d] = shape[d]
    spread = phys_index.view(tuple(shape)).expand(tuple(spread))
    return wrap(scatter(phys_self, d, spread, materialize(source, level)), level)


@rule("index_select")
def index_select_rule(op, args, level):
    """torch gathers along the example's dim, with the index (each example's, or the one
    expanded to the batch) spread over the example's other dims (GatherBackward0)."""
    from .._ops.indexing import gather
    self_, index, dim = args
    if self_.dim() == 0 or index.dim() > 1:
        return same_rank_dim_rule(op, args, level)  # (each example's own checks and errors)
    d = _shift(dim, self_.dim())
    phys_self = materialize(self_, level)
    phys_index = materialize(index.reshape(-1), level)
    shape = [1] * phys_self.dim()
    shape[0], shape[d] = phys_index.shape
    spread = list(phys_self.shape)
    spread[d] = shape[d]
    return wrap(gather(phys_self, d, phys_index.view(tuple(shape)).expand(tuple(spread))),
                level)


@rule("index_fill")
def index_fill_rule(op, args, level):
    """A batched index or fill value: torch's rule fills each example of a clone of self in
    place, one after the other."""
    n = op.n_tensors
    if not any(_batched(a, level) for a in args[1:n]):  # (torch fills a clone of self)
        return same_rank_dim_rule(op, [args[0].clone()] + list(args[1:]), level)
    base = materialize(args[0], level).clone()
    for b in range(level_size(level)):
        row = [base[b]] + [_example(a, level, b) for a in args[1:n]] + list(args[n:])
        op.inplace(*row)
    return wrap(base, level)


def _physical_values(values, level, indexed):
    """The values put, expanded to the batch, with their examples' dims aligned to the
    right of an example's indexed shape of ``indexed`` dims (where they broadcast)."""
    values = materialize(values, level)
    extra = indexed - (values.dim() - 1)
    if extra > 0:
        shape = tuple(values.shape)
        values = values.view(shape[:1] + (1,) * extra + shape[1:])
    return values


def batched_index_put(self_, indices, values, accumulate, inplace):
    """``index_put`` with per-example integer indices: torch's rule puts into the physical
    self with an arange over the batch as one more index, before the examples' indices
    (expanded to the batch where they are not batched). None where the indices are not all
    integer tensors."""
    from .._creation import arange
    from .._ops.indexing import index_put, index_put_
    if not all(isinstance(i, Tensor) and not i.is_floating_point() and i.dtype.itemsize > 1
               for i in indices):  # (bool and byte masks: the examples' own shapes)
        return None
    level = max(batch_level(t) for t in (self_, values, *indices) if isinstance(t, Tensor))
    if inplace and not _batched(self_, level):
        raise RuntimeError(unbatched_write_refusal("index_put_", level))
    size = level_size(level)
    phys = [materialize(i, level) for i in indices]
    rank = max(i.dim() for i in phys)
    batch = arange(size, device=self_.device).view((size,) + (1,) * (rank - 1))
    if isinstance(values, Tensor):
        values = _physical_values(values, level, rank - 1 + self_.dim() - len(indices))
    if inplace:
        index_put_(self_._value, (batch, *phys), values, accumulate)
        return self_
    return wrap(index_put(materialize(self_, level), (batch, *phys), values, accumulate),
                level)


@rule("index_put")
def index_put_rule(op, args, level):
    """One index for all the examples (its key holds arrays): put into the physical self
    past the batch dimension, the values aligned to the examples' indexed shape."""
    from ._batching import per_example
    self_, values, key, accumulate = args
    if not all(getattr(k, "dtype", None) is not None and k.dtype.kind in "iu" for k in key):
        return per_example(op, args, level)
    indexed = len(np.broadcast_shapes(*(k.shape for k in key))) + self_.dim() - len(key)
    values = _physical_values(values, level, indexed)
    return wrap(op(materialize(self_, level), values, (slice(None),) + tuple(key), accumulate),
                level)


def _view_scatter(op, args, level, dims):
    """The view-scatter ops (torch's rules, no per-example fallback): self and src expanded
    to the batch where they are not batched, and the example's ``dims`` (positions in
    ``args``) one past the batch, wrapped against the example's rank."""
    self_, src = args[0], args[1]
    rest = list(args[2:])
    for k in dims:
        rest[k - 2] = _shift(rest[k - 2], self_.dim())
    return wrap(op(materialize(self_, level), materialize(src, level), *rest), level)


@rule("select_scatter", "slice_scatter")
def select_and_slice_scatter_rule(op, args, level):
    """select_scatter and slice_scatter of examples: along the example's dim."""
    return _view_scatter(op, args, level, dims=(2,))



@rule("diagonal_scatter")
def diagonal_scatter_rule(op, args, level):
    """diagonal_scatter of examples: the diagonal of the example's dim1 and dim2."""
    return _view_scatter(op, args, level, dims=(3, 4))


@rule("as_strided_scatter")
def as_strided_scatter_rule(op, args, level):
    """torch has no rule for as_strided_scatter and refuses it under vmap (the examples'
    strides say nothing of the batch's): its error, not a per-example run."""
    raise RuntimeError(f"Error: aten::{op.name} requires special handling, and does not yet "
                       f"have a batching rule. Feel free to file a github issue!")


# -- x[i] and x[i] = v with per-example index tensors -------------------------------------------
_MASK_UNDER_VMAP = ("vmap: We do not support batching operators that can support dynamic shape. "
                    "Attempting to batch over indexing with a boolean mask.")


def _key_level(self_, key):
    """The innermost vmap level a tensor of ``key`` is batched at, if above ``self_``'s
    (0: none is, and the op's usual rules serve)."""
    level = max((batch_level(k) for k in key if isinstance(k, Tensor)), default=0)
    return level if level > batch_level(self_) or level and _batched(self_, level) else 0


def _refuse_masks(key, level):
    for k in key:
        if _batched(k, level) and not k.is_floating_point() and k.dtype.itemsize == 1:
            raise RuntimeError(_MASK_UNDER_VMAP)  # (bool and uint8 masks: data-dependent)


def _plain_key(key):
    """Whether ``key`` holds only integers, slices, None, Ellipsis and integer tensors (what
    one physical index with an arange over the batch can take)."""
    return all(k is None or k is Ellipsis or isinstance(k, slice) or (
        isinstance(k, int) and not isinstance(k, bool)) or (
        isinstance(k, Tensor) and not k.is_floating_point() and k.dtype.itemsize > 1)
        for k in key)


def _block_position(key, ndim, level):
    """Where torch puts the dims of ``key``'s tensor indices in an example's result: after the
    dims of the slices and None before them when they are adjacent (integers, applied first
    as views, come between them without parting them), else first (0)."""
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    kinds = []
    for k in key:
        if k is Ellipsis:
            kinds += ["slice"] * (ndim - used)
        elif k is None or isinstance(k, slice):
            kinds.append("slice")
        elif isinstance(k, Tensor) and (_batched(k, level) or k.dim()):
            kinds.append("tensor")
    first = kinds.index("tensor")
    last = len(kinds) - 1 - kinds[::-1].index("tensor")
    return first if all(k == "tensor" for k in kinds[first:last + 1]) else 0


def batched_getitem(self_, key):
    """``self_[key]`` with per-example index tensors (None where no index is batched above
    self): torch's rule, one index of the physical self with an arange over the batch before
    the examples' indices (aligned to the right of their broadcast rank), the dims of the
    indices then moved where the example's result has them."""
    from .._creation import arange
    from .._ops.shape import stack
    key = key if isinstance(key, tuple) else (key,)
    level = _key_level(self_, key)
    if not level:
        return None
    _refuse_masks(key, level)
    size = level_size(level)
    phys_self = materialize(self_, level)
    if not _plain_key(key):  # (lists, masks that are not batched: each example's own)
        return wrap(stack([phys_self[b][tuple(_example(k, level, b) for k in key)]
                           for b in range(size)]), level)
    rank = max(k.dim() for k in key if isinstance(k, Tensor))
    phys_key = [arange(size, device=phys_self.device).view((size,) + (1,) * rank)]
    for k in key:
        if _batched(k, level):
            k = k._value.view((size,) + (1,) * (rank - k.dim()) + tuple(k.shape))
        phys_key.append(k)
    try:
        out = phys_self[tuple(phys_key)]
    except IndexError as e:  # (an example's dim, as the example's own indexing names it)
        raise IndexError(re.sub(r"dimension (\d+)", lambda m: f"dimension {int(m[1]) - 1}",
                                str(e), count=1)) from None
    at = _block_position(key, self_.dim(), level)
    if at:  # (NumPy's order puts the indices' dims first, after the batch)
        out = out.movedim(tuple(range(1, 1 + rank)), tuple(range(1 + at, 1 + at + rank)))
    return wrap(out, level)


def batched_setitem(self_, key, value):
    """``self_[key] = value`` with per-example index tensors: written into each example of
    the physical self in turn (False where no index is batched above self); torch's refusal
    where self is not batched at the index's level."""
    key = key if isinstance(key, tuple) else (key,)
    level = _key_level(self_, key)
    if not level:
        return False
    if not _batched(self_, level):
        raise RuntimeError(unbatched_write_refusal("index_put_", level))
    _refuse_masks(key, level)
    phys_self = self_._value
    for b in range(level_size(level)):
        phys_self[b][tuple(_example(k, level, b) for k in key)] = (
            _example(value, level, b) if isinstance(value, Tensor) else value)
    return True


# -- ops whose result's shape depends on the data: torch's refusals -----------------------------
def dynamic_shape_refusal(aten):
    return RuntimeError("vmap: We do not support batching operators that can output dynamic "
                        f"shape. Attempted to vmap over {aten}. Please file an issue at "
                        "https://github.com/pytorch/pytorch/issues if you need this feature.")


@rule("_unique2", "unique_dim", "unique_consecutive")
def unique_rule(op, args, level):
    raise dynamic_shape_refusal(f"aten::{op.name}")


@rule("masked_select")
def masked_select_rule(op, args, level):
    """A mask shared by the examples selects as many elements from each: the physical self
    and mask broadcast to the batch, selected, one row per example. A batched mask: torch's
    refusal."""
    self_, mask = args[0], args[1]
    if _batched(mask, level):
        raise RuntimeError("vmap: Attempted to vmap over `mask` in ember.masked_select(self, "
                           "mask) We cannot support this because for each batch this would "
                           "return a differently shaped Tensor. Please file an issue at "
                           "https://github.com/pytorch/pytorch/issues if you need this feature.")
    size = level_size(level)
    shape = (size,) + tuple(np.broadcast_shapes(tuple(self_.shape), tuple(mask.shape)))
    selected = op(self_._value.expand(shape), mask.expand(shape))
    return wrap(selected.view((size, -1)), level)
