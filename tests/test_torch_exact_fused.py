"""Gradients torch computes with backward ops of its own: under ``create_graph=True`` their
nodes carry torch's names (``NativeLayerNormBackwardBackward0``, ``NllLossBackwardBackward0``,
...) and feed from the same inputs, and their own gradients are torch's.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is not
installed.
"""
from __future__ import annotations

import pytest
from oracle import same
from test_torch_exact_nodes import _grad_graph, _names

_FUSED = {
    # zeros, then scatter_add: ScatterAddBackward0 with an empty first edge
    "cummax": lambda t, x, y: x.cummax(1)[0],
    "cummin_0d": lambda t, x, y: x[0, 0].cummin(0)[0],
    "take_along_dim": lambda t, x, y: t.take_along_dim(x, t.tensor([[2], [0]]), 1),
}


def _layer_norm(weight, bias):
    def expr(t, x, y):
        w = t.tensor([0.7, -1.3, 0.4], dtype=t.float64, requires_grad=True) if weight else None
        b = t.tensor([0.2, 0.1, -0.5], dtype=t.float64, requires_grad=True) if bias else None
        out = t.nn.functional.layer_norm(x, (3,), w, b)
        return out * y if weight else out  # (weight: a second-order term in y too)
    return expr


_FUSED.update({
    "layer_norm": _layer_norm(False, False),
    "layer_norm_affine": _layer_norm(True, True),
    "layer_norm_weight": _layer_norm(True, False),
    "layer_norm_all_dims": lambda t, x, y: t.nn.functional.layer_norm(x, (2, 3)) * y,
})


def test_layer_norm_parameter_gradients():
    """The bias's gradient comes from the same node: it requires grad as torch's does."""
    def body(t):
        x = t.tensor([[0.3, -1.2, 0.7], [1.1, 0.45, -0.6]], dtype=t.float64, requires_grad=True)
        w = t.tensor([0.7, -1.3, 0.4], dtype=t.float64, requires_grad=True)
        b = t.tensor([0.2, 0.1, -0.5], dtype=t.float64, requires_grad=True)
        out = t.nn.functional.layer_norm(x, (3,), w, b)
        gb, = t.autograd.grad(out.sum(), [b], create_graph=True)
        gs = t.autograd.grad((out * out).sum(), [x, w, b], create_graph=True)
        second = t.autograd.grad(sum((g * g).sum() for g in gs), [x, w, b])
        return gb.requires_grad, [_names(g) for g in gs], list(gs), list(second)
    same(body)


@pytest.mark.parametrize("name", sorted(_FUSED))
def test_fused_backward_nodes(name):
    same(_grad_graph(_FUSED[name]))
