"""The CUDA backend: CuPy arrays on NVIDIA GPUs.

Everything ember does on a GPU goes through the ``CudaBackend`` below, written against CuPy's
public API (``cupy`` and ``cupyx``) only. ember's tests build one on a CPU stand-in for CuPy
that refuses what CuPy refuses (implicit conversion to NumPy, NumPy operands), so that every
path a GPU takes also runs in CI.
"""
from __future__ import annotations

import numpy

from .device import device


def find_cupy():
    """``(cupy, cupyx)`` when CuPy imports and sees a GPU, else None."""
    try:
        import cupy
        import cupyx
        import cupyx.scipy.special  # noqa: F401  (special functions on the GPU)
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy, cupyx
    except Exception:  # noqa: BLE001 - ImportError, or CUDA errors without a driver
        return None
    return None


# dtypes cupyx.scatter_add adds atomically; others are widened first.
_ATOMIC_ADD = frozenset(numpy.dtype(t) for t in (
    numpy.int32, numpy.int64, numpy.uint32, numpy.uint64, numpy.float16, numpy.float32,
    numpy.float64))


class CudaBackend:
    """CuPy on the GPUs CuPy sees."""

    type = "cuda"
    launch_bound = True  # (see ember._backend.launch_bound)

    def __init__(self, cupy, cupyx):
        self.xp = cupy
        self.x = cupyx
        self.array_type = cupy.ndarray
        self._devices = {}
        self.generators = {}  # index -> ember.cuda's generator for that device

    # -- devices -------------------------------------------------------------------------------
    def device_count(self) -> int:
        return int(self.xp.cuda.runtime.getDeviceCount())

    def current_index(self) -> int:
        return int(self.xp.cuda.runtime.getDevice())

    def set_current(self, index) -> None:
        self.xp.cuda.runtime.setDevice(int(index))

    def index_of(self, array) -> int:
        return int(array.device.id)

    def device_of(self, array):
        index = int(array.device.id)
        dev = self._devices.get(index)
        if dev is None:
            dev = self._devices[index] = device("cuda", index)
        return dev

    def on(self, index):
        """A context in which new arrays go to GPU ``index`` (the current one for None)."""
        return self.xp.cuda.Device(index)

    # -- arrays --------------------------------------------------------------------------------
    def make(self, index, factory, *args, **kwargs):
        with self.xp.cuda.Device(index):
            return getattr(self.xp, factory)(*args, **kwargs)

    def from_host(self, array, index, non_blocking=False):
        with self.xp.cuda.Device(index):
            return self.xp.asarray(array, blocking=not non_blocking)

    def to_host(self, array, non_blocking=False):
        return array.get(blocking=not non_blocking)

    def copy_between(self, array, index):
        with self.xp.cuda.Device(index):
            return self.xp.array(array, copy=True)

    def pinned_copy(self, array):
        """A copy of the host ``array`` in page-locked memory (GPU copies from it can run
        asynchronously)."""
        out = self.x.empty_like_pinned(array)
        out[...] = array
        return out

    def is_pinned(self, array) -> bool:
        if array.size == 0:
            return False
        address = array.__array_interface__["data"][0]
        attributes = self.xp.cuda.runtime.pointerGetAttributes(address)
        return attributes.type == self.xp.cuda.runtime.memoryTypeHost

    # -- what CuPy spells differently ------------------------------------------------------------
    def scatter_add(self, target, index, values):
        """``target[index] += values`` with repeated indices accumulating."""
        if target.dtype in _ATOMIC_ADD:
            self.x.scatter_add(target, index, values)
        elif target.dtype.kind == "c":  # real and imaginary parts are views of target
            values = self.xp.asarray(values, dtype=target.dtype)
            self.x.scatter_add(target.real, index, values.real)
            self.x.scatter_add(target.imag, index, values.imag)
        else:  # bool, 8- and 16-bit integers: no atomics of that width
            wide = target.astype(numpy.int64)
            self.x.scatter_add(wide, index, values)
            target[...] = wide.astype(target.dtype)
        return target

    def scatter_reduce(self, name, target, index, values):
        """``getattr(numpy, name).at(target, index, values)`` for any elementwise ufunc.

        NOTE: CuPy has ``ufunc.at`` for add and subtract only, and cupyx.scatter_max/min
        handle neither every dtype nor NaN as NumPy does. So the writes go in rounds: each
        round applies, at every position, the earliest value not applied yet (positions
        within a round are distinct). Values reach a position in their order, as in NumPy;
        the number of rounds is the largest number of values aimed at one position.
        """
        xp, fn = self.xp, getattr(self.xp, name)
        work = target if target.flags.c_contiguous else target.copy()
        flat = work.reshape(-1)
        pos = xp.arange(flat.size).reshape(work.shape)[index]
        val = xp.broadcast_to(xp.asarray(values, work.dtype), pos.shape).reshape(-1)
        pos = pos.reshape(-1)
        while pos.size:
            uniq, first = xp.unique(pos, return_index=True)
            flat[uniq] = fn(flat[uniq], val[first])
            rest = xp.ones(pos.size, bool)
            rest[first] = False
            pos, val = pos[rest], val[rest]
        if work is not target:
            target[...] = work
        return target

    def linalg_errors(self):
        """A context in which cuSOLVER failures raise ``numpy.linalg.LinAlgError`` (CuPy
        ignores them by default; torch reports them)."""
        return self.x.errstate(linalg="raise")

    def special(self):
        """The module with the special functions (``cupyx.scipy.special``)."""
        return self.x.scipy.special

    def linalg(self):
        """SciPy's linear algebra on the GPU (``cupyx.scipy.linalg``, batched where SciPy's
        is), or None where this CuPy has none (ember's own kernels then run on the device)."""
        linalg = getattr(self.x.scipy, "linalg", None)
        return None if linalg is None else _BatchedLinalg(linalg, self.xp)

    # -- the CUDA runtime, as ember.cuda presents it ---------------------------------------------
    def synchronize(self, index):
        self.xp.cuda.Device(index).synchronize()

    def properties(self, index) -> dict:
        props = self.xp.cuda.runtime.getDeviceProperties(int(index))
        name = props["name"]
        return {**props, "name": name.decode() if isinstance(name, bytes) else name}

    def mem_info(self, index):
        with self.xp.cuda.Device(index):
            return self.xp.cuda.Device(index).mem_info

    def event(self, enable_timing, blocking, interprocess):
        return self.xp.cuda.Event(block=blocking, disable_timing=not enable_timing,
                                  interprocess=interprocess)

    def elapsed_ms(self, start, end) -> float:
        return float(self.xp.cuda.get_elapsed_time(start, end))

    def stream(self, index, priority=0):
        with self.xp.cuda.Device(index):
            return self.xp.cuda.Stream(non_blocking=False, priority=priority)

    def current_stream(self, index):
        return self.xp.cuda.get_current_stream(index)

    def null_stream(self):
        return self.xp.cuda.Stream.null

    def memory_pool(self):
        return self.xp.get_default_memory_pool()

    def nvtx(self):
        """CuPy's NVTX bindings (RangePush, RangePop, Mark)."""
        return self.xp.cuda.nvtx

    def profiler(self):
        """CuPy's CUDA profiler control (start, stop)."""
        return self.xp.cuda.profiler

    def memory_hook_base(self):
        return self.xp.cuda.MemoryHook


class _BatchedLinalg:
    """``cupyx.scipy.linalg`` with SciPy's batching where CuPy's function takes one matrix."""

    def __init__(self, linalg, xp):
        self._linalg, self._xp = linalg, xp

    def __getattr__(self, name):
        return getattr(self._linalg, name)

    def expm(self, a):
        if a.ndim == 2:
            return self._linalg.expm(a)
        flat = a.reshape(-1, *a.shape[-2:])
        return self._xp.stack([self._linalg.expm(m) for m in flat]).reshape(a.shape)
