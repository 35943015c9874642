"""The backend layer: the only place that knows NumPy from CuPy.

Ops get their array module from their inputs with ``get_xp``; the few functions the two
libraries spell differently get a named helper here. Devices (which module serves which
device, moving arrays between them) live in ``device.py``, CuPy's side in ``cuda.py``.
"""
from __future__ import annotations

import contextlib
import weakref

import numpy

from ._allocator import tune_glibc_malloc
from .device import MODULES, backend_of_array

tune_glibc_malloc()
ndarray = numpy.ndarray


def get_xp(*arrays):
    """The array module (numpy or cupy) that owns ``arrays``."""
    if MODULES:  # a GPU backend is in use: look for its arrays
        for a in arrays:
            xp = MODULES.get(type(a))
            if xp is not None:
                return xp
    return numpy


# Array types of ember's own that a kernel may return as they are (the sparse COO array).
KEPT_ARRAY_TYPES: set = set()


def is_array(x) -> bool:
    return (type(x) is ndarray or type(x) in MODULES or isinstance(x, ndarray)
            or type(x) in KEPT_ARRAY_TYPES)


def as_array(x):
    """Normalise a kernel's result to an array (NumPy turns 0-d results into scalars)."""
    if type(x) is ndarray or type(x) in MODULES or type(x) in KEPT_ARRAY_TYPES:
        return x
    return numpy.asarray(x)


def asarray_like(value, like, dtype=None):
    """``value`` (a Python number or an array) as an array of ``dtype`` where ``like`` is
    (``like``: an array, or a number for the CPU)."""
    return get_xp(like, value).asarray(value, dtype)


def reduce_sum(x, axis=None, keepdims=False):
    """``x.sum(axis, keepdims=keepdims)``; on NumPy its ufunc's reduce, which the method comes
    to through Python layers (the same dtypes and values).

    NOTE: inside a training step a Python layer costs several times what it costs timed
    alone (its code is no longer in the caches after the large matrix products)."""
    if type(x) is ndarray:
        return numpy.add.reduce(x, axis=axis, keepdims=keepdims)
    return x.sum(axis=axis, keepdims=keepdims)


def sum_function(x):
    """``reduce_sum`` for arrays of ``x``'s type, as one callable ``f(a, axis, keepdims=k)``:
    NumPy's ufunc reduction itself for a NumPy array (a compiled program binds it once)."""
    return numpy.add.reduce if type(x) is ndarray else reduce_sum


def reduce_max(x, axis=None, keepdims=False):
    """``x.max(axis, keepdims=keepdims)`` (NaN wins); see ``reduce_sum``."""
    if type(x) is ndarray:
        return numpy.maximum.reduce(x, axis=axis, keepdims=keepdims)
    return x.max(axis=axis, keepdims=keepdims)


def writeable(x) -> bool:
    """Whether ``x``'s memory may be written (CuPy arrays always may: no read-only flag)."""
    return type(x) is not ndarray or x.flags.writeable


def has_data(x) -> bool:
    """Whether ``x`` holds values (a meta array has a shape and a dtype only)."""
    return type(x) is ndarray or backend_of_array(x).type != "meta"


def to_numpy(x):
    """Host copy of an array from any backend (NumPy arrays are returned as they are)."""
    if isinstance(x, ndarray):
        return x
    if type(x) in MODULES:
        return backend_of_array(x).to_host(x)
    return numpy.asarray(x)


def scatter_add(target, index, values):
    """target[index] += values, accumulating repeated indices (np.add.at / cupyx.scatter_add)."""
    if type(target) is ndarray:
        numpy.add.at(target, index, values)
        return target
    return backend_of_array(target).scatter_add(target, index, values)


def scatter_reduce(name, target, index, values):
    """``getattr(numpy, name).at(target, index, values)``: maximum, minimum or multiply at
    repeated indices, on any backend."""
    if type(target) is ndarray:
        getattr(numpy, name).at(target, index, values)
        return target
    return backend_of_array(target).scatter_reduce(name, target, index, values)


def accumulate(name, x, axis):
    """``getattr(numpy, name).accumulate(x, axis=axis)`` for an associative ufunc (maximum,
    minimum, logaddexp, ...) on any backend.

    CuPy's ufuncs accumulate only add and multiply (cumsum, cumprod). Elsewhere this is a
    Hillis-Steele scan: log2(n) whole-array steps, each combining every element with the
    one ``2**k`` before it (exact for maximum and minimum; logaddexp may round differently
    in the last place).
    """
    if type(x) is ndarray:
        return getattr(numpy, name).accumulate(x, axis=axis)
    xp = get_xp(x)
    fn = getattr(xp, name)
    out = xp.moveaxis(x, axis, 0).copy()
    step = 1
    while step < out.shape[0]:
        out[step:] = fn(out[step:], out[:-step])
        step *= 2
    return xp.moveaxis(out, 0, axis)


def arg_extreme(x, fn, axis=None, keepdims=False):
    """``argmax`` / ``argmin`` (``fn`` is ``"max"`` or ``"min"``) with NumPy's rule, which is
    torch's: the first NaN wins. CuPy's kernels pass over NaNs, so off the CPU the first NaN
    along ``axis`` is looked for too."""
    xp = get_xp(x)
    idx = getattr(xp, "arg" + fn)(x, axis=axis, keepdims=keepdims)
    if xp is numpy or x.dtype.kind not in "fc":
        return idx
    nan = xp.isnan(x)
    return xp.where(nan.any(axis=axis, keepdims=keepdims),
                    xp.argmax(nan, axis=axis, keepdims=keepdims), idx)


def launch_bound(x) -> bool:
    """Whether ``x`` lives on a device where each array call is a kernel launch, queued behind
    the others, and each value read on the host waits for that queue (a GPU).

    Ops then choose their few-launch, read-free form: one reduction over a stacked axis rather
    than the several cache-friendly passes NumPy prefers, a mask applied everywhere rather than
    a host-side test for whether anything is masked."""
    return (type(x) is not ndarray and type(x) in MODULES
            and getattr(backend_of_array(x), "launch_bound", False))


_CONSTANTS = {}  # (array type, device index, key) -> a device array built from the key alone
_MAX_CONSTANTS = 256


def constant_like(like, key, build):
    """``build()`` (a NumPy array that depends on the hashable ``key`` alone, e.g. index
    tables made from shapes) on ``like``'s device; off the CPU it is copied there once per key
    and device, and later calls share that copy (which callers must not write)."""
    if not launch_bound(like):
        return build() if type(like) is ndarray else get_xp(like).asarray(build())
    backend = backend_of_array(like)
    slot = (type(like), backend.index_of(like), key)
    value = _CONSTANTS.get(slot)
    if value is None:
        if len(_CONSTANTS) >= _MAX_CONSTANTS:  # (forget the oldest: shapes seen long ago)
            _CONSTANTS.pop(next(iter(_CONSTANTS)), None)
        with backend.on(slot[1]):
            value = _CONSTANTS[slot] = get_xp(like).asarray(build())
    return value


def device_type(x) -> str:
    """``'cpu'`` or ``'cuda'``: the device type of an array (some of torch's defaults and
    checks depend on it, e.g. linalg.lstsq's driver)."""
    return backend_of_array(x).type


def linalg_errors(x):
    """A context in which a failed factorisation of ``x`` (singular, not positive-definite)
    raises ``numpy.linalg.LinAlgError``, as NumPy always does and CuPy does only when told."""
    if type(x) is ndarray or type(x) not in MODULES:
        return contextlib.nullcontext()
    return backend_of_array(x).linalg_errors()


def special_functions(x):
    """The module of special functions (erfinv, digamma, ...) for ``x``'s backend:
    ``scipy.special`` on the CPU (None when SciPy is not installed), ``cupyx.scipy.special``
    on a GPU."""
    if type(x) is ndarray or not type(x) in MODULES:
        try:
            import scipy.special
        except ImportError:
            return None
        return scipy.special
    return backend_of_array(x).special()


def linalg_functions(x):
    """SciPy's linear algebra (LU, LAPACK, expm) for ``x``'s backend: ``scipy.linalg`` on the
    CPU (None when SciPy is not installed), ``cupyx.scipy.linalg`` on a GPU."""
    if type(x) is ndarray or not type(x) in MODULES:
        try:
            import scipy.linalg
        except ImportError:
            return None
        return scipy.linalg
    return backend_of_array(x).linalg()


_BITS = {2: numpy.uint16, 4: numpy.uint32, 8: numpy.uint64}
_BOOL = numpy.dtype(numpy.bool_)


def masked_or_zero(mask, values, keep=True):
    """``where(mask, values, 0)`` (``keep=False``: ``where(mask, 0, values)``) for a boolean
    mask and float values, or None when that is not the case.

    NOTE: the bits of ``values`` are multiplied by a 0 or 1 word per element (an unsigned
    integer product: exact, the bits kept or all cleared). It gives where()'s exact result
    (+0.0 where masked, NaN and -0.0 kept elsewhere) in about an eighth of the time: where()
    branches per element and mispredicts on irregular masks such as ReLU's. The result is
    written over the words (one array fewer). The words are the flags of the elements kept,
    cast: one pass fewer than an and with all-ones words (which a cast and a negation or a
    subtraction make), 1-2 µs fewer for W2's ReLU gradient, 150 µs for W3's (AMD EPYC).
    """
    dtype = values.dtype
    bits = _BITS.get(dtype.itemsize) if dtype.kind == "f" else None
    if bits is None or mask.dtype != _BOOL:
        return None
    xp = get_xp(values)
    # (the flags cast to words, then multiplied in place: faster than a ufunc casting as it
    # goes; the mask inverted first where it marks the elements zeroed)
    word = (mask if keep else xp.logical_not(mask)).astype(bits)
    out = word if word.shape == values.shape else None  # (a mask broadcast: a new array)
    return xp.multiply(values.view(bits), word, out=out).view(dtype)


def storage_of(x):
    """``(owner, start, end)``: the array that owns ``x``'s memory (its storage) and that
    memory's first and past-the-end byte addresses. ``x``'s own address is ``data_address(x)``.
    """
    owner, b = x, x.base
    while b is not None:  # views (and as_strided's interface objects) chain to the owner
        if is_array(b):
            owner = b
        b = getattr(b, "base", None)
    if isinstance(owner, ndarray):
        start, end = numpy.lib.array_utils.byte_bounds(owner)
        return owner, start, end
    mem = owner.data.mem
    return owner, mem.ptr, mem.ptr + mem.size


def data_address(x) -> int:
    """The address of ``x``'s first element."""
    if isinstance(x, ndarray):
        return x.__array_interface__["data"][0]
    return x.data.ptr


class _Interface:
    """An object NumPy turns into an array without copying (how numpy's as_strided works)."""

    def __init__(self, interface, base):
        self.__array_interface__ = interface
        self.base = base


def contiguous_strides(shape, itemsize):
    """The byte strides of a C-contiguous array of ``shape`` (a zero-length dimension counts
    as one, as NumPy and torch count it)."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def strided_view(x, shape, strides, address, dtype=None):
    """A view of ``x``'s storage: ``shape`` and byte ``strides`` from byte ``address``, in
    ``x``'s dtype unless told (bounds are the caller's business)."""
    dtype = x.dtype if dtype is None else numpy.dtype(dtype)
    if isinstance(x, ndarray):
        interface = {"data": (address, not x.flags.writeable), "shape": tuple(shape),
                     "strides": tuple(strides), "typestr": dtype.str, "version": 3}
        out = numpy.asarray(_Interface(interface, x))
        return out.view(dtype) if out.dtype != dtype else out
    mem = x.data + (address - x.data.ptr)
    return get_xp(x).ndarray(tuple(shape), dtype, memptr=mem, strides=tuple(strides))


def resolve_bits(values, conj, neg=False):
    """A new array of ``values`` with torch's bits applied, each its own inverse: conjugated
    (a real array with the conjugate bit holds (real, imaginary) pairs along its last
    dimension, view_as_real's: its imaginary parts negated) and negated. What a tensor with
    the bits shows of its memory ``values``, or what is written into that memory to show
    ``values``."""
    xp = get_xp(values)
    if conj and values.dtype.kind == "c":
        values = xp.conj(values)
    elif conj:
        values = xp.concatenate([values[..., :1], -values[..., 1:]], axis=-1)
    if neg:
        values = xp.negative(values)
    return values if conj or neg else values.copy()


def bit_values(phys, conj, neg=False):
    """The values a tensor with torch's conjugate bit (``conj``) or negative bit (``neg``)
    shows, ``phys`` being the memory it shares with its base: a new array laid out as ``phys``
    is in its storage (same strides, same offset from the storage's start, in a zeroed storage
    of the same size), so the views, strides and storage offset of what reads it are torch's.
    The one place those bits are resolved for reading."""
    if phys.size == 0:
        return phys.copy()
    _, start, end = storage_of(phys)
    storage = get_xp(phys).zeros(((end - start) // phys.itemsize,), phys.dtype)
    out = strided_view(storage, phys.shape, phys.strides,
                       data_address(storage) + data_address(phys) - start)
    out[...] = resolve_bits(phys, conj, neg)
    return out


def write_bit_values(phys, values, conj, neg=False):
    """Write ``values`` (an array ``bit_values(phys, conj, neg)`` gave, since written into)
    back into ``phys``, the bits undone: torch's write through a conjugate view."""
    if phys.size:
        phys[...] = resolve_bits(values, conj, neg)


class _PlacedEmpty(_Interface):
    """The interface of an empty view that ``place_empty`` put where torch puts it."""


# The arrays of other modules that place_empty made (they have no base to mark them by).
_PLACED_ELSEWHERE = weakref.WeakValueDictionary()


def place_empty(x, shape, strides, offset, dtype=None):
    """An empty view of ``x``'s storage (``shape`` has a 0) at element ``offset`` of that
    storage, with element ``strides``: torch's geometry for it (elements of ``dtype``, if
    given, else of ``x``'s dtype).

    NOTE: NumPy puts an empty view at its base's start with strides of its own choosing (there
    is no element to place), while torch's storage_offset() and strides of an empty slice
    follow the same arithmetic as a full one's, and as_strided() starts from that offset.
    """
    _, start, end = storage_of(x)
    dtype = x.dtype if dtype is None else numpy.dtype(dtype)
    item = dtype.itemsize
    offset, strides = int(offset), [int(s) for s in strides]  # (NumPy integers in the rules)
    if not isinstance(x, ndarray):
        # (CuPy, meta: a pointer must stay within its allocation, and torch's offset can pass
        # its end: zeros(0, 3)[:, 1:] is at 1)
        address = min(start + offset * item, end)
        out = strided_view(x, shape, [s * item for s in strides], address, dtype)
        with contextlib.suppress(TypeError):  # (an array that takes no weak reference)
            _PLACED_ELSEWHERE[id(out)] = out
        return out
    interface = {"data": (start + offset * item, not x.flags.writeable), "shape": tuple(shape),
                 "strides": tuple(s * item for s in strides), "version": 3,
                 # (ml_dtypes' float8 types have no typestr NumPy reads back: raw bytes, viewed)
                 "typestr": dtype.str if dtype.isbuiltin == 1 else f"|V{item}"}
    out = numpy.asarray(_PlacedEmpty(interface, x))
    return out.view(dtype) if out.dtype != dtype else out


def empty_strides(x):
    """The element strides torch gives ``x``, an array with no elements: those place_empty
    gave it, else the contiguous strides of its shape (torch's for a fresh tensor; NumPy's own
    strides of an empty array are 0, or its base's, whatever torch's would be)."""
    if isinstance(getattr(x, "base", None), _PlacedEmpty) or _PLACED_ELSEWHERE.get(id(x)) is x:
        return tuple(s // x.itemsize for s in x.strides)
    return contiguous_strides(x.shape, 1)
