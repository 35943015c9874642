"""The graph a create_graph pass records through derivative formulas is torch's: C++'s
``1 - x`` in a formula is a filled tensor minus ``x`` in place (SubBackward0 whose first edge
is None), ``x * 2`` and ``x + 1`` are the Scalar overloads (MulBackward1, AddBackward1), an
in-place op that needs its input's old value saves a clone of it (CloneBackward0), and the
values of the gradients and of their own derivatives stay torch's.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import pytest
from oracle import graph_tree, same

_UNARY = {
    "atanh": lambda t, x: t.atanh(x),
    "logit": lambda t, x: t.logit(x),
    "asin": lambda t, x: t.asin(x),
    "acos": lambda t, x: t.acos(x),
    "asinh": lambda t, x: t.asinh(x),
    "sinc": lambda t, x: t.sinc(x),
    "addcmul": lambda t, x: t.addcmul(x, x.cos(), x.sin(), value=0.5),
    "addcdiv": lambda t, x: t.addcdiv(x, x.cos(), x.exp(), value=0.5),
    "sin_": lambda t, x: x.clone().sin_(),
    "mul_self": lambda t, x: x.clone().mul_(x),
    "pow_on_view": lambda t, x: _written_view(x),
}


def _written_view(x):
    y = x.clone()
    y[1:].pow_(2)
    return y


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_second_order_graph(name):
    def body(t):
        w = t.tensor([0.3, -0.2, 0.6], dtype=t.float64, requires_grad=True)
        x = w * 1  # (an input with a node: every formula's node is then shown)
        go = t.tensor([1.0, 0.5, -2.0], dtype=t.float64, requires_grad=True)
        g, = t.autograd.grad(_UNARY[name](t, x), [w], go * 1, create_graph=True)
        gg = t.autograd.grad((g * g).sum(), [w, go])
        return g, graph_tree(g.grad_fn, 7), gg
    same(body)


@pytest.mark.parametrize("alpha", [1, 2.5])
@pytest.mark.parametrize("source_shape", [(1, 4), (2, 4), ()], ids=["row", "rows", "scalar"])
def test_index_add_source_gradient(source_shape, alpha):
    # torch: maybe_multiply(grad.index_select(dim, index).expand_as(source), alpha), an
    # ExpandBackward0 also where the shapes agree and MulBackward1 for alpha != 1
    def body(t):
        x = (t.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8], [0.9, 1.0, 1.1, 1.2]],
                      dtype=t.float64) if source_shape else t.tensor(0.5, dtype=t.float64))
        s = t.full(source_shape, 0.7, dtype=t.float64, requires_grad=True)
        idx = t.tensor([0, 2][:source_shape[0]] if source_shape else [0])
        out = t.index_add(x, 0, idx, s * s, alpha=alpha)
        go = t.ones_like(out, requires_grad=True)
        g, = t.autograd.grad(out.exp(), [s], go * 2, create_graph=True)
        gg = t.autograd.grad((g * g).sum(), [s, go])
        return g, graph_tree(g.grad_fn, 7), gg
    same(body)


@pytest.mark.parametrize("accumulate", [False, True])
def test_put_and_take_gradients(accumulate):
    # put is an op of its own (PutBackward0), and take's gradient is torch's
    # zeros_like(self).put_(index, grad, accumulate=True)
    def body(t):
        w = t.tensor([[0.3, -0.2, 0.6], [0.1, 0.9, -0.4]], dtype=t.float64, requires_grad=True)
        s = t.tensor([0.5, -1.5], dtype=t.float64, requires_grad=True)
        x = w * 1
        put = t.put(x.t(), t.tensor([4, -1]), s * s, accumulate=accumulate)
        taken = t.take(x, t.tensor([[0, 0], [5, 2]]))
        written = x.clone().put_(t.tensor([1, 1] if accumulate else [1, 3]), s, accumulate)
        out = put.exp().sum() + (taken * taken).sum() + written.sin().sum()
        g = t.autograd.grad(out, [w, s], create_graph=True)
        gg = t.autograd.grad(sum((v * v).sum() for v in g), [w, s])
        trees = [graph_tree(v.grad_fn, 7) for v in g]
        return (put, put._version, written._version, g, trees, gg,
                put.grad_fn.name(), written.grad_fn.name())
    same(body)


@pytest.mark.parametrize("case", ["long_index", "dtype", "numel", "range", "empty"])
def test_put_errors(case):
    def body(t):
        x = t.zeros(2, 3)
        args = {"long_index": (t.tensor([0], dtype=t.int32), t.ones(1)),
                "dtype": (t.tensor([0]), t.ones(1, dtype=t.float64)),
                "numel": (t.tensor([0, 1, 2]), t.ones(2)),
                "range": (t.tensor([0, -7]), t.ones(2)),
                "empty": (t.tensor([0]), t.ones(1))}[case]
        return (t.zeros(0) if case == "empty" else x).put_(*args)
    same(body)


@pytest.mark.parametrize("values, dim", [
    ([[-1.58, 0.0]], -1),
    ([1.5, 0.0, -2.0, 0.5], 0),
    ([[0.0, 1.5], [2.0, -0.5], [1.0, 0.0]], 0),
    ([0.0, 2.0, 0.0, 3.0], 0),
], ids=["last_zero", "one_zero", "zero_first_and_last", "two_zeros"])
def test_cumprod_gradient_with_zeros(values, dim):
    # torch's formula for an input with zeros, under create_graph: slice k of zeros written
    # (copy_) for each k, a CopySlices per k; its own derivative stays the exact one
    def body(t):
        x = t.tensor(values, dtype=t.float64, requires_grad=True)
        y = x.cumprod(dim)
        weights = t.arange(1., y.numel() + 1, dtype=t.float64).reshape(y.shape)
        g, = t.autograd.grad((y * weights).sum(), x, create_graph=True)
        gg, = t.autograd.grad((g * g).sum(), x)
        return g, graph_tree(g.grad_fn, 8), gg
    same(body)
