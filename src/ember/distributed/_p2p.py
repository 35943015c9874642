"""Point-to-point messages: send / recv, isend / irecv, P2POp and batch_isend_irecv."""
from __future__ import annotations

from ._collectives import _check_single_tensor, _impl, _member
from ._world import get_global_rank, get_group_rank


def _peer(pg, rank, group_rank, what):
    if group_rank is not None:
        if rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        peer = group_rank
    elif rank is None:
        raise ValueError("Must specify global_rank or group_rank")
    else:
        peer = get_group_rank(pg, rank)
    if peer == pg.rank():
        raise ValueError(f"Invalid {what} rank: {what} rank should not be the same as the rank "
                         "of the current process.")
    return peer


def _start_send(tensor, dst, group, tag, group_dst, blocking, name):
    _check_single_tensor(tensor, "tensor")
    pg = _member(group, name)
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "destination")
    return _impl(pg, tensor).send(tensor._data, peer, tag, [tensor], blocking, pg._timeout)


def _start_recv(tensor, src, group, tag, group_src, blocking, name):
    _check_single_tensor(tensor, "tensor")
    pg = _member(group, name)
    if pg is None:
        return None, None
    peer = None if src is None and group_src is None else _peer(pg, src, group_src, "source")
    work = _impl(pg, tensor).recv(tensor._data, peer, tag, [tensor], blocking, pg._timeout)
    return pg, work


def send(tensor, dst=None, group=None, tag=0, group_dst=None) -> None:
    """Send ``tensor`` to process ``dst`` (blocks until MPI has taken it)."""
    work = _start_send(tensor, dst, group, tag, group_dst, True, "send")
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None) -> int:
    """Receive into ``tensor`` from ``src`` (any process when None); returns the sender's
    global rank (-1 if this process is not in ``group``)."""
    pg, work = _start_recv(tensor, src, group, tag, group_src, True, "recv")
    if work is None:
        return -1
    work.wait()
    if src is not None:
        return src
    return get_global_rank(pg, work._source if group_src is None else group_src)


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending ``tensor`` to ``dst``; returns a Work."""
    return _start_send(tensor, dst, group, tag, group_dst, False, "isend")


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into ``tensor`` from ``src`` (any process when None); returns a Work."""
    return _start_recv(tensor, src, group, tag, group_src, False, "irecv")[1]


class P2POp:
    """One point-to-point operation (``isend`` or ``irecv``) for batch_isend_irecv."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``torch.distributed.isend`` or ``torch.distributed.irecv``.")
        _check_single_tensor(tensor, "tensor")
        self.op = op
        self.tensor = tensor
        self.peer = peer
        self.group = group
        self.tag = tag
        self.group_peer = group_peer

    def __repr__(self):
        return (f"P2POp(op={self.op.__name__}, tensor={tuple(self.tensor.shape)}, "
                f"peer={self.peer}, group={self.group}, tag={self.tag})")


def batch_isend_irecv(p2p_op_list) -> list:
    """Start every send and receive of ``p2p_op_list``; returns their Works."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    group = p2p_op_list[0].group
    if not all(group == p.group for p in p2p_op_list):
        raise ValueError("All ops need to use the same group.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return [w for w in works if w is not None]
