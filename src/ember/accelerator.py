"""``ember.accelerator``: torch.accelerator, the device-agnostic front of the GPU API.

ember's one accelerator is CUDA (through CuPy, see ember.cuda). Without a usable GPU there is
none: ``is_available()`` is False, ``current_accelerator()`` None, ``device_count()`` 0, and
every call that needs a device raises torch's ``RuntimeError``, as PyTorch's CPU build does.
Programs that pick their device with ``torch.accelerator`` therefore run on the CPU here.
"""
from __future__ import annotations

import warnings

from ._backend.device import cuda_backend
from ._tensor import device as _device

__all__ = [
    "current_accelerator", "current_device_idx", "current_device_index", "current_stream",
    "device_count", "device_index", "empty_cache", "get_memory_info", "is_available",
    "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
    "memory_stats", "reset_peak_memory_stats", "set_device_idx", "set_device_index",
    "set_stream", "synchronize",
]

_NONE = "Cannot access accelerator device when none is available."


def _cuda():
    """ember.cuda, or torch's error when there is no accelerator to use."""
    if cuda_backend() is None:
        raise RuntimeError(_NONE)
    from . import cuda
    return cuda


def is_available() -> bool:
    """Whether an accelerator (a GPU ember can use) is there."""
    return cuda_backend() is not None


def current_accelerator(check_available: bool = False):
    """The accelerator's device type as a device (``cuda``), or None without one."""
    return _device("cuda") if is_available() else None


def device_count() -> int:
    """How many accelerator devices there are (0 without one)."""
    return _cuda().device_count() if is_available() else 0


def current_device_index() -> int:
    """Index of the current accelerator device."""
    return _cuda().current_device()


def current_device_idx() -> int:
    """Deprecated name of ``current_device_index``."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device, /) -> None:
    """Make ``device`` the current accelerator device."""
    _cuda().set_device(device)


def set_device_idx(device, /) -> None:
    """Deprecated name of ``set_device_index``."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


def synchronize(device=None, /) -> None:
    """Wait for all work on an accelerator device to finish."""
    _cuda().synchronize(device)


def current_stream(device=None, /):
    """The current stream of an accelerator device."""
    return _cuda().current_stream(device)


def set_stream(stream) -> None:
    """Make ``stream`` the current stream of its device."""
    _cuda().streams.StreamContext(stream).__enter__()


class device_index:
    """Context manager that makes ``device`` (an index; None: no change) the current device."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info):
        if self.idx is not None and self.prev_idx >= 0:
            set_device_index(self.prev_idx)


def empty_cache() -> None:
    """Hand the accelerator's cached, unused memory back to the driver."""
    _cuda().empty_cache()


def memory_allocated(device_index=None, /) -> int:
    """Bytes held by live tensors on an accelerator device."""
    return _cuda().memory_allocated(device_index)


def max_memory_allocated(device_index=None, /) -> int:
    """The most bytes live tensors held since the last reset."""
    return _cuda().max_memory_allocated(device_index)


def memory_reserved(device_index=None, /) -> int:
    """Bytes the accelerator's memory pool holds from the driver."""
    return _cuda().memory_reserved(device_index)


def max_memory_reserved(device_index=None, /) -> int:
    """The most bytes the memory pool held since the last reset."""
    return _cuda().max_memory_reserved(device_index)


def memory_stats(device_index=None, /) -> dict:
    """The memory statistics under torch's key names."""
    return _cuda().memory_stats(device_index)


def reset_peak_memory_stats(device_index=None, /) -> None:
    """Start the peak statistics afresh."""
    _cuda().reset_peak_memory_stats(device_index)


def get_memory_info(device_index=None, /) -> tuple[int, int]:
    """(free, total) bytes of an accelerator device."""
    return _cuda().mem_get_info(device_index)
