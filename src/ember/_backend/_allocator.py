"""Keep glibc from handing mid-sized NumPy buffers back to the kernel after every step.

A training step allocates and frees the same few arrays of one to tens of MiB each time. glibc
serves blocks that size from fresh ``mmap`` pages or trims them off the heap when they are
freed, so the next step touches new pages: every 4 KiB page costs a page fault and a zeroing
(W6 of ``benchmarks/``, a small CNN step: about 1,100 faults and a third of its time per step).
Raising the mmap threshold to glibc's own dynamic ceiling (32 MiB) and the trim threshold
above it keeps those blocks in the heap, where the next step reuses them. Peak memory is
unchanged; what changes is that up to ``_TRIM`` bytes of freed heap stay with the process
between steps, as a caching allocator's pool would.

Set ``EMBER_MALLOC_TUNING=0`` before importing ember to leave glibc's defaults alone.
"""
from __future__ import annotations

import os
import sys

_M_TRIM_THRESHOLD = -1  # mallopt parameter numbers from glibc's malloc.h
_M_MMAP_THRESHOLD = -3
_MMAP = 32 << 20
_TRIM = 128 << 20

tuned = False


def tune_glibc_malloc() -> bool:
    """Apply the thresholds once, on Linux with glibc; True when they are in effect."""
    global tuned
    if tuned or sys.platform != "linux" or os.environ.get("EMBER_MALLOC_TUNING", "1") in (
            "0", "off", "false"):
        return tuned
    import ctypes
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - musl and others lack it: leave them alone
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    tuned = bool(mallopt(_M_MMAP_THRESHOLD, _MMAP)) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM))
    return tuned
