"""``ember.nn.utils``: gradient clipping, parameter/vector conversion, packed sequences
(``rnn``), calls with substituted parameters (``stateless``), reparameterizations and pruning
(``prune``)."""
from __future__ import annotations

from . import parametrizations, parametrize, prune, rnn, stateless  # noqa: F401 - submodules
from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,
                     fuse_linear_bn_weights)
from .init_utils import (convert_conv2d_weight_memory_format,
                         convert_conv3d_weight_memory_format, skip_init)
from .reparam_hooks import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters",
           "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "remove_spectral_norm", "remove_weight_norm", "skip_init",
           "spectral_norm", "weight_norm"]
