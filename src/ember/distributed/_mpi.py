"""MPI through mpi4py: the one module of ember.distributed that imports it.

It maps arrays to MPI buffers on their own memory: a contiguous array is passed as it is, a
strided one as a derived datatype over its elements (MPI moves them in place). MPI's reduction
operations are defined on predefined datatypes only, so a reduction over a strided array runs
on a contiguous copy that is written back (``reduction_buffer``).
"""
from __future__ import annotations

import importlib.util

import numpy as np

from ._types import RedOpType

_MPI = []


def available() -> bool:
    """Whether mpi4py (the ``distributed`` extra) is installed."""
    return importlib.util.find_spec("mpi4py") is not None


def mpi():
    """The ``mpi4py.MPI`` module (importing it initialises MPI, once per process)."""
    if not _MPI:
        try:
            from mpi4py import MPI
        except ImportError:
            raise RuntimeError(
                "ember.distributed runs on MPI through mpi4py, which is not installed: "
                "pip install 'ember[distributed]' (mpi4py and the mpich wheel)") from None
        _MPI.append(MPI)
    return _MPI[0]


def initialized() -> bool:
    return bool(_MPI) and _MPI[0].Is_initialized() and not _MPI[0].Is_finalized()


_BASIC = {}


def basic_type(dtype: np.dtype):
    """The MPI datatype of one element of ``dtype`` (bytes for a dtype MPI does not know)."""
    t = _BASIC.get(dtype)
    if t is None:
        MPI = mpi()
        # NOTE: mpi4py's table of predefined types (dtlib.from_numpy_dtype returns duplicates,
        # on which MPI's reduction operations are not defined).
        t = MPI._typedict.get(dtype.char) if dtype.kind in "biufc" else None
        if t is None:  # e.g. ml_dtypes' bfloat16: moved as opaque bytes
            t = MPI.BYTE.Create_contiguous(dtype.itemsize).Commit()
        _BASIC[dtype] = t
    return t


def reducible(dtype: np.dtype) -> bool:
    """Whether MPI's predefined operations can reduce ``dtype`` directly."""
    return basic_type(dtype).is_predefined


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _plain_strides(a: np.ndarray) -> bool:
    """Positive, non-overlapping strides: the elements can be described in place."""
    return all(s > 0 for s, n in zip(a.strides, a.shape) if n > 1)


def message(a: np.ndarray):
    """An mpi4py buffer spec ``[buffer, count, datatype]`` that reads and writes ``a`` in
    place, or None when ``a`` cannot be described so (negative or zero strides)."""
    t = basic_type(a.dtype)
    if a.flags.c_contiguous:
        return [a, a.size, t]
    if not _plain_strides(a):
        return None
    dt = t
    for n, stride in zip(reversed(a.shape), reversed(a.strides)):
        dt = dt.Create_hvector(n, 1, stride)
    dt.Commit()
    span = sum((n - 1) * s for n, s in zip(a.shape, a.strides)) + a.itemsize
    MPI = mpi()
    return [MPI.buffer.fromaddress(address(a), span), 1, dt]


def release(spec) -> None:
    """Free the derived datatype a strided ``message`` made."""
    if spec is not None and not spec[2].is_predefined and spec[2] not in _BASIC.values():
        spec[2].Free()


_BOOL_OPS = {RedOpType.SUM: "LOR", RedOpType.PRODUCT: "LAND", RedOpType.MIN: "LAND",
             RedOpType.MAX: "LOR", RedOpType.BAND: "LAND", RedOpType.BOR: "LOR",
             RedOpType.BXOR: "LXOR", RedOpType.AVG: "LOR"}
_OPS = {RedOpType.SUM: "SUM", RedOpType.AVG: "SUM", RedOpType.PRODUCT: "PROD",
        RedOpType.MIN: "MIN", RedOpType.MAX: "MAX", RedOpType.BAND: "BAND",
        RedOpType.BOR: "BOR", RedOpType.BXOR: "BXOR"}


def reduce_op(op: RedOpType, dtype: np.dtype):
    """MPI's operation for ``op`` on ``dtype`` (torch's bool reductions are logical)."""
    names = _BOOL_OPS if dtype == np.bool_ else _OPS
    return getattr(mpi(), names[op])


_REDUCTIONS = {}


def reduction(dtype: np.dtype, op: RedOpType):
    """``(datatype, operation)`` with which MPI reduces ``dtype`` arrays in place by ``op``,
    or None when its predefined operations cannot (float16, bfloat16).

    Cached: a small all-reduce's time is mostly this Python path's, so it looks nothing up
    twice.
    """
    key = (dtype, op)
    try:
        return _REDUCTIONS[key]
    except KeyError:
        found = (basic_type(dtype), reduce_op(op, dtype)) if reducible(dtype) else None
        _REDUCTIONS[key] = found
        return found
