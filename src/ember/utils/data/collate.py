"""Collation: a list of samples becomes one batch (tensors stacked along a new first dim)."""
from __future__ import annotations

import collections.abc
import numbers

import numpy as np

from . import _shared_memory, _worker

__all__ = ["default_collate", "default_convert"]


def _stack_arrays(arrays):
    """np.stack, into shared memory when this runs in a DataLoader worker (the batch then
    reaches the main process without a copy)."""
    first = arrays[0]
    if (first.nbytes * len(arrays) >= _shared_memory.SHARE_THRESHOLD
            and _worker.get_worker_info() is not None
            and all(isinstance(a, np.ndarray) and a.dtype == first.dtype for a in arrays)):
        out = _shared_memory.shared_empty((len(arrays),) + first.shape, first.dtype)
        return np.stack(arrays, out=out)
    return np.stack(arrays)


def _stack(batch):
    from ... import _ops, _tensor
    first = batch[0]
    if any(t.shape != first.shape for t in batch):
        raise RuntimeError("stack expects each tensor to be equal size, but got "
                           f"{list(first.shape)} at entry 0 and "
                           f"{next(list(t.shape) for t in batch if t.shape != first.shape)} "
                           "at entry 1")
    if not any(t.requires_grad for t in batch):
        # NOTE: one np.stack instead of the recording op: samples from a dataset rarely need
        # a graph, and this is the loader's hot path.
        return _tensor._wrap(_stack_arrays([t._data for t in batch]))
    return _ops.shape.stack(batch)


def default_collate(batch):
    """Stack tensors and arrays, turn numbers into tensors, and recurse into mappings and
    sequences (a batch of tuples becomes a list of batches, as in torch)."""
    from ... import _creation, _dtype as D
    from ..._tensor import Tensor
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _stack(batch)
    if isinstance(elem, np.ndarray) and elem.dtype.kind not in "OSUV":
        return _creation.as_tensor(_stack_arrays(batch))
    if isinstance(elem, np.generic) and elem.dtype.kind not in "OSUV":
        return _creation.as_tensor(np.array(batch))
    if isinstance(elem, bool):
        return _creation.tensor(batch, dtype=D.bool)
    if isinstance(elem, numbers.Integral):
        return _creation.tensor(batch, dtype=D.int64)
    if isinstance(elem, float):
        return _creation.tensor(batch, dtype=D.float64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(collated)
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(list(samples)) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed
        try:
            return type(elem)(transposed)
        except TypeError:
            return transposed
    raise TypeError("default_collate: batch must contain tensors, numpy arrays, numbers, "
                    f"dicts or lists; found {type(elem)}")


def default_convert(data):
    """What the loader does to each sample when batching is off: arrays become tensors."""
    from ... import _creation
    if isinstance(data, np.ndarray) and data.dtype.kind not in "OSUV":
        return _creation.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return {key: default_convert(value) for key, value in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # torch's choice: tuples become lists
    if isinstance(data, list):
        return [default_convert(d) for d in data]
    return data
