"""The module torch's core classes print as their own (``<class 'torch._C.Generator'>``):
ember's are defined elsewhere and named here, so that they print as torch's and pickle finds
them again under that name."""
from __future__ import annotations

from ._random.generator import Generator
from .overrides import (DisableTorchFunction, DisableTorchFunctionSubclass,  # noqa: F401
                        _disabled_torch_function_impl, _get_function_stack_at,
                        _is_torch_function_enabled, _is_torch_function_mode_enabled,
                        _len_torch_function_stack, _pop_torch_function_stack,
                        _push_on_torch_function_stack)

Generator.__module__ = __name__

__all__ = ["Generator"]
