"""The nodes a gradient made with ``create_graph=True`` has, as torch names them: its
``grad_fn`` and the names of its ``next_functions`` (what a user printing the graph sees),
with the second derivative's values.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is not
installed.
"""
from __future__ import annotations

import pytest
from oracle import same


def _names(t):
    """A gradient's node and the nodes it feeds from (None where an edge has none)."""
    fn = t.grad_fn
    if fn is None:
        return None
    return fn.name(), tuple(None if f is None else f.name() for f, _ in fn.next_functions)


def _grad_graph(expr):
    """What ``expr(t, x, y)``'s gradients are under create_graph, and their own gradients."""
    def body(t):
        x = t.tensor([[0.3, -1.2, 0.7], [1.1, 0.45, -0.6]], dtype=t.float64, requires_grad=True)
        y = t.tensor([[0.5, 0.2, -0.8], [-0.3, 0.9, 1.3]], dtype=t.float64, requires_grad=True)
        out = expr(t, x, y).double()
        grads = t.autograd.grad((out * out).sum(), [x, y], create_graph=True, allow_unused=True)
        made = [g for g in grads if g is not None and g.requires_grad]
        second = t.autograd.grad(sum(g.sum() for g in made), [x, y], allow_unused=True)
        return [None if g is None else _names(g) for g in grads], list(grads), list(second)
    return body


_NORM_LIKE = {
    "norm": lambda t, x, y: x.norm(),
    "norm_dim": lambda t, x, y: x.norm(dim=1),
    "vector_norm_1": lambda t, x, y: t.linalg.vector_norm(x, 1),
    "vector_norm_3": lambda t, x, y: t.linalg.vector_norm(x, 3),
    "vector_norm_1.5": lambda t, x, y: t.linalg.vector_norm(x, 1.5, dim=0),
    "vector_norm_0.5": lambda t, x, y: t.linalg.vector_norm(x, 0.5),
    "vector_norm_inf": lambda t, x, y: t.linalg.vector_norm(x, float("inf")),
    "linalg_norm": lambda t, x, y: t.linalg.norm(x),
    "dist": lambda t, x, y: t.dist(x, y),
    "pairwise_distance": lambda t, x, y: t.nn.functional.pairwise_distance(x, y),
    "matrix_norm": lambda t, x, y: t.linalg.matrix_norm(x[:, :2]),
    "abs": lambda t, x, y: x.abs(),
    "l1_loss": lambda t, x, y: t.nn.functional.l1_loss(x, y),
    "softsign": lambda t, x, y: t.nn.functional.softsign(x),
    "atan2": lambda t, x, y: t.atan2(x, y),
    "copysign": lambda t, x, y: t.copysign(x, y),
}


@pytest.mark.parametrize("name", sorted(_NORM_LIKE))
def test_masked_fill_and_sgn_nodes(name):
    # torch's formulas mask with masked_fill and take signs with sgn
    same(_grad_graph(_NORM_LIKE[name]))


def test_vector_norm_gradient_from_a_program():
    # take_along_dim, then a 3-norm: the gradient's nodes under create_graph
    def body(t):
        x = t.tensor([[0.52, -0.65], [-1.93, -1.0]], requires_grad=True)
        v = t.take_along_dim(x.mean().expand(1), t.tensor([0]), -1)
        g, = t.autograd.grad(t.linalg.vector_norm(v, 3), [v], create_graph=True)
        return _names(g), g
    same(body)
