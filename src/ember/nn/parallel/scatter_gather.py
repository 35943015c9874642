"""``ember.nn.parallel.scatter_gather``: a batch split over CUDA devices and joined back.

What DataParallel runs on each forward, under torch's names and signatures (programs such as
captum import ``scatter`` from here).
"""
from __future__ import annotations

import warnings

from ..._tensor import Tensor

__all__ = ["gather", "scatter", "scatter_kwargs"]


def scatter(inputs, target_gpus, dim=0):
    """``inputs`` split per device: tensors chunked along ``dim``, containers recursively,
    other values repeated (as many parts as the smallest tensor split gives)."""
    if isinstance(inputs, Tensor):
        return [c.to(f"cuda:{d}") for c, d in zip(inputs.chunk(len(target_gpus), dim),
                                                   target_gpus)]
    if isinstance(inputs, (tuple, list)) and inputs:
        parts = list(zip(*(scatter(o, target_gpus, dim) for o in inputs)))
        return [type(inputs)(p) if isinstance(inputs, list) else tuple(p) for p in parts]
    if isinstance(inputs, dict) and inputs:
        keys = list(inputs)
        return [dict(zip(keys, p))
                for p in zip(*(scatter(inputs[k], target_gpus, dim) for k in keys))]
    return [inputs for _ in target_gpus]


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """The positional and keyword arguments scattered, padded to the same number of parts."""
    scattered = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kw = scatter(kwargs, target_gpus, dim) if kwargs else []
    n = max(len(scattered), len(scattered_kw))
    scattered += [()] * (n - len(scattered))
    scattered_kw += [{}] * (n - len(scattered_kw))
    return tuple(scattered), tuple(scattered_kw)


def gather(outputs, target_device, dim=0):
    """The per-device outputs joined on device ``target_device`` along ``dim``."""
    first = outputs[0]
    if isinstance(first, Tensor):
        moved = [o.to(f"cuda:{target_device}") for o in outputs]
        if all(o.dim() == 0 for o in moved):
            warnings.warn("Was asked to gather along dimension 0, but all input tensors were "
                          "scalars; will instead unsqueeze and return a vector.")
            moved, dim = [o.view(1) for o in moved], 0
        from ... import cat
        return cat(moved, dim)
    if first is None:
        return None
    if isinstance(first, dict):
        return type(first)((k, gather([o[k] for o in outputs], target_device, dim))
                           for k in first)
    return type(first)(gather(list(parts), target_device, dim) for parts in zip(*outputs))
