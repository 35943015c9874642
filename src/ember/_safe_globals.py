"""What ``ember.load(weights_only=True)`` (the default, as in torch) builds: tensors and
Python's containers and numbers, and NumPy arrays and scalars only once their pickle globals
are allowlisted, as torch's weights-only unpickler has it.

The same rule decides which classes a pickled entry of an archive (a saved module) may
name; NumPy values are stored as arrays, and the rule is kept for them so that a program
behaves as under torch: ``load`` of a saved NumPy array raises ``pickle.UnpicklingError``
unless ``weights_only=False`` or ``add_safe_globals`` / ``safe_globals`` allow
``_reconstruct``, ``ndarray``, ``dtype`` and the array's dtype class.
"""
from __future__ import annotations

import pickle

import numpy as np
from numpy._core.multiarray import _reconstruct, scalar

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals"]

_ALLOWED: list = []

_DOCS = ("Check the documentation of ember.load to learn more about types accepted by default "
         "with weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")
_RERUN = ("In PyTorch 2.6, we changed the default value of the `weights_only` argument in "
          "`ember.load` from `False` to `True`. Re-running `ember.load` with `weights_only` set "
          "to `False` will likely succeed, but it can result in arbitrary code execution. Do it "
          "only if you got the file from a trusted source.")


def add_safe_globals(safe_globals: list) -> None:
    """Allow these globals (or ``(global, "module.name")`` pairs) in weights-only loads."""
    _ALLOWED.extend(safe_globals)


def clear_safe_globals() -> None:
    _ALLOWED.clear()


def get_safe_globals() -> list:
    return list(_ALLOWED)


class safe_globals:
    """A context in which ``safe_globals`` are allowed in weights-only loads."""

    def __init__(self, safe_globals: list):
        self.safe_globals = safe_globals

    def __enter__(self):
        self._saved = list(_ALLOWED)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        _ALLOWED[:] = self._saved


def _allowed(obj) -> bool:
    return any(entry is obj or (isinstance(entry, tuple) and entry[0] is obj)
               for entry in _ALLOWED)


def _name(obj) -> str:
    return f"{obj.__module__}.{obj.__name__}"


def check_numpy(kind: str, dtype) -> None:
    """Raise torch's UnpicklingError unless a NumPy ``kind`` ("ndarray" or "npscalar") of
    ``dtype`` may be built (the globals its pickle names, in the order torch meets them)."""
    needed = ([_reconstruct, np.ndarray] if kind == "ndarray" else [scalar]) + [np.dtype]
    for obj in needed:
        if not _allowed(obj):
            raise unsupported_global(_name(obj))
    dtype_class = type(np.dtype(dtype))
    if not _allowed(dtype_class):
        raise pickle.UnpicklingError(
            f"Weights only load failed. {_RERUN}\nPlease file an issue with the following so "
            "that we can make `weights_only=True` compatible with your use case: "
            "WeightsUnpickler error: \n\nCan only build Tensor, Parameter, OrderedDict or types "
            f"allowlisted via `add_safe_globals`, but got {dtype_class}\n\n{_DOCS}")


def unsupported_global(name: str) -> pickle.UnpicklingError:
    """torch's error for a weights-only load that meets global ``name`` (``module.qualname``)
    that is not allowed."""
    return pickle.UnpicklingError(
        "Weights only load failed. This file can still be loaded, to do so you have two "
        "options, \x1b[1mdo those steps only if you trust the source of the "
        f"checkpoint\x1b[0m. \n\t(1) {_RERUN}\n\t(2) Alternatively, to load with "
        "`weights_only=True` please check the recommended steps in the following error "
        f"message.\n\tWeightsUnpickler error: Unsupported global: GLOBAL {name} was"
        " not an allowed global by default. Please use `ember.serialization."
        f"add_safe_globals([{name}])` or the `ember.serialization.safe_globals(["
        f"{name}])` context manager to allowlist this global if you trust this "
        f"class/function.\n\n{_DOCS}")
