"""``ember.xpu``: torch.xpu as torch's builds without Intel GPU support have it.

ember has no XPU backend, so this is the module of a PyTorch build without one: it says so
(``is_available()`` is False, ``device_count()`` is 0, memory statistics read 0, seeding is a
no-op), and calls that need a device raise torch's ``AssertionError: Torch not compiled with
XPU enabled``. Programs that pick their device with ``torch.xpu.is_available()`` fall back to
the CPU, as they do on such a build.
"""
from __future__ import annotations

from collections import OrderedDict

NOT_COMPILED = "Torch not compiled with XPU enabled"

__all__ = ["current_device", "current_stream", "device_count", "empty_cache",
           "get_device_capability", "get_device_name", "get_device_properties",
           "get_rng_state", "init", "initial_seed", "is_available", "is_bf16_supported",
           "is_initialized", "manual_seed", "manual_seed_all", "max_memory_allocated",
           "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "reset_peak_memory_stats", "seed", "seed_all", "set_device", "synchronize"]


def _is_compiled() -> bool:
    return False


def is_available() -> bool:
    """Whether an XPU can be used (never in ember)."""
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def _no_xpu(*args, **kwargs):
    raise AssertionError(NOT_COMPILED)


# what needs a device raises, as in torch without XPU support
init = current_device = synchronize = set_device = _no_xpu
get_device_name = get_device_properties = get_device_capability = _no_xpu
initial_seed = get_rng_state = current_stream = _no_xpu


def _nothing(*args, **kwargs) -> None:
    """Seeding and freeing cached memory do nothing without a device (as in torch)."""


manual_seed = manual_seed_all = seed = seed_all = empty_cache = _nothing


def _zero(device=None) -> int:
    return 0


memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = _zero


def memory_stats(device=None) -> OrderedDict:
    """No statistics without a device: torch's empty OrderedDict."""
    return OrderedDict()


def reset_peak_memory_stats(device=None) -> None:
    """torch's build without XPU fails here reaching for its missing binding."""
    raise AttributeError("module 'ember._C' has no attribute '_xpu_resetPeakMemoryStats'")
