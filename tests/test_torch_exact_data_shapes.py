"""A tensor whose ``.data`` was replaced by one of another shape between forward and
backward: the gradient it receives keeps the shape the graph recorded, so accumulating it
into ``.grad`` (copying it into a buffer laid out as the new data, or adding it into a
``.grad`` of the new shape) raises torch's size errors, eager and under ember.compile,
instead of NumPy's broadcasting errors or a ``.grad`` silently of the old shape."""
from __future__ import annotations

import pytest

import ember
from oracle import same


def _compile(lib):
    """ember.compile, or on torch's side the function itself (eager's values are compared)."""
    return lib.compile if lib is ember else (lambda f: f)


def _matmul_loss(t, compiled):
    """``(x @ W).sum()`` of x (4, 3) and a leaf W (3, 2), and W."""
    t.manual_seed(0)
    x = t.randn(4, 3)
    w = t.randn(3, 2, requires_grad=True)
    f = (lambda a, b: (a @ b).sum())
    return (_compile(t)(f) if compiled else f)(x, w), w


# the new data's shape, and the .grad set (of that shape) before backward, or None
_CASES = [((2, 3), None), ((6,), None), ((2,), None), ((3, 2, 1), None), ((1, 2), None),
          ((2, 3), "zeros"), ((1, 2), "zeros"), ((3, 2, 1), "zeros")]


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("shape, grad", _CASES)
def test_leaf_data_replaced_by_another_shape(shape, grad, compiled):
    def body(t):
        loss, w = _matmul_loss(t, compiled)
        w.data = t.ones(*shape)
        if grad is not None:
            w.grad = t.zeros(*shape)
        loss.backward()
        return w.grad
    same(body)


@pytest.mark.parametrize("hook", ["post_accumulate", "tensor", "node_prehook"])
def test_leaf_data_replaced_with_hooks(hook):
    def body(t):
        loss, w = _matmul_loss(t, False)
        seen = []
        if hook == "post_accumulate":
            w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.shape))
        elif hook == "tensor":
            w.register_hook(lambda g: seen.append(g.shape))
        else:
            node = loss.grad_fn.next_functions[0][0].next_functions[1][0]
            node.register_prehook(lambda gs: seen.append(gs[0].shape))
        w.data = t.ones(2, 3)
        try:
            loss.backward()
        finally:
            out = [tuple(s) for s in seen]
        return out
    same(body)


@pytest.mark.parametrize("create_graph", [False, True])
def test_leaf_data_replaced_under_create_graph(create_graph):
    def body(t):
        loss, w = _matmul_loss(t, False)
        w.data = t.ones(2, 3)
        loss.backward(create_graph=create_graph)
        return w.grad
    same(body, check_warnings=False)  # (create_graph's reference-cycle warning)


@pytest.mark.parametrize("grad", [None, "zeros", "earlier_backward"])
def test_retained_non_leaf_data_replaced(grad):
    """retain_grad's hook adds out of place (no copy into the new shape): a first gradient
    is kept in the old shape, as torch's; one added to a .grad of the new shape raises."""
    def body(t):
        t.manual_seed(0)
        x = t.randn(4, 3)
        w = t.randn(3, 2, requires_grad=True)
        h = w * 2
        h.retain_grad()
        loss = (x @ h).sum()
        if grad == "earlier_backward":
            loss.backward(retain_graph=True)
        h.data = t.ones(2, 3)
        if grad == "zeros":
            h.grad = t.zeros(2, 3)
        loss.backward()
        return h.grad, w.grad
    same(body)


def _affine(t, compiled):
    """``x @ W + b`` of x (4, 3) and leaves W (3, 2), b (2,), and W."""
    t.manual_seed(0)
    x = t.randn(4, 3)
    w = t.randn(3, 2, requires_grad=True)
    b = t.randn(2, requires_grad=True)
    f = (lambda a, m, c: a @ m + c)
    return (_compile(t)(f) if compiled else f)(x, w, b), w


# the root's new data (and its gradient's) shape: one its recorded shape (4, 2) does not
# broadcast to (torch's error, naming no node), or broadcasts to (the gradient summed to it)
@pytest.mark.parametrize("shape", [(1, 2), (2, 4, 2), (4, 1)])
@pytest.mark.parametrize("how", ["backward", "create_graph", "grad", "second_root"])
@pytest.mark.parametrize("compiled", [False, True])
def test_root_gradient_validated_against_recorded_shape(shape, how, compiled):
    def body(t):
        y, w = _affine(t, compiled)
        y.data = t.ones(*shape)
        g = t.ones(*shape)
        if how == "backward":
            y.backward(g)
        elif how == "create_graph":
            y.backward(g, create_graph=True)
        elif how == "grad":
            return t.autograd.grad(y, w, g)
        else:
            t.autograd.backward([(w * 1).sum(), y], [t.ones(()), g])
        return w.grad
    same(body, check_warnings=False)  # (create_graph's reference-cycle warning)


def test_root_of_one_node_into_leaves_validated():
    """A root whose node's edges lead to leaves alone (the engine's one-node pass)."""
    def body(t):
        t.manual_seed(0)
        w = t.randn(3, 2, requires_grad=True)
        z = t.randn(4, 3) @ w
        z.data = t.ones(1, 2)
        z.backward(t.ones(1, 2))
    same(body)


@pytest.mark.parametrize("shape", [(), (1, 1)])
def test_scalar_root_replaced_by_one_element_of_other_shape(shape):
    def body(t):
        y, w = _affine(t, False)
        loss = y.sum()
        loss.data = t.ones(shape)
        loss.backward()
        return w.grad
    same(body)


def test_root_gradient_cast_to_recorded_dtype():
    def body(t):
        y, w = _affine(t, False)
        y.retain_grad()
        y.data = t.ones(4, 2, dtype=t.float64)
        y.backward(t.ones(4, 2, dtype=t.float64))
        return w.grad, y.grad
    same(body)


@pytest.mark.parametrize("edge_taken", ["before", "after"])
def test_gradient_edge_of_an_output_whose_data_was_replaced(edge_taken):
    """An edge's output shape is the one its node recorded, taken before the .data
    replacement or after it (torch's is the node's input metadata)."""
    def body(t):
        w = t.randn(3, 2, requires_grad=True)
        y = w * 2
        if edge_taken == "before":
            edge = t.autograd.graph.get_gradient_edge(y)
        y.data = t.ones(1, 2)
        if edge_taken == "after":
            edge = t.autograd.graph.get_gradient_edge(y)
        return (t.autograd.grad([edge], [w], [t.ones(3, 2)], retain_graph=True),
                t.autograd.grad([edge], [w], [t.ones(1, 2)]))
    same(body)
