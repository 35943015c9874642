"""GPU memory statistics, read from CuPy's memory pool.

"Allocated" is what live arrays hold (the pool's used bytes), "reserved" what the pool holds
from the driver (its total bytes), as torch's caching allocator reports them. Peaks are kept
by a hook on the pool's allocations, installed the first time a memory statistic is asked
for: ``max_memory_allocated`` counts from then (call ``reset_peak_memory_stats()`` before
the code to measure, as with torch).
"""
from __future__ import annotations

import warnings
from collections import OrderedDict

from .._backend.device import cuda_backend, require_cuda

__all__ = ["empty_cache", "max_memory_allocated", "max_memory_reserved", "mem_get_info",
           "memory_allocated", "memory_reserved", "memory_stats", "memory_summary",
           "reset_accumulated_memory_stats", "reset_max_memory_allocated", "reset_peak_memory_stats"]


class _Peaks:
    """The pool's peak used and total bytes, updated after every allocation."""

    def __init__(self, backend):
        self.pool = backend.memory_pool()
        self.allocated = self.pool.used_bytes()
        self.reserved = self.pool.total_bytes()
        base = backend.memory_hook_base()
        peaks = self

        class PeakHook(base):
            name = "ember_peak_memory"

            def malloc_postprocess(self, **kwargs):
                peaks.update()

            def alloc_postprocess(self, **kwargs):
                peaks.update()
        self.hook = PeakHook()
        self.hook.__enter__()

    def update(self):
        self.allocated = max(self.allocated, self.pool.used_bytes())
        self.reserved = max(self.reserved, self.pool.total_bytes())

    def reset(self):
        self.allocated = self.pool.used_bytes()
        self.reserved = self.pool.total_bytes()


def _peaks():
    """The peak tracker of the CUDA backend in use (None without a GPU)."""
    backend = cuda_backend()
    if backend is None:
        return None
    peaks = getattr(backend, "peaks", None)
    if peaks is None:
        peaks = backend.peaks = _Peaks(backend)
    return peaks


def memory_allocated(device=None) -> int:
    """Bytes held by live tensors (0 without a GPU)."""
    peaks = _peaks()
    return 0 if peaks is None else int(peaks.pool.used_bytes())


def max_memory_allocated(device=None) -> int:
    """The most bytes live tensors held since the last reset."""
    peaks = _peaks()
    if peaks is None:
        return 0
    peaks.update()
    return int(peaks.allocated)


def memory_reserved(device=None) -> int:
    """Bytes the memory pool holds from the driver."""
    peaks = _peaks()
    return 0 if peaks is None else int(peaks.pool.total_bytes())


def max_memory_reserved(device=None) -> int:
    """The most bytes the pool held since the last reset."""
    peaks = _peaks()
    if peaks is None:
        return 0
    peaks.update()
    return int(peaks.reserved)


def _missing_binding(name):
    """torch's CPU build fails its statistics resets reaching for a CUDA binding it lacks."""
    return AttributeError(f"module 'ember._C' has no attribute '{name}'")


def reset_peak_memory_stats(device=None) -> None:
    """Start the peaks over from the current figures."""
    peaks = _peaks()
    if peaks is None:
        raise _missing_binding("_cuda_resetPeakMemoryStats")
    peaks.reset()


def reset_max_memory_allocated(device=None) -> None:
    """Start ``max_memory_allocated`` over (torch: an alias of reset_peak_memory_stats)."""
    warnings.warn("ember.cuda.reset_max_memory_allocated now calls "
                  "ember.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None) -> None:
    """Nothing is accumulated beyond the pool's figures; torch's error without a GPU."""
    if _peaks() is None:
        raise _missing_binding("_cuda_resetAccumulatedMemoryStats")


def empty_cache() -> None:
    """Hand the pool's unused blocks back to the driver."""
    backend = cuda_backend()
    if backend is not None:
        backend.memory_pool().free_all_blocks()


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of a GPU, as the driver reports them."""
    backend = require_cuda()
    from . import _index
    free, total = backend.mem_info(_index(device))
    return int(free), int(total)


def memory_stats(device=None) -> OrderedDict:
    """The statistics above under torch's key names, sorted as torch's (empty without a GPU)."""
    peaks = _peaks()
    if peaks is None:
        return OrderedDict()
    peaks.update()
    return OrderedDict([("allocated_bytes.all.current", memory_allocated()),
                        ("allocated_bytes.all.peak", int(peaks.allocated)),
                        ("reserved_bytes.all.current", memory_reserved()),
                        ("reserved_bytes.all.peak", int(peaks.reserved))])


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n} B"


def memory_summary(device=None, abbreviated=False) -> str:
    """A table of the memory statistics, in the layout of torch's summary."""
    stats = memory_stats(device)
    if not stats:  # torch's CPU build looks its first statistic up in the empty dict
        raise KeyError("allocated_bytes.all.current")
    rule = "|" + "=" * 75 + "|"
    line = "|" + "-" * 75 + "|"
    rows = [rule, "|" + " PyTorch CUDA memory summary, device ID "
            f"{device if device is not None else 0}".ljust(75) + "|", line,
            "|" + "        Metric         | Cur Usage  | Peak Usage |".ljust(75) + "|", rule]
    for name, key in (("Allocated memory", "allocated_bytes"),
                      ("Reserved memory", "reserved_bytes")):
        cur = stats[f"{key}.all.current"]
        peak = stats[f"{key}.all.peak"]
        rows.append("|" + f" {name:<22}| {_size(cur):>10} | {_size(peak):>10} |".ljust(75)
                    + "|")
    rows.append(rule)
    return "\n".join(rows) + "\n"
