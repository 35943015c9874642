"""``ember.utils``: helpers around the core library, as ``torch.utils``.

Submodules load on first use (``ember.utils.checkpoint``, ``ember.utils.data``) so that
importing ember stays fast.
"""
from __future__ import annotations

from ._swap_tensors import swap_tensors

__all__ = ["swap_tensors"]

_SUBMODULES = ("_pytree", "benchmark", "checkpoint", "data", "dlpack", "hooks")


def __getattr__(name):
    if name in _SUBMODULES:
        import importlib
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
