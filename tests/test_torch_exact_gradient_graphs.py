"""The graph a ``create_graph`` gradient records, node by node, as torch's formulas build
it: ``std_backward``'s ``masked_fill``, ``var_backward``'s constant where the degrees of
freedom are not positive and no unsqueeze back onto one dimension, ``cat``'s gradient as one
slice per input and ``stack``'s as one select per input, ``sinc``'s quotient before the
gradient multiplies it, a view regenerated after its base stopped requiring grad; and the
dtype of ``where`` between two Python numbers (the default dtype, as torch's).

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip without torch.
"""
from __future__ import annotations

import itertools
import warnings

import pytest
from oracle import graph_tree, same

_INPUTS = {"0-dim": 0.22, "one": [0.22], "two": [1., 2.], "equal": [1., 1.],
           "matrix": [[1., 3.], [2., 2.5]], "row": [[1., 3.]]}


def _moment_graphs(t, data, dtype):
    """Each moment's gradient and its graph, over dims and corrections (0 to 2 degrees of
    freedom short)."""
    out = []
    dims = [None, 0, -1] if isinstance(data, list) else [None]
    for fn, dim, correction in itertools.product(["std", "var"], dims, [1, 2, 3]):
        x = t.tensor(data, dtype=getattr(t, dtype), requires_grad=True)
        kw = {} if dim is None else {"dim": dim}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (degrees of freedom <= 0)
            y = getattr(x, fn)(correction=correction, **kw)
        g, = t.autograd.grad(y.sum(), x, create_graph=True)
        out.append((fn, dim, correction, g, graph_tree(g.grad_fn)))
    return out


@pytest.mark.parametrize("data", sorted(_INPUTS))
def test_moment_gradient_graph(data):
    same(lambda t: _moment_graphs(t, _INPUTS[data], "float32"), check_warnings=False)


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_moment_gradient_graph_of_other_dtypes(dtype):
    """A 0-dim gradient of another dtype times the default dtype's constant: torch's cast."""
    same(lambda t: _moment_graphs(t, _INPUTS["two"], dtype), rtol=1e-3, check_warnings=False)


def test_std_gradient_accumulated_with_create_graph():
    def body(t):
        x = t.tensor(0.22, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x.std().exp().sum().backward(create_graph=True)
        return x.grad, graph_tree(x.grad.grad_fn)
    same(body)


@pytest.mark.parametrize("a, b", [(1., 2.), (1, 2), (1, 2.), (True, False), (1j, 2),
                                  (True, 2.5), (float("nan"), float("inf"))])
def test_where_between_two_numbers(a, b):
    same(lambda t: t.where(t.tensor([1., 2.]) > 1, a, b))


_JOINS = {
    "cat": lambda t, a, b: t.cat([a, b], 0), "cat_dim1": lambda t, a, b: t.cat([a, a], 1),
    "cat_one": lambda t, a, b: t.cat([a], 0),
    "cat_legacy_empty": lambda t, a, b: t.cat([t.zeros(0, requires_grad=True), a, b]),
    "hstack": lambda t, a, b: t.hstack([a, a]), "vstack": lambda t, a, b: t.vstack([a, b]),
    "column_stack": lambda t, a, b: t.column_stack([a, a]),
    "block_diag": lambda t, a, b: t.block_diag(a, b),
    "stack": lambda t, a, b: t.stack([a, a], 1), "stack_last": lambda t, a, b: t.stack([b, b], -1),
}


@pytest.mark.parametrize("name", sorted(_JOINS))
def test_join_gradient_graph(name):
    def body(t):
        a = t.tensor([[1., 2.]], requires_grad=True)
        b = t.tensor([[3., 4.], [5., 6.]], requires_grad=True)
        w = t.tensor(2., requires_grad=True)
        grads = t.autograd.grad((_JOINS[name](t, a, b) * w).sum(), [a, b], create_graph=True,
                                allow_unused=True)
        return [(g, None if g is None else graph_tree(g.grad_fn, 2)) for g in grads]
    same(body)


@pytest.mark.parametrize("how", ["detach_", "requires_grad_", "detach_nonleaf"])
@pytest.mark.parametrize("write", ["index", "slice", "add_"])
def test_view_regenerated_after_its_base_stopped_requiring_grad(how, write):
    """A view of a base that no longer requires grad (detached in place), written through the
    base: torch regenerates the view's AsStridedBackward0, with no edge."""
    def body(t):
        x = t.tensor([1.2, -0.67], requires_grad=True)
        base = x * 1 if how == "detach_nonleaf" else x
        v = base.view(1, -1)
        if how == "requires_grad_":
            base.requires_grad_(False)
        else:
            base.detach_()
        if write == "index":
            base[t.tensor([1, -1, 0])] = -0.21
        elif write == "slice":
            base[0:1] = -0.21
        else:
            base.add_(1)
        y = v * 2
        y.sum().backward()
        return v, v.is_leaf, graph_tree(v.grad_fn), graph_tree(y.grad_fn), x.grad
    same(body)


def test_sinc_gradient_graph():
    def body(t):
        x = t.tensor([[-1.22, 0.0, 1.0], [-0.51, 1.0, -0.77]], requires_grad=True)
        w = t.tensor([1., 2., 3.], requires_grad=True)
        g, = t.autograd.grad((x.sinc() * w).sum(), [x], create_graph=True)
        gg, = t.autograd.grad(g.sum(), [x])
        return g, graph_tree(g.grad_fn, 4), gg
    same(body)
