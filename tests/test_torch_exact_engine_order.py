"""When the engine does what, as torch's does: tensor hooks of a gradient that autograd.grad
captures run after the capture when their node runs (before it otherwise); a node's edges
(and the refusal to regenerate a stale view made in inference or no_grad mode) are taken
before an in-place op's own checks and its write; a ``NotImplemented`` node has an edge for
every operand that requires grad, also one no edge leads to; printing a tensor reads its
grad_fn (regenerating a view's, or printing grad_fn=<Invalid> where that is refused).

Each body runs on PyTorch 2.13 and on ember (``oracle.same``); the tests skip when torch is
not installed.
"""
from __future__ import annotations

import pytest
from oracle import error_of, same


def test_hooks_of_captured_gradients():
    def body(t):
        x = t.tensor([[-1.13, 0.38, -1.56], [1.87, 0.14, 2.0]], requires_grad=True)
        y = x.abs()
        y.register_hook(lambda g: g * 2)
        both = t.autograd.grad(y.pow(2).sum(), [y, x], retain_graph=True)  # y's node runs
        alone = t.autograd.grad(y.pow(2).sum(), [y], retain_graph=True)  # it does not
        y.retain_grad()
        retained = t.autograd.grad(y.pow(2).sum(), [y, x], retain_graph=True), y.grad
        leaf = t.tensor([1., 2.], requires_grad=True)
        leaf.register_hook(lambda g: g * 10)
        return both, alone, retained, t.autograd.grad((leaf * 3).sum(), leaf)
    same(body)


@pytest.mark.parametrize("mode", ["inference_mode", "no_grad"])
def test_stale_view_operand_refused_before_the_ops_checks(mode):
    def body(t):
        x = t.tensor([[1.44, 2.0, -0.57], [0.29, -1.71, 1.68]], requires_grad=True)
        with getattr(t, mode)():
            v = t.movedim(x, -1, 0)
        with t.no_grad():
            y = t.sinc(v)
            x.mul_(2)
        target = y.narrow(-2, 0, 1)
        shape_error = error_of(lambda: target.addcmul_(v, y))  # (also a shape mismatch)
        same_shape = error_of(lambda: y.add_(v))  # the fast in-place path
        return shape_error, same_shape, y
    same(body)


def test_not_implemented_node_edges():
    def body(t):
        x = t.tensor([[1.25, 1.76], [0.31, 0.28]], requires_grad=True)
        w = t.tensor([-1.78, -1.0], requires_grad=True)
        with t.inference_mode():
            v = t.swapaxes(x, 0, 0)
        plain = t.tensor([1.5, 2.5])

        def edges(r):
            return [None if fn is None else fn.name() for fn, _ in r.grad_fn.next_functions]
        return [edges(r) for r in (v // w, w // v, plain // w, w // plain, w // 2, w // w)]
    same(body)


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_repr_reads_grad_fn_as_torch_does(mode):
    # a view regenerates its history when printed; one that may not be regenerated prints
    # grad_fn=<Invalid>
    def body(t):
        x = t.tensor([1., 2., 3.], requires_grad=True)
        y = x * 2
        regenerated = y[0:1]
        with getattr(t, mode)():
            stale = y[1:]
        y.mul_(2)
        return repr(regenerated), repr(stale)
    same(body)
