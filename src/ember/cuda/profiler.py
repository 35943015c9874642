"""``ember.cuda.profiler``: start and stop the CUDA profiler (nvprof / Nsight) around code."""
from __future__ import annotations

import contextlib

__all__ = ["profile", "start", "stop"]


def start():
    """Start CUDA profiler data collection (raises without CUDA, as torch's CPU build)."""
    from .._backend.device import require_cuda
    require_cuda().profiler().start()


def stop():
    """Stop CUDA profiler data collection."""
    from .._backend.device import require_cuda
    require_cuda().profiler().stop()


@contextlib.contextmanager
def profile():
    """Enable collection by the active CUDA profiling tool inside the block."""
    try:
        start()
        yield
    finally:
        stop()
