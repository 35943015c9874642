"""Collectives on picklable Python objects (``all_gather_object`` and the others).

As torch's, they pickle: only use them with data you trust. MPI's own object messages
(mpi4py's lower-case methods) carry the pickles.
"""
from __future__ import annotations

from ._collectives import _member
from ._p2p import _peer
from ._world import get_global_rank, get_group_rank


def _comm(pg):
    return next(iter(pg._impls.values())).comm


def _rank_of(pg, rank, group_rank):
    if group_rank is not None:
        if rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        return group_rank
    return get_group_rank(pg, 0 if rank is None else rank)


def all_gather_object(object_list, obj, group=None) -> None:
    """``object_list[i]`` gets process i's ``obj``."""
    pg = _member(group, "all_gather_object")
    if pg is None:
        return
    gathered = _comm(pg).allgather(obj)
    for i, o in enumerate(gathered):
        object_list[i] = o


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    """``object_gather_list[i]`` on ``dst`` gets process i's ``obj``."""
    pg = _member(group, "gather_object")
    if pg is None:
        return
    root = _rank_of(pg, dst, group_dst)
    if root == pg.rank():
        if not object_gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    elif object_gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                         "ranks.")
    gathered = _comm(pg).gather(obj, root=root)
    if root == pg.rank():
        for i, o in enumerate(gathered):
            object_gather_list[i] = o


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Every process's ``object_list`` gets the objects of ``src``'s (in place)."""
    pg = _member(group, "broadcast_object_list")
    if pg is None:
        return
    root = _rank_of(pg, src, group_src)
    got = _comm(pg).bcast(list(object_list) if root == pg.rank() else None, root=root)
    if root != pg.rank():
        object_list[:] = got[:len(object_list)] if len(got) >= len(object_list) else got


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None) -> None:
    """``scatter_object_output_list[0]`` gets ``scatter_object_input_list[i]`` of ``src``
    on process i."""
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    pg = _member(group, "scatter_object_list")
    if pg is None:
        return
    root = _rank_of(pg, src, group_src)
    items = list(scatter_object_input_list) if root == pg.rank() else None
    scatter_object_output_list[0] = _comm(pg).scatter(items, root=root)


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None) -> None:
    """Send the objects of ``object_list`` to ``dst``."""
    pg = _member(group, "send_object_list")
    if pg is None:
        return
    peer = _peer(pg, dst, group_dst, "destination")
    _comm(pg).send(list(object_list), dest=peer, tag=0)


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None) -> int:
    """Receive objects into ``object_list`` from ``src`` (any process when None); returns
    the sender's global rank."""
    pg = _member(group, "recv_object_list")
    if pg is None:
        return -1
    from . import _mpi
    MPI = _mpi.mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else \
        _peer(pg, src, group_src, "source")
    status = MPI.Status()
    got = _comm(pg).recv(source=peer, tag=0, status=status)
    object_list[:len(got)] = got
    return get_global_rank(pg, status.Get_source())
