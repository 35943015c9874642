"""``torch.__future__``: how ``nn.Module``'s conversions (``.to()``, ``.double()``, ``.cuda()``,
``._apply``) treat parameters, as switches for behaviour torch plans to change.

By default a parameter stays the same object and takes the converted values (so an optimizer
made before ``.to()`` still holds it). With ``overwrite``, each parameter (and its ``.grad``) is
replaced by a new ``Parameter``; with ``swap`` (which wins over ``overwrite``), the same object
is kept and swapped with the converted one, which in ember is what the default does.
"""
from __future__ import annotations

__all__ = ["get_overwrite_module_params_on_conversion", "get_swap_module_params_on_conversion",
           "set_overwrite_module_params_on_conversion", "set_swap_module_params_on_conversion"]

_overwrite = False
_swap = False


def set_overwrite_module_params_on_conversion(value: bool) -> None:
    global _overwrite
    _overwrite = value


def get_overwrite_module_params_on_conversion() -> bool:
    return _overwrite


def set_swap_module_params_on_conversion(value: bool) -> None:
    global _swap
    _swap = value


def get_swap_module_params_on_conversion() -> bool:
    return _swap
