"""Gradients torch computes with backward ops of its own: under ``create_graph=True`` their
nodes carry torch's names (``NativeLayerNormBackwardBackward0``, ``NllLossBackwardBackward0``,
...) and feed from the same inputs, and their own gradients are torch's.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is not
installed.
"""
from __future__ import annotations

import pytest
from oracle import same
from test_torch_exact_nodes import _grad_graph

_FUSED = {
    # zeros, then scatter_add: ScatterAddBackward0 with an empty first edge
    "cummax": lambda t, x, y: x.cummax(1)[0],
    "cummin_0d": lambda t, x, y: x[0, 0].cummin(0)[0],
    "take_along_dim": lambda t, x, y: t.take_along_dim(x, t.tensor([[2], [0]]), 1),
}


@pytest.mark.parametrize("name", sorted(_FUSED))
def test_fused_backward_nodes(name):
    same(_grad_graph(_FUSED[name]))
