"""The backend layer: the only place that knows NumPy from CuPy.

Ops get their array module from their inputs with ``get_xp``; the few functions the two
libraries spell differently get a named helper here.
"""
from __future__ import annotations

import numpy

from ._allocator import tune_glibc_malloc

tune_glibc_malloc()
ndarray = numpy.ndarray
_cupy = None


def _cupy_module():
    global _cupy
    if _cupy is None:
        try:
            import cupy  # noqa: F401  (optional extra)
            _cupy = cupy
        except ImportError:
            _cupy = False
    return _cupy


def get_xp(*arrays):
    """The array module (numpy or cupy) that owns ``arrays``."""
    for a in arrays:
        if type(a).__module__.startswith("cupy"):
            return _cupy_module()
    return numpy


def is_array(x) -> bool:
    return isinstance(x, ndarray) or type(x).__module__.startswith("cupy")


def as_array(x):
    """Normalise a kernel's result to an array (NumPy turns 0-d results into scalars)."""
    if type(x) is ndarray:
        return x
    return numpy.asarray(x)


def to_numpy(x):
    """Host copy of an array from any backend (NumPy arrays are returned as they are)."""
    if isinstance(x, ndarray):
        return x
    return x.get()


def scatter_add(target, index, values):
    """target[index] += values, accumulating repeated indices (np.add.at / cupyx.scatter_add)."""
    xp = get_xp(target)
    if xp is numpy:
        numpy.add.at(target, index, values)
    else:  # pragma: no cover - needs a GPU
        import cupyx
        cupyx.scatter_add(target, index, values)
    return target


_BITS = {2: numpy.uint16, 4: numpy.uint32, 8: numpy.uint64}


def masked_or_zero(mask, values, keep=True):
    """``where(mask, values, 0)`` (``keep=False``: ``where(mask, 0, values)``) for a boolean
    mask and float values, or None when that is not the case.

    NOTE: the bits of ``values`` are and-ed with an all-ones / all-zeros word per element.
    It gives where()'s exact result (+0.0 where masked, NaN and -0.0 kept elsewhere) in about
    an eighth of the time: where() branches per element and mispredicts on irregular masks
    such as ReLU's.
    """
    bits = _BITS.get(values.dtype.itemsize) if values.dtype.kind == "f" else None
    if bits is None or mask.dtype != numpy.bool_:
        return None
    xp = get_xp(values)
    flags = mask.view(numpy.uint8)
    # 1 -> 0xff..ff (keep) and 0 -> 0, or the reverse: the subtraction wraps around.
    word = xp.negative(flags, dtype=bits) if keep else xp.subtract(flags, 1, dtype=bits)
    return xp.bitwise_and(values.view(bits), word).view(values.dtype)


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
    mem = owner.data.mem  # pragma: no cover - needs a GPU
    return owner, mem.ptr, mem.ptr + mem.size


def data_address(x) -> int:
    """The address of ``x``'s first element."""
    if isinstance(x, ndarray):
        return x.__array_interface__["data"][0]
    return x.data.ptr  # pragma: no cover - needs a GPU


class _Interface:
    """An object NumPy turns into an array without copying (how numpy's as_strided works)."""

    def __init__(self, interface, base):
        self.__array_interface__ = interface
        self.base = base


def strided_view(x, shape, strides, address):
    """A view of ``x``'s storage: ``shape`` and byte ``strides`` from byte ``address``
    (bounds are the caller's business)."""
    if isinstance(x, ndarray):
        interface = {"data": (address, not x.flags.writeable), "shape": tuple(shape),
                     "strides": tuple(strides), "typestr": x.dtype.str, "version": 3}
        out = numpy.asarray(_Interface(interface, x))
        return out.view(x.dtype) if out.dtype != x.dtype else out
    import cupy  # pragma: no cover - needs a GPU
    mem = x.data + (address - x.data.ptr)
    return cupy.ndarray(tuple(shape), x.dtype, memptr=mem, strides=tuple(strides))
