"""ember's intra-op thread count (``ember.get_num_threads`` / ``set_num_threads``).

Few of ember's kernels use threads of their own (NumPy's BLAS keeps its own pool); those that do
(large float32 normals) spread their work over this many. The default follows torch's: the
``OMP_NUM_THREADS`` variable when it is set, else the CPUs this process may run on.
"""
from __future__ import annotations

import os

_count = []  # [n] once known


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
