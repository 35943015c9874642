"""monitored_barrier: a barrier in which rank 0 names the processes that did not reach it."""
from __future__ import annotations

import time

import numpy as np

from ._collectives import _member
from ._types import default_pg_timeout

_TAG = 32001  # the barrier's own messages, apart from user tags (MPI guarantees >= 32767)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False) -> None:
    """Like barrier, but rank 0 waits at most ``timeout`` for each other process and raises
    naming the ones that did not arrive (all of them with ``wait_all_ranks``)."""
    pg = _member(group, "monitored_barrier")
    if pg is None:
        return
    limit = timeout or pg._timeout or default_pg_timeout
    comm = next(iter(pg._impls.values())).comm
    token = np.zeros(1, np.int8)
    if pg.rank() != 0:
        comm.Send(token, dest=0, tag=_TAG)
        _wait_all([comm.Irecv(np.zeros(1, np.int8), source=0, tag=_TAG)], limit,
                  lambda missing: f"[Rank {pg.rank()}]: Rank 0 did not release the "
                                  f"monitoredBarrier in {_ms(limit)} ms")
        return
    others = list(range(1, pg.size()))
    requests = [comm.Irecv(np.zeros(1, np.int8), source=r, tag=_TAG) for r in others]
    deadline = time.monotonic() + limit.total_seconds()
    missing = []
    for r, req in zip(others, requests):
        if not _wait_one(req, deadline):
            missing.append(r)
            if not wait_all_ranks:
                break
    if missing:
        if len(missing) == 1:
            raise RuntimeError(f"[Rank 0]: Rank {missing[0]} failed to pass monitoredBarrier "
                               f"in {_ms(limit)} ms")
        raise RuntimeError(f"[Rank 0]: Ranks {', '.join(map(str, missing))} failed to pass "
                           f"monitoredBarrier in {_ms(limit)} ms")
    for r in others:
        comm.Send(token, dest=r, tag=_TAG)


def _ms(limit):
    return int(limit.total_seconds() * 1000)


def _wait_one(req, deadline):
    pause = 1e-5
    while not req.Test():
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 1e-3)
    return True


def _wait_all(requests, limit, message):
    deadline = time.monotonic() + limit.total_seconds()
    for req in requests:
        if not _wait_one(req, deadline):
            raise RuntimeError(message(req))
