"""A CPU stand-in for CuPy, for ember's tests only: ``cuda`` tensors in CI without a GPU.

Its arrays hold NumPy arrays and compute with NumPy, but they refuse what CuPy refuses, so
that any ember code path that would force a GPU array to host, mix host and device arrays,
or call something CuPy lacks fails here as it would on a GPU:

- ``numpy.asarray(x)`` (any implicit conversion: ``__array__``) raises CuPy's TypeError;
- NumPy functions and ufuncs reach it through NumPy's dispatch protocols
  (``__array_function__`` / ``__array_ufunc__``) and run only if CuPy has a function of that
  name (the lists in ``fake_cupy_names`` are read off CuPy's source); NumPy arrays among the
  operands raise CuPy's "Unsupported type" TypeError;
- its ``ndarray`` has CuPy's attributes only (``.get()``, ``.device``, ``.data.ptr``, flags
  without ``writeable``, no ``__array_interface__``, no ``__index__``), 0-d results are arrays,
  never NumPy scalars, and ``ufunc.at`` / ``reduce`` exist only where CuPy has them.

``module()`` and ``extras()`` stand in for ``cupy`` and ``cupyx``.
"""
from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import os
import time
import types
import weakref

import numpy

import fake_cupy_names as names

_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
             "construct a NumPy array explicitly.")
_CREATION = frozenset({"array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray",
                       "copy"})
# ufunc methods CuPy has (see its _kernel.pyx): reduce/accumulate only for add and multiply,
# reduceat for add, at for the ufuncs with a scatter kernel.
_REDUCE = frozenset({"add", "multiply"})
_AT = frozenset({"add", "subtract", "bitwise_and", "bitwise_or", "bitwise_xor"})
_ADD_AT_DTYPES = frozenset(numpy.dtype(t) for t in (
    numpy.int32, numpy.int64, numpy.uint32, numpy.uint64, numpy.float16, numpy.float32,
    numpy.float64))
_COMPARE = frozenset({"greater", "greater_equal", "less", "less_equal", "equal", "not_equal"})


# -- converting between the stand-in's arrays and NumPy's -------------------------------------
def _unsupported(x):
    return TypeError(f"Unsupported type {type(x)}")


def _unwrap(x, host_ok=False):
    """NumPy values for a CuPy call's arguments (NumPy arrays refused unless ``host_ok``)."""
    t = type(x)
    if t is ndarray:
        return x._a
    if t is numpy.ndarray:
        if not host_ok:
            raise _unsupported(x)
        return x
    if t is list:
        return [_unwrap(v, host_ok) for v in x]
    if isinstance(x, tuple):  # (a subclass too, as CuPy's indexing takes any tuple)
        return tuple(_unwrap(v, host_ok) for v in x)
    return x


def _check_dtype(dtype):
    if dtype.kind in "OSUVM":
        raise ValueError(f"Unsupported dtype {dtype}")


def _wrap(r):
    """The stand-in's value for a NumPy result: arrays (and NumPy scalars, which CuPy never
    returns) become device arrays."""
    t = type(r)
    if t is numpy.ndarray:
        _check_dtype(r.dtype)
        out = object.__new__(ndarray)
        out._a = r
        if r.base is None:
            _POOL.allocated(r)
            _OWNERS[id(r)] = out
        return out
    if isinstance(r, numpy.generic):
        return _wrap(numpy.asarray(r))
    if t is tuple or t is list:
        return t(_wrap(v) for v in r)
    if isinstance(r, tuple) and hasattr(r, "_fields"):  # named tuples (eigh, svd, ...)
        return t(*(_wrap(v) for v in r))
    return r


def _forward(fn, host_ok=False):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _COUNTS is not None and host_ok and _holds_host_data((args, kwargs)):
            _COUNTS["from_host"] += 1
        args = _unwrap(args, host_ok)
        kwargs = {k: _unwrap(v, host_ok) for k, v in kwargs.items()}
        with numpy.errstate(all="ignore"):  # CuPy never warns about floating point values
            r = fn(*args, **kwargs)
        if _COUNTS is not None and _computed(r, fn, args, kwargs) and not (
                fn.__name__.startswith("empty")):  # (allocations launch nothing)
            _COUNTS["kernels"] += 1
            _COUNTS["kernel:" + getattr(fn, "__name__", "?")] += 1
        return _wrap(r)
    return call


# -- counting what a GPU would be asked to do ------------------------------------------------------
_COUNTS = None  # a Counter while counting()


@contextlib.contextmanager
def counting():
    """Counts, while active, the calls that would launch a kernel on a GPU (``"kernels"``, and
    ``"kernel:<name>"`` per function), the host -> device copies (``"from_host"``: host data
    given to a creation function or used as an index) and the device -> host reads
    (``"to_host"``: ``.get()``, ``.item()``, ``bool()``, ``float()``, ...; each waits for the
    device's queue). A call counts as a kernel when it makes a new array or writes one
    (``out=``, item assignment, scatters): views (reshape, transpose, basic slicing) do not.
    """
    global _COUNTS
    previous, _COUNTS = _COUNTS, collections.Counter()
    try:
        yield _COUNTS
    finally:
        _COUNTS = previous


def _holds_host_data(value):
    if type(value) is numpy.ndarray or isinstance(value, numpy.generic):
        return True
    if type(value) in (list, tuple):
        return any(_holds_host_data(v) for v in value)
    if type(value) is dict:
        return any(_holds_host_data(v) for v in value.values())
    return False


def _computed(r, fn, args, kwargs):
    """Whether a call's NumPy result ``r`` is new data (or written through ``out=``), not a view
    or one of its inputs returned as it is."""
    if kwargs.get("out") is not None:
        return True
    first = r[0] if type(r) in (tuple, list) and r else r
    if isinstance(first, numpy.generic):
        return True
    if type(first) is not numpy.ndarray:
        return False
    inputs = [a for a in (*args, getattr(fn, "__self__", None)) if type(a) is numpy.ndarray]
    return not any(numpy.may_share_memory(first, a) for a in inputs)


def _count_read():
    if _COUNTS is not None:
        _COUNTS["to_host"] += 1


_OWNERS = weakref.WeakValueDictionary()  # id(NumPy owner) -> the stand-in array owning it


# -- memory: pointers into the owner of an array's memory ----------------------------------------
def _owner(a):
    while a.base is not None and isinstance(a.base, numpy.ndarray):
        a = a.base
    return a


def _address(a):
    return a.__array_interface__["data"][0]


class Memory:
    """``cupy.cuda.Memory``: one allocation (here, the NumPy array owning the memory)."""

    def __init__(self, owner):
        self.owner = owner
        self.ptr = _address(owner)
        self.size = owner.nbytes
        self.device_id = 0


class MemoryPointer:
    """``cupy.cuda.MemoryPointer``: an address inside an allocation."""

    def __init__(self, mem, ptr):
        self.mem = mem
        self.ptr = ptr
        self.device_id = 0

    def __add__(self, offset):
        return MemoryPointer(self.mem, self.ptr + int(offset))

    def __int__(self):
        return self.ptr


class _Flags:
    """CuPy's flags: contiguity and ownership (no ``writeable``: device memory always is)."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, a):
        self.c_contiguous = a.flags.c_contiguous
        self.f_contiguous = a.flags.f_contiguous
        self.owndata = a.base is None

    def __getitem__(self, key):
        return getattr(self, {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
                              "OWNDATA": "owndata"}[key])


# -- the array ------------------------------------------------------------------------------------
def _defer(other):
    """CuPy's reflected-operator rule: a higher ``__array_priority__`` wins."""
    return (type(other) not in (ndarray, numpy.ndarray)
            and getattr(other, "__array_priority__", -1e9) > ndarray.__array_priority__)


def _binary(name, reflected=False, inplace=False):
    def op(self, other):
        if _defer(other):
            return NotImplemented
        uf = _NAMESPACE[name]
        if inplace:
            return uf(self, other, out=self)
        return uf(other, self) if reflected else uf(self, other)
    op.__name__ = name
    return op


def _unary(name):
    def op(self):
        return _NAMESPACE[name](self)
    op.__name__ = name
    return op


class ndarray:
    """``cupy.ndarray`` on the CPU."""

    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        dtype = numpy.dtype(dtype)
        _check_dtype(dtype)
        if memptr is None:
            a = numpy.empty(shape, dtype, order=order)
            _POOL.allocated(a)
            _OWNERS[id(a)] = self
        else:
            owner = memptr.mem.owner
            flat = owner.reshape(-1).view(numpy.uint8)
            a = numpy.ndarray(shape, dtype, buffer=flat, offset=memptr.ptr - memptr.mem.ptr,
                              strides=strides)
        self._a = a

    # -- what CuPy refuses ----------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(_IMPLICIT)

    def __getattr__(self, name):
        if name in names.NDARRAY and hasattr(numpy.ndarray, name):
            return _forward(getattr(self._a, name))
        raise AttributeError(f"'cupy.ndarray' object has no attribute '{name}'")

    # -- NumPy's dispatch, CuPy's way -------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = _NAMESPACE.get(ufunc.__name__) or _SPECIAL_NS.get(ufunc.__name__)
        if not isinstance(fn, _Ufunc) or method not in (
                "__call__", "outer", "at", "reduce", "accumulate", "reduceat"):
            return NotImplemented
        out = kwargs.get("out")
        if out is not None:
            if len(out) != 1:
                raise ValueError("The 'out' parameter must have exactly one array value")
            kwargs["out"] = out[0]
        for x in inputs + ((kwargs["out"],) if out is not None else ()):
            if not (type(x) in (ndarray, numpy.ndarray) or isinstance(x, (int, float, complex,
                                                                          numpy.generic))):
                return NotImplemented
        if ufunc.__name__ in _COMPARE:  # CuPy's workaround for numpy/numpy#12142
            inputs = tuple(x.item() if type(x) is numpy.ndarray and x.ndim == 0 else x
                           for x in inputs)
        call = fn if method == "__call__" else getattr(fn, method)
        return call(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        space = _MODULE  # numpy.linalg.norm -> cupy.linalg.norm, as CuPy looks it up
        for part in func.__module__.split(".")[1:]:
            space = getattr(space, part, None)
        fn = getattr(space, func.__name__, None)
        if fn is None:
            return NotImplemented
        for t in types:
            if not issubclass(t, (ndarray, numpy.ndarray)):
                return NotImplemented
        return fn(*args, **kwargs)

    # -- attributes ------------------------------------------------------------------------------
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    T = property(lambda self: _wrap(self._a.T))
    mT = property(lambda self: _wrap(self._a.mT))
    flags = property(lambda self: _Flags(self._a))
    device = property(lambda self: _DEVICE)

    @property
    def base(self):
        """The array owning this view's memory (one object, as CuPy's base is)."""
        if self._a.base is None:
            return None
        owner = _owner(self._a)
        known = _OWNERS.get(id(owner))
        return known if known is not None and known._a is owner else _wrap(owner)

    @property
    def data(self):
        owner = _owner(self._a)
        return MemoryPointer(Memory(owner), _address(self._a))

    @property
    def real(self):
        return _wrap(self._a.real)

    @real.setter
    def real(self, value):
        self._a.real = _unwrap(value)

    @property
    def imag(self):
        return _wrap(self._a.imag)

    @imag.setter
    def imag(self, value):
        self._a.imag = _unwrap(value)

    # -- host transfers and Python conversions ----------------------------------------------------
    def get(self, stream=None, order="C", out=None, blocking=True):
        _count_read()
        if out is not None:
            out[...] = self._a
            return out
        return numpy.array(self._a, order=order, copy=True)

    def set(self, arr, stream=None):
        self._a[...] = arr

    def item(self):
        _count_read()
        return self._a.item()

    def tolist(self):
        _count_read()
        return self._a.tolist()

    def __float__(self):
        return float(self.get())

    def __int__(self):
        return int(self.get())

    def __complex__(self):
        return complex(self.get())

    def __bool__(self):
        _count_read()
        if self._a.size == 1:
            return bool(self._a.reshape(()).item())
        if self._a.size == 0:
            return False
        raise ValueError("The truth value of an array with more than one element is "
                         "ambiguous. Use a.any() or a.all()")

    def __len__(self):
        if self._a.ndim == 0:
            raise TypeError("len() of unsized object")
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._a.shape[0]))

    def __repr__(self):
        return repr(self._a)

    def __str__(self):
        return str(self._a)

    def __format__(self, spec):
        return format(self.get(), spec)

    def __reduce__(self):
        return (array, (self.get(),))

    def __copy__(self):
        return _wrap(self._a.copy())

    def __deepcopy__(self, memo):
        return _wrap(self._a.copy())

    # -- indexing: index arrays may come from the host (CuPy copies them over) ---------------------
    def __getitem__(self, key):
        _count_indexing(key)
        key = _unwrap(key, host_ok=True)
        r = self._a[key]
        if _COUNTS is not None and (type(r) is not numpy.ndarray
                                    or not numpy.may_share_memory(r, self._a)):
            _COUNTS["kernels"] += 1  # advanced indexing: a gather
            _COUNTS["kernel:getitem"] += 1
        if isinstance(r, numpy.generic):  # CuPy gives a 0-d view, not a scalar copy
            r = self._a[(key if isinstance(key, tuple) else (key,)) + (Ellipsis,)]
        return _wrap(r)

    def __setitem__(self, key, value):
        if type(value) is numpy.ndarray and value.ndim:
            raise _unsupported(value)  # CuPy refuses assignment from host arrays (gh-2079)
        _count_indexing(key)
        if _COUNTS is not None:
            _COUNTS["kernels"] += 1
            _COUNTS["kernel:setitem"] += 1
        with numpy.errstate(all="ignore"):
            self._a[_unwrap(key, host_ok=True)] = _unwrap(value, host_ok=True)

    __add__, __radd__, __iadd__ = (_binary("add"), _binary("add", True),
                                   _binary("add", inplace=True))
    __sub__, __rsub__, __isub__ = (_binary("subtract"), _binary("subtract", True),
                                   _binary("subtract", inplace=True))
    __mul__, __rmul__, __imul__ = (_binary("multiply"), _binary("multiply", True),
                                   _binary("multiply", inplace=True))
    __truediv__, __rtruediv__, __itruediv__ = (_binary("true_divide"),
                                               _binary("true_divide", True),
                                               _binary("true_divide", inplace=True))
    __floordiv__, __rfloordiv__, __ifloordiv__ = (_binary("floor_divide"),
                                                  _binary("floor_divide", True),
                                                  _binary("floor_divide", inplace=True))
    __mod__, __rmod__, __imod__ = (_binary("remainder"), _binary("remainder", True),
                                   _binary("remainder", inplace=True))
    __pow__, __rpow__, __ipow__ = (_binary("power"), _binary("power", True),
                                   _binary("power", inplace=True))
    __matmul__, __rmatmul__ = _binary("matmul"), _binary("matmul", True)
    __and__, __rand__, __iand__ = (_binary("bitwise_and"), _binary("bitwise_and", True),
                                   _binary("bitwise_and", inplace=True))
    __or__, __ror__, __ior__ = (_binary("bitwise_or"), _binary("bitwise_or", True),
                                _binary("bitwise_or", inplace=True))
    __xor__, __rxor__, __ixor__ = (_binary("bitwise_xor"), _binary("bitwise_xor", True),
                                   _binary("bitwise_xor", inplace=True))
    __lshift__, __rshift__ = _binary("left_shift"), _binary("right_shift")
    __divmod__ = _binary("divmod")
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")
    __neg__, __pos__, __abs__, __invert__ = (_unary("negative"), _unary("positive"),
                                             _unary("absolute"), _unary("invert"))
    __hash__ = None


# -- ufuncs ---------------------------------------------------------------------------------------
def _count_scatter():
    if _COUNTS is not None:
        _COUNTS["kernels"] += 1
        _COUNTS["kernel:scatter"] += 1


def _count_indexing(key):
    """Host index arrays (NumPy arrays, lists of numbers) are copied to the device."""
    if _COUNTS is not None:
        keys = key if type(key) is tuple else (key,)
        if any(type(k) is list or type(k) is numpy.ndarray for k in keys):
            _COUNTS["from_host"] += 1


class _Ufunc:
    """A CuPy ufunc: NumPy's, with the methods CuPy has."""

    def __init__(self, uf, name):
        self._uf = uf
        self.__name__ = name
        self.nin, self.nout, self.nargs = uf.nin, uf.nout, uf.nargs
        self.types = uf.types
        self._call = _forward(uf)

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __repr__(self):
        return f"<ufunc 'cupy_{self.__name__}'>"

    def outer(self, a, b, **kwargs):
        return _forward(self._uf.outer)(a, b, **kwargs)

    def at(self, a, indices, b=None):
        if self.__name__ not in _AT:
            raise NotImplementedError(f"`cupy_{self.__name__}.at` is not supported yet")
        if self.__name__ == "add" and a.dtype not in _ADD_AT_DTYPES:
            raise TypeError("cupy.add.at only supports int32, int64, float16, float32, "
                            "float64, uint32, uint64 as data type")
        _count_indexing(indices)
        _count_scatter()
        self._uf.at(_unwrap(a), _unwrap(indices, host_ok=True), _unwrap(b))

    def _reduction(self, method, *args, **kwargs):
        if self.__name__ not in _REDUCE or (method == "reduceat" and self.__name__ != "add"):
            raise NotImplementedError(f"`cupy_{self.__name__}.{method}` is not supported yet")
        return _forward(getattr(self._uf, method))(*args, **kwargs)

    def reduce(self, *args, **kwargs):
        return self._reduction("reduce", *args, **kwargs)

    def accumulate(self, *args, **kwargs):
        return self._reduction("accumulate", *args, **kwargs)

    def reduceat(self, *args, **kwargs):
        return self._reduction("reduceat", *args, **kwargs)


# -- creation from host data ----------------------------------------------------------------------
def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    if (type(obj) is ndarray and not copy and (dtype is None or obj.dtype == dtype)
            and ndmin <= obj.ndim):
        return obj
    _count_creation(obj)
    return _wrap(numpy.array(_unwrap(obj, host_ok=True), dtype=dtype, copy=True, order=order,
                             ndmin=ndmin))


def asarray(a, dtype=None, order=None, *, blocking=False):
    if type(a) is ndarray:
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)
    _count_creation(a)
    return _wrap(numpy.array(_unwrap(a, host_ok=True), dtype=dtype, order=order, copy=True))


def _count_creation(obj):
    """A device array made from host data: one copy to the device (a kernel when the data
    were device arrays already)."""
    if _COUNTS is not None:
        _COUNTS["from_host" if type(obj) is not ndarray else "kernels"] += 1


def ascontiguousarray(a, dtype=None):
    if type(a) is not ndarray:
        return asarray(numpy.ascontiguousarray(a, dtype))
    return _wrap(numpy.ascontiguousarray(a._a, dtype))


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    if type(a) is ndarray:
        return a.get(order=order, out=out)
    return numpy.asarray(a, order=order)


def get_array_module(*args):
    return _MODULE if any(type(a) is ndarray for a in args) else numpy


# -- CUDA runtime: one device, events timed by the host clock, no-op streams ----------------------
class Device:
    """``cupy.cuda.Device``: there is one, device 0."""

    def __init__(self, device=None):
        self.id = _RUNTIME.getDevice() if device is None else int(device)
        _RUNTIME._check(self.id)
        self._prev = []

    def __int__(self):
        return self.id

    def __enter__(self):
        self._prev.append(_RUNTIME.getDevice())
        _RUNTIME.setDevice(self.id)
        return self

    def __exit__(self, *exc):
        _RUNTIME.setDevice(self._prev.pop())

    def use(self):
        _RUNTIME.setDevice(self.id)

    def synchronize(self):
        pass

    @property
    def compute_capability(self):
        return "80"

    @property
    def mem_info(self):
        return (_TOTAL_MEMORY - _POOL.total_bytes(), _TOTAL_MEMORY)

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return self.id

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


_TOTAL_MEMORY = 16 << 30


class _Runtime:
    """``cupy.cuda.runtime``: the calls ember makes."""

    memoryTypeUnregistered, memoryTypeHost, memoryTypeDevice = 0, 1, 2  # noqa: N815

    def __init__(self):
        self.current = 0
        self.profiling = False
        self.pinned = weakref.WeakValueDictionary()  # id -> a page-locked (pinned) host array

    def pointerGetAttributes(self, ptr):  # noqa: N802 - CuPy's name
        for owner in list(self.pinned.values()):
            start = _address(owner)
            if start <= ptr < start + owner.nbytes:
                return types.SimpleNamespace(type=self.memoryTypeHost, device=0)
        return types.SimpleNamespace(type=self.memoryTypeUnregistered, device=-2)

    def _check(self, index):
        if not 0 <= index < self.getDeviceCount():
            raise RuntimeError("cudaErrorInvalidDevice: invalid device ordinal")

    def getDeviceCount(self):
        return 1

    def getDevice(self):
        return self.current

    def setDevice(self, index):
        self._check(index)
        self.current = index

    def deviceSynchronize(self):
        pass

    def getDeviceProperties(self, index):
        self._check(index)
        return {"name": b"ember test device (CPU)", "totalGlobalMem": _TOTAL_MEMORY,
                "major": 8, "minor": 0, "multiProcessorCount": 1, "uuid": b"\0" * 16,
                "pciBusID": 0, "pciDeviceID": 0, "pciDomainID": 0, "l2CacheSize": 0,
                "regsPerMultiprocessor": 65536, "maxThreadsPerMultiProcessor": 2048,
                "warpSize": 32, "isMultiGpuBoard": 0, "integrated": 0}

    def runtimeGetVersion(self):
        return 13000

    def profilerStart(self):
        self.profiling = True

    def profilerStop(self):
        self.profiling = False


_RUNTIME = _Runtime()


class Event:
    """``cupy.cuda.Event``: the host clock at record time (work here is synchronous)."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.disable_timing = disable_timing
        self.time = None

    def record(self, stream=None):
        self.time = time.perf_counter()

    def synchronize(self):
        pass

    @property
    def done(self):
        return True


def get_elapsed_time(start_event, end_event):
    if start_event.disable_timing or end_event.disable_timing:
        raise RuntimeError("cudaErrorInvalidResourceHandle: invalid resource handle")
    if start_event.time is None or end_event.time is None:
        raise RuntimeError("cudaErrorInvalidResourceHandle: invalid resource handle")
    return (end_event.time - start_event.time) * 1e3


class Stream:
    """``cupy.cuda.Stream``: work on the stand-in is synchronous, so streams only nest."""

    _ids = itertools.count(1)
    _stack: list = []

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=0):
        self.ptr = 0 if null else next(Stream._ids)
        self.device_id = _RUNTIME.getDevice()
        self.priority = priority

    def __enter__(self):
        Stream._stack.append(self)
        return self

    def __exit__(self, *exc):
        Stream._stack.pop()

    def use(self):
        Stream._stack[:] = [self]
        return self

    def synchronize(self):
        pass

    def record(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def wait_event(self, event):
        pass

    @property
    def done(self):
        return True

    def __eq__(self, other):
        return isinstance(other, Stream) and other.ptr == self.ptr

    def __hash__(self):
        return self.ptr


Stream.null = Stream(null=True)


def get_current_stream(device_id=-1):
    return Stream._stack[-1] if Stream._stack else Stream.null


class MemoryHook:
    """``cupy.cuda.MemoryHook``: callbacks around the pool's allocations (``with hook:``)."""

    name = "MemoryHook"

    def __enter__(self):
        _POOL.hooks.append(self)
        return self

    def __exit__(self, *exc):
        _POOL.hooks.remove(self)

    def malloc_preprocess(self, **kwargs):
        pass

    def malloc_postprocess(self, **kwargs):
        pass

    def free_preprocess(self, **kwargs):
        pass

    def free_postprocess(self, **kwargs):
        pass


class MemoryPool:
    """``cupy.cuda.MemoryPool``: counts the bytes of the live NumPy arrays that own the
    memory of the stand-in's arrays."""

    def __init__(self):
        self.live = 0
        self.cached = 0
        self.hooks = []
        self.owners = set()

    def allocated(self, owner):
        nbytes = owner.nbytes
        if not nbytes or id(owner) in self.owners:
            return
        self.owners.add(id(owner))
        self.live += nbytes
        self.cached = max(self.cached, self.live)
        for h in self.hooks:
            h.malloc_postprocess(device_id=0, size=nbytes, mem_size=nbytes, mem_ptr=0,
                                 pmem_id=0)
        weakref.finalize(owner, self._freed, id(owner), nbytes)

    def _freed(self, key, nbytes):
        self.owners.discard(key)
        self.live -= nbytes
        for h in self.hooks:
            h.free_postprocess(device_id=0, mem_size=nbytes, mem_ptr=0, pmem_id=0)

    def used_bytes(self):
        return self.live

    def total_bytes(self):
        return self.cached

    def free_bytes(self):
        return self.cached - self.live

    def free_all_blocks(self, stream=None):
        self.cached = self.live

    def n_free_blocks(self):
        return 0


_POOL = MemoryPool()


def get_default_memory_pool():
    return _POOL


class _Nvtx:
    """``cupy.cuda.nvtx``: the ranges pushed and popped, kept for tests to read."""

    def __init__(self):
        self.stack, self.log = [], []

    def RangePush(self, message, id_color=-1):  # noqa: N802 - CuPy's name
        self.stack.append(message)
        self.log.append(("push", message))

    def RangePop(self):  # noqa: N802
        self.log.append(("pop", self.stack.pop()))

    def Mark(self, message, id_color=-1):  # noqa: N802
        self.log.append(("mark", message))


class _Profiler:
    """``cupy.cuda.profiler``."""

    def start(self):
        _RUNTIME.profilerStart()

    def stop(self):
        _RUNTIME.profilerStop()


# -- random numbers: cupy.random.RandomState on NumPy's Philox -------------------------------------
class _Curand:
    """``cupy.cuda.curand``: the generator types ``RandomState(method=...)`` takes."""

    CURAND_RNG_PSEUDO_DEFAULT = 100
    CURAND_RNG_PSEUDO_XORWOW = 101
    CURAND_RNG_PSEUDO_MRG32K3A = 121
    CURAND_RNG_PSEUDO_MTGP32 = 141
    CURAND_RNG_PSEUDO_MT19937 = 142
    CURAND_RNG_PSEUDO_PHILOX4_32_10 = 161


def _float_dtype(dtype):
    dtype = numpy.dtype(dtype)
    if dtype.char not in ("f", "d"):
        raise TypeError("cupy.random only supports float32 and float64")
    return dtype


def _size(size):
    return () if size is None else size


class RandomState:
    """``cupy.random.RandomState``: the methods ember calls, with CuPy's signatures and
    checks, drawing from NumPy's Philox generator (a 64-bit seed, as cuRAND's) into device
    arrays. The values are not cuRAND's; what a seed gives is fixed, as with CuPy."""

    def __init__(self, seed=None, method=_Curand.CURAND_RNG_PSEUDO_DEFAULT):
        self.method = method
        self.seed(seed)

    def seed(self, seed=None):
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        elif isinstance(seed, numpy.ndarray):
            raise TypeError("Seed must be an integer.")
        else:  # (CuPy's rule: a value that converts safely to uint64)
            seed = int(numpy.asarray(seed).astype(numpy.uint64, casting="safe"))
        self._gen = numpy.random.Generator(numpy.random.Philox(seed))

    def random_sample(self, size=None, dtype=float):
        return _wrap(self._gen.random(_size(size), dtype=_float_dtype(dtype)))

    def standard_normal(self, size=None, dtype=float):
        return _wrap(self._gen.standard_normal(_size(size), dtype=_float_dtype(dtype)))

    def randint(self, low, high=None, size=None, dtype=int):
        if high is None:
            low, high = 0, low
        if low > high - 1:
            raise ValueError("low >= high")
        info = numpy.iinfo(dtype)
        if low < info.min:
            raise ValueError(f"low is out of bounds for {numpy.dtype(dtype).name}")
        if high - 1 > info.max:
            raise ValueError(f"high is out of bounds for {numpy.dtype(dtype).name}")
        return _wrap(numpy.asarray(self._gen.integers(low, high, size, dtype=dtype,
                                                      endpoint=False)))

    def permutation(self, a):
        if not isinstance(a, int):
            return a[self.permutation(len(a))]
        return _wrap(self._gen.permutation(a))

    def _elementwise(self, draw, params, size, dtype):
        params = [_unwrap(p) for p in params]
        if size is None:
            size = numpy.broadcast_shapes(*(numpy.shape(p) for p in params))
        return _wrap(numpy.asarray(draw(*params, size=size)).astype(dtype))

    def poisson(self, lam=1.0, size=None, dtype=int):
        return self._elementwise(self._gen.poisson, [lam], size, dtype)

    def standard_gamma(self, shape, size=None, dtype=float):
        return self._elementwise(self._gen.standard_gamma, [shape], size, dtype)

    def binomial(self, n, p, size=None, dtype=int):
        return self._elementwise(self._gen.binomial, [n, p], size, dtype)


# -- the modules ----------------------------------------------------------------------------------
_NAMESPACE: dict = {}
_SPECIAL_NS: dict = {}


def _namespace_from(source, wanted):
    space = {}
    for name in wanted:
        obj = getattr(source, name, None)
        if obj is None or isinstance(obj, types.ModuleType):
            continue
        if isinstance(obj, numpy.ufunc):
            space[name] = _Ufunc(obj, name)
        elif callable(obj) and not isinstance(obj, type):
            space[name] = _forward(obj, host_ok=name in _CREATION)
        else:
            space[name] = obj  # dtypes, constants, newaxis
    return space


def _build():
    _NAMESPACE.update(_namespace_from(numpy, names.CUPY))
    _NAMESPACE.update(ndarray=ndarray, array=array, asarray=asarray, asanyarray=asarray,
                      ascontiguousarray=ascontiguousarray, asnumpy=asnumpy,
                      get_array_module=get_array_module,
                      get_default_memory_pool=get_default_memory_pool)
    try:
        import scipy.special
        _SPECIAL_NS.update(_namespace_from(scipy.special, names.SPECIAL))
    except ImportError:  # special functions then run into CuPy's NotImplemented, as without
        pass             # cupyx.scipy.special


def _stride_tricks():
    def as_strided(x, shape=None, strides=None):
        return _wrap(numpy.lib.stride_tricks.as_strided(_unwrap(x), shape, strides))

    def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
        return _wrap(numpy.lib.stride_tricks.sliding_window_view(
            _unwrap(x), window_shape, axis, writeable=writeable))
    return types.SimpleNamespace(as_strided=as_strided,
                                 sliding_window_view=sliding_window_view)


def empty_like_pinned(a, dtype=None, order="K", subok=None, shape=None):
    """``cupyx.empty_like_pinned``: a host (NumPy) array in "page-locked" memory."""
    out = numpy.empty_like(a, dtype=dtype, order=order, shape=shape)
    _RUNTIME.pinned[id(out)] = out
    return out


def _scatter(ufunc):
    def scatter(a, slices, value):
        if type(a) is not ndarray:
            raise TypeError("scatter target must be a cupy.ndarray")
        if ufunc is numpy.add and a.dtype not in _ADD_AT_DTYPES:
            raise TypeError("cupy.add.at only supports int32, int64, float16, float32, "
                            "float64, uint32, uint64 as data type")
        _count_indexing(slices)
        _count_scatter()
        ufunc.at(a._a, _unwrap(slices, host_ok=True), _unwrap(value))
    return scatter


_LINALG_CONFIG = ["ignore"]  # cupyx.errstate(linalg=...): CuPy ignores failures by default


@contextlib.contextmanager
def errstate(*, divide=None, over=None, under=None, invalid=None, linalg=None):
    if divide is not None or over is not None or under is not None or invalid is not None:
        raise NotImplementedError()
    old = _LINALG_CONFIG[0]
    if linalg is not None:
        _LINALG_CONFIG[0] = linalg
    try:
        yield
    finally:
        _LINALG_CONFIG[0] = old


def _silent_failure(fn, shape_of):
    """A cuSOLVER routine as CuPy calls it: a failure (a singular matrix, a matrix that is not
    positive-definite) raises only under ``cupyx.errstate(linalg='raise')``; otherwise the
    result holds whatever the routine left (NaN here)."""
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except numpy.linalg.LinAlgError:
            if _LINALG_CONFIG[0] == "raise":
                raise
            out = numpy.full(shape_of(*args), numpy.nan, numpy.result_type(*[
                a.dtype for a in args if type(a) is ndarray]))
            return _wrap(out)
    return call


def _linalg():
    space = _namespace_from(numpy.linalg, names.LINALG)
    space["inv"] = _silent_failure(space["inv"], lambda a: a.shape)
    space["cholesky"] = _silent_failure(space["cholesky"], lambda a, *r: a.shape)
    space["solve"] = _silent_failure(space["solve"], lambda a, b: b.shape)
    return types.SimpleNamespace(**space)


def _make_modules():
    _build()
    cp = types.ModuleType("cupy", "ember's CPU stand-in for CuPy (tests only)")
    cp.__dict__.update(_NAMESPACE)
    cp.linalg = _linalg()
    cp.fft = types.SimpleNamespace(**_namespace_from(numpy.fft, names.FFT))
    cp.lib = types.SimpleNamespace(stride_tricks=_stride_tricks())
    cp.random = types.SimpleNamespace(RandomState=RandomState)
    cp.cuda = types.SimpleNamespace(
        Device=Device, runtime=_RUNTIME, Event=Event, Stream=Stream,
        get_current_stream=get_current_stream, get_elapsed_time=get_elapsed_time,
        MemoryPool=MemoryPool, MemoryHook=MemoryHook, Memory=Memory,
        MemoryPointer=MemoryPointer, nvtx=_Nvtx(), profiler=_Profiler(), curand=_Curand,
        is_available=lambda: True)
    cx = types.ModuleType("cupyx", "ember's CPU stand-in for cupyx (tests only)")
    cx.errstate = errstate
    cx.empty_like_pinned = empty_like_pinned
    cx.scatter_add = _scatter(numpy.add)
    cx.scatter_max = _scatter(numpy.maximum)
    cx.scatter_min = _scatter(numpy.minimum)
    cx.scipy = types.SimpleNamespace(special=types.SimpleNamespace(**_SPECIAL_NS))
    return cp, cx


_MODULE, _EXTRAS = _make_modules()
_DEVICE = Device(0)


def module():
    """The stand-in for ``cupy``."""
    return _MODULE


def extras():
    """The stand-in for ``cupyx``."""
    return _EXTRAS
