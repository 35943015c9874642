"""ember's intra-op thread count (``ember.get_num_threads`` / ``set_num_threads``).

Few of ember's kernels use threads of their own (NumPy's BLAS keeps its own pool); those that do
(large float32 and float64 normals) spread their work over this many, on one shared pool. The
default follows torch's: the ``OMP_NUM_THREADS`` variable when it is set, else the CPUs this
process may run on.
"""
from __future__ import annotations

import itertools
import os

import numpy as np

_count = []  # [n] once known
_pool = []  # [executor, its size], made on first use


def _default():
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def get_num_threads() -> int:
    if not _count:
        _count.append(_default())
    return _count[0]


def set_num_threads(n) -> None:
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    n = n.__index__()
    if not -(1 << 31) <= n < 1 << 31:
        raise ValueError("Overflow when unpacking long")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _count[:] = [n]


def _forget_pool():
    # NOTE: a forked child (a DataLoader worker) has none of the parent's threads: it makes
    # its own pool if it needs one
    _pool.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def executor():
    """The shared pool of ``get_num_threads()`` worker threads."""
    workers = get_num_threads()
    if not _pool or _pool[1] != workers:
        from concurrent.futures import ThreadPoolExecutor
        if _pool:
            _pool[0].shutdown(wait=False)
        _pool[:] = [ThreadPoolExecutor(workers, thread_name_prefix="ember-intra-op"), workers]
    return _pool[0]


def _bounds(n, min_piece):
    """Up to ``get_num_threads()`` (lo, hi) pieces of range(n), of at least ``min_piece``."""
    pieces = max(1, min(get_num_threads(), n // min_piece))
    return list(itertools.pairwise([n * i // pieces for i in range(pieces + 1)]))


def map_pieces(fn, x, min_piece):
    """``fn`` (elementwise, 1-D array to array) over ``x`` in up to ``get_num_threads()``
    pieces of at least ``min_piece`` elements, the first on the calling thread; the results
    joined in order. Worth it where ``fn`` releases the GIL for most of its time."""
    parts = [x[lo:hi] for lo, hi in _bounds(len(x), min_piece)]
    if len(parts) == 1:
        return fn(x)
    pending = [executor().submit(fn, part) for part in parts[1:]]
    results = [fn(parts[0])] + [job.result() for job in pending]
    return np.concatenate(results)


def run_pieces(fn, n, min_piece):
    """``fn(lo, hi)`` over range(n) in up to ``get_num_threads()`` pieces of at least
    ``min_piece``, the first on the calling thread (for work written in place)."""
    (first, *rest) = _bounds(n, min_piece)
    pending = [executor().submit(fn, lo, hi) for lo, hi in rest]
    try:
        fn(*first)
    finally:
        for job in pending:
            job.result()
