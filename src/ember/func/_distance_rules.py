"""Batching rules of the distance ops (cdist's kernels, pdist) and of block_diag, as torch's."""
from __future__ import annotations

from ._batching import materialize, stack_rows, warn_fallback, wrap
from ._batching_rules import _aligned, rule


@rule("_cdist_forward", "_euclidean_dist")
def cdist_rule(op, args, level):
    """cdist's kernels broadcast their batch dimensions: the batched inputs' physical values,
    aligned to the other's rank, and an unbatched input as it is (the op's node over it)."""
    return wrap(op(*_aligned(op, args, level)), level)


@rule("_pdist_forward")
def pdist_rule(op, args, level):
    """torch has no rule for pdist: its fallback runs pdist once per example, which makes
    each example contiguous (CloneBackward0 under an example batched in another dim)."""
    from .._ops.shape import stack
    warn_fallback("aten::pdist")
    rows = args[0]._value
    return wrap(stack_rows(stack, [op(rows[b].contiguous(), *args[1:])
                                   for b in range(rows.shape[0])]), level)


@rule("block_diag")
def block_diag_rule(op, args, level):
    """torch's rule loops over the examples without the fallback's warning: each example's
    block_diag, unsqueezed and concatenated (CatBackward0 over UnsqueezeBackward0)."""
    from .._ops.shape import cat
    phys = [materialize(t, level) for t in args[:op.n_tensors]]
    rows = [op(*(p[b] for p in phys)).unsqueeze(0) for b in range(phys[0].shape[0])]
    return wrap(cat(rows, 0), level)
