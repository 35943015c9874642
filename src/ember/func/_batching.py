"""How an op runs under vmap: levels, the dispatcher the op registry hands batched calls to,
and the per-example fallback for ops without a batching rule.

While a vmap level is active, ``_state.vmap_hook`` holds the one ``_Vmap`` object: the op
registry (``dispatch``) and the in-place path (``dispatch_inplace``) hand it every call that
has a BatchedTensor argument. It also sits in the forward-AD hook slot when no dual level is
active, which turns off the registry's fast paths (they assume plain Tensors), and then
simply runs unbatched calls as usual.

A batching rule (``_batching_rules.RULES``) gets the op, its bound arguments and the level,
and calls ordinary ops on the physical values (batch dimension first); elementwise ops
(declared ``elementwise=True`` in the registry) share one rule. An op without a rule runs once
per example and its results are stacked, with torch's performance warning.
"""
from __future__ import annotations

import warnings

from .._state import forward_hook, set_hook, vmap_hook
from .._tensor import Tensor
from ._batched_tensor import BatchedTensor

RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either "
                "use the 'same' or 'different' randomness flags on vmap or perform the "
                "randomness operation out of vmap")


class Level:
    """One active vmap: its number (1 for the outermost), batch size and randomness mode,
    and the number torch gives it (torch counts the grad and jvp transforms running around
    it too: vmap inside grad is level 2 there)."""

    __slots__ = ("index", "size", "randomness", "torch_index")

    def __init__(self, index, size, randomness):
        from ._captures import running_transforms
        self.index, self.size, self.randomness = index, size, randomness
        self.torch_index = index + running_transforms()


_levels: list[Level] = []


def level_size(index):
    return _levels[index - 1].size


def torch_level(index):
    """The number torch's messages give vmap level ``index``."""
    return _levels[index - 1].torch_index


def wrap(x, level):
    """``x`` (a physical Tensor, or a tuple of them) as BatchedTensors at ``level``."""
    if isinstance(x, Tensor):
        return BatchedTensor(x, level)
    if isinstance(x, tuple):
        items = [wrap(v, level) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
    if isinstance(x, list):
        return [wrap(v, level) for v in x]
    return x


def materialize(x, level):
    """``x``'s physical value at ``level``; an unbatched tensor is expanded over the batch."""
    if type(x) is BatchedTensor and x._level == level:
        return x._value
    size = level_size(level)
    return x.expand((size,) + tuple(x.shape))  # (torch's ensure_has_bdim: one ExpandBackward0)


def top_level(op, args):
    """The innermost vmap level among the tensor arguments (0: none is batched)."""
    top = 0
    for a in args[:op.n_tensors]:
        if type(a) is BatchedTensor and a._level > top:
            top = a._level
    return top


class _Vmap:
    """The hook the op registry calls while vmap is active."""

    def takes(self, op, args):
        for a in args[:op.n_tensors]:
            if type(a) is BatchedTensor:
                return True
        return False

    def dispatch(self, op, args):
        level = top_level(op, args)
        if level:
            return call_batched(op, args, level)
        return self._plain(op, args, inplace=False)

    def dispatch_inplace(self, op, args):
        level = top_level(op, args)
        if level:
            return call_batched_inplace(op, args, level)
        return self._plain(op, args, inplace=True)

    def _plain(self, op, args, inplace):
        from .._ops.inplace import dispatch_inplace
        from .._ops.registry import dispatch
        set_hook(forward_hook, None)
        try:
            return dispatch_inplace(op, args) if inplace else dispatch(op, args)
        finally:
            set_hook(forward_hook, self)

    def index_put(self, self_, indices, values, accumulate, inplace):
        """index_put(_) with a batched index: its own rule (None: the op's usual path)."""
        if not isinstance(indices, (tuple, list)) or not any(
                type(i) is BatchedTensor for i in indices):
            return None
        from ._indexing_rules import batched_index_put
        return batched_index_put(self_, indices, values, accumulate, inplace)

    def getitem(self, self_, key):
        """``self_[key]`` with a batched index tensor: its own rule (None: the usual path)."""
        from ._indexing_rules import batched_getitem
        return batched_getitem(self_, key)

    def setitem(self, self_, key, value):
        """``self_[key] = value`` with a batched index tensor (False: the usual path)."""
        from ._indexing_rules import batched_setitem
        return batched_setitem(self_, key, value)

    def tangent(self, t):
        """No dual level is active: no tensor has a tangent (in-place view ops ask)."""
        return None

    def inplace_view(self, d, args):
        """In-place view op ``d`` (t_, transpose_, ...) of an example: its rule (None: the
        usual path)."""
        if type(args[0]) is not BatchedTensor:
            return None
        from ._batching_rules import inplace_view
        return inplace_view(d, args)

    def refuse_dynamic_shape(self, aten, x, fallback=True):
        """torch's refusal of op ``aten``, whose result's shape depends on the data, on a
        batched ``x`` (``fallback=False``: nonzero(as_tuple=True), which torch refuses as an
        op with neither rule nor fallback)."""
        if type(x) is BatchedTensor:
            from ._indexing_rules import dynamic_shape_refusal
            if not fallback:
                raise no_fallback("aten::nonzero_numpy")
            raise dynamic_shape_refusal(aten)

    def per_example_call(self, aten, fn, x, composite=False, **kwargs):
        """``fn(x, **kwargs)``, a function outside the op registry that torch runs through its
        per-example fallback (``aten``: argwhere, nonzero_static), on each example of a
        batched ``x``, the results stacked; None where ``x`` is not batched, or where op
        ``aten`` is ``composite`` and a grad or jvp runs inside ``x``'s vmap (torch's autograd
        layer decomposes it there: argwhere into nonzero)."""
        if type(x) is not BatchedTensor:
            return None
        if composite:
            from ._captures import running_transforms
            level = _levels[x._level - 1]
            if running_transforms() > level.torch_index - level.index:
                return None
        from .._ops.shape import stack
        warn_fallback(aten)
        value = x._value
        rows = [fn(value[b], **kwargs) for b in range(level_size(x._level))]
        return BatchedTensor(stack_rows(stack, rows), x._level)

    def refuse_without_fallback(self, aten, *tensors):
        """torch's error for op ``aten``, which has neither a batching rule nor a fallback,
        where one of ``tensors`` is batched."""
        if any(type(t) is BatchedTensor for t in tensors):
            raise no_fallback(aten)

    def check_write(self, aten, self_, *others):
        """torch's refusal of in-place op ``aten`` writing an unbatched ``self_`` with a
        batched argument, for in-place ops that check their arguments themselves first."""
        from ._batched_tensor import batch_level
        from ._batching_rules import unbatched_write_refusal
        level = max(batch_level(t) for t in others if isinstance(t, Tensor)) if any(
            isinstance(t, Tensor) for t in others) else 0
        if level > batch_level(self_):
            warn_fallback(aten + ".Tensor")  # (torch's fallback warns before it refuses)
            raise RuntimeError(unbatched_write_refusal(aten, level))

    def function_jvp(self, cls, ctx, args, outputs):
        """A custom Function ran (in the forward-AD slot, without a dual level): no tangents
        to push."""

    def random_draw(self):
        """Called before a random draw: refuse it in 'error' mode."""
        if _levels and _levels[-1].randomness == "error":
            raise RuntimeError(RANDOM_ERROR)


HOOK = _Vmap()


class level_scope:
    """Enter a vmap level for the ``with`` block (batch size, randomness mode)."""

    def __init__(self, size, randomness):
        self.size, self.randomness = size, randomness

    def __enter__(self):
        level = Level(len(_levels) + 1, self.size, self.randomness)
        _levels.append(level)
        self.prev_vm, self.prev_fw = vmap_hook[0], forward_hook[0]
        vmap_hook[0] = HOOK
        if forward_hook[0] is None:
            set_hook(forward_hook, HOOK)
        return level.index

    def __exit__(self, *exc):
        _levels.pop()
        vmap_hook[0] = self.prev_vm
        if forward_hook[0] is HOOK:
            set_hook(forward_hook, self.prev_fw)


def idle_forward_hook():
    """What the forward-AD hook slot holds when no dual level is active."""
    return vmap_hook[0]


# -- running an op on a batch -----------------------------------------------------------------
# The vmap levels whose batching rules are running now, outermost first: the ops a rule calls
# run on physical values, one batch dimension further per level (see forward AD's
# hidden_batch_dims)
rules_running: list[int] = []


def call_batched(op, args, level):
    from ._batching_rules import rule_for
    rule = rule_for(op)
    if rule is None:
        return per_example(op, args, level)
    rules_running.append(level)
    try:
        return rule(op, args, level)
    finally:
        rules_running.pop()


def call_batched_inplace(op, args, level):
    from ._batching_rules import inplace_rule
    rules_running.append(level)
    try:
        return inplace_rule(op, args, level)
    finally:
        rules_running.pop()


def no_fallback(aten):
    """torch's error for op ``aten`` under vmap, which has neither a batching rule nor a
    per-example fallback (its results are a list of tensors: the fallback cannot stack)."""
    return RuntimeError(f"Batching rule not implemented for {aten}. We could not generate a "
                        "fallback.")


def no_view_fallback(aten):
    """torch's error for view op ``aten`` under vmap without a batching rule: its per-example
    fallback copies, which a view must not."""
    return RuntimeError(f"Batching rule not implemented for {aten}; the fallback path doesn't "
                        "work on out= or view ops.")


def warn_fallback(aten):
    """torch's warning that op ``aten`` runs once per example (it has no batching rule)."""
    warnings.warn(f"There is a performance drop because we have not yet implemented the "
                  f"batching rule for {aten}. Please file us an issue on GitHub so that we "
                  "can prioritize its implementation.", UserWarning, stacklevel=5)


def per_example(op, args, level, warn=True):
    """Run ``op`` once per example of ``level`` and stack the results (ops with no rule)."""
    from .._ops.shape import stack
    if warn:
        warn_fallback(op.aten)
    n = op.n_tensors
    rows = []
    for b in range(level_size(level)):
        row = list(args)
        for k in range(n):
            a = args[k]
            if type(a) is BatchedTensor and a._level == level:
                row[k] = a._value[b]
        rows.append(op(*row))
    first = rows[0]
    if isinstance(first, Tensor):
        return BatchedTensor(stack_rows(stack, rows), level)
    outs = [BatchedTensor(stack_rows(stack, [r[i] for r in rows]), level)
            for i in range(len(first))]
    return type(first)(*outs) if hasattr(first, "_fields") else tuple(outs)


def stack_rows(stack, rows):
    stacked = stack(rows)  # (examples' results of different shapes: stack's error, as torch's)
    # NOTE: torch's fallback views the stacked results to (batch sizes, *result): its nodes
    # are ViewBackward0 over StackBackward0
    return stacked.view(tuple(stacked.shape))


def per_example_inplace(op, args, level):
    """Run in-place ``op`` on each example's view of the physical self."""
    n = op.n_tensors
    self_ = args[0]
    for b in range(level_size(level)):
        row = list(args)
        for k in range(n):
            a = args[k]
            if type(a) is BatchedTensor and a._level == level:
                row[k] = a._value[b]
        op.inplace(*row)
    return self_


def in_vmap():
    return bool(_levels)
