"""A view regenerated after an in-place write to its base is torch's ``as_strided`` of the
base (``AsStridedBackward0``), and under ``create_graph`` its gradient records the graph of
``as_strided``'s formula: a zero storage the gradient is copied into (``CopySlices``, or
``IndexAddBackward0`` where the view's elements overlap) and the base's view of it. The
graph, the values and the second derivatives through it are torch's.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import pytest
from oracle import same

_VIEWS = {
    "broadcast_same_shape": lambda t, x: t.broadcast_to(x, (-1, 4)),
    "expanded": lambda t, x: x[:1].expand(3, 4),
    "transposed": lambda t, x: x.t(),
    "strided_slice": lambda t, x: x[:, ::2],
    "select": lambda t, x: x.select(1, 2),
    "diagonal": lambda t, x: x.diagonal(),
    "unsqueezed": lambda t, x: x.unsqueeze(0),
    "chained": lambda t, x: x.t()[1:].unsqueeze(-1),
}


def _tree(fn, depth=5):
    """The names of ``fn`` and of what it leads to, ``depth`` levels deep."""
    if fn is None:
        return None
    if depth == 0:
        return fn.name()
    return (fn.name(), [_tree(f, depth - 1) for f, _ in fn.next_functions])


def _written_base(t, leaf):
    """Where the base's in-place write happens: under no_grad on the leaf itself, or with
    grad recorded on a non-leaf base."""
    if leaf:
        x = t.tensor([[1.2, -0.4, 0.3, 0.9], [0.5, -1.1, 0.7, 0.2],
                      [-0.6, 0.8, 1.5, -0.3]], dtype=t.float64, requires_grad=True)
        return x, x
    w = t.tensor([[1.2, -0.4, 0.3, 0.9], [0.5, -1.1, 0.7, 0.2],
                  [-0.6, 0.8, 1.5, -0.3]], dtype=t.float64, requires_grad=True)
    return w, w * 1.5


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf_no_grad", "non_leaf"])
@pytest.mark.parametrize("view", sorted(_VIEWS))
def test_gradient_graph_through_regenerated_view(view, leaf):
    def body(t):
        src, base = _written_base(t, leaf)
        v = _VIEWS[view](t, base)
        if leaf:
            with t.no_grad():
                base.clamp_(-0.5, 1.0)
        else:
            base.mul_(base)
        g, = t.autograd.grad(v.exp().sum(), [src], create_graph=True)
        gg, = t.autograd.grad((g * g).sum(), [src])
        return v.grad_fn.name(), g, _tree(g.grad_fn), gg
    same(body)


def test_shrunk_program():
    def body(t):
        x = t.tensor([[2.0, 0.72, 2.0], [0.91, -1.01, -0.86]], requires_grad=True)
        v = t.broadcast_to(x, (-1, 3))
        with t.set_grad_enabled(False):
            x.clamp_(-0.01, 0.1)
        g, = t.autograd.grad(v.exp().sum(), [x], create_graph=True)
        return g, [(None if f is None else f.name(), n) for f, n in g.grad_fn.next_functions]
    same(body)
