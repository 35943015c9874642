"""The plan of autograd.grad / backward(inputs=) (engine._collect_planned: one walk when every
leaf reached is an input, a second one otherwise) against the three-walk plan it replaces on
the common path (_collect_dependencies + _plan_inputs, still used for batched passes): same
dependency counts, same nodes that lead to the inputs, same nodes that run."""
import pytest
from oracle import same

import ember
from ember.autograd import engine


def _graphs():
    a = ember.randn(3, requires_grad=True)
    b = ember.randn(3, requires_grad=True)
    c = ember.randn(3)
    h = a * 2
    diamond = (h.sin() + h.cos()) * b  # h reached twice; b a leaf beside it
    yield "diamond, leaf", [diamond.sum()], [a]
    yield "diamond, two leaves", [diamond.sum()], [a, b]
    yield "interior input", [diamond.sum()], [h]
    yield "interior and leaf", [diamond.sum()], [h, a]
    yield "interior and every leaf", [diamond.sum()], [h, a, b]
    side = (a.exp() * c).sum()  # a second root sharing a
    yield "two roots", [diamond.sum(), side], [b]
    yield "two roots, shared leaf", [diamond.sum(), side], [a]
    e = a.expand(2, 3) * b  # a view op on the way
    yield "expand", [e.sum()], [a, b]
    chain = a
    for _ in range(50):
        chain = chain * 1.5 + b
    yield "chain", [chain.sum()], [a]
    yield "chain, every leaf", [chain.sum()], [a, b]
    other = ember.randn(3, requires_grad=True)
    yield "unreachable input", [diamond.sum()], [other, a]


def _reached(root_nodes):
    seen, stack = set(), list(root_nodes)
    while stack:
        fn = stack.pop()
        if fn is not None and fn not in seen:
            seen.add(fn)
            stack.extend(child for child, _ in fn.next_functions)
    return seen


@pytest.mark.parametrize("capture", [True, False])
def test_one_walk_plans_as_the_three(capture):
    for name, roots, inputs in _graphs():
        root_nodes = [r.grad_fn for r in roots]
        old = engine._Task(False, True)
        engine._collect_dependencies(old, root_nodes)
        engine._plan_inputs(old, inputs, capture)
        new = engine._Task(False, True)
        engine._collect_planned(new, root_nodes, engine._input_targets(new, inputs, capture),
                                capture)
        assert new.deps == old.deps, name
        # (None: every node reached leads to an input, so none needs asking about)
        useful = _reached(root_nodes) if new.useful is None else set(new.useful)
        assert useful == set(old.useful), name
        assert new.run == old.run, name
        assert new.captures.keys() == old.captures.keys(), name


def test_grad_through_the_planned_walk_matches_torch():
    def body(torch):
        a = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
        b = torch.tensor([1.5, 0.25, -0.5], requires_grad=True)
        h = a * 2
        out = ((h.sin() + h.cos()) * b).sum()
        ga, gh = torch.autograd.grad(out, [a, h], retain_graph=True)
        (gb,) = torch.autograd.grad(out, [b], create_graph=True)
        out.backward(inputs=[b])
        return ga, gh, gb, gb.grad_fn.name(), b.grad, a.grad
    same(body)


def test_captured_leaves_with_and_without_hooks_match_torch():
    def body(torch):
        x = torch.tensor([0.5, -1.0], requires_grad=True)
        w = torch.tensor([2.0, 3.0], requires_grad=True)
        seen = []
        w.register_hook(lambda g: seen.append(g.clone()) or g * 2)
        out = (x * w).sum()
        gx, gw = torch.autograd.grad(out, [x, w], retain_graph=True)
        (hx,) = torch.autograd.grad(out * out, [x], create_graph=True)  # w: not an input
        (hxx,) = torch.autograd.grad(hx.sum(), [x])
        return gx, gw, hx, hx.grad_fn.name(), hxx, x.grad, w.grad, seen
    same(body)
