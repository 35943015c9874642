"""MPI through mpi4py: the one module of ember.distributed that imports it.

It maps arrays to MPI buffers on their own memory: a contiguous array is passed as it is, a
strided one as a derived datatype over its elements (MPI moves them in place). MPI's reduction
operations are defined on predefined datatypes only, so a reduction over a strided array runs
on a contiguous copy that is written back; floating types MPI cannot reduce (bfloat16) are
reduced in place by user-defined operations that call NumPy (``reduction``).
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


_UFUNCS = {RedOpType.SUM: np.add, RedOpType.AVG: np.add, RedOpType.PRODUCT: np.multiply,
           RedOpType.MIN: np.minimum, RedOpType.MAX: np.maximum}
_UFUNC_OPS = {}  # (dtype, ufunc) -> MPI operation, or None


def _ufunc_op(dtype: np.dtype, op: RedOpType):
    """A user-defined MPI operation applying ``op``'s NumPy ufunc to ``dtype``'s elements, for
    a floating type MPI has no predefined reduction of (bfloat16, the float8 types; float16
    where MPI lacks MPI_FLOAT16_T), or None where NumPy cannot reduce ``dtype`` either.

    MPI reduces the arrays where they are, calling it on each pair of blocks; every step
    rounds to ``dtype``, as torch reduces a tensor in its own type.
    """
    ufunc = _UFUNCS.get(op)
    key = (dtype, ufunc)
    if key in _UFUNC_OPS:
        return _UFUNC_OPS[key]
    found = None
    if ufunc is not None and _ufunc_keeps(ufunc, dtype):
        def apply(inbuf, inoutbuf, datatype):
            acc = np.frombuffer(inoutbuf, dtype)
            ufunc(np.frombuffer(inbuf, dtype), acc, out=acc)
        try:
            found = mpi().Op.Create(apply, commute=True)
        except RuntimeError:  # mpi4py's table of user-defined operations (32) is full
            found = None
    _UFUNC_OPS[key] = found
    return found


def _ufunc_keeps(ufunc, dtype: np.dtype) -> bool:
    """Whether ``ufunc`` combines two ``dtype`` arrays into one of ``dtype``."""
    try:
        return ufunc(np.zeros(1, dtype), np.zeros(1, dtype)).dtype == dtype
    except (TypeError, ValueError):  # no loop for dtype
        return False


_REDUCTIONS = {}


def reduction(dtype: np.dtype, op: RedOpType):
    """``(datatype, operation)`` with which MPI reduces contiguous ``dtype`` arrays in place
    by ``op``: MPI's predefined ones, or ``_ufunc_op``'s for floating types MPI does not
    know; None when neither can (the caller reduces a float64 copy).

    Cached: a small all-reduce's time is mostly this Python path's, so it looks nothing up
    twice.
    """
    key = (dtype, op)
    try:
        return _REDUCTIONS[key]
    except KeyError:
        datatype = basic_type(dtype)
        if datatype.is_predefined:
            found = (datatype, reduce_op(op, dtype))
        else:
            user_op = _ufunc_op(dtype, op)
            found = None if user_op is None else (datatype, user_op)
        _REDUCTIONS[key] = found
        return found
