"""Public functions pickled and copied by reference, as torch's are.

pickle (and so copy and deepcopy) saves a function as ``module.qualname`` and refuses one it
cannot find again under that name. Functions made by a factory (the in-place function forms
such as ``ember.abs_``, the ``*_like`` creators, wrappers) carry the factory's module and a
``<locals>`` qualname; here each one is named where the namespace exposes it.
"""
from __future__ import annotations

import sys
import types


def _found_again(fn) -> bool:
    """Whether pickle's lookup of ``fn.__module__`` / ``fn.__qualname__`` gives ``fn`` back."""
    found = sys.modules.get(fn.__module__)
    for part in fn.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is fn


def name_where_found(module_globals) -> None:
    """Name each public function of a module's globals that pickle could not find again
    after the module (``__name__``) and the name it has there."""
    for name, value in list(module_globals.items()):
        if name.startswith("_") or not isinstance(value, types.FunctionType):
            continue
        if not _found_again(value):
            value.__module__, value.__qualname__ = module_globals["__name__"], name


def name_methods_where_found(cls) -> None:
    """Name each method of ``cls`` (already named as exported) that pickle could not find
    again after the class (``pickle.dumps(Tensor.eq)`` works, as torch's method descriptors
    pickle)."""
    for name, value in list(vars(cls).items()):
        if isinstance(value, types.FunctionType) and not _found_again(value):
            value.__module__, value.__qualname__ = cls.__module__, f"{cls.__qualname__}.{name}"
