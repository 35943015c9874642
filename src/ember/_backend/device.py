"""Devices: where a tensor's array lives. A device is an array module plus an index.

``cpu`` is NumPy. ``cuda:n`` is CuPy on GPU n (the optional extra ``gpu``), set up on first
use. ``meta`` holds arrays without data (``meta.py``), also set up on first use. Everything else in ember asks this module which array module serves a device, which
device holds an array, and how to move an array between devices.
"""
from __future__ import annotations

import numpy

NOT_COMPILED = "Torch not compiled with CUDA enabled"
_NO_ACCELERATOR = "Cannot access accelerator device when none is available."
# The device types torch's parser knows, in its message's order.
_TORCH_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                "privateuseone")


class device:
    """Where a tensor lives: ``device(type='cpu')``, ``device(type='cuda', index=0)``."""

    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):  # noqa: A002 - torch's keyword
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, int) and not isinstance(type, bool):
            # torch.device(0): the current accelerator's device 0
            if cuda_backend() is None:
                raise RuntimeError(_NO_ACCELERATOR)
            type, index = "cuda", type
        elif not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({builtin_type(type).__name__})")
        elif ":" in type:
            if index is not None:
                raise RuntimeError("type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            type, idx = type.split(":", 1)
            if not idx.isdigit() or (len(idx) > 1 and idx[0] == "0"):
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if type not in _TORCH_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TORCH_TYPES)} device type at start "
                               f"of device string: {type}")
        if index is not None:
            index = int(index)
            if index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type, self.index = type, index

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        # NOTE: as torch, a device never equals a string (device('cpu') == 'cpu' is False).
        return isinstance(other, device) and (self.type, self.index) == (other.type,
                                                                         other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))

    # ``with ember.device('meta'):``: factories given no device make tensors here meanwhile.
    def __enter__(self):
        _entered.append(default_device())
        set_default(self)
        return self

    def __exit__(self, *exc):
        set_default(_entered.pop())


_entered = []  # the default devices that ``with device(...)`` blocks replaced


builtin_type = type
CPU = device("cpu")


# -- backends ----------------------------------------------------------------------------------
class CPUBackend:
    """NumPy arrays in host memory."""

    type = "cpu"
    xp = numpy
    array_type = numpy.ndarray

    def device_of(self, array):
        return CPU


_CPU_BACKEND = CPUBackend()
_cuda = None  # the CUDA backend once looked for: a CudaBackend, or False when there is none
_ARRAY_BACKENDS = {numpy.ndarray: _CPU_BACKEND}  # array type -> its backend
MODULES = {}  # array type -> array module, for every backend but NumPy's (see get_xp)


def cuda_backend():
    """The CUDA backend (CuPy with at least one GPU), or None."""
    global _cuda
    if _cuda is None:
        from .cuda import CudaBackend, find_cupy
        found = find_cupy()
        install_cuda(CudaBackend(*found) if found else False)
    return _cuda or None


def install_cuda(backend):
    """Serve ``cuda`` devices with ``backend`` (a CudaBackend; False: none). ember's tests
    install one built on a CPU stand-in for CuPy this way; users never call it."""
    global _cuda
    old = _cuda
    if old:
        _ARRAY_BACKENDS.pop(old.array_type, None)
        MODULES.pop(old.array_type, None)
    _cuda = backend
    if backend:
        _ARRAY_BACKENDS[backend.array_type] = backend
        MODULES[backend.array_type] = backend.xp
    return old


def meta_backend():
    """The meta backend, installed on first use (until then, get_xp has one backend fewer to
    look through)."""
    global _meta
    if _meta is None:
        from .meta import MetaBackend
        _meta = MetaBackend()
        _ARRAY_BACKENDS[_meta.array_type] = _meta
        MODULES[_meta.array_type] = _meta.xp
    return _meta


_meta = None


def require_cuda():
    """The CUDA backend, or torch's AssertionError when ember cannot use a GPU."""
    backend = cuda_backend()
    if backend is None:
        raise AssertionError(NOT_COMPILED)
    return backend


def backend_of_array(array):
    backend = _ARRAY_BACKENDS.get(type(array))
    if backend is not None:
        return backend
    for t, b in list(_ARRAY_BACKENDS.items()):  # subclasses (rare): remember them
        if isinstance(array, t):
            _ARRAY_BACKENDS[type(array)] = b
            if b is not _CPU_BACKEND:
                MODULES[type(array)] = b.xp
            return b
    return _CPU_BACKEND  # NumPy scalars and other host values


def device_of(array) -> device:
    """The device holding ``array``."""
    if type(array) is numpy.ndarray:
        return CPU
    return backend_of_array(array).device_of(array)


def as_device(dev) -> device:
    """``dev`` (a device, a string or an index) as a device; None stays None."""
    if dev is None or type(dev) is device:
        return dev
    return device(dev)


def same_device(a, b) -> bool:
    """Whether devices ``a`` and ``b`` are one (``cuda`` means the current GPU)."""
    if a.type != b.type:
        return False
    if a.index == b.index or a.type == "cpu":
        return True
    current = backend_for(a).current_index()
    return (current if a.index is None else a.index) == (current if b.index is None else b.index)


def backend_for(dev):
    """The backend serving device ``dev`` (torch's error when it cannot be used)."""
    if dev.type == "cpu":
        return _CPU_BACKEND
    if dev.type == "cuda":
        backend = require_cuda()
        if dev.index is not None and dev.index >= backend.device_count():
            raise RuntimeError("CUDA error: invalid device ordinal\nCUDA kernel errors might "
                               "be asynchronously reported at some other API call, so the "
                               "stacktrace below might be incorrect.\nFor debugging consider "
                               "passing CUDA_LAUNCH_BLOCKING=1\nCompile with "
                               "`TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
        return backend
    if dev.type == "meta":
        return meta_backend()
    if dev.type == "xpu":  # torch's builds without Intel GPU support
        raise AssertionError("Torch not compiled with XPU enabled")
    raise RuntimeError(f"ember has no {dev.type} backend (its devices are cpu and cuda)")


def module_for(dev):
    """The array module that makes arrays on ``dev`` (numpy for None)."""
    if dev is None or dev.type == "cpu":
        return numpy
    return backend_for(dev).xp


_default = [None]  # the device factories make tensors on when given none (None: the CPU)


def set_default(dev):
    """Factories given no device make tensors on ``dev`` from now on (None or cpu: the CPU)."""
    _default[0] = None if dev is None or dev.type == "cpu" else dev


def default_device():
    """The device factories make tensors on when given none: None for the CPU."""
    return _default[0]


def resolve(dev) -> device:
    """``dev`` with its index filled in (``cuda`` -> ``cuda:<current device>``)."""
    if dev.type == "cuda" and dev.index is None:
        return device("cuda", backend_for(dev).current_index())
    return dev


def move(array, dev, non_blocking=False):
    """``array`` on device ``dev`` (``array`` itself when it is there already)."""
    src = backend_of_array(array)
    if dev.type == "cpu":
        return array if src is _CPU_BACKEND else src.to_host(array, non_blocking)
    dst = backend_for(dev)
    index = dst.current_index() if dev.index is None else dev.index
    if src is dst:
        return array if src.index_of(array) == index else dst.copy_between(array, index)
    if src is not _CPU_BACKEND:
        array = src.to_host(array, False)
    return dst.from_host(array, index, non_blocking)


def pinned(array):
    """A page-locked host copy of the host ``array`` (torch's error without a GPU)."""
    backend = cuda_backend()
    if backend is None:
        raise RuntimeError(_NO_ACCELERATOR)
    return backend.pinned_copy(array)


def is_pinned(array) -> bool:
    """Whether ``array`` lives in page-locked host memory."""
    backend = cuda_backend() if _cuda else None
    return (backend is not None and type(array) is numpy.ndarray
            and backend.is_pinned(array))


def empty_on(dev, shape, dtype):
    """An uninitialised array of ``shape`` and ``dtype`` on ``dev``."""
    if dev is None or dev.type == "cpu":
        return numpy.empty(shape, dtype)
    return backend_for(dev).make(dev.index, "empty", shape, dtype)


def make_on(dev, factory, *args, **kwargs):
    """``xp.<factory>(*args, **kwargs)`` on device ``dev`` (numpy's on the CPU)."""
    if dev is None or dev.type == "cpu":
        return getattr(numpy, factory)(*args, **kwargs)
    return backend_for(dev).make(dev.index, factory, *args, **kwargs)
