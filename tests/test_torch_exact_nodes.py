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


_NUMBER_OVERLOADS = {
    "tan": lambda t, x, y: x.tan(),
    "sqrt": lambda t, x, y: x.abs().sqrt(),
    "expm1": lambda t, x, y: x.expm1(),
    "log1p": lambda t, x, y: x.abs().log1p(),
    "log2": lambda t, x, y: x.abs().log2(),
    "log10": lambda t, x, y: x.abs().log10(),
    "exp2": lambda t, x, y: x.exp2(),
    "atan": lambda t, x, y: x.atan(),
    "erf": lambda t, x, y: x.erf(),
    "erfc": lambda t, x, y: x.erfc(),
    "erfinv": lambda t, x, y: (x / 2).erfinv(),
    "logaddexp": lambda t, x, y: t.logaddexp(x, y),
    "silu": lambda t, x, y: t.nn.functional.silu(x),
    "pow_number_base": lambda t, x, y: 2 ** x,
    "add_alpha": lambda t, x, y: t.add(x, y, alpha=2.0),
    "sub_alpha": lambda t, x, y: t.sub(x, y, alpha=0.5),
    "rsub_alpha": lambda t, x, y: t.rsub(x, y, alpha=3),
    "lerp": lambda t, x, y: t.lerp(x, y, 0.3),
    "var": lambda t, x, y: x.var(),
    "var_dim": lambda t, x, y: x.var(1),
    "std": lambda t, x, y: t.std(x, 1, correction=0),
    "std_mean_std": lambda t, x, y: t.std_mean(x, 1)[0],
    "std_mean_mean": lambda t, x, y: t.std_mean(x, 1)[1],
    "var_mean": lambda t, x, y: t.var_mean(x)[0] + t.var_mean(x)[1],
}


@pytest.mark.parametrize("name", sorted(_NUMBER_OVERLOADS))
def test_number_overload_nodes(name):
    # torch's formulas multiply, add and divide by numbers with mul.Scalar, add.Scalar and
    # div.Scalar: MulBackward1, AddBackward1, DivBackward1
    same(_grad_graph(_NUMBER_OVERLOADS[name]))


def test_erfinv_gradient_from_a_program():
    def body(t):
        x = t.tensor([[0.88, -0.38], [-0.5, 0.2]], requires_grad=True)
        g, = t.autograd.grad(x.erfinv().pow(2).sum(), [x], create_graph=True)
        return _names(g), g
    same(body, rtol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_gradient_is_its_own_node(reduction):
    # MseLossBackwardBackward0 for the input's and the target's gradient, and torch's second
    # derivatives through it
    def body(t):
        mse = t.nn.functional.mse_loss
        return _grad_graph(lambda t, x, y: mse(x, y, reduction=reduction).sum())(t)
    same(body)


def test_mse_loss_per_example_gradients_under_vmap():
    def body(t):
        w = t.tensor([0.5, -1.0, 2.0], dtype=t.float64)
        x = t.tensor([[1.0, 2.0, 3.0], [0.5, -0.5, 1.5]], dtype=t.float64)
        y = t.tensor([1.0, -2.0], dtype=t.float64)

        def loss(w, x, y):
            return t.nn.functional.mse_loss((w * x).sum(), y)
        return t.func.vmap(t.func.grad(loss), in_dims=(None, 0, 0))(w, x, y)
    same(body)
