"""``ember.nn.utils``: gradient clipping and parameter/vector conversion."""
from __future__ import annotations

from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters"]


def __getattr__(name):
    # rnn's pack utilities live in ember.nn.utils.rnn (another family's module).
    if name == "rnn":
        import importlib
        return importlib.import_module(f"{__name__}.rnn")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
