"""NVTX ranges (``torch.cuda.nvtx``) through CuPy's NVTX bindings, for Nsight Systems."""
from __future__ import annotations

import contextlib

from .._backend.device import cuda_backend

__all__ = ["mark", "range", "range_pop", "range_push"]

_NOT_INSTALLED = "NVTX functions not installed. Are you sure you have a CUDA build?"


def _nvtx():
    backend = cuda_backend()
    if backend is None:
        raise RuntimeError(_NOT_INSTALLED)
    return backend.nvtx()


def range_push(msg) -> int:
    """Push a range named ``msg``; returns its depth (0-based)."""
    nvtx = _nvtx()
    nvtx.RangePush(msg)
    _depth[0] += 1
    return _depth[0] - 1


def range_pop() -> int:
    """Pop the innermost range; returns the depth it was at."""
    nvtx = _nvtx()
    nvtx.RangePop()
    _depth[0] -= 1
    return _depth[0]


def mark(msg) -> None:
    """An instantaneous event named ``msg``."""
    _nvtx().Mark(msg)


@contextlib.contextmanager
def range(msg, *args, **kwargs):  # noqa: A001 - torch's name
    """A range around the block, named ``msg.format(*args, **kwargs)``."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()


_depth = [0]
