"""``ember.cuda``: torch.cuda on CuPy. ember runs on a GPU when CuPy (the ``gpu`` extra) finds
one.

Without CuPy and a GPU, ``is_available()`` is False, ``device_count()`` is 0, seeding calls are
remembered for later (and never run), memory statistics read 0, and calls that need a device
raise ``AssertionError: Torch not compiled with CUDA enabled``, as PyTorch's CPU build does.
"""
from __future__ import annotations

from .._backend.device import as_device, cuda_backend, require_cuda
from . import amp, nvtx, profiler
from .memory import (empty_cache, max_memory_allocated, max_memory_reserved, mem_get_info,
                     memory_allocated, memory_reserved, memory_stats, memory_summary,
                     reset_accumulated_memory_stats, reset_max_memory_allocated,
                     reset_peak_memory_stats)
from .random import (get_rng_state, get_rng_state_all, initial_seed, manual_seed,
                     manual_seed_all, seed, seed_all, set_rng_state, set_rng_state_all)
from .streams import (Event, Stream, StreamContext, current_stream, default_stream, stream)

__all__ = [
    "Event", "Stream", "StreamContext", "current_device", "current_stream", "default_stream",
    "device", "device_count", "device_of", "empty_cache", "get_device_capability",
    "get_device_name", "get_device_properties", "get_rng_state", "get_rng_state_all", "init",
    "initial_seed", "is_available", "is_initialized", "manual_seed", "manual_seed_all",
    "max_memory_allocated", "max_memory_reserved", "mem_get_info", "memory_allocated",
    "memory_reserved", "memory_stats", "memory_summary", "nvtx", "profiler",
    "reset_accumulated_memory_stats", "reset_max_memory_allocated", "reset_peak_memory_stats",
    "seed", "seed_all",
    "set_device", "set_rng_state", "set_rng_state_all", "stream", "synchronize",
]


def is_available() -> bool:
    """Whether a CUDA device can be used (through CuPy)."""
    return cuda_backend() is not None


def device_count() -> int:
    """Number of CUDA devices CuPy sees (0 without CuPy)."""
    backend = cuda_backend()
    return 0 if backend is None else backend.device_count()


def is_initialized() -> bool:
    """Whether CUDA is ready (it is once CuPy found a GPU)."""
    return is_available()


def init() -> None:
    """Initialise CUDA (torch's error without a GPU)."""
    require_cuda()


def _index(device, optional=True):
    """torch's _get_device_index: a GPU index from an int, a string, a device or None."""
    if device is None:
        return current_device() if optional else None
    if isinstance(device, int):
        return device
    dev = as_device(device)
    if dev.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {dev}")
    return current_device() if dev.index is None else dev.index


def current_device() -> int:
    """Index of the current CUDA device."""
    return require_cuda().current_index()


def set_device(device) -> None:
    """Make ``device`` the current CUDA device (a negative index does nothing)."""
    backend = require_cuda()
    index = _index(device)
    if index >= 0:
        backend.set_current(index)


class device:
    """Context manager that makes ``device`` the current CUDA device inside it."""

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device, optional=False)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx == -1:
            return None
        backend = cuda_backend()
        if backend is None:
            raise RuntimeError("PyTorch was compiled without CUDA support")
        self.prev_idx = backend.current_index()
        if self.prev_idx != self.idx:
            backend.set_current(self.idx)
        return None

    def __exit__(self, *exc):
        if self.idx != -1 and self.prev_idx != self.idx:
            cuda_backend().set_current(self.prev_idx)
        return False


class device_of(device):
    """Context manager that makes the current CUDA device the one holding ``obj``."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else None)


def synchronize(device=None) -> None:
    """Wait for all work on a CUDA device (the current one by default) to finish."""
    require_cuda().synchronize(_index(device))


class _CudaDeviceProperties:
    """What ``get_device_properties`` reports, as torch names it."""

    def __init__(self, props):
        self.name = props["name"]
        self.major, self.minor = int(props["major"]), int(props["minor"])
        self.total_memory = int(props["totalGlobalMem"])
        self.multi_processor_count = int(props["multiProcessorCount"])
        self.is_integrated = int(props.get("integrated", 0))
        self.is_multi_gpu_board = int(props.get("isMultiGpuBoard", 0))
        self.max_threads_per_multi_processor = int(props.get("maxThreadsPerMultiProcessor", 0))
        self.regs_per_multiprocessor = int(props.get("regsPerMultiprocessor", 0))
        self.warp_size = int(props.get("warpSize", 32))
        self.L2_cache_size = int(props.get("l2CacheSize", 0))
        raw = props.get("uuid", b"")
        self.uuid = (raw.hex() if isinstance(raw, bytes) else str(raw))
        self.pci_bus_id = int(props.get("pciBusID", 0))
        self.pci_device_id = int(props.get("pciDeviceID", 0))
        self.pci_domain_id = int(props.get("pciDomainID", 0))

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid}, "
                f"pci_bus_id={self.pci_bus_id}, pci_device_id={self.pci_device_id}, "
                f"pci_domain_id={self.pci_domain_id}, "
                f"L2_cache_size={self.L2_cache_size // (1 << 20)}MB)")


def get_device_properties(device=None) -> _CudaDeviceProperties:
    """The properties of a CUDA device."""
    backend = require_cuda()
    index = _index(device)
    if not 0 <= index < backend.device_count():
        raise AssertionError("Invalid device id")
    return _CudaDeviceProperties(backend.properties(index))


def get_device_name(device=None) -> str:
    """The name of a CUDA device."""
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple[int, int]:
    """The (major, minor) compute capability of a CUDA device."""
    props = get_device_properties(device)
    return props.major, props.minor


def __getattr__(name):
    if name == "default_generators":  # (made when CUDA is first asked for)
        from .random import default_generators
        return default_generators()
    raise AttributeError(f"module 'ember.cuda' has no attribute '{name}'")
