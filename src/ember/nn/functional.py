"""``ember.nn.functional``: neural-network functions mapped onto ember's ops.

Each nn op family (``ember._ops.activation``, ``loss``, ``conv``, ``pooling``,
``normalization``, ``nn_ops``) lists its ``nn.functional`` names in ``FUNCTIONAL``; this module
is their union, with the functions torch writes in Python on top of them
(``_functional_attention``, ``_functional_composites``).
"""
from __future__ import annotations

from .._ops import (activation, attention, conv, conv_tbc, embedding_bag, fractional_pool,
                    grid_sample, indexing, loss, nn_ops, normalization, pooling, upsample)
from .._ops.pointwise import relu as _relu, sigmoid, tanh  # noqa: F401
from ._functional_attention import multi_head_attention_forward  # noqa: F401
from ._functional_composites import *  # noqa: F403
from ._functional_composites import __all__ as _composites
from ._linear_cross_entropy import linear_cross_entropy  # noqa: F401


def relu(input, inplace=False):
    """max(input, 0), elementwise."""
    return input.relu_() if inplace else _relu(input)


def _collect(*families):
    names = []
    for family in families:
        for name in getattr(family, "FUNCTIONAL", ()):
            globals()[name] = getattr(family, name)
            names.append(name)
    return names


__all__ = (["linear_cross_entropy", "multi_head_attention_forward", "relu", "sigmoid", "tanh",
            *_composites]
           + _collect(nn_ops, activation, loss, conv, pooling, upsample, normalization, attention, indexing,
                      embedding_bag, grid_sample, fractional_pool, conv_tbc))

from .._out import install as _install_out  # noqa: E402  (once the namespace is complete)

_install_out("nn.functional", globals())
