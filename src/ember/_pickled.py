"""Objects earlier versions of ``ember.save`` stored as pickles in their NumPy archives (whole
modules, the program's own classes): the pickle holds the object's structure and refers to its
tensors by persistent ids; the tensors themselves are archive entries like any other saved
tensor.

``ember.load`` unpickles such an entry only as torch.load does: with ``weights_only=False``
(code in the file can run: only for files from a trusted source), or, with the default
``weights_only=True``, when every class and function the pickle names is one of a few
containers or has been allowed with ``ember.serialization.add_safe_globals`` /
``safe_globals``; anything else raises torch's ``pickle.UnpicklingError``.
"""
from __future__ import annotations

import _compat_pickle
import io
import pickle

from ._safe_globals import unsupported_global

# what torch's weights-only unpickler builds without being told (and ember's hook dict, the
# OrderedDict torch keeps a module's hooks in)
_DEFAULT_ALLOWED = {
    ("collections", "OrderedDict"), ("collections", "Counter"), ("builtins", "set"),
    ("builtins", "frozenset"), ("builtins", "bytearray"), ("builtins", "complex"),
    ("builtins", "slice"), ("ember.autograd.graph", "_HookDict"),
}

class _Loader(pickle.Unpickler):
    def __init__(self, file, build, weights_only):
        super().__init__(file)
        self.build, self.weights_only = build, weights_only

    def persistent_load(self, pid):
        return self.build(pid)

    def find_class(self, module, name):
        if not self.weights_only:
            return super().find_class(module, name)
        # (protocol 2 names some builtins as Python 2 did: __builtin__.set)
        module, name = _python3_name(module, name)
        if (module, name) in _DEFAULT_ALLOWED:
            return super().find_class(module, name)
        found = _allowed_by_name(f"{module}.{name}")
        if found is None:
            raise unsupported_global(f"{module}.{name}")
        return found


def _python3_name(module, name):
    """The Python 3 module and name of a global a protocol-2 pickle names."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[module, name]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def _allowed_by_name(full_name):
    """The global allowed under ``full_name`` by add_safe_globals / safe_globals, or None."""
    from ._safe_globals import get_safe_globals
    for entry in get_safe_globals():
        obj, name = entry if isinstance(entry, tuple) else (entry, None)
        if (name or f"{obj.__module__}.{obj.__qualname__}") == full_name:
            return obj
    return None


class UnpicklingFailed(Exception):
    """Carries what unpickling raised (a class the program no longer has, torch's weights-only
    error) past ember.load's checks of the archive's own structure."""

    def __init__(self, error):
        super().__init__(error)
        self.error = error


def loads(data: bytes, build, weights_only: bool):
    """The object pickled in ``data``, its tensors built by ``build``."""
    try:
        return _Loader(io.BytesIO(data), build, weights_only).load()
    except UnpicklingFailed:
        raise
    except Exception as error:
        raise UnpicklingFailed(error) from error
