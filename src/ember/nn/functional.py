"""``ember.nn.functional``: neural-network functions mapped onto ember's ops."""
from __future__ import annotations

from .._ops.nn_ops import binary_cross_entropy_with_logits, linear, mse_loss
from .._ops.pointwise import relu as _relu, sigmoid, tanh

__all__ = ["binary_cross_entropy_with_logits", "linear", "mse_loss", "relu", "sigmoid",
           "tanh"]


def relu(input, inplace=False):
    """max(input, 0), elementwise."""
    return input.relu_() if inplace else _relu(input)
