"""The backend layer: the only place that knows NumPy from CuPy.

Ops get their array module from their inputs with ``get_xp``; the few functions the two
libraries spell differently get a named helper here.
"""
from __future__ import annotations

import numpy

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
