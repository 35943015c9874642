"""Batched backward: one pass carrying a batch of output gradients at once.

``grad(..., is_grads_batched=True)`` (and the vectorized transforms built on it: ``jacobian``
and ``hessian`` with ``vectorize=True``, ``ember.func.jacrev``) runs the engine once with
every gradient carrying a leading batch dimension. The formulas of elementwise ops (declared
with ``elementwise=True``) broadcast over that dimension unchanged, and other ops declare a
batched twin of their formulas (``@op.batched_grad``: reductions, matrix products, views), so
their nodes run once for the whole batch. Any other node runs once per row and its rows are
stacked, as torch's vmap does for an op without a batching rule. The engine undoes broadcasting below the batch
dimension (``validate``).
"""
from __future__ import annotations

from .._backend import get_xp
from .graph import AccumulateGrad


def batchable(task):
    """Whether one batched pass can run this graph: nothing in it observes a single example's
    gradient (tensor hooks, node hooks, retain_grad); otherwise the caller runs one pass per
    row, so each hook sees the gradient it would see in an ordinary backward."""
    for fn in task.deps:
        if fn._tensor_hooks or fn._pre_hooks or fn._post_hooks or fn._retained:
            return False
        if isinstance(fn, AccumulateGrad) and (fn.variable._hooks
                                               or fn.variable._post_acc_hooks):
            return False
    return True


def apply(task, fn, grads, needed):
    """Run node ``fn`` on batched ``grads``: once if its formulas broadcast over the batch,
    else once per row."""
    op = getattr(fn, "_op", None)
    formulas = None if op is None or op.n_outputs != 1 else op.batched()
    if formulas is not None:
        return fn._apply_generic(grads, task.graph, needed, formulas)
    if getattr(fn, "_forward_cls", None) is not None:
        return vmapped_function(task, fn, grads, needed)
    return per_row(task, fn, grads, needed)


def vmapped_function(task, fn, grads, needed):
    """A custom Function's backward run once under vmap, its gradients batched, as torch's
    batched backward runs it: what cannot be vmapped there (``.numpy()``, ``.item()``,
    data-dependent control flow) raises as in torch, where running it per row would pass."""
    from .._tensor import Tensor, _wrap
    from ..func import vmap
    wrapped = [None if g is None else (g if task.graph else _wrap(g)) for g in grads]
    gave = []

    def backward(*gs):
        result = fn._apply(list(gs), True, needed)
        gave[:] = [r is not None for r in result]
        return tuple(r for r in result if r is not None)
    out = iter(vmap(backward, in_dims=tuple(None if g is None else 0 for g in wrapped))(
        *wrapped))
    result = [next(out) if g else None for g in gave]
    return [r if task.graph or not isinstance(r, Tensor) else r._data for r in result]


def per_row(task, fn, grads, needed):
    """Run ``fn`` once per row of the batch and stack the rows' input gradients."""
    rows = [fn._apply([None if g is None else g[b] for g in grads], task.graph, needed)
            for b in range(task.batch)]
    return [_stack_rows(task, fn, i, [r[i] for r in rows]) for i in range(len(rows[0]))]


def _stack_rows(task, fn, i, rows):
    """One input's gradient from its per-row gradients (None: no row has one)."""
    if all(r is None for r in rows):
        return None
    xp = get_xp(*(r._data if task.graph else r for r in rows if r is not None))
    rows = [_row(task, fn, i, r, xp) for r in rows]
    if task.graph:
        from .._ops.shape import stack
        return stack(rows)
    return get_xp(rows[0]).stack(rows)


def _row(task, fn, i, g, xp):
    """A row's gradient at its input's shape and dtype (zeros where the row has none, made
    by ``xp``: where the other rows are)."""
    from .engine import _validate_one
    if g is not None:
        return _validate_one(task, fn, i, g)
    shape, dt = fn._meta[i]
    z = xp.zeros(shape, dt)
    if task.graph:
        from .._tensor import _wrap
        return _wrap(z)
    return z


def validate(task, fn, i, g, shape):
    """Sum a batched gradient ``(batch, *broadcast shape)`` down to ``(batch, *shape)``."""
    gshape = tuple(g.shape)
    batch = task.batch
    if len(gshape) <= len(shape) or gshape[0] != batch:
        # a formula that gave the same gradient to every row (no batch dimension)
        g = (g.expand((batch,) + gshape) if task.graph
             else get_xp(g).broadcast_to(g, (batch,) + gshape))
        gshape = (batch,) + gshape
    inner = gshape[1:]
    if inner == shape:
        return g
    from .engine import check_expandable
    check_expandable(fn, i, shape, inner)
    lead = len(inner) - len(shape)
    axes = tuple(range(1, 1 + lead)) + tuple(
        1 + lead + k for k, s in enumerate(shape) if s == 1 and inner[lead + k] != 1)
    if task.graph:
        return g.sum(dim=axes, keepdim=True).reshape((batch,) + shape)
    return g.sum(axis=axes, keepdims=True).reshape((batch,) + shape)
