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
from oracle import graph_tree, same

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
        return v.grad_fn.name(), g, graph_tree(g.grad_fn), gg
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


_WRITES = {
    "mul_constant": lambda t, v, o: v.mul_(2.5),
    "sin_": lambda t, v, o: v.sin_(),
    "mul_other": lambda t, v, o: v.mul_(o),
    "addcmul_other": lambda t, v, o: v.addcmul_(o, o),
    "copy_other": lambda t, v, o: v.copy_(o),
    "fill_": lambda t, v, o: v.fill_(0.5),
    "zero_": lambda t, v, o: v.zero_(),
    "setitem": lambda t, v, o: v.__setitem__(0, o[0]),
}
_REGIONS = {
    "row": lambda x: x[1],
    "columns": lambda x: x[:, ::2],
    "transposed_block": lambda x: x[1:, 1:].t(),
}


@pytest.mark.parametrize("region", sorted(_REGIONS))
@pytest.mark.parametrize("write", sorted(_WRITES))
def test_gradient_graph_through_copy_slices(write, region):
    # The base's CopySlices under create_graph: the gradient copied into a tensor of the
    # base's geometry (CopyBackwards), the view's region of it as_strided, the in-place op's
    # formula run on a clone of that, its result copied back (a CopySlices of its own).
    def body(t):
        w = t.tensor([[1.2, -0.4, 0.3, 0.9], [0.5, -1.1, 0.7, 0.2],
                      [-0.6, 0.8, 1.5, -0.3]], dtype=t.float64, requires_grad=True)
        base = w.sin()  # (saves w, not its result the write changes)
        v = _REGIONS[region](base)
        o = t.full(v.shape, 0.7, dtype=t.float64, requires_grad=True)
        _WRITES[write](t, v, o * 1)
        go = t.ones(3, 4, dtype=t.float64, requires_grad=True)
        g = t.autograd.grad(base, [w, o], go * 1.5, create_graph=True, allow_unused=True)
        used = [x for x in g if x is not None and x.requires_grad]
        gg = t.autograd.grad(sum((x * x).sum() for x in used), [w, o, go], allow_unused=True)
        return g, [graph_tree(x.grad_fn, 6) for x in used], gg
    same(body)


def test_copy_slices_shrunk_program():
    def body(t):
        seen = []
        x = t.tensor([[[-0.96, 1.89, 0.33], [0.29, 0.88, 1.59]],
                      [[1.37, 1.0, 0.5], [-0.41, 0.0, -1.05]]], requires_grad=True)
        y = t.erfc(x)
        y[0:1, :2].index_add_(0, t.tensor([0]), t.tensor([[[-0.46, -1.32, 1.0],
                                                              [0.79, 1.66, 0.0]]]))
        x.register_hook(lambda g: seen.append(graph_tree(g.grad_fn)) or g + 1)
        g, = t.autograd.grad(t.nn.functional.tanhshrink(y).mean(), [x], create_graph=True)
        gg, = t.autograd.grad(g.sum(), [x])
        return seen, g, gg
    same(body)


def test_view_of_a_base_transposed_in_place_in_inference_mode():
    # the view is regenerated from its own geometry (as_strided), not from the view ops that
    # made it (which the base's new layout refuses)
    def body(t):
        base = t.tensor([[0.0, -0.18, -1.11], [1.24, 0.95, 0.37]], requires_grad=True)
        flat = base.ravel()
        with t.inference_mode():
            base.t_()
        return flat.grad_fn.name(), flat._version, flat * 1, t.logsumexp(flat, 0)
    same(body)


@pytest.mark.parametrize("then", ["retained_later_write", "held_by_an_op", "released",
                                  "second_write_of_base"])
def test_version_error_names_the_regenerated_view(then):
    """The result an in-place op on a view saves, changed again before backward: torch's
    error names the view's regenerated node ("output 0 of AsStrided") while that node lives
    (a later op's node holds it), else the op's own ("of Reciprocal")."""
    def body(t):
        x = t.tensor([[0.5, -1.5, 2.0], [1.25, 0.75, -0.5]], requires_grad=True)
        base = x * 2
        view = base.view(3, 2)
        view.reciprocal_()
        if then == "held_by_an_op":
            loss = view.sum()
            view.add_(1)
            loss.backward()
        elif then == "retained_later_write":
            view.fill_(t.tensor(-1.0))
            view.mean().backward(retain_graph=True)
        elif then == "second_write_of_base":
            base.mul_(3)
            base.sum().backward()
        else:
            view.add_(1)
            view.sum().backward()
    same(body)


def test_a_selected_view_of_a_base_squeezed_in_place_is_regenerated():
    """x[-1] of a (1,)-shaped base that squeeze_ then makes 0-d: replaying select on the new
    base would fail (IndexError); torch regenerates the view as an as_strided of its own
    geometry (difftest program 22000980)."""
    def body(t):
        x = t.tensor([-0.53], dtype=t.float64, requires_grad=True)
        base = x.exp()
        view = base[-1]
        base.squeeze_()
        out = t.addcdiv(view, view, base, value=-1.87)
        out.backward()
        return out, view.grad_fn.name(), x.grad
    same(body)
