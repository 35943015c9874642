"""Batched forward mode: every tangent carries a leading batch dimension.

``jacobian(..., strategy="forward-mode", vectorize=True)`` and ``ember.func.jacfwd`` push a
whole basis of tangents through the function in one forward pass. An elementwise op with real
values computes its output tangent once for the batch: for such an op each reverse formula is
multiplication by a partial derivative, so applied to an input's tangent (broadcast to the
output's shape) it gives that input's share of ``J t``. Any other op, a view replayed on a
tangent and a custom Function's ``jvp`` run once per row, and the rows are stacked.
"""
from __future__ import annotations

import contextlib

from .._backend import get_xp
from .._tensor import Tensor, _wrap
from . import forward_ad as fwAD


@contextlib.contextmanager
def batched_tangents(batch):
    """Inside an active dual level: tangents have a leading batch dimension of ``batch``
    (None: one tangent each, as in an ordinary forward pass)."""
    prev = fwAD._batch[0]
    fwAD._batch[0] = batch
    try:
        yield
    finally:
        fwAD._batch[0] = prev


def op_jvp(op, args, out, tangents):
    """The output tangent(s) of one op call for a batch of input tangents."""
    if op.view:
        # (torch batches the tangents with vmap: a view op it has no batching rule for
        # refuses there, as under vmap; func's rules say which)
        from ..func._batching_rules import RULES
        refusal = getattr(RULES.get(op.name), "batched_refusal", None)
        if refusal is not None:
            raise refusal(op.aten)
    if op.view and isinstance(out, Tensor) and out._base is not None:
        base_tan = fwAD._tangent_of(out._base)
        tan = None if base_tan is None else view_of_tangent(out, out._base, base_tan)
        if tan is not None:
            return tan
    if _elementwise(op, out, tangents):
        return _elementwise_jvp(op, args, out, tangents)
    return per_row(lambda row: fwAD._op_jvp_one(op, args, out, row), tangents)


def per_row(jvp_of, tangents):
    """``jvp_of(row tangents)`` for each row of the batch, the rows stacked per output."""
    batch = fwAD._batch[0]
    with batched_tangents(None):
        # (each row on a storage of its own, as an ordinary tangent is: a formula that reads
        # storage offsets, as as_strided's does, would read the batch's first row otherwise)
        rows = [jvp_of([None if t is None else t[b].clone() for t in tangents])
                for b in range(batch)]
    return _stack(rows)


def _stack(rows):
    from .._ops.shape import stack
    first = rows[0]
    if first is None or isinstance(first, Tensor):
        return None if first is None else stack(rows)
    return [None if r0 is None else stack([r[k] for r in rows]) for k, r0 in enumerate(first)]


def replay_view(view, base_tangent):
    """A view's tangent: the same view of every row of its base's (batched) tangent, itself
    a view when the layouts allow (so in-place updates reach every alias), else a copy."""
    tan = view_of_tangent(view, view._base, base_tangent)
    if tan is not None:
        return tan
    from .._ops.views import replay
    return per_row(lambda row: replay(view._view_chain, row[0]), [base_tangent])


def view_of_tangent(view, base, base_tangent):
    """``view``'s region of each row of ``base_tangent``, as a strided view of it; None when
    ``base`` or its tangent is not laid out contiguously (or the view changes the dtype)."""
    from .._ops.strided import as_strided
    bd, vd, td = base._data, view._data, base_tangent._data
    if not (bd.flags.c_contiguous and td.flags.c_contiguous and vd.dtype == bd.dtype
            and td.dtype == bd.dtype and td.shape[1:] == bd.shape):
        return None
    from .._backend import storage_of
    if storage_of(vd)[0] is not storage_of(bd)[0]:  # (conj's values: not a region of bd)
        return None
    item = bd.itemsize
    offset = (vd.__array_interface__["data"][0] - bd.__array_interface__["data"][0]) // item
    strides = tuple(st // item for st in vd.strides)
    return as_strided(base_tangent, (td.shape[0],) + vd.shape, (bd.size,) + strides,
                      base_tangent.storage_offset() + offset)


def _elementwise(op, out, tangents):
    """Whether the op's tangents may come from its reverse formulas applied to the batch at
    once (not where torch's forward formula says otherwise: ``op.own_jvp``)."""
    if not op.elementwise or not isinstance(out, Tensor) or out._data.dtype.kind != "f":
        return False
    if getattr(op, "own_jvp", False):
        return False
    rules = op.__dict__.get("jvp_rules")
    if rules is not None and any(hasattr(r, "refuse_inplace") for r in rules.values()):
        return False  # (torch has no forward formula: the rule's refusal, per row)
    return all(len(inputs) == 1 for inputs, _, _ in op.formulas) and all(
        t is None or t._data.dtype.kind == "f" for t in tangents)


def _copy_laid_out_as(tangents, out):
    """A copy of a batch of ``tangents`` whose dimensions lie in memory as ``out``'s do (the
    batch outermost), so that a view of ``out`` is a view of its tangents too."""
    from .._backend.layout import format_order
    from .._tensor_extras import contiguous_format
    order = format_order(out._data)
    outer = [0] + [d + 1 for d in reversed(order)] if order is not None else None
    if outer is None:
        return tangents.clone(memory_format=contiguous_format)
    laid = tangents.permute(outer).clone(memory_format=contiguous_format)
    return laid.permute([outer.index(d) for d in range(len(outer))])


def _elementwise_jvp(op, args, out, tangents):
    """The tangent of a real elementwise op: each reverse formula (multiplication by a
    partial derivative) applied to its input's tangent, as torch's auto_element_wise
    forward formulas are; for a batch of tangents (``_batch``) or one."""
    from .._ops.shape import expand
    batch = fwAD._batch[0]
    head = () if batch is None else (batch,)
    shape = head + tuple(out._data.shape)
    total = None
    for (i,), fn, _ in op.formulas:
        tan = tangents[i]
        if tan is None:
            continue
        lead = len(shape) - tan._data.ndim  # (batch, *in) -> (batch, 1.., *in) -> (batch, *out)
        if lead:
            rest = tuple(tan._data.shape[len(head):])
            tan = tan.reshape(head + (1,) * lead + rest)
        wide = expand(tan, shape)
        r = fn(wide, *fwAD._rule_args(fn, op, args, out))
        if isinstance(r, Tensor):
            if r is wide:  # an identity formula (clone): the tangent must be the output's own
                r = _copy_laid_out_as(r, out)
            total = r if total is None else total + r
    if total is None:
        return _wrap(get_xp(out._data).zeros(shape, out._data.dtype))
    if tuple(total._data.shape) != shape:
        total = expand(total, shape).contiguous()
    dtype = fwAD._tangent_dtype(op, args, out, tangents)
    return total if total._data.dtype == dtype else total.to(fwAD._BY_NP[dtype])
