"""``skip_init`` and the memory-format converters (no-ops on ember's row-major arrays)."""
from __future__ import annotations

import inspect

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
           "skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """An instance of ``module_cls`` whose parameters' values are unspecified, to be set by
    the caller: it is built on the meta device (its initialisation computes nothing) and
    then given uninitialised memory on ``device`` (the CPU unless told)."""
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)


def convert_conv2d_weight_memory_format(module, memory_format):
    """``module`` (ember keeps every weight row-major, so nothing changes)."""
    return module


def convert_conv3d_weight_memory_format(module, memory_format):
    return module
