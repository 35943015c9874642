"""Which gradient becomes ``.grad`` as it is, and the versions gradients carry, as in torch.

torch's AccumulateGrad takes a gradient over (``_version`` 0) when nothing but the engine
holds it, also one a node passed through unchanged (``sub``'s, ``clone``'s, a view's) or one
a hook received or returned and did not keep; it copies one that something else still holds
(another input's buffer, the caller's gradient, a hook that kept it): ``copy_``, version 1.
``F.dropout(g, 0.0)`` returns ``g`` itself, so its version is the gradient's.

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import pytest
from oracle import same

_LOSSES = {
    "l1_loss": lambda t, x, c: (x - c).abs().mean(),
    "sub_then_mul": lambda t, x, c: ((x - c) * 2).sum(),
    "add_then_mul": lambda t, x, c: ((x + c) * 2).sum(),  # one gradient for both: one copy
    "x_plus_x": lambda t, x, c: ((x + x) * 2).sum(),
    "view": lambda t, x, c: (x.view(3) * 2).sum(),
    "clone": lambda t, x, c: (x.clone() * 2).sum(),
    "unsqueeze": lambda t, x, c: (x[None] * 2).sum(),
    "exp_plus_zero": lambda t, x, c: (x.exp() + 0).sum(),
    "l1_functional": lambda t, x, c: t.nn.functional.l1_loss(x, c),
}


@pytest.mark.parametrize("loss", sorted(_LOSSES))
def test_a_gradient_nobody_else_holds_is_taken_over(loss):
    def body(t):
        x = t.tensor([1., -2., 3.], requires_grad=True)
        c = t.tensor([0.5, 0.5, 0.5], requires_grad=True)
        _LOSSES[loss](t, x, c).backward()
        versions = [x.grad._version, None if c.grad is None else c.grad._version]
        return versions, x.grad, t.nn.functional.dropout(x.grad, 0.0)._version
    same(body)


_HOOKS = {
    "returns_none": lambda kept: (lambda g: None),
    "returns_new": lambda kept: (lambda g: g * 2),
    "keeps_it": lambda kept: (lambda g: kept.append(g)),
    "returns_kept": lambda kept: (lambda g: kept[0]),
}


@pytest.mark.parametrize("hook", sorted(_HOOKS))
def test_a_leaf_hooks_gradient_is_taken_over_unless_kept(hook):
    def body(t):
        x = t.tensor([1., -2., 3.], requires_grad=True)
        kept = [t.tensor([7., 8., 9.])]
        x.register_hook(_HOOKS[hook](kept))
        ((x - 1) * 2).sum().backward()
        return x.grad, x.grad._version, [x.grad is k for k in kept]
    same(body)


def test_node_hooks_and_roots():
    def body(t):
        x = t.tensor([1., -2., 3.], requires_grad=True)
        out = []
        for register in (lambda y: y.register_hook(lambda g: None),
                         lambda y: y.grad_fn.register_prehook(lambda go: None),
                         lambda y: y.grad_fn.register_hook(lambda gi, go: None)):
            x.grad = None
            y = x * 1
            register(y)
            (y - 2).sum().backward()
            out.append(x.grad._version)
        x.grad = None
        (x + 0).backward(t.ones(3))  # the caller's gradient: copied
        out.append(x.grad._version)
        x.grad = None
        x.backward(t.ones(3))
        out.append(x.grad._version)
        x.grad = None
        x.register_post_accumulate_grad_hook(lambda p: None)
        ((x - 1) * 2).sum().backward()
        ((x - 1) * 2).sum().backward()  # accumulated in place
        out.append(x.grad._version)
        return out, x.grad
    same(body)


_IDX = [0, 2]
_WRITTEN = {  # torch's formula writes into a zero tensor: 1 or 2 (see _grad_versions.py)
    "index_tensor": lambda t, x: x[t.tensor(_IDX)],
    "index_mask": lambda t, x: x[x > 0],
    "index_select": lambda t, x: x.index_select(1, t.tensor(_IDX)),
    "gather": lambda t, x: x.gather(1, t.tensor([[0], [1], [3]])),
    "take": lambda t, x: x.take(t.tensor(_IDX)),
    "masked_select": lambda t, x: x.masked_select(x > 0),
    "as_strided": lambda t, x: x.as_strided((2,), (1,)),
    "max": lambda t, x: x.max(),
    "min": lambda t, x: x.min(),
    "median": lambda t, x: x.median(),
    "nanmedian": lambda t, x: x.nanmedian(),
    "max_dim": lambda t, x: x.max(1)[0],
    "min_dim": lambda t, x: x.min(1)[0],
    "median_dim": lambda t, x: x.median(1)[0],
    "nanmedian_dim": lambda t, x: x.nanmedian(1)[0],
    "kthvalue": lambda t, x: x.kthvalue(2, 1)[0],
    "mode": lambda t, x: x.mode(1)[0],
    "sort": lambda t, x: x.sort(1)[0],
    "topk": lambda t, x: x.topk(2, 1)[0],
    "cummax": lambda t, x: x.cummax(1)[0],
    "cummin": lambda t, x: x.cummin(1)[0],
    "trace": lambda t, x: x.trace(),
    "maximum": lambda t, x: t.maximum(x, x.flip(0)),  # and the two gradients summed in place
    "minimum": lambda t, x: t.minimum(x, x.flip(0)),
    "fmax": lambda t, x: t.fmax(x, x.flip(0)),
    "view_then_max_dim": lambda t, x: x.view(4, 3).max(1)[0],
    "index_and_sort": lambda t, x: x[t.tensor(_IDX)] + x.sort(1)[0][:2],
    "narrow": lambda t, x: x.narrow(1, 1, 2),  # (no write)
    "amax": lambda t, x: x.amax(1),  # (no write)
    "unfold": lambda t, x: x.unfold(1, 2, 1),  # (UnfoldBackward0: no write)
}


@pytest.mark.parametrize("op", sorted(_WRITTEN))
def test_versions_of_gradients_torch_writes_in_place(op):
    def body(t):
        x = t.tensor([[0.45, 1.91, -0.3, 0.7], [1.2, -0.8, 0.1, 2.5], [0.3, 0.2, -1.0, 0.9]],
                     dtype=t.float64, requires_grad=True)
        y = _WRITTEN[op](t, x)
        g, = t.autograd.grad(y.sum(), x, retain_graph=True)
        seen = []
        x.register_hook(lambda grad: seen.append(grad._version))
        y.sum().backward()
        return (y.grad_fn.name(), g._version, seen, x.grad._version,
                t.nn.functional.dropout(x.grad, 0.0)._version, x.grad.t()._version, x.grad)
    same(body)


def test_shrunk_program_regenerated_view_of_a_leaf():
    # a view of a leaf changed in place under no_grad: its history is regenerated as
    # as_strided, whose gradient torch writes in place
    def body(t):
        x = t.tensor([1.74], requires_grad=True)
        v = x.T
        with t.no_grad():
            t.relu_(x[:])
        v.exp().sum().backward(retain_graph=True)
        return x.grad._version, t.nn.functional.dropout(x.grad, 0.0)._version
    same(body, check_warnings=False)  # (x.T of a 1-d tensor warns once per process)


# (take's graph-mode formula is a view of a flat sum: version 0, see docs/gradients.md)
@pytest.mark.parametrize("op", sorted(set(_WRITTEN) - {"take"}))
@pytest.mark.parametrize("outer", ["none", "square"])
def test_versions_of_gradients_torch_writes_in_place_under_create_graph(op, outer):
    # the formulas write in place whatever the mode: a gradient with no graph and one with a
    # graph (its incoming gradient requires grad) carry the same versions as without
    def body(t):
        x = t.tensor([[0.45, 1.91, -0.3, 0.7], [1.2, -0.8, 0.1, 2.5], [0.3, 0.2, -1.0, 0.9]],
                     dtype=t.float64, requires_grad=True)
        y = _WRITTEN[op](t, x)
        y = y if outer == "none" else y * y
        g, = t.autograd.grad(y.sum(), x, create_graph=True)
        versions = g._version, g.detach()._version
        if not g.requires_grad:
            return g, versions
        h, = t.autograd.grad(g.sum(), x)  # the graph still works
        return g, versions, h
    # (node names of second derivatives are not compared here: versions and values are)
    same(body, grad_fn=False)


_TWO_GRADIENTS = {  # two gradients for one input, summed by the engine's input buffer
    "mse_loss_of_itself": lambda t, x, c: t.nn.functional.mse_loss(x, x, reduction="none"),
    "mul_by_itself": lambda t, x, c: x * x,
    "two_nodes": lambda t, x, c: x.exp() + x.sin(),
    "passed_through": lambda t, x, c: x + x.exp(),  # the first is the caller's: new sum
    # broadcast from a row: summing the leading dimension is a view in torch, never summed
    # into in place
    "broadcast_row": lambda t, x, c: t.addcdiv(c, x[0], x[0], value=-1.95),
    "broadcast_row_twice": lambda t, x, c: (c + x[0]) * (c * x[0]),
    # broadcast along a dimension of one: a sum of its own, summed into in place
    "broadcast_column": lambda t, x, c: t.addcdiv(c, x[:, :1], x[:, :1]),
}


@pytest.mark.parametrize("case", sorted(_TWO_GRADIENTS))
@pytest.mark.parametrize("take", ["grad", "backward"])
def test_versions_of_two_gradients_summed(case, take):
    def body(t):
        x = t.tensor([[0.5, -1.25, 2.0], [1.5, 0.75, -0.5]], requires_grad=True)
        c = t.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        y = _TWO_GRADIENTS[case](t, x, c).mean()
        if take == "grad":
            g, = t.autograd.grad(y, x)
            return g, g._version, g.diagonal()._version, g.detach()._version
        y.backward()
        return x.grad, x.grad._version
    same(body)


def test_shrunk_program_two_gradients_one_captured():
    def body(t):
        x = t.tensor([[[-0.07, -1.65]]], requires_grad=True)
        y = t.nn.functional.mse_loss(x, x, reduction="none")
        gy, gx = t.autograd.grad(y.sum(), [y, x])
        return gx, gx._version, gx.diagonal()._version, gy._version
    same(body)


def test_shrunk_program_regenerated_view_under_create_graph():
    def body(t):
        x = t.tensor([[-1.78, -0.32]], requires_grad=True)
        v = x.transpose(-1, 1)
        with t.inference_mode():
            x.index_fill_(0, t.tensor([0]), 2.0)
        gv, gx = t.autograd.grad(v.sum(), [v, x], create_graph=True)
        return gx, gx._version, gx.detach()._version, gv._version
    same(body)


_ONE_OP_TWICE = {  # the op's gradient first in the input's buffer, then the second one
    "take": lambda t, x: x.take(t.tensor([0, 2])),
    "index_select": lambda t, x: x.index_select(1, t.tensor([0, 2])),
    "gather": lambda t, x: x.gather(1, t.tensor([[0], [1], [3]])),
    "scatter": lambda t, x: x.scatter(1, t.tensor([[0], [1], [2]]), 0.0),
    "index_fill": lambda t, x: x.index_fill(1, t.tensor([1]), 0.0),
    "trace": lambda t, x: x.trace(),  # torch's gradient: a view, never summed into
    "diagonal": lambda t, x: x.diagonal(),
    "sort": lambda t, x: x.sort(1)[0],
    "expand": lambda t, x: x[:1].expand(3, 4),
    "view": lambda t, x: x.view(12),
    "t": lambda t, x: x.t(),
    "unfold": lambda t, x: x.unfold(1, 2, 1),
    "narrow": lambda t, x: x.narrow(1, 1, 2),
    "cumsum": lambda t, x: x.cumsum(1),
    "exp": lambda t, x: x.exp(),
    "sum_dim": lambda t, x: x.sum(1),
    "pad": lambda t, x: t.nn.functional.pad(x, (1, 1)),
    "cat": lambda t, x: t.cat([x, x]),
    "masked_select": lambda t, x: x[x > 0],
}


@pytest.mark.parametrize("op", sorted(_ONE_OP_TWICE))
@pytest.mark.parametrize("other", ["itself", "mul"])
def test_versions_of_an_ops_gradient_summed_with_another(op, other):
    def body(t):
        x = t.tensor([[0.45, 1.91, -0.3, 0.7], [1.2, -0.8, 0.1, 2.5], [0.3, 0.2, -1.0, 0.9]],
                     requires_grad=True)
        f = _ONE_OP_TWICE[op]
        second = f(t, x).sum() if other == "itself" else (x * 2).sum()
        g, = t.autograd.grad(second + f(t, x).sum(), x)  # (the later node runs first)
        return g, g._version
    same(body)


def test_binary_cross_entropy_with_logits_gradient_versions():
    # torch's formulas write their results in place (fewer times under create_graph)
    import itertools

    def body(t):
        versions = []
        for pw, w, reduction, graph in itertools.product(
                [False, True], [False, True], ["mean", "sum", "none"], [False, True]):
            x = t.tensor([[0.3, -0.2], [1.0, 0.5]], dtype=t.float64, requires_grad=True)
            target = t.tensor([[0.1, 0.9], [0.4, 0.5]], dtype=t.float64, requires_grad=True)
            y = t.nn.functional.binary_cross_entropy_with_logits(
                x, target, reduction=reduction,
                pos_weight=t.tensor([1.5, 0.5], dtype=t.float64) if pw else None,
                weight=t.tensor([2.0, 0.5], dtype=t.float64) if w else None)
            gx, gt = t.autograd.grad(y.sum(), [x, target], create_graph=graph)
            versions.append((gx._version, gt._version))
        return versions, t.diagonal(gx, 1)._version
    same(body)


def test_take_gradient_version_under_create_graph():
    # torch's formula is zeros(...).put_(...): one write, recorded (PutBackward0) or not
    def body(t):
        x = t.tensor([0.38, -1.2], dtype=t.float64, requires_grad=True)
        y = t.take(x.view(2), t.tensor([0, 0, 1]))
        versions = []
        for graph in (False, True):
            g, = t.autograd.grad(y.pow(2).sum(), [x], create_graph=graph, retain_graph=True)
            with t.inference_mode():
                part = g[0::3]
            versions.append((g._version, part._version))
        return versions, g
    same(body)
