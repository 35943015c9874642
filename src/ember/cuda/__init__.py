"""``ember.cuda``: what torch.cuda reports. ember runs on the CPU unless CuPy finds a GPU.

Without CuPy and a GPU, ``is_available()`` is False, ``device_count()`` is 0 and calls that
need a device raise ``AssertionError: Torch not compiled with CUDA enabled``, exactly as
PyTorch's CPU build does.
"""
from __future__ import annotations

from . import profiler

__all__ = [
    "current_device",
    "device_count",
    "get_device_name",
    "is_available",
    "is_initialized",
    "profiler",
    "synchronize",
]

_NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _cupy():
    """CuPy when it imports and sees at least one GPU, else None."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:  # noqa: BLE001 - ImportError, or CUDA errors without a driver
        return None
    return None


def is_available() -> bool:
    """Whether a CUDA device can be used (through CuPy)."""
    return _cupy() is not None


def device_count() -> int:
    """Number of CUDA devices CuPy sees (0 without CuPy)."""
    cp = _cupy()
    return 0 if cp is None else int(cp.cuda.runtime.getDeviceCount())


def is_initialized() -> bool:
    """Whether CUDA is ready (ember initialises nothing eagerly)."""
    return is_available()


def _lazy_init():
    cp = _cupy()
    if cp is None:
        raise AssertionError(_NOT_COMPILED)
    return cp


def synchronize(device=None) -> None:
    """Wait for all work on the current CUDA device to finish."""
    _lazy_init().cuda.Device().synchronize()


def current_device() -> int:
    """Index of the current CUDA device."""
    return int(_lazy_init().cuda.Device().id)


def get_device_name(device=None) -> str:
    """Name of a CUDA device."""
    cp = _lazy_init()
    index = current_device() if device is None else int(getattr(device, "index", device) or 0)
    name = cp.cuda.runtime.getDeviceProperties(index)["name"]
    return name.decode() if isinstance(name, bytes) else name
