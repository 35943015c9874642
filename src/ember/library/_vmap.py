"""A custom operator under ``vmap``: its registered vmap rule, or one call per example.

The rule gets ``info`` (``batch_size``, ``randomness``), ``in_dims`` (one per argument, a list
of them for a list argument; None where not batched) and the physical arguments, and returns
``(output, out_dims)``. As torch's, a vmap input comes with the batch dimension ``in_dims``
gave it (``vmap(op, in_dims=1)``: in_dim 1, the tensor as it was given); a value computed
under vmap holds its batch first (in_dim 0; see func/_batched_tensor.torch_layout).
"""
from __future__ import annotations

from collections import namedtuple

from .._tensor import Tensor
from ..func._batched_tensor import BatchedTensor, torch_layout
from ..func._batching import _levels, in_vmap, level_size

VmapInfo = namedtuple("VmapInfo", ["batch_size", "randomness"])


def batched_level(values):
    """The innermost vmap level among the arguments' tensors (0: none is batched)."""
    if not in_vmap():
        return 0
    top = 0
    for v in values:
        for t in v if isinstance(v, list) else (v,):
            if type(t) is BatchedTensor and t._level > top:
                top = t._level
    return top


def call_under_vmap(opdef, values, keyword, level):
    if opdef._vmap_fn is None:
        return _per_example(opdef, values, keyword, level)
    physical = [_unwrap(v, level) for v in values]
    in_dims = tuple(_in_dim(v, level) for v in values)
    info = VmapInfo(level_size(level), _levels[level - 1].randomness)
    result, out_dims = opdef._vmap_fn(info, in_dims, *physical, **keyword)
    return _wrap(result, out_dims, level)


def _unwrap(value, level):
    if isinstance(value, list):
        return [_unwrap(v, level) for v in value]
    tensor, _ = torch_layout(value, level)
    return value if tensor is None else tensor


def _in_dim(value, level):
    if isinstance(value, list):
        return [_in_dim(v, level) for v in value]
    return torch_layout(value, level)[1]


def _wrap(result, out_dims, level):
    """The rule's physical outputs as BatchedTensors (batch dimension moved first); an
    output with out_dim None is the same for every example."""
    if isinstance(result, (tuple, list)):
        dims = out_dims if isinstance(out_dims, (tuple, list)) else [out_dims] * len(result)
        return type(result)(_wrap(r, d, level) for r, d in zip(result, dims))
    if not isinstance(result, Tensor) or out_dims is None:
        return result
    return BatchedTensor(result.movedim(out_dims, 0), level)


def _per_example(opdef, values, keyword, level):
    """No vmap rule: run the operator on each example and stack the results."""
    from .._ops.shape import stack
    rows = [opdef._dispatch(*_example(values, level, b), **keyword)
            for b in range(level_size(level))]
    first = rows[0]
    if isinstance(first, Tensor):
        return BatchedTensor(stack(rows), level)
    if isinstance(first, (tuple, list)):
        return type(first)(_stacked([r[i] for r in rows], level) for i in range(len(first)))
    return first


def _stacked(items, level):
    from .._ops.shape import stack
    if isinstance(items[0], list):
        return [_stacked([r[i] for r in items], level) for i in range(len(items[0]))]
    return BatchedTensor(stack(items), level) if isinstance(items[0], Tensor) else items[0]


def _example(values, level, b):
    out = []
    for v in values:
        if isinstance(v, list):
            out.append([t._value[b] if type(t) is BatchedTensor and t._level == level else t
                        for t in v])
        else:
            out.append(v._value[b] if type(v) is BatchedTensor and v._level == level else v)
    return out
