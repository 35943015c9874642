"""``ember.nn.utils``: gradient clipping, parameter/vector conversion, packed sequences
(``rnn``) and calls with substituted parameters (``stateless``)."""
from __future__ import annotations

from . import rnn, stateless  # noqa: F401 - submodules, as torch.nn.utils has them
from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters"]
