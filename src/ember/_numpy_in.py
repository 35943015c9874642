"""NumPy arrays into tensors: torch's checks of an ndarray that a tensor is made from.

torch reads an ndarray's memory as it is (``from_numpy``, ``as_tensor``, ``asarray``,
``tensor`` and the legacy constructors all start there), so it refuses, in this order, a
dtype it has no tensor for, strides that are not whole elements, negative strides and a
non-native byte order, even where a copy follows. Sharing a read-only array warns once.
"""
from __future__ import annotations

import warnings

from . import _dtype as D
from ._tensor import refuse_negative_strides

_warned = set()

_NOT_WRITABLE = (
    "The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
    "This means writing to this tensor will result in undefined behavior. You may want to copy "
    "the array to protect its data or make it writable before converting it to a tensor. This "
    "type of warning will be suppressed for the rest of this program. (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/utils/tensor_numpy.cpp:213.)")
_LIST_OF_ARRAYS = (
    "Creating a tensor from a list of numpy.ndarrays is extremely slow. Please consider "
    "converting the list to a single numpy.ndarray with numpy.array() before converting to a "
    "tensor. (Triggered internally at /__w/pytorch/pytorch/torch/csrc/utils/tensor_new.cpp:252.)")


def warn_once(message, stacklevel):
    """torch's once-per-process warning (every time under ``ember.set_warn_always(True)``);
    ``stacklevel`` as ``warnings.warn``'s, counted from the caller."""
    from ._namespace import is_warn_always_enabled
    if message in _warned and not is_warn_always_enabled():
        return
    _warned.add(message)
    warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)


def check_ndarray(array, *, warn_if_not_writeable, stacklevel=2):
    """The ember dtype of ``array``, after torch's refusals of an array it cannot read."""
    if warn_if_not_writeable and not array.flags.writeable:
        warn_once(_NOT_WRITABLE, stacklevel + 1)
    native = array.dtype if array.dtype.isnative else array.dtype.newbyteorder("=")
    dtype = D.from_numpy_dtype(native)  # (refused before the byte order)
    if array.itemsize and any(stride % array.itemsize for stride in array.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")
    refuse_negative_strides(array)
    if not array.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte "
                         "order. Conversion between byte orders is currently not supported.")
    return dtype


def warn_for_listed_arrays(count, stacklevel=2):
    """torch's warning for each of the ``count`` ndarrays it copies out of a list."""
    for _ in range(count):
        warn_once(_LIST_OF_ARRAYS, stacklevel + 1)
