"""Broadcasting many tensors as a few flat buffers (one per dtype and size cap)."""
from __future__ import annotations

from .._backend import get_xp
from .._tensor import _wrap
from . import _collectives as C
from ._world import resolve


def _chunks(tensors, cap_bytes):
    """Consecutive runs of tensors of one device and dtype, each at most ``cap_bytes`` (but at
    least one tensor)."""
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault((type(t._data), t._data.dtype), []).append(t)
    for group in by_dtype.values():
        chunk, size = [], 0
        for t in group:
            if chunk and size + t._data.nbytes > cap_bytes:
                yield chunk
                chunk, size = [], 0
            chunk.append(t)
            size += t._data.nbytes
        if chunk:
            yield chunk


def broadcast_coalesced(tensors, src=0, group=None, cap_bytes=250 * 1024 * 1024):
    """Give every process ``src``'s values of ``tensors`` (in place), in few messages.
    ``src`` is a rank of ``group``."""
    pg = resolve(group)
    if pg.size() == 1:
        return
    mine = pg.rank() == src
    for chunk in _chunks(tensors, cap_bytes):
        xp = get_xp(chunk[0]._data)  # the buffer stays on the tensors' device
        flat = xp.concatenate([t._data.reshape(-1) for t in chunk]) if mine else \
            xp.empty(sum(t._data.size for t in chunk), chunk[0]._data.dtype)
        C.broadcast(_wrap(flat), group=pg, group_src=src)
        if not mine:
            pos = 0
            for t in chunk:
                n = t._data.size
                xp.copyto(t._data, flat[pos:pos + n].reshape(t._data.shape))
                pos += n
