"""The module torch's core classes print as their own (``<class 'torch._C.Generator'>``):
ember's are defined elsewhere and named here, so that they print as torch's and pickle finds
them again under that name."""
from __future__ import annotations

import os
import sys

from ._random.generator import Generator
from .overrides import (DisableTorchFunction, DisableTorchFunctionSubclass,  # noqa: F401
                        _disabled_torch_function_impl, _get_function_stack_at,
                        _is_torch_function_enabled, _is_torch_function_mode_enabled,
                        _len_torch_function_stack, _pop_torch_function_stack,
                        _push_on_torch_function_stack)

Generator.__module__ = __name__

# read once, as torch reads it when it starts
_API_USAGE_TO_STDERR = bool(os.environ.get("PYTORCH_API_USAGE_STDERR"))
_logged_api_usage = set()


def _log_api_usage_once(*args):
    """Records that an API was used (libraries call it in their constructors: torchmetrics'
    ``Metric``). torch prints ``PYTORCH_API_USAGE <event>`` to stderr the first time an event is
    logged when the environment variable PYTORCH_API_USAGE_STDERR was set when it started, and
    keeps nothing otherwise."""
    if len(args) != 1:
        raise TypeError(f"{__name__}._log_api_usage_once() takes exactly one argument "
                        f"({len(args)} given)")
    event, = args
    if not isinstance(event, str):
        raise TypeError("bad argument type for built-in operation")
    if _API_USAGE_TO_STDERR and event not in _logged_api_usage:
        _logged_api_usage.add(event)
        print(f"PYTORCH_API_USAGE {event}", file=sys.stderr)


def _get_tracing_state():
    """The state of the torch.jit trace being recorded: None, as ember never traces (pyro
    checks it before data-dependent validation)."""
    return None


__all__ = ["Generator"]
