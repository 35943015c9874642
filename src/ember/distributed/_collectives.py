"""Collectives on tensors: torch's argument checks, then the group's backend does the work.

Tensors are used in place (``tensor._data`` is the buffer MPI reads and writes); as in torch,
a collective neither records autograd history nor bumps the tensor's version.
"""
from __future__ import annotations

import warnings

from .._tensor import Tensor
from . import _debug
from ._types import DebugLevel, RedOpType, _debug_level, as_red_op
from ._world import _world, default_group, get_group_rank, not_member

_PLANS = _world.allreduce_plans
_LEVEL = _debug_level  # [the DebugLevel]: DETAIL checks every call across the processes
_DETAIL = DebugLevel.DETAIL


def _check_single_tensor(param, name):
    if not isinstance(param, Tensor):
        raise TypeError(f"""Invalid function argument. Expected parameter `{name}` of type torch.Tensor
             but got {type(param)} instead.""")


def _check_tensor_list(param, name):
    if not isinstance(param, list):
        raise TypeError(f"""Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]
             but got {type(param)} instead.""")
    if not all(isinstance(p, Tensor) for p in param):
        raise TypeError(f"""Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]
             but got {type(param)} with elements of type {[type(p) for p in param]}.""")


def _ensure_same_dtype(*tensors):
    last = None
    for t in tensors:
        for each in (t if isinstance(t, list) else [t]):
            dt = each.dtype
            if dt.is_complex:  # a complex tensor goes with its real element type
                dt = dt.to_real()
            if last is None:
                last = dt
            elif last != dt:
                raise ValueError("Invalid usage of tensors with different dtypes"
                                 f"Found {last} and  {each.dtype}")


def _warn_not_in_group(name):
    from ._world import _world
    rank = -1 if _world.default_pg is None else _world.default_pg.rank()
    warnings.warn(f"Running {name} on global rank {rank} which does not belong to the given "
                  "group.", stacklevel=3)


def _member(group, name):
    """The ProcessGroup to run on, or None (with torch's warning) if this process is not in
    ``group``."""
    if group is None:
        return default_group()
    if not_member(group):
        _warn_not_in_group(name)
        return None
    return group


def _group_rank(pg, rank, group_rank, default=0):
    """A group rank from either a global ``rank`` or a ``group_rank`` (torch's rules)."""
    if group_rank is not None:
        if rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        return group_rank
    if rank is None:
        rank = default
    return get_group_rank(pg, rank)


def _finish(work, async_op):
    """The Work of an ``async_op`` call; else wait for it (a backend that completed a blocking
    call by itself returns no Work)."""
    if async_op:
        return work
    if work is not None:
        work.wait()
    return None


def _impl(pg, tensor):
    return pg._impl_for(tensor.device.type)


_CHECKED_REDUCE = {}  # (RedOpType, dtype, collective) -> the op, for the checks passed


def _check_reduce(op, tensor, name):
    """``op`` as a RedOpType, after torch's checks of it against ``tensor``'s dtype (cached
    per op and dtype that passed: small all-reduces are bound by this Python path's time)."""
    if type(op) is RedOpType:
        key = (op, tensor.dtype, name)
        checked = _CHECKED_REDUCE.get(key)
        if checked is None:
            checked = _CHECKED_REDUCE[key] = _checked_reduce(op, tensor.dtype, name)
        return checked
    return _checked_reduce(as_red_op(op), tensor.dtype, name)


def _checked_reduce(op, dt, name):
    if dt.is_complex and op not in (RedOpType.SUM, RedOpType.AVG):
        raise ValueError(f"{name} does not support {op} on complex tensors")
    if op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR) and (
            dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    if op is RedOpType.AVG and not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{dt.scalar_name}")
    if op is RedOpType.PREMUL_SUM:
        raise RuntimeError("PREMUL_SUM is only supported by the NCCL backend")
    return op


def _root(pg, root, name):
    if not 0 <= root < pg.size():
        raise RuntimeError(f"ProcessGroupGloo::{name}: invalid root rank: {root}")
    return root


def _shape(t):
    return "(" + ", ".join(str(n) for n in t.shape) + ")"


def _check_sizes(name, tensors, like):
    for i, t in enumerate(tensors):
        if t.shape != like.shape:
            raise RuntimeError(f"ProcessGroupGloo::{name}: invalid tensor size at index {i} "
                               f"(expected {_shape(like)}, got {_shape(t)})")


def _check_list_length(name, tensors, size, what="output"):
    if len(tensors) != size:
        raise RuntimeError(f"ProcessGroupGloo::{name}: invalid {what} tensor list size, must "
                           f"be world size ({len(tensors)} vs {size})")


def all_reduce(tensor, op=RedOpType.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across all processes; every process gets the result, in place."""
    if not async_op and isinstance(tensor, Tensor):
        # the common call, blocking on a contiguous tensor, whose checks passed before for
        # its group, array type, dtype and op: straight to the backend (small all-reduces
        # are bound by this Python path's time)
        a = tensor._data
        try:
            run = _PLANS.get((group, type(a), a.dtype, op))
        except TypeError:  # an unhashable group or op: the checks below say what is wrong
            run = None
        if run is not None and a.flags.carray and _LEVEL[0] is not _DETAIL:
            return run(a)
    _check_single_tensor(tensor, "tensor")
    pg = _member(group, "all_reduce")
    if pg is None:
        return None
    checked = _check_reduce(op, tensor, "all_reduce")
    _debug.check(pg, "ALLREDUCE", [tensor])
    impl = _impl(pg, tensor)
    blocking = not async_op
    if blocking and pg._timeout is None and type(op) is RedOpType \
            and _LEVEL[0] is not _DETAIL:
        plan = getattr(impl, "allreduce_plan", None)
        run = plan and plan(tensor._data.dtype, op)
        if run is not None:
            _PLANS[(group, type(tensor._data), tensor._data.dtype, op)] = run
    return _finish(impl.allreduce(tensor._data, checked, [tensor], blocking, pg._timeout),
                   async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Send ``tensor`` from ``src`` to every process of the group (in place)."""
    _check_single_tensor(tensor, "tensor")
    pg = _member(group, "broadcast")
    if pg is None:
        return None
    root = _root(pg, _group_rank(pg, src, group_src), "broadcast")
    _debug.check(pg, "BROADCAST", [tensor])
    impl = _impl(pg, tensor)
    return _finish(impl.broadcast(tensor._data, root, [tensor], not async_op, pg._timeout),
                   async_op)


def reduce(tensor, dst=None, op=RedOpType.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` across all processes; only ``dst`` gets the result."""
    _check_single_tensor(tensor, "tensor")
    pg = _member(group, "reduce")
    if pg is None:
        return None
    root = _root(pg, _group_rank(pg, dst, group_dst), "reduce")
    op = _check_reduce(op, tensor, "reduce")
    _debug.check(pg, "REDUCE", [tensor])
    impl = _impl(pg, tensor)
    return _finish(impl.reduce(tensor._data, root, op, [tensor], not async_op, pg._timeout),
                   async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[i]`` gets process i's ``tensor``."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_single_tensor(tensor, "tensor")
    _ensure_same_dtype(tensor_list, tensor)
    pg = _member(group, "all_gather")
    if pg is None:
        return None
    _check_list_length("allgather", tensor_list, pg.size())
    _check_sizes("allgather", tensor_list, tensor)
    _debug.check(pg, "ALLGATHER", [tensor])
    impl = _impl(pg, tensor)
    work = impl.allgather([t._data for t in tensor_list], tensor._data, tensor_list,
                          not async_op, pg._timeout)
    return _finish(work, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """``output_tensor`` gets every process's ``input_tensor``, concatenated along the first
    dimension (or stacked: an output of shape (world_size, *input.shape))."""
    _check_single_tensor(input_tensor, "input_tensor")
    _check_single_tensor(output_tensor, "output_tensor")
    pg = _member(group, "all_gather_into_tensor")
    if pg is None:
        return None
    _ensure_same_dtype(output_tensor, input_tensor)
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise RuntimeError("output tensor size must be equal to world_size times input tensor "
                           "size")
    _debug.check(pg, "_ALLGATHER_BASE", [input_tensor])
    impl = _impl(pg, input_tensor)
    work = impl.allgather_into(output_tensor._data, input_tensor._data, [output_tensor],
                               not async_op, pg._timeout)
    return _finish(work, async_op)


def reduce_scatter(output, input_list, op=RedOpType.SUM, group=None, async_op=False):
    """Reduce ``input_list`` across processes; process i gets the reduction of the i-th
    tensors in ``output``."""
    _check_single_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    _ensure_same_dtype(output, input_list)
    pg = _member(group, "reduce_scatter")
    if pg is None:
        return None
    op = _check_reduce(op, output, "reduce_scatter")
    _check_list_length("reduce_scatter", input_list, pg.size(), "input")
    _check_sizes("reduce_scatter", input_list, output)
    _debug.check(pg, "REDUCE_SCATTER", [output])
    impl = _impl(pg, output)
    work = impl.reduce_scatter(output._data, [t._data for t in input_list], op, [output],
                               not async_op, pg._timeout)
    return _finish(work, async_op)


def reduce_scatter_tensor(output, input, op=RedOpType.SUM, group=None,
                          async_op=False):
    """Reduce ``input`` across processes; process i gets the i-th block (along the first
    dimension) of the result in ``output``."""
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    pg = _member(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    op = _check_reduce(op, output, "reduce_scatter_tensor")
    _ensure_same_dtype(output, input)
    if input.numel() != output.numel() * pg.size():
        raise RuntimeError("input tensor must be the same size as output size times world "
                           "size")
    _debug.check(pg, "_REDUCE_SCATTER_BASE", [input])
    impl = _impl(pg, output)
    work = impl.reduce_scatter_tensor(output._data, input._data, op, [output], not async_op,
                                      pg._timeout)
    return _finish(work, async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """``gather_list[i]`` on ``dst`` gets process i's ``tensor``."""
    _check_single_tensor(tensor, "tensor")
    if gather_list:
        _check_tensor_list(gather_list, "gather_list")
    else:
        gather_list = []
    _ensure_same_dtype(tensor, gather_list)
    pg = _member(group, "gather")
    if pg is None:
        return None
    root = _root(pg, _group_rank(pg, dst, group_dst), "gather")
    if root == pg.rank():
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_list_length("gather", gather_list, pg.size())
        _check_sizes("gather", gather_list, tensor)
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                         "ranks.")
    _debug.check(pg, "GATHER", [tensor])
    impl = _impl(pg, tensor)
    work = impl.gather(tensor._data, [t._data for t in gather_list], root, gather_list,
                       not async_op, pg._timeout)
    return _finish(work, async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Process i gets ``scatter_list[i]`` of ``src`` in ``tensor``."""
    _check_single_tensor(tensor, "tensor")
    if scatter_list:
        _check_tensor_list(scatter_list, "scatter_list")
    else:
        scatter_list = []
    _ensure_same_dtype(tensor, scatter_list)
    pg = _member(group, "scatter")
    if pg is None:
        return None
    root = _root(pg, _group_rank(pg, src, group_src), "scatter")
    if root == pg.rank():
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_list_length("scatter", scatter_list, pg.size(), "input")
        _check_sizes("scatter", scatter_list, tensor)
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    _debug.check(pg, "SCATTER", [tensor])
    impl = _impl(pg, tensor)
    work = impl.scatter(tensor._data, [t._data for t in scatter_list], root, [tensor],
                        not async_op, pg._timeout)
    return _finish(work, async_op)


def _split_counts(t, splits, size):
    """Element counts of the blocks of ``t`` along its first dimension."""
    rows = t.shape[0] if t.ndim else 1
    per_row = t.numel() // rows if rows else 0
    if not splits:
        if rows % size:
            raise RuntimeError("Tensor's dim 0 does not divide equally across group size")
        return [rows // size * per_row] * size
    if len(splits) != size:
        raise RuntimeError("Number of tensor splits not equal to group size")
    if sum(splits) != rows:
        raise RuntimeError("Split sizes doesn't match total dim 0 size")
    return [int(s) * per_row for s in splits]


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Split ``input`` along its first dimension, send block i to process i, and concatenate
    the blocks received into ``output``."""
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    _ensure_same_dtype(output, input)
    pg = _member(group, "all_to_all_single")
    if pg is None:
        return None
    out_counts = _split_counts(output, output_split_sizes, pg.size())
    in_counts = _split_counts(input, input_split_sizes, pg.size())
    _debug.check(pg, "ALLTOALL_BASE", [input])
    impl = _impl(pg, input)
    work = impl.alltoall_single(output._data, input._data, out_counts, in_counts, [output],
                                not async_op, pg._timeout)
    return _finish(work, async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Send ``input_tensor_list[i]`` to process i; ``output_tensor_list[i]`` gets what
    process i sent."""
    _check_tensor_list(output_tensor_list, "output_tensor_list")
    _check_tensor_list(input_tensor_list, "input_tensor_list")
    _ensure_same_dtype(output_tensor_list, input_tensor_list)
    pg = _member(group, "all_to_all")
    if pg is None:
        return None
    _check_list_length("alltoall", output_tensor_list, pg.size())
    _check_list_length("alltoall", input_tensor_list, pg.size(), "input")
    _debug.check(pg, "ALLTOALL", input_tensor_list)
    impl = _impl(pg, input_tensor_list[0])
    work = impl.alltoall([t._data for t in output_tensor_list],
                         [t._data for t in input_tensor_list], output_tensor_list,
                         not async_op, pg._timeout)
    return _finish(work, async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every process of the group has reached this call."""
    pg = _member(group, "barrier")
    if pg is None:
        return None
    _debug.check(pg, "BARRIER", [])
    impl = next(iter(pg._impls.values()))
    return _finish(impl.barrier(not async_op, pg._timeout), async_op)
