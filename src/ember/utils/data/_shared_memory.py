"""Tensors cross process boundaries in shared memory, not through a pipe.

``Tensor.share_memory_`` moves a tensor's values into such a block (Hogwild training shares a
model's parameters this way: every process that receives them maps the same pages, so each
optimizer step is seen by all). A worker collates each batch straight into an anonymous shared-memory file (``memfd``); when
the batch is put on a multiprocessing queue, only the file's descriptor travels (through
multiprocessing's resource sharer, as torch's ``file_descriptor`` strategy does) and the main
process maps the same pages: no copy on either side. Small tensors, and platforms without
``memfd_create``, are pickled as usual.
"""
from __future__ import annotations

import mmap
import os
import pickle
import weakref
from multiprocessing import reduction

import numpy as np

# Below this size pickling the bytes costs less than passing a file descriptor.
SHARE_THRESHOLD = 64 * 1024
CAN_SHARE = hasattr(os, "memfd_create")


class _SharedMap(mmap.mmap):
    """A mapping of a shared-memory file; ``fd`` is the open file while this process may
    still send it (None once the mapping is all that is left)."""

    fd = None


def _close_quietly(fd):
    try:
        os.close(fd)
    except OSError:
        pass


def _map(fd, nbytes, keep_fd):
    block = _SharedMap(fd, nbytes)
    if keep_fd:
        block.fd = fd
        weakref.finalize(block, _close_quietly, fd)
    else:
        os.close(fd)  # the mapping keeps the pages alive
    return block


def shared_empty(shape, dtype):
    """An uninitialised array in a fresh shared-memory block (a plain array where the
    platform has no anonymous shared memory)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    if not CAN_SHARE:
        return np.empty(shape, dtype)
    fd = os.memfd_create("ember-batch", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, max(count * dtype.itemsize, 1))
        block = _map(fd, max(count * dtype.itemsize, 1), keep_fd=True)
    except BaseException:
        os.close(fd)
        raise
    return np.frombuffer(block, dtype, count).reshape(shape)


def shared_copy(array):
    """``array``'s values in a fresh shared-memory block, laid out as ``array`` is (a dense
    array keeps its strides); ``array`` itself where the platform has no anonymous shared
    memory."""
    if not CAN_SHARE:
        return array
    strides = np.empty_like(array, order="K").strides
    flat = shared_empty((array.size,), array.dtype)
    copy = np.ndarray(array.shape, array.dtype, buffer=flat, strides=strides)
    copy[...] = array
    return copy


def _root(array):
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    return base.obj if isinstance(base, memoryview) else base


def in_shared_memory(array) -> bool:
    """Whether ``array``'s memory is a shared block (made here or received from a worker)."""
    return isinstance(_root(array), _SharedMap)


def _shared_block(array):
    """The shared block ``array`` lives in, if it lives in one this process can send."""
    root = _root(array)
    return root if isinstance(root, _SharedMap) and root.fd is not None else None


def _address(array):
    return array.__array_interface__["data"][0]


def _rebuild_shared(cls, dup_fd, nbytes, offset, shape, strides, dtype, requires_grad):
    from ..._tensor import _wrap
    block = _map(dup_fd.detach(), nbytes, keep_fd=False)
    array = np.ndarray(shape, dtype, buffer=block, offset=offset, strides=strides)
    tensor = _wrap(array, cls)
    tensor._requires_grad = requires_grad
    return tensor


def _reduce_tensor(tensor):
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the "
            "queue).")
    array = tensor._data
    block = _shared_block(array) if isinstance(array, np.ndarray) else None
    if block is None:
        if not (CAN_SHARE and isinstance(array, np.ndarray)
                and array.nbytes >= SHARE_THRESHOLD and array.dtype.kind != "O"):
            return tensor.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
        copy = shared_empty(array.shape, array.dtype)
        copy[...] = array
        array, block = copy, _shared_block(copy)
    offset = _address(array) - _address(np.frombuffer(block, np.uint8))
    return (_rebuild_shared, (type(tensor), reduction.DupFd(block.fd), len(block), offset,
                              array.shape, array.strides, array.dtype.str,
                              tensor.requires_grad))


_registered = False


def register_reductions():
    """Send ember tensors through multiprocessing queues, pipes and a spawned process's
    arguments in shared memory (called when ember.multiprocessing is imported, as torch's are,
    in the loader's process and in each worker; ordinary pickling is not affected)."""
    global _registered
    if not _registered:
        from ..._tensor import Tensor
        from ...nn.parameter import Parameter
        # (the pickler's table is looked up by exact type: a model's Parameters need their own
        # entry to reach a Hogwild worker in shared memory)
        for cls in (Tensor, Parameter):
            reduction.ForkingPickler.register(cls, _reduce_tensor)
        _registered = True
