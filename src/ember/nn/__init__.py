"""``ember.nn``: modules, parameters and functional building blocks."""
from . import attention, functional, grad, init, parallel, utils  # noqa: F401
from .modules import *
from .parameter import Buffer, Parameter  # noqa: F401
from .parallel import DataParallel  # noqa: F401


def factory_kwargs(kwargs):
    """``kwargs``' factory arguments (device, dtype, memory_format, and those of a nested
    ``factory_kwargs`` dict) as one dict for a factory function; torch's TypeError for any
    other key or for one given twice."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    merged = dict(kwargs.get("factory_kwargs", {}))
    for k in simple_keys:
        if k in kwargs:
            if k in merged:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            merged[k] = kwargs[k]
    return merged
